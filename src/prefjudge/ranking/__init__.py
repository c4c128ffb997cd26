"""Stage 4, ranking: ``prefjudge rank`` and ``prefjudge correlate``.

* :mod:`.inputs` — battles (verdicts, arena CSV/JSONL) and score tables, with file:line errors;
* :mod:`.bradley_terry` — Bradley–Terry ratings on the Elo scale with bootstrap intervals;
* :mod:`.style` — the same with style covariates (length, markdown), arena-hard-auto's way;
* :mod:`.suggest` — which model pairs to judge next to narrow the ranks most;
* :mod:`.correlate` — the IF/functional composite that best predicts LMArena Elo;
* :mod:`.reports` — what ``rank`` and ``correlate`` write: JSON payloads, the model join;
* :mod:`.tables` — their result tables as plain text, for any reporter;
* :mod:`.run` — the ``rank`` and ``correlate`` use cases (settings in, files and outcome out).
"""
