"""Figures of the scoring stage.

Drawn on a :class:`matplotlib.figure.Figure` with the Agg canvas rather than through
``matplotlib.pyplot``: the figure is written to a file, never shown, so pyplot's figure
manager and backend machinery are not needed (nor imported).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from prefjudge.plots import ci_bars, plot_labels

if TYPE_CHECKING:
    import pandas as pd


def save_summary_plot(summary: pd.DataFrame, path: Path) -> None:
    """Bar chart of IF (instruction, task) and pass@1 per model with 95 % CIs.

    EvalPlus's base and plus pass@1 get bars of their own when some model has them
    (HumanEval+/MBPP+ samples).

    Args:
        summary: Output of :func:`prefjudge.scoring.metrics.model_summary`.
        path: PNG file to write.
    """
    metrics = [
        ("if_instruction", "IF (instruction)"),
        ("if_task", "IF (task)"),
        ("pass1", "pass@1"),
    ]
    metrics += [(name, label) for name, label in (("base_pass1", "base pass@1"),
                                                  ("plus_pass1", "plus pass@1"))
                if name in summary.columns and summary[name].notna().any()]
    models = plot_labels(summary["model"])
    fig = agg_figure((max(5.0, 1.6 * len(models) + 2), 4))
    ax = fig.add_subplot()
    x = ci_bars(ax, summary, [(m, f"{m}_lower", f"{m}_upper", label) for m, label in metrics])
    ax.set_xticks(x, models, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score (95 % CI)")
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def agg_figure(figsize: tuple[float, float]) -> Figure:
    """A figure of ``figsize`` inches on the Agg canvas, as ``pyplot.figure`` makes one.

    Args:
        figsize: Width and height in inches.

    Returns:
        The figure (let go when unreferenced: no pyplot figure manager holds it).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


if TYPE_CHECKING:
    from matplotlib.figure import Figure
