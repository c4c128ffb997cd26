"""The per-model summary of a ``prefjudge score`` run: the table shown and the files written.

:func:`write_summary` turns the run's summary rows (one small row per record,
:func:`~prefjudge.scoring.rows.sample_row`) into the per-model figures
(:func:`~prefjudge.scoring.metrics.model_summary`), reports the table
(:func:`summary_table`, :func:`frame_table`) and the notes on the figures it cannot rate
(:func:`unrated_notes`), and writes the ``.csv``, ``.json`` and ``.png`` files. pandas and
matplotlib are imported where used (:func:`load_summary_meanwhile` imports them while a
run scores): importing this module costs a command's start nothing.
"""

from __future__ import annotations

import contextlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefjudge.reporting import Reporter, TextTable

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class SummaryFacts:
    """What a run's summary needs besides its rows: how and where the run scored.

    Attributes:
        title: The table's title.
        prefix: The summary files' prefix (``.csv``, ``.json``, ``.png`` are added).
        settings: The summary file's leading fields (generations, tasks, seed, bootstrap,
            profile, ruff_version, sandbox, engine), in the file's order.
        profile: Verification profile (the CSV's ``profile`` column).
        bootstrap: Task-bootstrap resamples for the intervals.
        ci_seed: Seed of the bootstrap intervals.
        tests: Whether the unit tests were run.
        no_tests: Whether ``--no-tests`` turned them off.
    """

    title: str
    prefix: str
    settings: dict[str, Any]
    profile: str
    bootstrap: int
    ci_seed: int
    tests: bool
    no_tests: bool


@dataclass(frozen=True)
class WrittenSummary:
    """The summary a run reported and wrote.

    Attributes:
        csv: The per-model summary (CSV).
        json: The per-model summary with the run's settings (JSON).
        plot: The per-model summary plot (PNG).
        table: The per-model table reported.
        document: The JSON file's object, as the file holds it (NaN as None).
        check_errors: Instruction checks that ended in error, over all models.
        test_errors: Test runs that ended in error, over all models.
    """

    csv: Path
    json: Path
    plot: Path
    table: TextTable
    document: dict[str, Any]
    check_errors: int
    test_errors: int


def write_summary(rows: list[tuple], facts: SummaryFacts, reporter: Reporter) -> WrittenSummary:
    """Report the per-model table and its notes, and write the summary files.

    Args:
        rows: The summary rows of the run's records, in the output's order.
        facts: How and where the run scored.
        reporter: Where the table and the notes go.

    Returns:
        The files written, the table, and the summary file's object.
    """
    from prefjudge.io import dumps_json
    from prefjudge.plots.score import save_summary_plot
    from prefjudge.scoring.metrics import model_summary, rows_frame

    summary = model_summary(rows_frame(rows), n_resamples=facts.bootstrap, seed=facts.ci_seed)
    table = frame_table(summary_table(summary), title=facts.title)
    reporter.table(table)
    for note in unrated_notes(summary, tests=facts.tests, no_tests=facts.no_tests):
        reporter.note(note)
    csv, summary_json, plot = (Path(f"{facts.prefix}{ext}") for ext in (".csv", ".json", ".png"))
    summary.assign(profile=facts.profile).to_csv(csv, index=False)
    text = dumps_json({**facts.settings, "models": summary.to_dict(orient="records")}, indent=2)
    summary_json.write_text(text + "\n", encoding="utf-8")  # as prefjudge.io.write_json
    save_summary_plot(summary, plot)
    return WrittenSummary(csv=csv, json=summary_json, plot=plot, table=table,
                          document=json.loads(text),
                          check_errors=int(summary["check_errors"].sum()),
                          test_errors=int(summary["func_error"].sum()))


