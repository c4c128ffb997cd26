"""Agreement between prefjudge and a peer, every disagreement classified, and the tables.

A tool's verdict on a sample is the most frequent status over all its runs (warm-up
included); a sample *flips* when its pass/not-pass differs between a tool's runs. Two
verdicts agree when both pass or both do not; on HumanEval+/MBPP+, when prefjudge reports
``func.sets``, the ``base`` and ``plus`` sets must also agree one by one.

Classes of a disagreement (first that applies):

- ``prefjudge-error``: prefjudge could not judge (status ``error``: not a verdict);
- ``peer-wallclock``: the peer fails the sample, prefjudge passes it, and the peer timed
  out on it in some run, or its verdict flips between runs, or the sample is *tight* (one
  of its own calls takes a quarter of EvalPlus's limit or more, ``peers/code_cpu.py``:
  EvalPlus reports a call past its limit as ``fail``) (the peer's limits are wall-clock;
  prefjudge's per-input limits are CPU time);
- ``prefjudge-no-network``: prefjudge fails a sample the peer passes, and its detail shows
  the code found no network (prefjudge's sandbox has none, not even loopback, by design;
  the peer's local execution has the machine's);
- ``prefjudge-timeout``: prefjudge timed out where the peer passes (prefjudge's wall limit
  per run, e.g. 60 s, below what the task takes; the peer allows 240 s);
- ``prefjudge-flaky``: prefjudge's own verdict flips between its runs;
- ``prefjudge-bug``: anything else, until explained (the details are listed).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Sequence

from rich.table import Table

from peers.runs import Key, Run, Verdict

PREFJUDGE = "prefjudge"

NO_NETWORK = re.compile(r"Network is unreachable|Errno 101\b|Temporary failure in name "
                        r"resolution|Name or service not known|Errno -[23]\b")


def _passes(status: str) -> bool:
    return status == "pass"


def majority(verdicts: Sequence[Verdict]) -> Verdict:
    """The most frequent status among runs (earliest on a tie), with that run's detail."""
    counts = Counter(v.status for v in verdicts)
    best = max(counts.values())
    return next(v for v in verdicts if counts[v.status] == best)


def flips(verdicts: Sequence[Verdict]) -> bool:
    """Whether pass/not-pass differs between runs."""
    return len({_passes(v.status) for v in verdicts}) > 1


def _agree(peer: Verdict, ours: Verdict) -> tuple[bool, str]:
    if _passes(peer.status) != _passes(ours.status):
        return False, "overall"
    if ours.sets and peer.sets:
        for name in ("base", "plus"):
            if name in ours.sets and name in peer.sets:
                if _passes(ours.sets[name] or "") != _passes(peer.sets[name] or ""):
                    return False, name
    return True, ""


def classify(peer_runs: Sequence[Verdict], our_runs: Sequence[Verdict], level: str,
             tight: bool = False) -> str:
    """The class of one disagreement (see the module docstring).

    ``tight``: the sample's own slowest call comes near EvalPlus's time limit
    (``peers.code_cpu``).
    """
    peer, ours = majority(peer_runs), majority(our_runs)
    pick = (lambda v: v.sets.get(level) or v.status) if level in ("base", "plus") else (
        lambda v: v.status)
    if ours.status == "error":
        return "prefjudge-error"
    if _passes(pick(ours)) and not _passes(pick(peer)):
        if tight or any(pick(v) == "timeout" for v in peer_runs) or flips(
                [Verdict(pick(v)) for v in peer_runs]):
            return "peer-wallclock"
    if not _passes(pick(ours)) and _passes(pick(peer)):
        if pick(ours) == "timeout":
            return "prefjudge-timeout"
        if NO_NETWORK.search(ours.detail):
            return "prefjudge-no-network"
    if flips([Verdict(pick(v)) for v in our_runs]):
        return "prefjudge-flaky"
    return "prefjudge-bug"


