"""The ``prefjudge report`` page: metric tables and matplotlib plots in HTML and Markdown.

:func:`build_report` turns scored samples (and, optionally, the SWE-IF paper's published
tables) into a :class:`Report`: a list of sections, each with tables (raw frames and
their display form) and at most one PNG figure. :func:`render_html` writes one
self-contained page (CSS inline, figures embedded as base64 PNG data URIs, no external
asset); :func:`render_markdown` writes the same content as Markdown that links its
figures as PNG files beside it (:func:`figure_files`). Nothing here writes or prints.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from prefjudge.plots import LABEL_WIDTH, plot_label, plot_labels, pyplot
from prefjudge.records import ScoredSample
from prefjudge.reporting import TEXT_WIDTH, display_name, display_text
from prefjudge.scoring import metrics

PROTOCOL_NAMES = {"single": "single-turn", "multi": "multi-turn"}


@dataclass
class ReportTable:
    """One table of a section.

    Attributes:
        caption: What the table shows.
        data: The numbers (raw metric frame).
        display: The same rows formatted for reading (strings).
    """

    caption: str
    data: pd.DataFrame
    display: pd.DataFrame


@dataclass
class ReportSection:
    """A section of the report.

    Attributes:
        key: Stable identifier (used as the HTML anchor).
        title: Heading.
        text: A short explanation shown under the heading.
        tables: Tables, in order.
        figure: PNG bytes of the section's plot, or None.
    """

    key: str
    title: str
    text: str = ""
    tables: list[ReportTable] = field(default_factory=list)
    figure: bytes | None = None

    def table(self, caption_start: str) -> ReportTable:
        """The first table whose caption starts with ``caption_start``.

        Raises:
            KeyError: When there is none.
        """
        for table in self.tables:
            if table.caption.startswith(caption_start):
                return table
        raise KeyError(caption_start)


@dataclass
class Report:
    """A whole report: a title, a few facts about the input, and sections."""

    title: str
    facts: list[str] = field(default_factory=list)
    sections: list[ReportSection] = field(default_factory=list)

    def section(self, key: str) -> ReportSection:
        """The section with this key.

        Raises:
            KeyError: When there is none.
        """
        for section in self.sections:
            if section.key == key:
                return section
        raise KeyError(key)


# --------------------------------------------------------------------------- formatting


def _ci(value: float, lower: float, upper: float, *, scale: float = 1.0, digits: int = 3) -> str:
    if pd.isna(value):
        return "—"
    text = f"{value * scale:.{digits}f}"
    if pd.isna(lower) or pd.isna(upper):
        return text
    return f"{text} [{lower * scale:.{digits}f}, {upper * scale:.{digits}f}]"


def _fmt(value: Any, digits: int = 3) -> str:
    if isinstance(value, float | np.floating):
        return "—" if np.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def _plain(frame: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """Every cell as a string; floats with ``digits`` decimals."""
    return frame.map(lambda v: _fmt(v, digits)) if len(frame) else frame.astype(str)


def _protocol_name(protocol: str) -> str:
    return PROTOCOL_NAMES.get(protocol, protocol)


# --------------------------------------------------------------------------- plots


def _figure(draw: Callable[[Any], None], *, size: tuple[float, float]) -> bytes:
    """Run ``draw(fig)`` on a new figure and return it as PNG bytes."""
    plt = pyplot()

    fig = plt.figure(figsize=size)
    try:
        draw(fig)
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=90)
    finally:
        plt.close(fig)
    return buffer.getvalue()


def _series_label(model: str, protocol: str) -> str:
    """``model (protocol)``, the model's name cut to a plot label's width (not escaped)."""
    return f"{display_name(model, LABEL_WIDTH)} ({_protocol_name(protocol)})"


def _legend(model: str, protocol: str) -> str:
    return plot_label(_series_label(model, protocol), 2 * LABEL_WIDTH)


def _line_plot(frame: pd.DataFrame, x: str, *, panels: Sequence[tuple[str, str]] | None = None,
               ylabel: str, scale: float = 1.0, ylim: tuple[float, float] | None = None,
               hline: float | None = None) -> bytes | None:
    """Lines with CI bands per model and protocol; one panel per (metric, title)."""
    if frame.empty:
        return None
    from matplotlib.ticker import MaxNLocator

    panels = panels or [("", "")]

    def draw(fig: Any) -> None:
        axes = fig.subplots(1, len(panels), squeeze=False)[0]
        for ax, (metric, title) in zip(axes, panels, strict=True):
            part = frame[frame["metric"] == metric] if metric else frame
            for (model, protocol), group in part.groupby(["model", "protocol"], sort=True):
                group = group.sort_values(x)
                xs = group[x].to_numpy(dtype=float)
                ys = group["value"].to_numpy(dtype=float) * scale
                style = "-" if protocol == "single" else "--"
                (line,) = ax.plot(xs, ys, style, marker="o",
                                  label=_legend(model, protocol))
                if {"lower", "upper"} <= set(group.columns):
                    ax.fill_between(xs, group["lower"].to_numpy(dtype=float) * scale,
                                    group["upper"].to_numpy(dtype=float) * scale,
                                    color=line.get_color(), alpha=0.15)
            if hline is not None:
                ax.axhline(hline, color="grey", linewidth=0.8)
            ax.set_title(title)
            ax.set_xlabel(x)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_ylabel(ylabel)
            if ylim:
                ax.set_ylim(*ylim)
            ax.grid(True, linestyle=":", alpha=0.6)
        axes[0].legend(fontsize="small")

    return _figure(draw, size=(5.5 * len(panels), 4))


def _bar_plot(frame: pd.DataFrame, key: str, *, ylabel: str) -> bytes | None:
    """Grouped bars of ``value`` (with CIs) per ``key``, one bar per model and protocol."""
    if frame.empty:
        return None
    keys = list(dict.fromkeys(frame[key]))
    series = list(frame.groupby(["model", "protocol"], sort=True))

    def draw(fig: Any) -> None:
        ax = fig.subplots()
        x = np.arange(len(keys))
        width = 0.8 / max(len(series), 1)
        for i, ((model, protocol), group) in enumerate(series):
            group = group.set_index(key).reindex(keys)
            values = np.nan_to_num(group["value"].to_numpy(dtype=float))
            low = np.clip(np.nan_to_num(values - group["lower"].to_numpy(dtype=float)), 0, None)
            high = np.clip(np.nan_to_num(group["upper"].to_numpy(dtype=float) - values), 0, None)
            ax.bar(x + (i - (len(series) - 1) / 2) * width, values, width,
                   yerr=[low.tolist(), high.tolist()], capsize=2,
                   label=_legend(model, protocol))
        ax.set_xticks(x, plot_labels(keys), rotation=45 if len(keys) > 6 else 0,
                      ha="right" if len(keys) > 6 else "center")
        ax.set_ylim(0, 1.05)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize="small")

    return _figure(draw, size=(max(6.0, 0.45 * len(keys) * max(len(series), 1) + 3), 4))


def _heatmaps(frames: list[tuple[str, pd.DataFrame]], *, row: str, col: str, value: str,
              title: str, center: float | None = None) -> bytes | None:
    """One annotated heatmap per (title, frame)."""
    frames = [(t, f) for t, f in frames if not f.empty][:6]
    if not frames:
        return None

    def draw(fig: Any) -> None:
        axes = fig.subplots(1, len(frames), squeeze=False)[0]
        for ax, (name, part) in zip(axes, frames, strict=True):
            grid = part.pivot_table(index=row, columns=col, values=value, aggfunc="mean")
            data = grid.to_numpy(dtype=float)
            if center is None:
                image = ax.imshow(data, cmap="viridis", vmin=0, vmax=1, aspect="auto")
            else:
                finite = data[np.isfinite(data)]
                spread = max(float(np.abs(finite - center).max()) if finite.size else 1.0, 0.5)
                image = ax.imshow(data, cmap="RdBu_r", vmin=center - spread,
                                  vmax=center + spread, aspect="auto")
            ax.set_xticks(range(len(grid.columns)), plot_labels(grid.columns, 2 * LABEL_WIDTH),
                          rotation=60, ha="right", fontsize="small")
            ax.set_yticks(range(len(grid.index)), plot_labels(grid.index), fontsize="small")
            if data.size <= 120:
                for (i, j), v in np.ndenumerate(data):
                    if np.isfinite(v):
                        ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7)
            ax.set_title(f"{title}\n{plot_label(name, 2 * LABEL_WIDTH)}", fontsize="small")
            fig.colorbar(image, ax=ax, shrink=0.8)

    width = max(5.0, 0.5 * max(f[col].nunique() for _, f in frames) + 3)
    height = max(3.5, 0.35 * max(f[row].nunique() for _, f in frames) + 2)
    return _figure(draw, size=(width * len(frames), height))


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


def rate_text(entry: dict[str, Any]) -> str:
    """A bias rate as ``61.3 % [55–67] (n=120)`` (``n/a`` when undefined)."""
    if entry.get("rate") is None:
        return "n/a"
    ci = entry.get("ci")
    band = f" [{100 * ci[0]:.0f}–{100 * ci[1]:.0f}]" if ci else ""
    return f"{100 * entry['rate']:.1f} %{band} (n={entry['n']})"


def coef_text(regression: dict[str, Any], name: str) -> str:
    """A style-regression coefficient as ``+0.72 [+0.37, +1.17]`` (``n/a`` when absent)."""
    coef = regression.get("coefficients", {}).get(name)
    if coef is None:
        return "n/a"
    ci = coef.get("ci")
    band = f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else ""
    return f"{coef['value']:+.2f}{band}"


def _coef_value(regression: dict[str, Any], name: str) -> float:
    coef = regression.get("coefficients", {}).get(name)
    return float("nan") if coef is None else float(coef["value"])


BIAS_RATES = ("first_shown", "longer", "more_formatted")
"""The bias rates of a ``judge-eval`` summary the report shows, per judge and humans."""

BIAS_COEFFICIENTS = ("token_len", "markdown")
"""The style-regression coefficients the report shows."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _interval_problem(value: Any) -> str | None:
    if value is None or (isinstance(value, list) and len(value) == 2
                         and all(_is_number(v) for v in value)):
        return None
    return "must be null or a list of two numbers"


