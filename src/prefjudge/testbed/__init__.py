"""The Vibe Checker testbed around scoring: ``augment`` → ``generate`` → ``score`` → ``report``.

* :mod:`.augment` — choose k verifiable instructions per task (rule or LLM selector);
* :mod:`.protocol_prompts` — the prompts of each protocol (system prompt, framing, turns);
* :mod:`.protocols` — single- and multi-turn generation through a backend;
* :mod:`.generation` — the ``generate`` use case (journalled, resumable);
* :mod:`.report` — the sections of the HTML/Markdown report of scored samples, with its
  parts (:mod:`.report_types`), plots (:mod:`.report_plots`), judge-bias section
  (:mod:`.report_bias`) and rendering (:mod:`.report_render`);
* :mod:`.paper_tables` — the SWE-IF paper's own result tables, for side-by-side reading.
"""
