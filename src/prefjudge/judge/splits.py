"""``judge-eval`` over several labelled splits: reading them, and what each split is.

Several pair sources (e.g. the four CodePrefBench files) are judged as one set; each keeps
its name (its file's stem, ``security`` for ``security-alignment.jsonl.gz``) and, when
more than one is given, its pairs' ids are prefixed with it, so that the same task in two
splits stays two pairs. Beside each split's results stands the published human figure
(:func:`human_reference`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from prefjudge.judge.pairs import PairInputs, read_pair_inputs
from prefjudge.paths import data_dir
from prefjudge.records import Pair
from prefjudge.reporting import Reporter

REFERENCE_FILE = ("references", "codeprefbench.yaml")


def split_name(source: str) -> str:
    """A split's short name from its path (``security-alignment.jsonl.gz`` → ``security``)."""
    name = source.rstrip("/").rsplit("/", 1)[-1]
    for suffix in (".gz", ".jsonl", ".json", ".csv", "-alignment"):
        name = name.removesuffix(suffix)
    return name


def read_labelled_splits(
    sources: Sequence[str],
    fmt: str,
    skip_invalid: bool,
    reporter: Reporter,
    *,
    split: str | None = None,
    subset: str | None = None,
) -> tuple[PairInputs, dict[str, str]]:
    """Read every labelled source; return them as one input and each pair's split.

    Args:
        sources: Pair sources (files, folders or hub datasets).
        fmt: Pair file format (``auto`` to detect it).
        skip_invalid: Skip unusable rows instead of stopping.
        reporter: Where notes and skipped rows go.
        split: Hub split (for every source).
        subset: Hub subset (for every source).

    Returns:
        The merged inputs (pair ids prefixed with the split when there are several) and
        pair id → split name.

    Raises:
        JudgeOptionError: When a source names no file, folder or known hub dataset.
        StageError: When a source cannot be read.
    """
    merged = PairInputs([])
    split_of: dict[str, str] = {}
    names: list[str] = []
    for source in sources:
        name = split_name(source)
        while name in names:
            name += "'"
        names.append(name)
        read = read_pair_inputs(
            (source,), (), fmt, skip_invalid, reporter, split=split, subset=subset
        )
        for pair in read.pairs:
            if len(sources) > 1:
                pair = pair.model_copy(update={"pair_id": f"{name}:{pair.pair_id}"})
            merged.pairs.append(pair)
            split_of[pair.pair_id] = name
        for role, files in read.files.items():
            merged.files.setdefault(role, []).extend(files)
        for role, identity in read.sources.items():
            merged.sources[f"{role}:{name}" if len(sources) > 1 else role] = identity
    return merged, split_of


def first_of_each_split(
    pairs: Sequence[Pair], split_of: Mapping[str, str], limit: int
) -> list[Pair]:
    """The first ``limit`` pairs of each split, in input order."""
    taken: dict[str, int] = {}
    kept = []
    for pair in pairs:
        name = split_of.get(pair.pair_id, "")
        if taken.get(name, 0) < limit:
            taken[name] = taken.get(name, 0) + 1
            kept.append(pair)
    return kept


def split_criteria(pairs: Sequence[Pair], split_of: Mapping[str, str]) -> dict[str, str]:
    """Each split's criterion as its pairs give it (``-`` when they give none)."""
    found: dict[str, str] = {}
    for pair in pairs:
        name = split_of.get(pair.pair_id)
        if name is not None and name not in found:
            found[name] = pair.criterion or "-"
    return found


def human_reference() -> dict[str, Any]:
    """The published human figures per CodePrefBench split (``rubrics/references``)."""
    path = data_dir("rubrics").joinpath(*REFERENCE_FILE)
    return yaml.safe_load(path.read_text(encoding="utf-8"))