def _bias_problem(bias: Any) -> tuple[str, str] | None:
    """The first field of one method's ``bias`` entry the report cannot use, or None."""
    if not isinstance(bias, dict):
        return "", "must be an object"
    for key in BIAS_RATES:
        for who in ("judge", "human"):
            entry = bias.get(key, {}).get(who) if isinstance(bias.get(key), dict) else None
            if not isinstance(entry, dict):
                return f".{key}.{who}", "is missing (an object with rate, ci and n)"
            rate = entry.get("rate")
            if rate is not None and not _is_number(rate):
                return f".{key}.{who}.rate", "must be a number or null"
            if rate is not None and not _is_number(entry.get("n")):
                return f".{key}.{who}.n", "must be a number"
            if problem := _interval_problem(entry.get("ci")):
                return f".{key}.{who}.ci", problem
    regressions = bias.get("style_regression")
    for who in ("judge", "human"):
        regression = regressions.get(who) if isinstance(regressions, dict) else None
        if not isinstance(regression, dict):
            return f".style_regression.{who}", "is missing (an object with coefficients)"
        coefficients = regression.get("coefficients", {})
        if not isinstance(coefficients, dict):
            return f".style_regression.{who}.coefficients", "must be an object"
        for name in BIAS_COEFFICIENTS:
            coef = coefficients.get(name)
            where = f".style_regression.{who}.coefficients.{name}"
            if coef is None:
                continue
            if not isinstance(coef, dict) or not _is_number(coef.get("value")):
                return where + ".value", "must be a number"
            if problem := _interval_problem(coef.get("ci")):
                return where + ".ci", problem
    return None


