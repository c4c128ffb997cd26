"""The Vibe Checker testbed around scoring: ``augment`` → ``generate`` → ``score`` → ``report``.

* :mod:`.augment` — choose k verifiable instructions per task (rule or LLM selector);
* :mod:`.protocols` — single- and multi-turn generation through a backend;
* :mod:`.report` — the HTML/Markdown report of scored samples;
* :mod:`.paper_tables` — the SWE-IF paper's own result tables, for side-by-side reading.
"""
