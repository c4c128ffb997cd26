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

Importing this package registers the built-in formats by name only (:mod:`.builtin`):
each format's module is imported when its spec is first asked for, and every other name
here is imported from its module on first use (:mod:`prefjudge.lazy`), so the format names
(``--pairs-format`` in ``--help``) cost no pair file code.

A row that cannot be used is never dropped silently: it becomes an :class:`InputIssue`
naming file, line and field. Loaders raise :class:`InputError` with every issue, or, with
``skip_invalid=True``, return the issues beside the usable pairs.
"""

from __future__ import annotations

from prefjudge.judge.pairs.formats import builtin as _builtin  # noqa: F401 - registers them
from prefjudge.judge.pairs.formats.registry import (
    PAIR_FORMATS,
    PairFormat,
    PairFormatSpec,
    pair_format,
    pair_format_choices,
    pair_formats,
    register_lazy_pair_format,
    register_pair_format,
    unregister_pair_format,
)
from prefjudge.lazy import lazy_getattr

_HOME = "prefjudge.judge.pairs.formats."
_LAZY = {
    "InputError": "prefjudge.io",
    "InputIssue": "prefjudge.io",
    "BIGCODEREWARD_VOTES": _HOME + "bigcodereward",
    "bigcodereward_pairs": _HOME + "bigcodereward",
    "load_bigcodereward": _HOME + "bigcodereward",
    "CODEPREFBENCH_CRITERIA": _HOME + "codeprefbench",
    "codeprefbench_criterion": _HOME + "codeprefbench",
    "codeprefbench_pairs": _HOME + "codeprefbench",
    "load_codeprefbench": _HOME + "codeprefbench",
    "COPILOT_ARENA_COLUMNS": _HOME + "copilot_arena",
    "FIM_TEMPLATE": _HOME + "copilot_arena",
    "load_copilot_arena": _HOME + "copilot_arena",
    "detect_format": _HOME + "detect",
    "format_from_keys": _HOME + "detect",
    "load_pairs": _HOME + "load",
    "load_preference_source": _HOME + "load",
    "open_preference_source": _HOME + "load",
    "pairs_from_rows": _HOME + "load",
    "load_prefjudge_pairs": _HOME + "prefjudge_jsonl",
    "prefjudge_pairs": _HOME + "prefjudge_jsonl",
}
"""The names published here that are imported from their modules at first use."""

__getattr__ = lazy_getattr(__name__, _LAZY)

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
    "register_lazy_pair_format",
    "register_pair_format",
    "unregister_pair_format",
]