def judge_summary_problem(summary: Any) -> tuple[str, str] | None:
    """The first field of a ``judge-eval`` summary that :func:`judge_bias_section` cannot use.

    Args:
        summary: The parsed ``summary.json``.

    Returns:
        ``(field, problem)``, e.g. ``("methods.pairwise.bias.longer.human", "is missing
        ...")``, or None when the section can be built from it.
    """
    if not isinstance(summary, dict) or not isinstance(summary.get("methods"), dict):
        return "methods", "is missing (an object of methods)"
    for method, result in summary["methods"].items():
        if not isinstance(result, dict):
            return f"methods.{method}", "must be an object"
        if not result.get("bias"):
            continue
        if found := _bias_problem(result["bias"]):
            return f"methods.{method}.bias{found[0]}", found[1]
    return None


def judge_bias_section(summary: dict[str, Any]) -> ReportSection:
    """The judge's biases beside the humans', from a ``judge-eval`` ``summary.json``.

    Args:
        summary: The parsed summary (its methods' ``bias`` entries are used); one that
            :func:`judge_summary_problem` accepts.

    Returns:
        A section with one table: per method, the judge's and the humans' rates of picking
        the first-shown, longer and more formatted response, and the style regression's
        length and markdown coefficients, each with its 95 % interval.
    """
    rows, shown_rows = [], []
    tokenizer = "?"
    for method, result in summary.get("methods", {}).items():
        bias = result.get("bias")
        if not bias:
            continue
        tokenizer = bias.get("tokenizer", tokenizer)
        for who in ("judge", "human"):
            regression = bias["style_regression"][who]
            length, length_text = _coef_value(regression, "token_len"), coef_text(
                regression, "token_len")
            markdown, markdown_text = _coef_value(regression, "markdown"), coef_text(
                regression, "markdown")
            rates = {key: bias[key][who] for key in BIAS_RATES}
            rows.append({"method": method, "who": who,
                         **{key: rates[key].get("rate") for key in rates},
                         "length_coef": length, "markdown_coef": markdown})
            shown_rows.append({"method": method, "who": who,
                               **{"picks " + key.replace("_", " "): rate_text(rates[key])
                                  for key in rates},
                               "length coef.": length_text, "markdown coef.": markdown_text})
    text = (f"From judge-eval on {summary.get('pairs', '?')} labelled pairs "
            f"({summary.get('pairs_file', '')}): how often each judge and the humans pick the "
            "first-shown, the longer and the more formatted response, and a logistic "
            "regression of their choices on the standardised length and markdown differences "
            f"(95 % bootstrap intervals; tokens: {tokenizer}).")
    return ReportSection(
        key="judge-bias", title="Judge bias beside the humans'", text=text,
        tables=[ReportTable("judge and human picks on the same pairs", pd.DataFrame(rows),
                            pd.DataFrame(shown_rows))],
    )


