"""Pairs for the judge: loading preference datasets, joining generations, attaching evidence.

Three jobs, one module each: :mod:`~prefjudge.judge.pairs.formats` (dataset loaders,
one module per pair format, registered by name in
:mod:`~prefjudge.judge.pairs.formats.registry`; format detection, and sources by name:
files, dataset folders, the hub),
:mod:`~prefjudge.judge.pairs.join` (two generation files into pairs) and
:mod:`~prefjudge.judge.pairs.evidence` (score outputs into evidence lines on pairs);
:mod:`~prefjudge.judge.pairs.inputs` reads what a judging stage's arguments name. Every
public name is re-exported here, so ``from prefjudge.judge.pairs import load_pairs`` works.
"""

from __future__ import annotations

from prefjudge.judge.pairs.evidence import (
    DETAIL_CHARS,
    EVIDENCE_CHARS,
    attach_evidence,
    evidence_from_scored,
)
from prefjudge.judge.pairs.formats import (
    BIGCODEREWARD_VOTES,
    COPILOT_ARENA_COLUMNS,
    FIM_TEMPLATE,
    PAIR_FORMATS,
    PairFormat,
    PairFormatSpec,
    bigcodereward_pairs,
    codeprefbench_pairs,
    detect_format,
    format_from_keys,
    load_bigcodereward,
    load_codeprefbench,
    load_copilot_arena,
    load_pairs,
    load_preference_source,
    load_prefjudge_pairs,
    open_preference_source,
    pair_format,
    pair_format_choices,
    pair_formats,
    pairs_from_rows,
    prefjudge_pairs,
    register_pair_format,
    unregister_pair_format,
)
from prefjudge.judge.pairs.inputs import PairInputs, read_pair_inputs
from prefjudge.judge.pairs.join import pairs_from_generations

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
    "register_pair_format",
    "unregister_pair_format",
]
