"""HPAG guidance: readable files of lessons mined from where a judge disagreed with humans.

A guidance folder holds::

    manifest.json         source data, split seed, judge model, counts, training pairs
    global.md             lessons for every request, one section per stage
    categories/<name>.md  lessons for one category of requests
    rationales.jsonl      the per-pair rationales the lessons were distilled from (audit)

Each ``.md`` file has ``## criteria``, ``## judging`` and ``## final`` sections of ``- ``
bullet points; users may edit them. :func:`load_guidance` reads a folder back and
:meth:`Guidance.block` renders the slot a prompt template marks with ``{{guidance}}``.
Building guidance (which calls a model) lives in :mod:`prefjudge.judge.hpag`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from prefjudge.io import InputError, JsonValueError, parse_json, read_text
from prefjudge.records import Pair
from prefjudge.reporting import display_name

STAGES = ("criteria", "judging", "final")
MANIFEST = "manifest.json"
GLOBAL_FILE = "global.md"
CATEGORY_DIR = "categories"
SECTION = re.compile(r"^##\s+(\w+)\s*$")


class GuidanceError(ValueError):
    """A guidance folder is missing files or malformed."""


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


class ManifestSource(_Loose):
    """Where the labelled pairs came from."""

    path: str | None = None
    sha256: str | None = None
    pairs: int | None = None
    labelled: int | None = None


class ManifestSplit(_Loose):
    """The seeded train/held-out split."""

    seed: int | None = None
    train_fraction: float | None = None
    train: int | None = None
    held_out: int | None = None


class GuidanceManifest(_Loose):
    """The fields of ``manifest.json`` that prefjudge reads, type-checked on load.

    Every field is optional (hand-written guidance may carry only the training pair ids);
    unknown fields are kept.
    """

    format: int | str | None = None
    name: str | None = None
    created: str | None = None
    prefjudge_version: str | None = None
    source: ManifestSource | str | None = None
    split: ManifestSplit | None = None
    judge: dict[str, Any] | None = None
    counts: dict[str, Any] = Field(default_factory=dict)
    categories: dict[str, str] = Field(default_factory=dict)
    distil_failures: list[str] = Field(default_factory=list)
    distilled: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, Any] = Field(default_factory=dict)
    train_pair_ids: list[str] = Field(default_factory=list)
    train_fingerprints: list[str] = Field(default_factory=list)


def _read(path: Path) -> str:
    """Read a guidance file as UTF-8, or raise GuidanceError naming file and line."""
    try:
        return read_text(path)
    except InputError as exc:
        raise GuidanceError("; ".join(str(issue) for issue in exc.issues)) from None


def read_manifest(path: Path) -> dict[str, Any]:
    """Read and type-check a guidance ``manifest.json``.

    Args:
        path: The manifest.

    Returns:
        Its content (unknown fields kept, as written).

    Raises:
        GuidanceError: When it is not UTF-8, not JSON, not an object, or a field has the
            wrong type (``manifest.json: field 'train_pair_ids': Input should be a valid
            list``).
    """
    try:
        data = parse_json(_read(path))
    except JsonValueError as exc:
        where = f"{path}:{exc.line}" if exc.line else str(path)
        raise GuidanceError(f"{where}: {exc}") from None
    if not isinstance(data, dict):
        raise GuidanceError(f"{path}: expected a JSON object, got {type(data).__name__}")
    try:
        GuidanceManifest.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"field {'.'.join(str(p) for p in err['loc'])!r}: {err['msg']}" for err in exc.errors()
        )
        raise GuidanceError(f"{path}: {problems}") from None
    return data


def pair_fingerprint(pair: Pair) -> str:
    """Return a content hash of a pair that ignores its id and the order of its responses.

    Used to refuse evaluation on pairs that built the guidance, even when renamed or swapped.

    Args:
        pair: The pair.

    Returns:
        A hex SHA-256 digest of the instruction and the two responses (sorted).
    """
    parts = [pair.instruction.strip(), *sorted([pair.response_a.strip(), pair.response_b.strip()])]
    return hashlib.sha256("\x1e".join(parts).encode("utf-8")).hexdigest()


def category_slug(category: str) -> str:
    """Return a file-name-safe form of a category name."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", category.strip()).strip("_")
    return slug or "uncategorised"


def render_lessons(title: str, lessons: dict[str, list[str]]) -> str:
    """Return the Markdown of one guidance file.

    Args:
        title: The file's heading.
        lessons: Stage → bullet points.

    Returns:
        Markdown text with one section per stage.
    """
    lines = [f"# {title}", ""]
    for stage in STAGES:
        lines.append(f"## {stage}")
        lines.extend(f"- {item.strip()}" for item in lessons.get(stage, []) if item.strip())
        lines.append("")
    return "\n".join(lines)


QUOTED_WIDTH = 80
"""Most characters of a file's line quoted in an error message (its middle is cut)."""


def _quoted(text: str) -> str:
    """``text`` quoted for an error message, cut in the middle to :data:`QUOTED_WIDTH`."""
    return repr(display_name(text, QUOTED_WIDTH))