# --------------------------------------------------------------------------- render

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; padding: 0 1em; }
h1 { border-bottom: 2px solid #ccc; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
caption { caption-side: top; font-weight: bold; text-align: left; padding: 4px 0; }
img { max-width: 100%; display: block; margin: 0.5em 0; }
.facts { color: #555; } nav a { margin-right: 1em; }
"""


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _html_table(table: ReportTable) -> str:
    frame = table.display
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "\n".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>"
        for row in frame.itertuples(index=False)
    )
    if frame.empty:
        body = f'<tr><td colspan="{max(len(frame.columns), 1)}">no rows</td></tr>'
    return (f"<table><caption>{html.escape(table.caption)}</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>")


def render_html(report: Report) -> str:
    """One self-contained HTML page: inline CSS, figures as base64 PNG data URIs.

    Args:
        report: Output of :func:`build_report`.

    Returns:
        The page.
    """
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{html.escape(report.title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{html.escape(report.title)}</h1>"]
    parts += [f'<p class="facts">{html.escape(fact)}</p>' for fact in report.facts]
    parts.append("<nav>" + "".join(f'<a href="#{s.key}">{html.escape(s.title)}</a>'
                                   for s in report.sections) + "</nav>")
    for section in report.sections:
        parts.append(f'<section id="{section.key}"><h2>{html.escape(section.title)}</h2>')
        if section.text:
            parts.append(f"<p>{html.escape(section.text)}</p>")
        if section.figure:
            parts.append(f'<img alt="{html.escape(section.title)}" '
                         f'src="{_data_uri(section.figure)}">')
        parts += [_html_table(table) for table in section.tables]
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _cell(value: Any) -> str:
    """A table cell as the page shows it: at most :data:`TEXT_WIDTH` characters."""
    return display_text(_fmt(value), TEXT_WIDTH)


def _md_cell(value: Any) -> str:
    return _cell(value).replace("|", "\\|").replace("\n", " ")


def _md_table(table: ReportTable) -> str:
    frame = table.display
    lines = [f"**{table.caption}**", ""]
    if frame.empty:
        return "\n".join([*lines, "_no rows_", ""])
    lines.append("| " + " | ".join(_md_cell(c) for c in frame.columns) + " |")
    lines.append("|" + "|".join("---" for _ in frame.columns) + "|")
    lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |"
              for row in frame.itertuples(index=False)]
    return "\n".join([*lines, ""])


def figure_files(report: Report, markdown: Path) -> dict[str, Path]:
    """Where the Markdown report's figures go: next to it, ``<stem>-<section>.png``.

    Args:
        report: Output of :func:`build_report`.
        markdown: The Markdown file.

    Returns:
        Section key → PNG file, for the sections with a figure.
    """
    return {section.key: markdown.with_name(f"{markdown.stem}-{section.key}.png")
            for section in report.sections if section.figure}


NO_FIGURE_FILES = "_(plot left out: the Markdown went to stdout; the HTML report has it)_"
"""What the Markdown shows in place of a plot when it has no folder to link the file from."""


def render_markdown(report: Report, figures: dict[str, Path] | None = None) -> str:
    """The report as Markdown; its figures are PNG files it links to.

    Args:
        report: Output of :func:`build_report`.
        figures: Section key → PNG file holding that section's figure
            (:func:`figure_files`), linked by its name (the Markdown is in the same
            folder); None: no file to link (the Markdown goes to stdout), a line says
            the plot is in the HTML report.

    Returns:
        The Markdown text.
    """
    lines = [f"# {report.title}", ""]
    lines += [f"- {fact}" for fact in report.facts]
    lines.append("")
    for section in report.sections:
        lines += [f"## {section.title}", ""]
        if section.text:
            lines += [section.text, ""]
        if section.figure:
            link = None if figures is None else figures.get(section.key)
            image = f"![{section.title}]({quote(link.name)})" if link else NO_FIGURE_FILES
            lines += [image, ""]
        lines += [_md_table(table) for table in section.tables]
    return "\n".join(lines)