def compare(keys: Sequence[Key], origins: dict[Key, dict], peer: str,
            runs: Sequence[Run], tight: frozenset[str] = frozenset()) -> dict:
    """Compare the peer's and prefjudge's verdicts on every sample of one benchmark.

    Args:
        keys: The samples, in file order.
        origins: Per key, where the sample came from (``origin``, ``kind``).
        peer: ``evalplus`` or ``bigcodebench``.
        runs: Every run of both tools on this benchmark (warm-up included).
        tight: Samples (``task_id#n``) whose slowest call comes near EvalPlus's limit.

    Returns:
        ``{"samples", "agree", "disagreements": [...], "flips": {...}, "timing": {...}}``.
    """
    by_tool: dict[str, list[Run]] = {peer: [], PREFJUDGE: []}
    for run in runs:
        by_tool[run.tool].append(run)
    disagreements = []
    agree = 0
    flipped: dict[str, list[str]] = {peer: [], PREFJUDGE: []}
    for key in keys:
        theirs = [r.verdicts.get(key, Verdict("missing")) for r in by_tool[peer]]
        ours = [r.verdicts.get(key, Verdict("missing")) for r in by_tool[PREFJUDGE]]
        name = f"{key[0]}#{key[1]}"
        for tool, verdicts in ((peer, theirs), (PREFJUDGE, ours)):
            if flips(verdicts):
                flipped[tool].append(name)
        same, level = _agree(majority(theirs), majority(ours))
        if same:
            agree += 1
            continue
        disagreements.append({
            "sample": name, **origins.get(key, {}), "level": level,
            "peer": [v.status + (f" ({'/'.join(f'{k}:{s}' for k, s in v.sets.items())})"
                                 if v.sets else "") for v in theirs],
            "prefjudge": [v.status + (f" ({'/'.join(f'{k}:{s}' for k, s in v.sets.items())})"
                                      if v.sets else "") for v in ours],
            "peer_detail": majority(theirs).detail,
            "prefjudge_detail": majority(ours).detail,
            "class": classify(theirs, ours, level, name in tight),
        })
    return {"samples": len(keys), "agree": agree, "disagreements": disagreements,
            "flips": flipped, "timing": timing(by_tool)}


def timing(by_tool: dict[str, list[Run]]) -> dict:
    """Median wall and CPU seconds of each tool's timed runs (warm-up left out), and ratios.

    ``ratio_wall`` and ``ratio_cpu`` are ratios of the medians. ``ratios_cpu`` holds each
    repetition's own ratio (prefjudge's CPU over the peer's, the two runs of a repetition
    being adjacent), and ``ratio_cpu_paired`` their median: a drift of the machine's speed
    over the benchmark (other work on a shared host) moves both runs of a repetition alike
    and mostly cancels in their ratio, not in a ratio of medians taken at different times.
    """
    out: dict[str, dict] = {}
    for tool, runs in by_tool.items():
        timed = [r for r in runs if r.rep > 0]
        if timed:
            out[tool] = {"runs": len(timed),
                         "wall_s": statistics.median(r.wall for r in timed),
                         "cpu_s": statistics.median(r.cpu for r in timed),
                         "walls": [round(r.wall, 2) for r in timed],
                         "cpus": [round(r.cpu, 2) for r in timed]}
    peer = next((t for t in out if t != PREFJUDGE), None)
    if peer and PREFJUDGE in out:
        for what in ("wall_s", "cpu_s"):
            denominator = out[peer][what]
            out[f"ratio_{what.removesuffix('_s')}"] = (
                out[PREFJUDGE][what] / denominator if denominator else None)
        theirs = {r.rep: r.cpu for r in by_tool[peer] if r.rep > 0}
        ratios = [round(r.cpu / theirs[r.rep], 3) for r in by_tool[PREFJUDGE]
                  if r.rep > 0 and theirs.get(r.rep)]
        if ratios:
            out["ratios_cpu"] = ratios
            out["ratio_cpu_paired"] = statistics.median(ratios)
    return out


def combine(base: dict, extra: dict) -> dict:
    """One benchmark's result plus another's on other samples (e.g. BigCodeBench and its
    waiting tasks): counts and disagreements added, each tool's median times added."""
    out = {"peer": base["peer"], "samples": base["samples"] + extra["samples"],
           "agree": base["agree"] + extra["agree"],
           "disagreements": base["disagreements"] + extra["disagreements"],
           "flips": {t: base["flips"].get(t, []) + extra["flips"].get(t, [])
                     for t in base["flips"]}, "timing": {}}
    for tool in (base["peer"], PREFJUDGE):
        a, b = base["timing"].get(tool), extra["timing"].get(tool)
        if a and b:
            out["timing"][tool] = {"wall_s": a["wall_s"] + b["wall_s"],
                                   "cpu_s": a["cpu_s"] + b["cpu_s"]}
    peer = out["timing"].get(base["peer"])
    ours = out["timing"].get(PREFJUDGE)
    if peer and ours:
        for what in ("wall_s", "cpu_s"):
            out["timing"][f"ratio_{what.removesuffix('_s')}"] = (
                ours[what] / peer[what] if peer[what] else None)
    return out