def load_summary_meanwhile() -> threading.Thread:
    """Import what the summary needs (pandas, matplotlib's figure and Agg canvas) meanwhile.

    Scoring mostly waits on Ruff, the verification process or unit tests; the summary and
    its plot are the last step, and without this their imports would come after
    everything else. Not a daemon thread: an import is never cut off at exit. A failed
    import is left to the summary, which imports again and reports it.
    """

    def load() -> None:
        from prefjudge.lazy import heavy_imports

        with contextlib.suppress(Exception), heavy_imports():
            import matplotlib.backends.backend_agg
            import matplotlib.figure  # noqa: F401

            import prefjudge.plots.score
            import prefjudge.scoring.metrics  # noqa: F401

    thread = threading.Thread(target=load, name="prefjudge-load-summary")
    thread.start()
    return thread


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Format the model summary for showing: values with their 95 % CIs.

    EvalPlus's base and plus pass@1 are shown only when some model has HumanEval+/MBPP+
    samples, and pass@10 and pass@100 only when some model has that many judged samples
    for every task (a model without them shows "—").

    Args:
        summary: :func:`prefjudge.scoring.metrics.model_summary`'s table.

    Returns:
        One row per model: n, IF (instruction and task level) and pass@1 with their
        intervals (then base and plus pass@1, pass@10, pass@100 where they apply), and the
        counts of check errors, timeouts and test errors.
    """
    import pandas as pd

    from prefjudge.scoring.metrics import PASS_KS

    def fmt(row: pd.Series, name: str) -> str:
        value = row[name]
        if pd.isna(value):
            return "—"
        return f"{value:.3f} [{row[f'{name}_lower']:.3f}, {row[f'{name}_upper']:.3f}]"

    optional = [("base_pass1", "base pass@1 [95% CI]"), ("plus_pass1", "plus pass@1 [95% CI]")]
    optional += [(f"pass{k}", f"pass@{k} [95% CI]") for k in PASS_KS if k > 1]
    shown = [(name, title) for name, title in optional
             if name in summary.columns and summary[name].notna().any()]
    rows = []
    for _, row in summary.iterrows():
        rows.append(
            {
                "model": row["model"],
                "n": int(row["n"]),
                "IF instr. [95% CI]": fmt(row, "if_instruction"),
                "IF task [95% CI]": fmt(row, "if_task"),
                "pass@1 [95% CI]": fmt(row, "pass1"),
                **{title: fmt(row, name) for name, title in shown},
                "check err": int(row["check_errors"]),
                "timeouts": int(row["func_timeout"]),
                "test err": int(row["func_error"]),
                **({"gen err": _count(row.get("gen_errors"))}
                   if "gen_errors" in summary.columns else {}),
            }
        )
    return pd.DataFrame(rows)


def _count(value: object) -> int:
    """A count of the summary as an int (0 where it is missing or NaN)."""
    import pandas as pd

    return 0 if value is None or pd.isna(value) else int(value)  # type: ignore[arg-type]


def unrated_notes(summary: pd.DataFrame, *, tests: bool, no_tests: bool = False) -> list[str]:
    """Say why the score table shows "—" for IF or pass@1 (one note per reason).

    A rate that cannot be computed is not a low one: each note names the figure, the
    models it concerns (all of them when none are named) and why, e.g.
    ``pass@1 —: no tests for these tasks: pass --tasks (the benchmark's task file)``.

    Args:
        summary: :func:`prefjudge.scoring.metrics.model_summary`'s table.
        tests: Whether the unit tests were run (there were tasks with tests, and no
            ``--no-tests``).
        no_tests: Whether ``--no-tests`` turned them off.

    Returns:
        The notes, in the order of the first model each concerns (empty when every figure
        shown has a value).
    """
    by_reason: dict[tuple[str, str], list[str]] = {}
    for _, row in summary.iterrows():
        for figure_reason in _unrated_reasons(row, tests=tests, no_tests=no_tests):
            by_reason.setdefault(figure_reason, []).append(str(row["model"]))
    notes = []
    for (figure, reason), named in by_reason.items():
        who = "" if len(named) == len(summary) else f" for {', '.join(named)}"
        notes.append(f"{figure} —{who}: {reason}")
    return notes


def _unrated_reasons(row: pd.Series, *, tests: bool, no_tests: bool) -> list[tuple[str, str]]:
    """``(figure, why)`` for each of IF and pass@1 that one model's row has no value for."""
    import pandas as pd

    n, gen_errors = _count(row.get("n")), _count(row.get("gen_errors"))
    if n == 0:
        failed = f": every generation failed ({gen_errors}, counted as 'gen err')" \
            if gen_errors else ""
        return [("IF and pass@1", f"no answers to rate{failed}")]
    reasons = []
    if pd.isna(row.get("if_instruction")):
        check_errors = _count(row.get("check_errors"))
        reasons.append(("IF", (
            f"no instruction check gave a verdict ({check_errors} ended in error, counted "
            "as 'check err')") if check_errors else
            "no sample had instructions to follow (IF rates the instructions a "
            "generation was asked to follow)"))
    if pd.isna(row.get("pass1")):
        reasons.append(("pass@1", _untested_reason(row, tests=tests, no_tests=no_tests)))
    return reasons


def _untested_reason(row: pd.Series, *, tests: bool, no_tests: bool) -> str:
    """Why a model's row has no pass@1: no tests run, none for its tasks, or only errors."""
    if no_tests:
        return "unit tests were not run (--no-tests)"
    if not tests:
        return "no tests for these tasks: pass --tasks (the benchmark's task file)"
    errors = _count(row.get("func_error"))
    if errors:
        return (f"no test run ended in a verdict ({errors} ended in error, counted as "
                "'test err', not as failures)")
    return "none of these tasks has tests in the task file(s) given with --tasks"


def frame_table(frame: pd.DataFrame, *, title: str = "", result: bool = True) -> TextTable:
    """A DataFrame as a plain-text table: floats with three decimals, numbers aligned right.

    Args:
        frame: Rows to show.
        title: Table title.
        result: Whether the table is a result (stdout) or a note on the run.

    Returns:
        The table, as ``prefjudge.cli.display.print_frame`` would print the frame.
    """
    from pandas.api.types import is_numeric_dtype

    columns = [str(column) for column in frame.columns]
    right = frozenset(str(column) for column in frame.columns if is_numeric_dtype(frame[column]))
    rows = [
        [f"{v:.3f}" if isinstance(v, float) else str(v) for v in row]
        for row in frame.itertuples(index=False)
    ]
    return TextTable(title, columns, rows, right=right, result=result)


__all__ = [
    "SummaryFacts",
    "WrittenSummary",
    "frame_table",
    "load_summary_meanwhile",
    "summary_table",
    "unrated_notes",
    "write_summary",
]
