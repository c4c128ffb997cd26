"""What the peers compute over their result files: pass@k, EvalPlus's dataset hash, the split.

Each as EvalPlus 0.3.1 and BigCodeBench 0.2.5 compute it, for :mod:`prefjudge.scoring.export`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from prefjudge.io import open_text

BIGCODEBENCH_KS = (1, 5, 10)
"""``bigcodebench.evaluate``'s default ``--pass_k``."""

EVALPLUS_KS = (1, 10, 100)
"""The k of pass@k ``evalplus.evaluate`` writes (each only when every task has k samples)."""


def dataset_hash(task_files: Sequence[Path], dataset: str) -> str | None:
    """EvalPlus's ``hash``: the MD5 of the decompressed HumanEval+ or MBPP+ task file.

    Args:
        task_files: The task files read.
        dataset: ``humaneval`` or ``mbpp``.

    Returns:
        The hex digest of the first file whose first record is one of the dataset's tasks
        with EvalPlus inputs, or None when none is.
    """
    prefix = "HumanEval/" if dataset == "humaneval" else "Mbpp/"
    for path in task_files:
        try:
            with open_text(path) as handle:
                first = json.loads(handle.readline() or "{}")
            if not (isinstance(first, dict) and "base_input" in first
                    and str(first.get("task_id", "")).startswith(prefix)):
                continue
            with Path(path).open("rb") as probe:
                packed = probe.read(2) == b"\x1f\x8b"
            digest = hashlib.md5(usedforsecurity=False)
            with (gzip.open(path, "rb") if packed else Path(path).open("rb")) as raw:
                for chunk in iter(lambda: raw.read(1 << 20), b""):
                    digest.update(chunk)
            return digest.hexdigest()
        except (OSError, ValueError, EOFError):
            continue
    return None


def bigcodebench_split(generations: str) -> tuple[str, str]:
    """``(split, subset)`` from a BigCodeBench-style samples name, else instruct and full."""
    found = re.search(r"--bigcodebench-(?:(hard)-)?(complete|instruct)", Path(generations).name)
    if not found:
        return "instruct", "full"
    return found.group(2), found.group(1) or "full"


def mean_pass_at_k(counts: Sequence[tuple[int, int]], ks: Sequence[int]) -> dict[str, float]:
    """The mean unbiased pass@k over tasks, as both peers compute it for their files.

    Args:
        counts: ``(samples, passed)`` per task.
        ks: The k of pass@k; each is kept only when every task has at least k samples.

    Returns:
        ``{"pass@k": mean}`` for each k kept, in the order of ``ks`` (empty without tasks).
    """
    from prefjudge.scoring.metrics import pass_at_k  # pandas: not loaded for score --help

    out: dict[str, float] = {}
    for k in ks:
        if counts and min(n for n, _ in counts) >= k:
            out[f"pass@{k}"] = float(np.mean([pass_at_k(n, c, k) for n, c in counts]))
    return out


def evalplus_pass_at_k(by_task: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """The ``pass_at_k`` block of EvalPlus's ``eval_results.json``, as it computes it.

    ``evalplus.evaluate`` (0.3.1) counts a sample as passing the base tests when its
    ``base_status`` is ``pass``, and the plus tests when ``base_status`` and
    ``plus_status`` both are; the plus block is left out only for a base-only run (no
    sample has a ``plus_status``).

    Args:
        by_task: The file's ``eval`` part: each task's entries (:func:`evalplus_entry`).

    Returns:
        ``{"base": {"pass@1": ...}, "plus": {"pass@1": ...}}`` (pass@10 and pass@100 too
        when every task has that many samples).
    """
    base = [(len(entries), sum(e["base_status"] == "pass" for e in entries))
            for entries in by_task.values()]
    out: dict[str, Any] = {"base": mean_pass_at_k(base, EVALPLUS_KS)}
    if any(e.get("plus_status") is not None for entries in by_task.values() for e in entries):
        plus = [(len(entries),
                 sum(e["base_status"] == e["plus_status"] == "pass" for e in entries))
                for entries in by_task.values()]
        out["plus"] = mean_pass_at_k(plus, EVALPLUS_KS)
    return out


def bigcodebench_pass_at_k(
    results: Mapping[str, Any], task_ids: Sequence[str], *, model: str, split: str,
    subset: str, ks: Sequence[int] = BIGCODEBENCH_KS,
) -> dict[str, Any]:
    """BigCodeBench's ``pass_at_k.json`` from its ``eval_results.json``, as it computes it.

    Args:
        results: The ``eval_results.json`` content.
        task_ids: The dataset's tasks (BigCodeBench's ``problems``).
        model: The samples file's name up to ``--bigcodebench-``.
        split: ``instruct`` or ``complete``.
        subset: ``full`` or ``hard``.
        ks: The k of pass@k (each kept when every task has at least k samples).

    Returns:
        ``{"pass@k"..., "model", "split", "subset", "calibrated", "gt_pass_rate",
        "failed_tasks"}``.
    """
    problems = set(task_ids)
    per_task = [entries for task_id, entries in results["eval"].items() if task_id in problems]
    out: dict[str, Any] = mean_pass_at_k(
        [(len(entries), sum(entry["status"] == "pass" for entry in entries))
         for entries in per_task], ks)
    out.update({"model": model, "split": split, "subset": subset, "calibrated": False,
                "gt_pass_rate": 0.0, "failed_tasks": list(task_ids)})
    return out


