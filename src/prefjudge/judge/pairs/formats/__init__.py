"""Dataset loaders: read pairwise code-preference files into :class:`~prefjudge.records.Pair`.

Each pair format is one module that registers itself (:mod:`.registry`) with its name,
the marks that tell it (:mod:`.detect`), its file loader and its row converter. The
built-in formats, in detection order:

- ``prefjudge`` (:mod:`.prefjudge_jsonl`): JSONL of ``Pair`` records themselves.
- ``codeprefbench`` (:mod:`.codeprefbench`): CodePrefBench JSONL(.gz) rows (``choices``,
  ``gt_choice``).
- ``copilot_arena`` (:mod:`.copilot_arena`): the Copilot Arena CSV of fill-in-the-middle
  battles.
- ``bigcodereward`` (:mod:`.bigcodereward`): Hugging Face ``bigcode/bigcodereward`` rows
  exported to JSONL(.gz) (Parquet too, when pandas with pyarrow is installed).

``load_pairs`` (:mod:`.load`) detects the format from the file's content;
:func:`load_preference_source` also takes a dataset folder or a hub dataset by name
(``codeprefbench``, ``bigcodereward``, ``hub:OWNER/NAME``; see
:mod:`prefjudge.scoring.sources`), whose rows go through the same converters.

A row that cannot be used is never dropped silently: it becomes an :class:`InputIssue`
naming file, line and field. Loaders raise :class:`InputError` with every issue, or, with
``skip_invalid=True``, return the issues beside the usable pairs.
"""

from __future__ import annotations

from prefjudge.io import InputError, InputIssue
from prefjudge.judge.pairs.formats.bigcodereward import (
    BIGCODEREWARD_VOTES,
    bigcodereward_pairs,
    load_bigcodereward,
)
from prefjudge.judge.pairs.formats.codeprefbench import (
    CODEPREFBENCH_CRITERIA,
    codeprefbench_criterion,
    codeprefbench_pairs,
    load_codeprefbench,
)
from prefjudge.judge.pairs.formats.copilot_arena import (
    COPILOT_ARENA_COLUMNS,
    FIM_TEMPLATE,
    load_copilot_arena,
)
from prefjudge.judge.pairs.formats.detect import detect_format, format_from_keys
from prefjudge.judge.pairs.formats.load import (
    load_pairs,
    load_preference_source,
    open_preference_source,
    pairs_from_rows,
)

# The built-in formats register themselves on import (their rank sets the detection order).
from prefjudge.judge.pairs.formats.prefjudge_jsonl import load_prefjudge_pairs, prefjudge_pairs
from prefjudge.judge.pairs.formats.registry import (
    PAIR_FORMATS,
    PairFormat,
    PairFormatSpec,
    pair_format,
    pair_format_choices,
    pair_formats,
    register_pair_format,
    unregister_pair_format,
)

__all__ = [
    "BIGCODEREWARD_VOTES",
    "CODEPREFBENCH_CRITERIA",
    "COPILOT_ARENA_COLUMNS",
    "FIM_TEMPLATE",
    "PAIR_FORMATS",
    "InputError",
    "InputIssue",
    "PairFormat",
    "PairFormatSpec",
    "bigcodereward_pairs",
    "codeprefbench_criterion",
    "codeprefbench_pairs",
    "detect_format",
    "format_from_keys",
    "load_bigcodereward",
    "load_codeprefbench",
    "load_copilot_arena",
    "load_pairs",
    "load_preference_source",
    "load_prefjudge_pairs",
    "open_preference_source",
    "pair_format",
    "pair_format_choices",
    "pair_formats",
    "pairs_from_rows",
    "prefjudge_pairs",
    "register_pair_format",
    "unregister_pair_format",
]
