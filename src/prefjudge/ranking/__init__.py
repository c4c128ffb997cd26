"""Stage 4, ranking: ``prefjudge rank`` and ``prefjudge correlate``.

Inputs (file:line errors; :mod:`.inputs` re-exports them all):

* :mod:`.table_rows` — records of a CSV/TSV, JSON or JSONL file (``.gz`` too);
* :mod:`.battle_rows` — one battle or verdict row read into a battle;
* :mod:`.battle_features` — the style features of a battle's two responses;
* :mod:`.inputs` — a battles file as the frame ``rank`` fits;
* :mod:`.model_tables` — per-model score and Elo tables, alias files;
* :mod:`.scored` — ``prefjudge score`` records (the one "is a scored record" rule);
* :mod:`.battle_tasks` — the task each judged battle was on.

Fits (:mod:`.bradley_terry` and :mod:`.style` re-export their parts):

* :mod:`.pair_counts` — battles aggregated per model pair and outcome;
* :mod:`.comparison_graph` — whether the battles identify the strengths; the rank errors;
* :mod:`.bt_fit` — Bradley–Terry strengths (I-LSR, Davidson) and their bootstrap;
* :mod:`.bradley_terry` — the leaderboard on the Elo scale with intervals;
* :mod:`.style_design`, :mod:`.style_fit`, :mod:`.style` — the same with style covariates
  (length, markdown), arena-hard-auto's way;
* :mod:`.belief`, :mod:`.suggest` — which model pairs to judge next to narrow the ranks most;
* :mod:`.composite`, :mod:`.correlate` — the IF/functional composite that best predicts
  LMArena Elo.

Outputs and use cases:

* :mod:`.reports` — what ``rank`` and ``correlate`` write: JSON payloads, the model join;
* :mod:`.tables` — their result tables as plain text, for any reporter;
* :mod:`.outputs` — files written or text given back (``-``);
* :mod:`.run`, :mod:`.correlate_run` — the ``rank`` and ``correlate`` use cases (settings
  in, files and outcome out).
"""
