"""Loader for the SWE-IF paper's per-model score tables (arXiv 2510.07315).

The paper's repository publishes, per benchmark (``bigcodebench``, ``livecodebench``),
three CSVs with two or three header rows (our copies are named
``<benchmark>_{func,if,position}_results.csv``; the repository's own
``scores/<benchmark>/{func,if,position}_results.csv`` layout is read too):

* ``func_results``: functional score (%) per model, protocol and number of instructions
  k = 0..5;
* ``if_results``: instruction-level and task-level IF (%) per model, protocol and
  k = 1..5;
* ``position_results``: instruction-level IF (%) per model, protocol and position 1..5.

Protocol headers read "Single-Turn Generation"/"Code Generation" (``single``) and
"Multi-Turn Editing"/"Code Editing" (``multi``). Scores stay in percent, as published.

FR_k follows the paper's code (``swe_if/generate_comparison_plots.py``):
``FR_k = (S0 - Sk) / S0 · 100`` with S0 the *single-turn* 0-instruction score, for both
protocols; positive means the functional score dropped, negative that it rose (Claude 4
Opus, BigCodeBench, single-turn: (51.05 - 52.11) / 51.05 = -2.08 %).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pandas as pd

from prefjudge.io import open_csv, utf8_problem

BENCHMARKS = ("bigcodebench", "livecodebench")
KINDS = ("func", "if", "position")


class PaperTableError(ValueError):
    """A paper table is missing or not in the expected layout."""


def _protocol(label: str) -> str:
    text = label.lower()
    if "single" in text or text.strip() == "code generation":
        return "single"
    if "multi" in text or "editing" in text:
        return "multi"
    raise PaperTableError(f"unknown protocol header {label!r}")


def _number(label: str) -> int:
    """The integer in a header cell such as ``3 Inst`` or ``Position 2``."""
    digits = "".join(ch for ch in label if ch.isdigit())
    if not digits:
        raise PaperTableError(f"header cell {label!r} has no number")
    return int(digits)


def read_paper_csv(path: Path) -> pd.DataFrame:
    """Read one paper CSV into long format.

    Args:
        path: A ``func``, ``if`` or ``position`` results CSV.

    Returns:
        Columns: model, protocol (``single``/``multi``), level (``instruction``,
        ``task`` or ``func``), k (number of instructions; for position tables the
        position), score (percent), in file order.

    Raises:
        PaperTableError: When the file is absent or its headers are not as expected.
    """
    if not path.is_file():
        raise PaperTableError(f"{path}: no such file")
    with open_csv(path) as handle:
        rows = [row for row in csv.reader(handle) if any(cell.strip() for cell in row)]
    for number, row in enumerate(rows, start=1):
        problem = utf8_problem(",".join(row))
        if problem:
            raise PaperTableError(f"{path}: row {number}: {problem}")
    header_rows = []
    for row in rows:
        if row[0].strip() in ("", "Models"):
            header_rows.append(row)
        else:
            break
    if len(header_rows) < 2:
        raise PaperTableError(f"{path}: expected at least two header rows")
    width = len(header_rows[0])
    filled: list[list[str]] = []
    for row in header_rows:
        cells, last = [], ""
        for cell in row[1:width]:
            last = cell.strip() or last
            cells.append(last)
        filled.append(cells)
    protocols = [_protocol(c) for c in filled[0]]
    levels = ([c.lower() for c in filled[1]] if len(filled) == 3 else ["func"] * len(protocols))
    numbers = [_number(c) for c in filled[-1]]
    records = []
    for row in rows[len(header_rows):]:
        model = row[0].strip()
        for i, cell in enumerate(row[1:width]):
            if not cell.strip():
                continue
            try:
                score = float(cell)
            except ValueError as exc:
                raise PaperTableError(f"{path}: model {model!r}: not a number: {cell!r}") from exc
            records.append({"model": model, "protocol": protocols[i], "level": levels[i],
                            "k": numbers[i], "score": score})
    return pd.DataFrame(records, columns=["model", "protocol", "level", "k", "score"])


def _find(directory: Path, benchmark: str, kind: str) -> Path:
    for candidate in (directory / f"{benchmark}_{kind}_results.csv",
                      directory / benchmark / f"{kind}_results.csv",
                      directory / "scores" / benchmark / f"{kind}_results.csv"):
        if candidate.is_file():
            return candidate
    raise PaperTableError(f"{directory}: no {kind} results for {benchmark} "
                          f"(expected {benchmark}_{kind}_results.csv)")


@dataclass(frozen=True)
class PaperScores:
    """The paper's tables for one or more benchmarks, long format, scores in percent.

    Attributes:
        func: benchmark, model, protocol, k (0..5), score.
        if_: benchmark, model, protocol, level (instruction/task), k (1..5), score.
        position: benchmark, model, protocol, position (1..5), score.
    """

    func: pd.DataFrame
    if_: pd.DataFrame
    position: pd.DataFrame


def load_paper_scores(directory: Path, benchmarks: tuple[str, ...] = BENCHMARKS) -> PaperScores:
    """Load the paper's func, IF and position tables.

    Args:
        directory: Folder holding the CSVs (ours, flat, or the repository's ``scores/``).
        benchmarks: Benchmarks to load; each must have all three tables.

    Returns:
        The three tables, each with a leading ``benchmark`` column.

    Raises:
        PaperTableError: When a table is missing or malformed.
    """
    directory = Path(directory)
    parts: dict[str, list[pd.DataFrame]] = {kind: [] for kind in KINDS}
    for benchmark in benchmarks:
        for kind in KINDS:
            table = read_paper_csv(_find(directory, benchmark, kind))
            parts[kind].append(table.assign(benchmark=benchmark))
    func = pd.concat(parts["func"], ignore_index=True)
    func = func[["benchmark", "model", "protocol", "k", "score"]]
    if_ = pd.concat(parts["if"], ignore_index=True)[["benchmark", "model", "protocol", "level",
                                                      "k", "score"]]
    position = pd.concat(parts["position"], ignore_index=True).rename(columns={"k": "position"})
    position = position[["benchmark", "model", "protocol", "position", "score"]]
    return PaperScores(func=func, if_=if_, position=position)


def paper_functional_regression(
    func: pd.DataFrame, *, baseline: Literal["single", "own"] = "single"
) -> pd.DataFrame:
    """FR_k per benchmark, model and protocol from the paper's functional table.

    Args:
        func: ``PaperScores.func``.
        baseline: ``single`` (the paper's code: S0 is the single-turn 0-instruction score
            for both protocols) or ``own`` (each protocol's own 0-instruction column; the
            two differ only where the published 0-instruction cells differ).

    Returns:
        Columns: benchmark, model, protocol, k (1..5), s0, sk (percent), fr (percent,
        unrounded; the paper shows two decimals).
    """
    zero = func[func["k"] == 0]
    key = ["benchmark", "model"] + (["protocol"] if baseline == "own" else [])
    base = zero if baseline == "own" else zero[zero["protocol"] == "single"]
    base = base.set_index(key)["score"].rename("s0")
    rows = func[func["k"] > 0].join(base, on=key).rename(columns={"score": "sk"})
    rows = rows.assign(fr=(rows["s0"] - rows["sk"]) / rows["s0"] * 100.0)
    return rows[["benchmark", "model", "protocol", "k", "s0", "sk", "fr"]].reset_index(drop=True)


def paper_average_regression(func: pd.DataFrame) -> pd.DataFrame:
    """The paper's headline FR_k curve: FR of the model-averaged functional score.

    As in the paper's figure code, scores are averaged over the models of a benchmark and
    both protocols are compared with the averaged single-turn 0-instruction score.

    Args:
        func: ``PaperScores.func``.

    Returns:
        Columns: benchmark, protocol, k (0..5), mean_score, fr (percent), n_models.
    """
    means = (func.groupby(["benchmark", "protocol", "k"], sort=True)["score"]
             .agg(mean_score="mean", n_models="count").reset_index())
    base = means[(means["protocol"] == "single") & (means["k"] == 0)].set_index("benchmark")
    s0 = means["benchmark"].map(base["mean_score"])
    means = means.assign(fr=(s0 - means["mean_score"]) / s0 * 100.0,
                         _proto=means["protocol"].map({"single": 0, "multi": 1}))
    means = means.sort_values(["benchmark", "_proto", "k"], ignore_index=True)
    return means[["benchmark", "protocol", "k", "mean_score", "fr", "n_models"]]


def fr_wide(fr: pd.DataFrame) -> pd.DataFrame:
    """FR_k in the paper's layout: one row per benchmark, model and protocol.

    Args:
        fr: Output of :func:`paper_functional_regression`.

    Returns:
        Columns: benchmark, model, protocol, FR_1 .. FR_5 (percent), in the paper's
        model order.
    """
    order = {m: i for i, m in enumerate(dict.fromkeys(fr["model"]))}
    wide = fr.pivot_table(index=["benchmark", "model", "protocol"], columns="k",
                          values="fr").reset_index()
    wide.columns = [f"FR_{c}" if isinstance(c, int | float) and not isinstance(c, bool)
                    else c for c in wide.columns]
    wide = wide.assign(_order=wide["model"].map(order),
                       _proto=wide["protocol"].map({"single": 0, "multi": 1}))
    wide = wide.sort_values(["benchmark", "_order", "_proto"]).drop(columns=["_order", "_proto"])
    return wide.reset_index(drop=True)
