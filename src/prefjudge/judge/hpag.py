"""Build HPAG guidance: mine a judge's disagreements with human labels into lessons.

1. Split the labelled pairs (seeded): a training share builds the guidance, the rest is
   held out and never shown to the builder.
2. Judge the training pairs with the monolithic judge (both orders).
3. For each pair where the judge disagrees with the humans, ask for a rationale of the
   human choice (with the individual and per-aspect votes when the data has them).
4. Distil the rationales into global lessons and, per category with enough examples,
   category lessons, for each of the three CriterAlign stages.
5. Write the guidance folder (see :mod:`prefjudge.judge.guidance`) with a manifest.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from prefjudge import __version__
from prefjudge.backends import Backend, Request, Result, Sampling, chat
from prefjudge.io import dumps_json, write_json
from prefjudge.judge import JudgeSettings, judge_pairs
from prefjudge.judge.common import OnResult
from prefjudge.judge.guidance import (
    CATEGORY_DIR,
    GLOBAL_FILE,
    MANIFEST,
    STAGES,
    category_slug,
    pair_fingerprint,
    render_lessons,
)
from prefjudge.judge.prompts import fence, load_template
from prefjudge.judge.schemas import DistilReply, RationaleReply
from prefjudge.records import Pair, Verdict

FORMAT = 1
MAX_RATIONALES_PER_DISTIL = 40


class GuidanceBuildError(RuntimeError):
    """Guidance could not be built (e.g. the distillation call failed)."""


def split_pairs(
    pairs: Sequence[Pair], train_fraction: float, seed: int
) -> tuple[list[Pair], list[Pair]]:
    """Split labelled pairs into a training share and a held-out share (seeded permutation).

    Args:
        pairs: Pairs; unlabelled ones are ignored.
        train_fraction: Share used for building, in (0, 1).
        seed: Permutation seed.

    Returns:
        ``(train, held_out)``, each in input order.

    Raises:
        ValueError: On a fraction outside (0, 1) or fewer than two labelled pairs.
    """
    if not 0 < train_fraction < 1:
        raise ValueError("train fraction must be between 0 and 1 (exclusive)")
    labelled = [p for p in pairs if p.label is not None]
    if len(labelled) < 2:
        raise ValueError("need at least two labelled pairs to split")
    order = np.random.default_rng(seed).permutation(len(labelled))
    n_train = min(len(labelled) - 1, max(1, round(train_fraction * len(labelled))))
    chosen = set(order[:n_train].tolist())
    train = [p for i, p in enumerate(labelled) if i in chosen]
    held = [p for i, p in enumerate(labelled) if i not in chosen]
    return train, held


def _votes_text(pair: Pair) -> str:
    parts = []
    if pair.votes:
        counts = Counter(pair.votes)
        parts.append(", ".join(f"{side}: {counts[side]}" for side in ("A", "B", "tie")))
    if pair.aspect_votes:
        parts.append("per aspect: " + ", ".join(f"{k} → {v}" for k, v in pair.aspect_votes.items()))
    return "; ".join(parts) or "(single label, no individual votes)"


def rationale_request(pair: Pair, verdict: Verdict, sampling: Sampling) -> Request:
    """The request asking why the humans preferred what the judge did not."""
    template = load_template("rationale")
    label = {"A": "Answer A", "B": "Answer B", "tie": "neither (a tie)"}[pair.label or "tie"]
    shown = {"A": "Answer A", "B": "Answer B", "tie": "tie"}
    system, user = template.render(
        instruction=pair.instruction.strip(),
        response_a=fence(pair.response_a),
        response_b=fence(pair.response_b),
        label=label,
        votes=_votes_text(pair),
        judge_verdict=shown.get(verdict.preferred or "", "none"),
        judge_reason=" / ".join(f"{k}: {v}" for k, v in verdict.reasons.items()) or "(none)",
    )
    return chat(
        f"{pair.pair_id}:rationale",
        ("system", system),
        user,
        schema_model=RationaleReply,
        sampling=sampling,
    )


def distil_request(
    request_id: str, rows: list[dict[str, Any]], scope: str, sampling: Sampling
) -> Request:
    """The request distilling rationales into per-stage lessons."""
    lines = []
    for row in rows:
        lessons = "; ".join(
            f"{stage}: {row[f'{stage}_lesson']}" for stage in STAGES if row.get(f"{stage}_lesson")
        )
        overlooked = ", ".join(row.get("overlooked", []))
        lines.append(
            f"- [{row.get('category') or 'uncategorised'}] humans preferred {row['label']}, "
            f"judge said {row['judge']}. {row['rationale']} Overlooked: {overlooked or '-'}. "
            f"Lessons: {lessons or '-'}"
        )
    system, user = load_template("distil").render(rationales="\n".join(lines), scope=scope)
    return chat(request_id, ("system", system), user, schema_model=DistilReply, sampling=sampling)


@dataclass
class BuildReport:
    """What a build did (also written, with more, to the manifest).

    Attributes:
        folder: The guidance folder.
        manifest: The manifest written.
        verdicts: The monolithic verdicts on the training pairs.
        rationales: One row per disagreement with its rationale (or error).
    """

    folder: Path
    manifest: dict[str, Any]
    verdicts: list[Verdict] = field(default_factory=list)
    rationales: list[dict[str, Any]] = field(default_factory=list)


def _sha256(path: str | Path) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _sample(rows: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    if len(rows) <= MAX_RATIONALES_PER_DISTIL:
        return rows
    keep = np.random.default_rng(seed).choice(len(rows), MAX_RATIONALES_PER_DISTIL, replace=False)
    return [rows[i] for i in sorted(keep.tolist())]


def _rationales(wrong: list[Verdict], by_id: dict[str, Pair], backend: Backend,
                sampling: Sampling, on_result: OnResult | None) -> list[dict[str, Any]]:
    """One row per disagreement: the judge's rationale for it, or the error."""
    results: list[Result] = (
        backend.generate(
            [rationale_request(by_id[v.pair_id], v, sampling) for v in wrong], on_result=on_result
        )
        if wrong
        else []
    )
    rows: list[dict[str, Any]] = []
    for verdict, result in zip(wrong, results, strict=True):
        row: dict[str, Any] = {
            "pair_id": verdict.pair_id,
            "category": verdict.category,
            "label": verdict.label,
            "judge": verdict.preferred,
        }
        if result.ok:
            row.update(result.parsed.model_dump())
        else:
            row["error"] = f"{result.error_kind}: {result.error}"
        rows.append(row)
    return rows


