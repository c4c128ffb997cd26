"""Parts of ``scripts/bench_peers.py``: prefjudge's scorer beside EvalPlus and BigCodeBench.

- :mod:`peers.venvs`: the peers' own virtual environments (installed from PyPI, reused), and
  the libraries a BigCodeBench task needs, aligned with prefjudge's;
- :mod:`peers.samples`: the seeded sample (real EvalPerf solutions, canonical BigCodeBench
  solutions, deliberately broken copies) and the subset task files the peers read;
- :mod:`peers.waiting`: which BigCodeBench tasks mostly wait (wall >> CPU);
- :mod:`peers.runs`: running each tool, its wall and CPU time, and its per-sample verdicts;
- :mod:`peers.compare`: agreement, every disagreement classified, and the tables;
- :mod:`peers.export_check`: ``prefjudge score --export`` read back by the peers' own code.

A benchmark, not a test: nothing here is collected by the test suite.
"""
