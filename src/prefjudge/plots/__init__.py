"""Figures: one matplotlib setup (headless, Agg) and the helpers every figure shares.

Every figure module gets pyplot from :func:`pyplot`, so the backend is chosen in one place
and a figure never needs a display: :mod:`.score` (the score summary), :mod:`.ranking`
(ratings and the composite sweep); the judge's, the personas' and the report's figures
use the same helpers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from prefjudge.reporting import display_names

LABEL_WIDTH = 40
"""Most characters of a name (model, method, task) a plot shows: a 4 MiB model name costs
a figure no more than a 40-character one (the full names are in the CSV/JSON beside it)."""


def plot_labels(names: Sequence[object], width: int = LABEL_WIDTH) -> list[str]:
    """Names as a figure shows them: cut in the middle, kept apart, drawn literally.

    :func:`prefjudge.reporting.display_names` shortens them; a ``$`` is escaped so that
    matplotlib draws it instead of reading mathtext (``a$b$`` would fail to draw).

    Args:
        names: Tick labels, legend entries or a title's names.
        width: Most characters per name.

    Returns:
        The labels, in order.
    """
    return [name.replace("$", r"\$") for name in display_names(list(names), width)]


def plot_label(name: object, width: int = LABEL_WIDTH) -> str:
    """One name as a figure shows it (:func:`plot_labels`).

    Args:
        name: A model name, method, title ...
        width: Most characters shown.

    Returns:
        The label.
    """
    return plot_labels([name], width)[0]


def pyplot() -> Any:
    """Return ``matplotlib.pyplot`` set up for files, not screens (the Agg backend).

    Returns:
        The ``matplotlib.pyplot`` module.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def ci_bars(ax: Any, frame: pd.DataFrame, series: Sequence[tuple[str, str, str, str]]) -> Any:
    """Draw grouped bars with asymmetric interval error bars, one group per row of ``frame``.

    Args:
        ax: A matplotlib axes.
        frame: One row per group.
        series: ``(value column, lower column, upper column, legend label)`` per bar in a
            group; NaN values draw as 0 with no error bar.

    Returns:
        The group centres on the x axis (for tick labels).
    """
    x = np.arange(len(frame))
    width = 0.8 / len(series)
    for offset, (value, low, high, label) in enumerate(series):
        values = frame[value].to_numpy(dtype=float)
        lower = np.clip(np.nan_to_num(values - frame[low].to_numpy(dtype=float)), 0.0, None)
        upper = np.clip(np.nan_to_num(frame[high].to_numpy(dtype=float) - values), 0.0, None)
        # yerr as plain lists: matplotlib 3.11 warns on a 2xN numpy array (one group)
        ax.bar(
            x + (offset - (len(series) - 1) / 2) * width,
            np.nan_to_num(values).tolist(),
            width,
            label=plot_label(label),
            yerr=[lower.tolist(), upper.tolist()],
            capsize=3,
        )
    return x