# --- tables ------------------------------------------------------------------------------


def summary_table(results: dict[str, dict]) -> Table:
    """One row per benchmark: agreement, disagreements by class, times and ratios."""
    table = Table(title="prefjudge vs peers: verdicts and time (medians of the timed runs)")
    for column in ("benchmark", "peer", "samples", "agree", "disagree (by class)",
                   "peer wall s", "pj wall s", "wall pj/peer", "peer CPU s", "pj CPU s",
                   "CPU pj/peer", "paired", "code CPU s", "floor /peer", "overhead pj/peer"):
        table.add_column(column, justify="left" if column in (
            "benchmark", "peer", "disagree (by class)") else "right")
    for bench, result in results.items():
        classes = Counter(d["class"] for d in result["disagreements"])
        t = result["timing"]
        peer = result["peer"]

        def fmt(value: float | None, digits: int = 1) -> str:
            return "—" if value is None else f"{value:.{digits}f}"

        table.add_row(
            bench, peer, str(result["samples"]), str(result["agree"]),
            ", ".join(f"{n} {c}" for c, n in sorted(classes.items())) or "0",
            fmt(t.get(peer, {}).get("wall_s")), fmt(t.get(PREFJUDGE, {}).get("wall_s")),
            fmt(t.get("ratio_wall"), 2), fmt(t.get(peer, {}).get("cpu_s")),
            fmt(t.get(PREFJUDGE, {}).get("cpu_s")), fmt(t.get("ratio_cpu"), 2),
            fmt(t.get("ratio_cpu_paired"), 2),
            fmt(t.get("code_cpu_s")), fmt(t.get("ratio_floor"), 2),
            fmt(t.get("ratio_overhead"), 2))
    return table


def add_overhead(result: dict, code_cpu_s: float, runs: Sequence[Run],
                 tight: Sequence[str]) -> None:
    """Add the candidates' own CPU to ``result``'s timing, and each tool's CPU beyond it.

    ``overhead_cpu_s`` per tool is its median CPU less what the samples' own calls take
    (``peers.code_cpu``: common to every faithful harness); ``ratio_overhead`` is
    prefjudge's over the peer's. Only while both tools made the same calls: a tight sample
    that did not pass in some run was cut short there by a wall-clock limit (the peer's:
    on a loaded machine, before its CPU reached the limit) or a CPU-time limit
    (prefjudge's), so the tools' calls differ and no overhead is given (``overhead_note``
    says which samples).

    ``ratio_floor`` is the samples' own CPU over the peer's whole CPU: the CPU ratio a
    harness with no overhead at all would reach, below which no faithful harness can go.
    """
    timing = result["timing"]
    timing["code_cpu_s"] = code_cpu_s
    peer_cpu = timing.get(result["peer"], {}).get("cpu_s")
    if peer_cpu:
        timing["ratio_floor"] = round(code_cpu_s / peer_cpu, 3)
    cut = sorted({name for run in runs for (task_id, n), verdict in run.verdicts.items()
                  if (name := f"{task_id}#{n}") in tight and not _passes(verdict.status)})
    if cut:
        timing["overhead_note"] = ("not comparable: tight samples cut short in some run: "
                                   + ", ".join(cut))
        return
    for tool in (result["peer"], PREFJUDGE):
        if timing.get(tool, {}).get("cpu_s") is not None:
            timing[tool]["overhead_cpu_s"] = round(timing[tool]["cpu_s"] - code_cpu_s, 2)
    ours = timing.get(PREFJUDGE, {}).get("overhead_cpu_s")
    theirs = timing.get(result["peer"], {}).get("overhead_cpu_s")
    if ours is not None and theirs:
        timing["ratio_overhead"] = round(ours / theirs, 3)


def disagreement_table(bench: str, result: dict) -> Table:
    """Every disagreement of one benchmark: sample, both verdicts per run, details, class."""
    table = Table(title=f"{bench}: {len(result['disagreements'])} disagreement(s)",
                  show_lines=True)
    for column in ("sample", "origin", "class", f"{result['peer']} (per run)",
                   "prefjudge (per run)", "prefjudge detail", "peer detail"):
        table.add_column(column, overflow="fold")
    for d in result["disagreements"]:
        origin = d.get("origin", "")
        if d.get("kind") and d.get("kind") != origin:
            origin += f" ({d['kind']})"
        table.add_row(d["sample"], origin, d["class"],
                      ", ".join(d["peer"]), ", ".join(d["prefjudge"]),
                      d["prefjudge_detail"], d["peer_detail"])
    return table
