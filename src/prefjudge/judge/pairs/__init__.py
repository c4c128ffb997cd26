"""Pairs for the judge: loading preference datasets, joining generations, attaching evidence.

Three jobs, one module each: :mod:`~prefjudge.judge.pairs.formats` (dataset loaders,
one module per pair format, registered by name in
:mod:`~prefjudge.judge.pairs.formats.registry`; format detection, and sources by name:
files, dataset folders, the hub),
:mod:`~prefjudge.judge.pairs.join` (two generation files into pairs) and
:mod:`~prefjudge.judge.pairs.evidence` (score outputs into evidence lines on pairs);
:mod:`~prefjudge.judge.pairs.inputs` reads what a judging stage's arguments name. Every
public name is re-exported here, so ``from prefjudge.judge.pairs import load_pairs`` works:
the pair-format registry's names at once (standard library only), every other name from its
module on first use (:mod:`prefjudge.lazy`), so reading a pair file imports neither the
joining of generation files nor the evidence code, and ``--help`` reads the format names
from here at no cost.
"""

from __future__ import annotations

from prefjudge.judge.pairs.formats import (
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

_FORMATS = "prefjudge.judge.pairs.formats"
_LAZY = {
    "DETAIL_CHARS": "prefjudge.judge.pairs.evidence",
    "EVIDENCE_CHARS": "prefjudge.judge.pairs.evidence",
    "attach_evidence": "prefjudge.judge.pairs.evidence",
    "evidence_from_scored": "prefjudge.judge.pairs.evidence",
    "PairInputs": "prefjudge.judge.pairs.inputs",
    "read_pair_inputs": "prefjudge.judge.pairs.inputs",
    "pairs_from_generations": "prefjudge.judge.pairs.join",
    **{name: _FORMATS for name in (
        "BIGCODEREWARD_VOTES", "COPILOT_ARENA_COLUMNS", "FIM_TEMPLATE", "bigcodereward_pairs",
        "codeprefbench_pairs", "detect_format", "format_from_keys", "load_bigcodereward",
        "load_codeprefbench", "load_copilot_arena", "load_pairs", "load_preference_source",
        "load_prefjudge_pairs", "open_preference_source", "pairs_from_rows", "prefjudge_pairs",
    )},
}
"""The names published here that are imported from their modules at first use."""

__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "BIGCODEREWARD_VOTES",
    "COPILOT_ARENA_COLUMNS",
    "DETAIL_CHARS",
    "EVIDENCE_CHARS",
    "FIM_TEMPLATE",
    "PAIR_FORMATS",
    "PairFormat",
    "PairFormatSpec",
    "PairInputs",
    "attach_evidence",
    "bigcodereward_pairs",
    "codeprefbench_pairs",
    "detect_format",
    "evidence_from_scored",
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
    "pairs_from_generations",
    "pairs_from_rows",
    "prefjudge_pairs",
    "read_pair_inputs",
    "register_lazy_pair_format",
    "register_pair_format",
    "unregister_pair_format",
]
