"""The matplotlib figures of a ``prefjudge report`` page, each returned as PNG bytes.

Lines with confidence bands per model and protocol, grouped bars and heatmaps; nothing
here writes a file (matplotlib is imported on first use, by :func:`prefjudge.plots.pyplot`).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from prefjudge.plots import LABEL_WIDTH, plot_label, plot_labels, pyplot
from prefjudge.reporting import display_name
from prefjudge.testbed.report_types import _protocol_name


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