Scope = tuple[str | None, list[dict[str, Any]]]
"""A distillation scope: its category (None: global) and its usable rationales."""


def _scopes(usable: list[dict[str, Any]], min_category: int) -> list[Scope]:
    """The global scope, then each category with at least ``min_category`` rationales."""
    scopes: list[Scope] = []
    if usable:
        scopes.append((None, usable))
    by_category: dict[str, list[dict[str, Any]]] = {}
    for row in usable:
        if row["category"]:
            by_category.setdefault(row["category"], []).append(row)
    scopes += [(c, r) for c, r in sorted(by_category.items()) if len(r) >= min_category]
    return scopes


def _distil(scopes: list[Scope], folder: Path, backend: Backend, sampling: Sampling, seed: int,
            on_result: OnResult | None) -> tuple[dict[str, str], list[str]]:
    """Distil each scope into lessons and write the lesson files.

    Returns:
        ``(category files by category, failures)``.
    """
    requests = [
        distil_request(
            f"distil:{name or '*'}",
            _sample(rows_, seed),
            f"{len(rows_)} disagreements, " + (f"category {name}" if name else "all categories"),
            sampling,
        )
        for name, rows_ in scopes
    ]
    distilled = backend.generate(requests, on_result=on_result) if requests else []
    lessons: dict[str, list[str]] = {stage: [] for stage in STAGES}
    category_files: dict[str, str] = {}
    failures: list[str] = []
    category_dir = folder / CATEGORY_DIR
    if category_dir.is_dir():
        for old in category_dir.glob("*.md"):
            old.unlink()
    for (name, _), result in zip(scopes, distilled, strict=True):
        if not result.ok:
            failures.append(f"distil {name or 'global'}: {result.error_kind}: {result.error}")
            continue
        reply = result.parsed.model_dump()
        if name is None:
            lessons = {stage: reply[stage] for stage in STAGES}
        else:
            category_dir.mkdir(exist_ok=True)
            path = category_dir / f"{category_slug(name)}.md"
            path.write_text(render_lessons(f"Category: {name}", reply), encoding="utf-8")
            category_files[name] = str(path.relative_to(folder))
    (folder / GLOBAL_FILE).write_text(render_lessons("Global guidance", lessons), "utf-8")
    return category_files, failures


