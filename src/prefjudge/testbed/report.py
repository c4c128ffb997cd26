"""The ``prefjudge report`` page: metric tables and matplotlib plots in HTML and Markdown.

:func:`build_report` turns scored samples (and, optionally, the SWE-IF paper's published
tables) into a :class:`Report`: a list of sections, each with tables (raw frames and
their display form) and at most one PNG figure. :func:`render_html` writes one
self-contained page (CSS inline, figures embedded as base64 PNG data URIs, no external
asset); :func:`render_markdown` writes the same content as Markdown that links its
figures as PNG files beside it (:func:`figure_files`). Nothing here writes or prints.

This module builds the sections; the page's parts (:mod:`.report_types`), its plots
(:mod:`.report_plots`), the judge-bias section (:mod:`.report_bias`) and the rendering
(:mod:`.report_render`) have their own modules, re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from prefjudge.plots import plot_label
from prefjudge.records import ScoredSample
from prefjudge.scoring import metrics
from prefjudge.testbed.report_bias import (
    BIAS_COEFFICIENTS,
    BIAS_RATES,
    coef_text,
    judge_bias_section,
    judge_summary_problem,
    rate_text,
)
from prefjudge.testbed.report_plots import _bar_plot, _figure, _heatmaps, _line_plot, _series_label
from prefjudge.testbed.report_render import (
    NO_FIGURE_FILES,
    figure_files,
    render_html,
    render_markdown,
)
from prefjudge.testbed.report_types import (
    PROTOCOL_NAMES,
    Report,
    ReportSection,
    ReportTable,
    _ci,
    _fmt,
    _plain,
    _protocol_name,
)

__all__ = [
    "BIAS_COEFFICIENTS",
    "BIAS_RATES",
    "NO_FIGURE_FILES",
    "PROTOCOL_NAMES",
    "Report",
    "ReportSection",
    "ReportTable",
    "build_report",
    "coef_text",
    "figure_files",
    "judge_bias_section",
    "judge_summary_problem",
    "rate_text",
    "render_html",
    "render_markdown",
]

# --------------------------------------------------------------------------- sections


def _summary_section(frame: pd.DataFrame, n_resamples: int, seed: int) -> ReportSection:
    summary = metrics.summary_by_protocol(frame, n_resamples=n_resamples, seed=seed)
    rows = []
    for _, r in summary.iterrows():
        rows.append({"model": r["model"], "protocol": _protocol_name(r["protocol"]),
                     "n": int(r["n"]),
                     "pass@1 [95% CI]": _ci(r["pass1"], r["pass1_lower"], r["pass1_upper"]),
                     "IF instr. [95% CI]": _ci(r["if_instruction"], r["if_instruction_lower"],
                                               r["if_instruction_upper"]),
                     "IF task [95% CI]": _ci(r["if_task"], r["if_task_lower"],
                                             r["if_task_upper"]),
                     "check err": int(r["check_errors"]), "timeouts": int(r["func_timeout"]),
                     "test err": int(r["func_error"])})
    long = []
    for _, r in summary.iterrows():
        for metric in ("pass1", "if_instruction", "if_task"):
            long.append({"model": r["model"], "protocol": r["protocol"], "metric": metric,
                         "value": r[metric], "lower": r[f"{metric}_lower"],
                         "upper": r[f"{metric}_upper"]})
    figure = _bar_plot(pd.DataFrame(long), "metric", ylabel="score (95 % CI)")
    return ReportSection(
        "summary", "Per model and protocol",
        "All samples of a model and protocol pooled over k. pass@1 is the mean over tasks "
        "of the share of samples passing their tests; IF instr. the mean share of a "
        "sample's instructions followed; IF task the share of samples following all of "
        "them. Below, unbiased pass@k (Chen et al., 2021): the mean over tasks of "
        "1 - C(n - c, k) / C(n, k), n a task's judged samples and c those that pass, for "
        f"k in {', '.join(map(str, metrics.PASS_KS))} where every task has at least k "
        "samples (EvalPlus's rule); 'base' counts HumanEval+/MBPP+ samples on the base "
        "inputs alone and 'base + plus' on both input sets, as EvalPlus reports them. "
        "Intervals: 95 % percentile bootstrap over tasks. Errors are left out of every "
        "figure and counted apart.",
        [ReportTable("Summary per model and protocol", summary, pd.DataFrame(rows)),
         _pass_at_k_table(frame, n_resamples, seed)], figure)


TESTS_NAMES = {"all": "all tests", "base": "base", "plus": "base + plus"}
"""How the functional section names each figure of :data:`prefjudge.scoring.metrics.TEST_SETS`."""


def _pass_at_k_table(frame: pd.DataFrame, n_resamples: int, seed: int) -> ReportTable:
    """pass@k per model, protocol and tests (all, EvalPlus's base, base + plus)."""
    table = metrics.pass_at_k_by_protocol(frame, n_resamples=n_resamples, seed=seed)
    wide = pd.DataFrame(columns=["model", "protocol", "tests", "n_tasks"])
    if len(table):
        cells = table.assign(
            cell=[_ci(v, lo, hi) for v, lo, hi in
                  zip(table["value"], table["lower"], table["upper"], strict=True)],
            column=[f"pass@{k} [95% CI]" for k in table["k"]],
        )
        # in the table's order: protocol (single, multi, others), model, tests (all, base, plus)
        wide = cells.pivot_table(index=["model", "protocol", "tests"], columns="column",
                                 values="cell", aggfunc="first", sort=False).reset_index()
        wide.columns.name = None
        counts = (table[table["k"] == 1].set_index(["model", "protocol", "tests"])["n_tasks"])
        wide["n_tasks"] = [counts.get((m, p, t), "—") for m, p, t in
                           zip(wide["model"], wide["protocol"], wide["tests"], strict=True)]
        wide = wide.assign(protocol=wide["protocol"].map(_protocol_name),
                           tests=wide["tests"].map(TESTS_NAMES)).fillna("—")
        shown = [f"pass@{k} [95% CI]" for k in metrics.PASS_KS
                 if f"pass@{k} [95% CI]" in wide.columns]
        wide = wide[["model", "protocol", "tests", *shown, "n_tasks"]].reset_index(drop=True)
    return ReportTable("pass@k per model, protocol and tests", table, wide)


def _by_k_section(frame: pd.DataFrame, n_resamples: int, seed: int) -> ReportSection:
    by_k = metrics.metrics_by_k(frame, n_resamples=n_resamples, seed=seed)
    display = by_k.assign(
        protocol=by_k["protocol"].map(_protocol_name),
        **{"value [95% CI]": [_ci(v, lo, hi) for v, lo, hi in
                              zip(by_k["value"], by_k["lower"], by_k["upper"], strict=True)]},
    )[["model", "protocol", "k", "metric", "value [95% CI]", "n_tasks"]]
    wide = pd.DataFrame(columns=["model", "protocol", "k"])
    if len(display):
        wide = display.pivot_table(index=["model", "protocol", "k"], columns="metric",
                                   values="value [95% CI]", aggfunc="first").reset_index()
        wide.columns.name = None
        wide = wide.rename(columns={"pass1": "pass@1", "if_instruction": "IF instr.",
                                    "if_task": "IF task"}).fillna("—")
    figure = _line_plot(by_k, "k", panels=[("pass1", "pass@1"),
                                           ("if_instruction", "instruction-level IF"),
                                           ("if_task", "task-level IF")],
                        ylabel="score (95 % CI)", ylim=(0, 1.05))
    return ReportSection(
        "by_k", "pass@1 and IF by number of instructions k",
        "Each k is its own set of samples (the first k instructions of each task).",
        [ReportTable("pass@1, instruction-level and task-level IF by k", by_k, wide)], figure)


def _fr_section(frame: pd.DataFrame, n_resamples: int, seed: int) -> ReportSection:
    fr = metrics.functional_regression_by_protocol(frame, n_resamples=n_resamples, seed=seed)
    display = pd.DataFrame({
        "model": fr["model"], "protocol": fr["protocol"].map(_protocol_name), "k": fr["k"],
        "S0": [_fmt(v) for v in fr["s0"]], "Sk": [_fmt(v) for v in fr["sk"]],
        "FR_k % [95% CI]": [_ci(v, lo, hi, scale=100.0, digits=2) for v, lo, hi in
                            zip(fr["fr"], fr["lower"], fr["upper"], strict=True)],
        "tasks": fr["n_tasks"],
    })
    figure = _line_plot(fr.rename(columns={"fr": "value"}), "k", ylabel="FR_k (%)",
                        scale=100.0, hline=0.0)
    text = ("FR_k = (S0 − Sk) / S0: relative drop of pass@1 when k instructions are added, "
            "over the tasks run both with 0 and with k instructions (positive: worse "
            "functionally). A protocol without its own k = 0 runs uses the other's.")
    if fr.empty:
        text += " No model has both k = 0 and k > 0 samples, so FR_k cannot be computed."
    return ReportSection("fr", "Functional regression FR_k", text,
                         [ReportTable("FR_k per model, protocol and k", fr, display)], figure)


def _if_by_section(checks: pd.DataFrame, key: str, title: str, n_resamples: int,
                   seed: int) -> ReportSection:
    table = metrics.if_by_protocol(checks, key, n_resamples=n_resamples, seed=seed)
    display = pd.DataFrame({
        "model": table["model"], "protocol": table["protocol"].map(_protocol_name),
        key: table[key],
        "IF [95% CI]": [_ci(v, lo, hi) for v, lo, hi in
                        zip(table["value"], table["lower"], table["upper"], strict=True)],
        "checks": table["n_checks"], "errors": table["errors"],
    })
    if key == "position":
        figure = _line_plot(table, key, ylabel="instruction-level IF", ylim=(0, 1.05))
    elif key == "category":
        figure = _bar_plot(table, key, ylabel="instruction-level IF")
    else:
        wide = table.assign(series=[_series_label(m, p) for m, p in
                                    zip(table["model"], table["protocol"], strict=True)])
        figure = _heatmaps([("all models", wide)], row=key, col="series", value="value",
                           title="instruction-level IF")
    texts = {
        "position": "Pass rate of the instruction at each position of the prompt (single-"
                    "turn) or turn order (multi-turn).",
        "category": "Pass rate per VeriCode category.",
        "instruction": "Pass rate per instruction.",
    }
    return ReportSection(f"if_{key}", title, texts.get(key, ""),
                         [ReportTable(f"IF by {key}", table, display)], figure)


def _co_failure_section(checks: pd.DataFrame, min_count: int) -> ReportSection:
    table = metrics.co_failure(checks, min_count=min_count, by=("model", "protocol"))
    display = _plain(table.assign(protocol=table["protocol"].map(_protocol_name)))
    groups = []
    for (model, protocol), part in table.groupby(["model", "protocol"], sort=True):
        if not np.isfinite(part["lift"].to_numpy(dtype=float)).any():
            continue
        mirrored = pd.concat([part, part.rename(columns={"instruction_a": "instruction_b",
                                                         "instruction_b": "instruction_a"})])
        groups.append((_series_label(model, protocol), mirrored))
    figure = _heatmaps(groups, row="instruction_a", col="instruction_b", value="lift",
                       title="co-failure lift", center=1.0)
    text = (f"For each pair of instructions given together in at least {min_count} samples "
            "of a model and protocol (both checks determinable): the failure rate of each, "
            "the observed rate at which both fail (joint_fail), what independence predicts "
            "(expected = fail_a · fail_b) and lift = joint_fail / expected (above 1: they "
            "fail together more than chance). Sorted by lift.")
    if table.empty:
        text += " No pair reaches the threshold."
    return ReportSection("co_failure", "Co-failure matrix", text,
                         [ReportTable("Co-failure per instruction pair", table, display)],
                         figure)


def _retention_section(turns: pd.DataFrame, n_resamples: int, seed: int) -> ReportSection:
    curve = metrics.retention_curve(turns, n_resamples=n_resamples, seed=seed)
    final = metrics.final_retention(turns, n_resamples=n_resamples, seed=seed)
    final_display = pd.DataFrame({
        "model": final["model"], "protocol": final["protocol"].map(_protocol_name),
        "final retention [95% CI]": [_ci(v, lo, hi) for v, lo, hi in
                                     zip(final["value"], final["lower"], final["upper"],
                                         strict=True)],
        "ever broken": [_fmt(v) for v in final["ever_broken"]], "instructions": final["n"],
    })
    curve_display = pd.DataFrame({
        "model": curve["model"], "protocol": curve["protocol"].map(_protocol_name),
        "turn": curve["turn"],
        "retention [95% CI]": [_ci(v, lo, hi) for v, lo, hi in
                               zip(curve["value"], curve["lower"], curve["upper"],
                                   strict=True)],
        "instructions": curve["n"],
    })
    text = ("Multi-turn only. Of the instructions a model satisfied at the turn that "
            "introduced them, the share still satisfied at each later turn (curve) and at "
            "the final, scored turn; 'ever broken' is the share failing at some later turn, "
            "even if restored.")
    if turns.empty:
        text += " No record carries per-turn results (turn_results)."
    figure = _line_plot(curve, "turn", ylabel="retention", ylim=(0, 1.05))
    return ReportSection("retention", "Multi-turn retention", text,
                         [ReportTable("Final retention", final, final_display),
                          ReportTable("Retention by turn", curve, curve_display)], figure)


def _paper_section(directory: Path) -> ReportSection:
    from prefjudge.testbed import paper_tables

    scores = paper_tables.load_paper_scores(directory)
    fr = paper_tables.paper_functional_regression(scores.func)
    wide = paper_tables.fr_wide(fr)
    average = paper_tables.paper_average_regression(scores.func)
    task_if = (scores.if_[scores.if_["level"] == "task"]
               .groupby(["benchmark", "protocol", "k"], sort=True)["score"].mean()
               .reset_index())
    position = (scores.position.groupby(["benchmark", "protocol", "position"], sort=True)
                ["score"].mean().reset_index())

    def draw(fig: Any) -> None:
        axes = fig.subplots(1, 3)
        panels = [(average, "k", "fr", "FR_k (%) of the model average"),
                  (task_if, "k", "score", "task-level IF (%), model average"),
                  (position, "position", "score", "instruction-level IF (%) by position")]
        for ax, (data, x, y, title) in zip(axes, panels, strict=True):
            for (bench, protocol), group in data.groupby(["benchmark", "protocol"], sort=True):
                ax.plot(group[x], group[y], "-" if protocol == "single" else "--", marker="o",
                        label=f"{plot_label(bench)} ({_protocol_name(protocol)})")
            ax.set_title(title, fontsize="small")
            ax.set_xlabel(x)
            ax.grid(True, linestyle=":", alpha=0.6)
        axes[0].legend(fontsize="x-small")

    figure = _figure(draw, size=(16, 4.5))
    wide_display = wide.assign(protocol=wide["protocol"].map(_protocol_name))
    wide_display = _plain(wide_display, digits=2)
    average_display = _plain(average.assign(protocol=average["protocol"].map(_protocol_name)),
                             digits=2)
    func_wide = scores.func.assign(protocol=scores.func["protocol"].map(_protocol_name))
    func_wide = func_wide.pivot_table(index=["benchmark", "model", "protocol"], columns="k",
                                        values="score", sort=False).reset_index()
    func_wide.columns = [f"S_{c}" if isinstance(c, int | np.integer) else c
                         for c in func_wide.columns]
    return ReportSection(
        "paper", "SWE-IF paper tables (rebuilt from the published per-model CSVs)",
        f"Read from {directory}. Scores in percent as published. FR_k = (S0 − Sk) / S0 · 100 "
        "with S0 the single-turn 0-instruction score for both protocols, as in the paper's "
        "code (positive: functional score dropped).",
        [ReportTable("Paper FR_k (%) per model and protocol", fr, wide_display),
         ReportTable("Paper FR_k (%) of the model-averaged functional score", average,
                     average_display),
         ReportTable("Paper functional scores (%) by k", scores.func,
                     _plain(func_wide, digits=2))],
        figure)


# --------------------------------------------------------------------------- build


def _categories() -> dict[str, str]:
    from prefjudge.scoring.taxonomy import TaxonomyError, load_taxonomy

    try:
        return {spec.id: spec.category for spec in load_taxonomy()}
    except (TaxonomyError, OSError):  # the taxonomy only names categories here
        return {}


def build_report(
    records: Iterable[ScoredSample | dict[str, Any]],
    *,
    title: str = "prefjudge report",
    source: str = "",
    paper_dir: Path | None = None,
    min_pairs: int = 5,
    n_resamples: int = metrics.DEFAULT_RESAMPLES,
    seed: int = metrics.DEFAULT_SEED,
    categories: dict[str, str] | None = None,
    judge_summary: dict[str, Any] | None = None,
) -> Report:
    """Compute every table and plot of the report.

    Args:
        records: Scored samples (records or their JSON dicts).
        title: Page title.
        source: Where the records came from (shown on the page).
        paper_dir: Folder of the SWE-IF paper's per-model CSVs, to add their tables.
        min_pairs: Fewest shared samples for a pair to enter the co-failure matrix.
        n_resamples: Bootstrap resamples.
        seed: Bootstrap seed.
        categories: Instruction id -> category (default: the bundled taxonomy).
        judge_summary: A ``judge-eval`` ``summary.json``, to add the judge-bias section.

    Returns:
        The report, ready for :func:`render_html` or :func:`render_markdown`.
    """
    parsed = [r if isinstance(r, ScoredSample) else ScoredSample.model_validate(r)
              for r in records]
    frame = metrics.samples_frame(parsed)
    checks = metrics.checks_frame(parsed, categories if categories is not None
                                  else _categories())
    turns = metrics.turns_frame(parsed)
    report = Report(title=title)
    if source:
        report.facts.append(f"scores: {source}")
    report.facts.append(f"{len(parsed)} scored samples, {frame['model'].nunique()} models, "
                        f"{frame['task_id'].nunique()} tasks, protocols: "
                        f"{', '.join(sorted(set(frame['protocol'])) or ['—'])}")
    report.facts.append(f"bootstrap: {n_resamples} resamples over tasks, seed {seed}")
    if parsed:
        report.sections += [
            _summary_section(frame, n_resamples, seed),
            _by_k_section(frame, n_resamples, seed),
            _fr_section(frame, n_resamples, seed),
            _if_by_section(checks, "position", "IF by instruction position", n_resamples, seed),
            _if_by_section(checks, "category", "IF by category", n_resamples, seed),
            _if_by_section(checks, "instruction", "IF by instruction", n_resamples, seed),
            _co_failure_section(checks, min_pairs),
            _retention_section(turns, n_resamples, seed),
        ]
    if paper_dir is not None:
        report.sections.append(_paper_section(Path(paper_dir)))
    if judge_summary is not None:
        report.sections.append(judge_bias_section(judge_summary))
    return report
