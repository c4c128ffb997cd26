"""``judge-eval`` over several labelled splits: reading them, and the per-split table.

Several pair sources (e.g. the four CodePrefBench files) are judged as one set; each keeps
its name (its file's stem, ``security`` for ``security-alignment.jsonl.gz``) and, when
more than one is given, its pairs' ids are prefixed with it, so that the same task in two
splits stays two pairs. The per-split table shows each method's accuracy (ties as half)
with its interval, tie rate, errors and cost, and the published human figure beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from prefjudge.cli.judging import PairInputs, read_pair_inputs
from prefjudge.paths import data_dir
from prefjudge.records import Pair
from prefjudge.testbed.report import coef_text, rate_text

REFERENCE_FILE = ("references", "codeprefbench.yaml")


def split_name(source: str) -> str:
    """A split's short name from its path (``security-alignment.jsonl.gz`` → ``security``)."""
    name = source.rstrip("/").rsplit("/", 1)[-1]
    for suffix in (".gz", ".jsonl", ".json", ".csv", "-alignment"):
        name = name.removesuffix(suffix)
    return name


def read_labelled_splits(
    sources: Sequence[str], fmt: str, skip_invalid: bool, console: Console, *,
    split: str | None = None, subset: str | None = None,
) -> tuple[PairInputs, dict[str, str]]:
    """Read every labelled source; return them as one input and each pair's split.

    Args:
        sources: Pair sources (files, folders or hub datasets).
        fmt: Pair file format (``auto`` to detect it).
        skip_invalid: Skip unusable rows instead of stopping.
        console: Where notes go.
        split: Hub split (for every source).
        subset: Hub subset (for every source).

    Returns:
        The merged inputs (pair ids prefixed with the split when there are several) and
        pair id → split name.
    """
    merged = PairInputs([])
    split_of: dict[str, str] = {}
    names: list[str] = []
    for source in sources:
        name = split_name(source)
        while name in names:
            name += "'"
        names.append(name)
        read = read_pair_inputs((source,), None, fmt, skip_invalid, console, split=split,
                                subset=subset)
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


def first_of_each_split(pairs: Sequence[Pair], split_of: Mapping[str, str],
                        limit: int) -> list[Pair]:
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


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def split_table(by_split: Mapping[str, Mapping[str, Mapping[str, Any]]],
                criteria: Mapping[str, str]) -> Table:
    """Per method and split: accuracy (ties half) [CI], tie rate, errors, cost, humans.

    Args:
        by_split: Method → split → :func:`~prefjudge.judge.evaluation.evaluate_verdicts`.
        criteria: Split → criterion (from :func:`split_criteria`).

    Returns:
        The table.
    """
    humans = human_reference()["human_accuracy"]
    table = Table(title="accuracy per split (over all pairs, ties and errors count half; "
                  "judged: over the pairs decided or tied; humans: the benchmark paper's "
                  "developers)", title_justify="left")
    for column in ("method", "split", "criterion", "pairs", "accuracy", "95 % CI",
                   "judged: accuracy", "ties", "errors", "decided by evidence", "calls/pair",
                   "humans"):
        table.add_column(column, justify="left" if column in ("method", "split", "criterion")
                         else "right")
    for method, splits in by_split.items():
        for name, result in splits.items():
            ci = result.get("accuracy_all_half_ci")
            decided = result.get("decided_by") or {}
            table.add_row(
                method, escape(name), criteria.get(name, "-"), str(result["n"]),
                _pct(result["accuracy_all_half"]),
                f"{100 * ci[0]:.1f}–{100 * ci[1]:.1f}" if ci else "",
                _pct(result["accuracy_ties_half"]),
                _pct(result["tie_rate"]), str(result["n_error"]),
                _pct(decided.get("evidence_share")) if decided else "-",
                f"{result['cost']['per_pair']['model_calls'] or 0:.2f}",
                _pct(humans.get(name)) if name in humans else "-",
            )
    return table


def bias_table(bias: Mapping[str, Mapping[str, Any]]) -> Table:
    """Per method: the judge's and the humans' first-shown, longer and more formatted picks.

    Beside them, the style regression's length and markdown coefficients.

    Args:
        bias: Method → :func:`~prefjudge.judge.bias.bias_diagnostics` result.

    Returns:
        The table (two rows per method: the judge, then the humans on the same pairs).
    """
    some = next(iter(bias.values()), {})
    table = Table(title=f"judge bias beside the humans' on the same pairs (tokens: "
                  f"{some.get('tokenizer', '?')}; 95 % bootstrap intervals)",
                  title_justify="left")
    for column in ("method", "who", "picks first shown", "picks longer", "picks more formatted",
                   "length coef.", "markdown coef."):
        table.add_column(column, justify="left" if column in ("method", "who") else "right")
    for method, result in bias.items():
        for who in ("judge", "human"):
            regression = result["style_regression"][who]
            table.add_row(
                method if who == "judge" else "", who,
                rate_text(result["first_shown"][who]), rate_text(result["longer"][who]),
                rate_text(result["more_formatted"][who]),
                coef_text(regression, "token_len"), coef_text(regression, "markdown"),
            )
    return table