def _manifest(
    folder: Path,
    *,
    source: str,
    pairs: Sequence[Pair],
    train: Sequence[Pair],
    held: Sequence[Pair],
    seed: int,
    train_fraction: float,
    backend: Backend,
    sampling: Sampling,
    verdicts: list[Verdict],
    wrong: list[Verdict],
    rows: list[dict[str, Any]],
    scopes: list[Scope],
    category_files: dict[str, str],
    failures: list[str],
) -> dict[str, Any]:
    """The guidance folder's manifest: where it came from, how it was built, what it holds."""
    judged = [v for v in verdicts if v.status == "ok"]
    usable = [r for r in rows if "error" not in r]
    return {
        "format": FORMAT,
        "name": folder.resolve().name,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "prefjudge_version": __version__,
        "source": {
            "path": source,
            "sha256": _sha256(source),
            "pairs": len(pairs),
            "labelled": len(train) + len(held),
        },
        "split": {
            "seed": seed,
            "train_fraction": train_fraction,
            "train": len(train),
            "held_out": len(held),
        },
        "judge": {
            "method": "monolithic",
            "backend": backend.kind,
            "model": backend.model_id,
            "sampling": sampling.model_dump(mode="json"),
        },
        "counts": {
            "judged": len(judged),
            "judge_errors": len(verdicts) - len(judged),
            "agreements": len(judged) - len(wrong),
            "disagreements": len(wrong),
            "rationales": len(usable),
            "rationale_errors": len(rows) - len(usable),
            "disagreements_by_category": dict(Counter(r["category"] or "-" for r in rows)),
        },
        "categories": category_files,
        "distil_failures": failures,
        # scopes with more rationales than the cap are distilled from a seeded sample
        "distilled": {
            name or "global": {
                "rationales": len(rows_),
                "shown": min(len(rows_), MAX_RATIONALES_PER_DISTIL),
            }
            for name, rows_ in scopes
        },
        "usage": backend.usage.as_dict(),
        "train_pair_ids": [p.pair_id for p in train],
        "train_fingerprints": sorted(pair_fingerprint(p) for p in train),
    }


def build_guidance(
    pairs: Sequence[Pair],
    backend: Backend,
    out_dir: str | Path,
    *,
    source: str,
    train_fraction: float = 0.2,
    seed: int = 0,
    sampling: Sampling | None = None,
    min_category: int = 2,
    on_result: OnResult | None = None,
) -> BuildReport:
    """Build a guidance folder from labelled pairs.

    Args:
        pairs: Labelled pairs (unlabelled ones are ignored).
        backend: The judge model (also writes rationales and distils them).
        out_dir: The guidance folder to write (created; existing lesson files are replaced).
        source: Where the pairs came from (recorded with its SHA-256).
        train_fraction: Share of labelled pairs used for building.
        seed: Split seed (and the sampling seed when ``sampling`` has none).
        sampling: Sampling for every call.
        min_category: Fewest disagreements a category needs to get its own lessons.
        on_result: Called per backend result (progress).

    Returns:
        The build report.

    Raises:
        GuidanceBuildError: When the global distillation fails (rationales are still written).
    """
    sampling = sampling or Sampling(max_tokens=1024, seed=seed)
    train, held = split_pairs(pairs, train_fraction, seed)
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    settings = JudgeSettings(method="monolithic", sampling=sampling)
    verdicts = list(judge_pairs(train, backend, settings, on_result=on_result))
    wrong = [v for v in verdicts if v.status == "ok" and v.preferred != v.label]
    rows = _rationales(wrong, {p.pair_id: p for p in train}, backend, sampling, on_result)
    with (folder / "rationales.jsonl").open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(dumps_json(row) + "\n")
    scopes = _scopes([r for r in rows if "error" not in r], min_category)
    category_files, failures = _distil(scopes, folder, backend, sampling, seed, on_result)
    manifest = _manifest(
        folder, source=source, pairs=pairs, train=train, held=held, seed=seed,
        train_fraction=train_fraction, backend=backend, sampling=sampling, verdicts=verdicts,
        wrong=wrong, rows=rows, scopes=scopes, category_files=category_files, failures=failures,
    )
    write_json(folder / MANIFEST, manifest)
    report = BuildReport(folder=folder, manifest=manifest, verdicts=verdicts, rationales=rows)
    global_failure = next((f for f in failures if f.startswith("distil global")), None)
    if global_failure:
        raise GuidanceBuildError(
            f"{global_failure}; rationales are in {folder / 'rationales.jsonl'} and the "
            "response cache, so a rerun repeats only the failed calls"
        )
    return report
