"""The score summary's figure is drawn without pyplot, and looks as pyplot drew it.

``prefjudge score`` draws its plot on a :class:`matplotlib.figure.Figure` with the Agg
canvas, so that neither pyplot nor its backend machinery is imported; the PNG must be the
very same as the one pyplot made. The command also freezes what is left alive at exit, so
that the interpreter's last garbage collections do not walk it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from prefjudge.plots import ci_bars, plot_labels
from prefjudge.plots.score import save_summary_plot

SAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "sample"


def _pyplot_figure(summary: pd.DataFrame, path: Path) -> None:
    """The summary plot as it was drawn through pyplot."""
    from prefjudge.plots import pyplot

    plt = pyplot()
    metrics = [("if_instruction", "IF (instruction)"), ("if_task", "IF (task)"),
               ("pass1", "pass@1")]
    metrics += [(name, label) for name, label in (("base_pass1", "base pass@1"),
                                                  ("plus_pass1", "plus pass@1"))
                if name in summary.columns and summary[name].notna().any()]
    models = plot_labels(summary["model"])
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(models) + 2), 4))
    x = ci_bars(ax, summary, [(m, f"{m}_lower", f"{m}_upper", label) for m, label in metrics])
    ax.set_xticks(x, models, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score (95 % CI)")
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _summary(with_plus: bool) -> pd.DataFrame:
    rows = []
    for index, model in enumerate(["model-a", "a-much-longer-model-name/with$dollar", "m3"]):
        row = {"model": model}
        for offset, name in enumerate(("if_instruction", "if_task", "pass1", "base_pass1",
                                       "plus_pass1")):
            value = 0.2 + 0.1 * index + 0.05 * offset
            if name == "pass1" and index == 1:  # a model without pass@1: no bar
                value = np.nan
            row |= {name: value, f"{name}_lower": value - 0.05, f"{name}_upper": value + 0.04}
        rows.append(row)
    frame = pd.DataFrame(rows)
    return frame if with_plus else frame.drop(columns=["base_pass1", "plus_pass1"])


def test_the_figure_is_the_one_pyplot_drew(tmp_path: Path) -> None:
    for with_plus in (False, True):
        summary = _summary(with_plus)
        save_summary_plot(summary, tmp_path / "new.png")
        _pyplot_figure(summary, tmp_path / "old.png")
        new, old = (tmp_path / "new.png").read_bytes(), (tmp_path / "old.png").read_bytes()
        assert new[:8] == b"\x89PNG\r\n\x1a\n"
        assert new == old


def test_score_draws_without_pyplot_and_freezes_what_is_left_at_exit(tmp_path: Path) -> None:
    generations = tmp_path / "generations.jsonl"
    shutil.copy(SAMPLE / "generations.jsonl", generations)
    out = tmp_path / "scores.jsonl"
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import atexit, gc, sys
        atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0))
        from prefjudge.cli import main
        try:
            main(["score", {str(generations)!r}, "--no-tests", "-o", {str(out)!r}])
        except SystemExit as exc:
            assert not exc.code, exc.code
        print("pyplot:", "matplotlib.pyplot" in sys.modules)
        print("figure:", "matplotlib.figure" in sys.modules)
    """)], capture_output=True, text=True, check=True)
    said = done.stdout.strip().splitlines()[-3:]
    assert said == ["pyplot: False", "figure: True", "frozen at exit: True"], done.stdout
    png = tmp_path / "scores.summary.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(json.loads((tmp_path / "scores.summary.json").read_text())["models"]) >= 1