def parse_lessons(path: Path) -> tuple[str, dict[str, list[str]]]:
    """Read one guidance file.

    Args:
        path: A ``global.md`` or category file.

    Returns:
        ``(title, lessons)`` where lessons maps stage → bullet points.

    Raises:
        GuidanceError: On an unknown section, a bullet outside any section, or a file
            that cannot be read as UTF-8.
    """
    title = path.stem
    parts: dict[str, list[list[str]]] = {stage: [] for stage in STAGES}
    current: str | None = None
    for number, raw in enumerate(_read(path).splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("# "):
            title = line[2:].strip()
            continue
        match = SECTION.match(line)
        if match:
            current = match.group(1).lower()
            if current not in STAGES:
                raise GuidanceError(
                    f"{path}:{number}: unknown section {_quoted(current)}; use {STAGES}"
                )
            continue
        if line.startswith(("- ", "* ")):
            if current is None:
                raise GuidanceError(f"{path}:{number}: bullet before any '## stage' heading")
            parts[current].append([line[2:].strip()])
        elif current is not None and parts[current]:
            parts[current][-1].append(line)  # a wrapped bullet: joined once, at the end
        else:
            raise GuidanceError(
                f"{path}:{number}: expected '## stage' or '- lesson', got {_quoted(line)}"
            )
    lessons = {stage: [" ".join(bullet) for bullet in parts[stage]] for stage in STAGES}
    return title, lessons


@dataclass(frozen=True)
class Guidance:
    """A loaded guidance set.

    Attributes:
        name: The folder's name.
        folder: Where it was loaded from.
        lessons: Global lessons, stage → bullets.
        categories: Category name → stage → bullets.
        manifest: The manifest's content.
        digest: Hash of the lesson text (recorded in every verdict that used it).
    """

    name: str
    folder: Path
    lessons: dict[str, list[str]]
    categories: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    digest: str = ""

    @property
    def label(self) -> str:
        """``name@digest`` as recorded in verdicts."""
        return f"{self.name}@{self.digest[:12]}"

    def bullets(self, stage: str, category: str | None) -> list[str]:
        """Return the lessons for one stage: global ones, then the category's own."""
        items = list(self.lessons.get(stage, []))
        if category is not None and category in self.categories:
            items += self.categories[category].get(stage, [])
        return items

    def block(self, stage: str, category: str | None) -> str:
        """Return the text for a template's ``{{guidance}}`` slot (empty when no lessons).

        Args:
            stage: ``criteria``, ``judging`` or ``final``.
            category: The pair's category, for category-specific lessons.

        Returns:
            A Markdown section, or an empty string.
        """
        items = self.bullets(stage, category)
        if not items:
            return ""
        body = "\n".join(f"- {item}" for item in items)
        return f"\n## Guidance learned from developers' preferences\n{body}\n"

    def training_ids(self) -> set[str]:
        """Return the pair ids used to build this guidance."""
        return set(self.manifest.get("train_pair_ids", []))

    def training_fingerprints(self) -> set[str]:
        """Return the content fingerprints of the pairs used to build this guidance."""
        return set(self.manifest.get("train_fingerprints", []))

    def overlap(self, pairs: list[Pair]) -> list[Pair]:
        """Return the pairs that were used to build this guidance (by id or by content)."""
        ids, prints = self.training_ids(), self.training_fingerprints()
        return [p for p in pairs if p.pair_id in ids or pair_fingerprint(p) in prints]


def load_guidance(folder: str | Path) -> Guidance:
    """Load a guidance folder.

    Args:
        folder: The folder written by ``prefjudge guidance build`` (or by hand).

    Returns:
        The guidance.

    Raises:
        GuidanceError: When ``global.md`` or ``manifest.json`` is missing or malformed
            (the message names the file, and the line or field).
    """
    base = Path(folder)
    manifest_path = base / MANIFEST
    if not (base / GLOBAL_FILE).is_file():
        raise GuidanceError(f"{base}: no {GLOBAL_FILE}; is this a guidance folder?")
    if not manifest_path.is_file():
        raise GuidanceError(f"{base}: no {MANIFEST}; guidance without provenance is not accepted")
    manifest = read_manifest(manifest_path)
    _, lessons = parse_lessons(base / GLOBAL_FILE)
    categories: dict[str, dict[str, list[str]]] = {}
    digest = hashlib.sha256(json.dumps(lessons, sort_keys=True).encode())
    category_dir = base / CATEGORY_DIR
    if category_dir.is_dir():
        for path in sorted(p for p in category_dir.glob("*.md") if p.is_file()):
            title, cat_lessons = parse_lessons(path)
            name = title.removeprefix("Category:").strip() or path.stem
            categories[name] = cat_lessons
            digest.update(json.dumps([name, cat_lessons], sort_keys=True).encode())
    return Guidance(
        name=base.resolve().name,
        folder=base,
        lessons=lessons,
        categories=categories,
        manifest=manifest,
        digest=digest.hexdigest(),
    )
