"""Prompt templates: files in ``rubrics/judge/`` and ``rubrics/personas/prompts/``.

A template has a system part and a user part separated by a line ``=== user ===``.
Placeholders are ``{{name}}``; braces in code or JSON examples are left alone. Every
placeholder a template uses must be one its stage provides, checked at load time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from prefjudge.paths import data_dir

SEPARATOR = "=== user ==="
PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")
STAGE_FIELDS: dict[str, frozenset[str]] = {
    "criteria": frozenset(
        {"instruction", "response_a", "response_b", "guidance", "n_min", "n_max"}
    ),
    "criterion_judge": frozenset(
        {"instruction", "response_a", "response_b", "criteria", "guidance", "evidence"}
    ),
    "refine": frozenset({"instruction", "response_a", "response_b", "criteria", "guidance"}),
    "synthesis": frozenset(
        {"instruction", "response_a", "response_b", "criterion_verdicts", "guidance", "evidence"}
    ),
    "monolithic": frozenset({"instruction", "response_a", "response_b", "guidance", "evidence"}),
    "pointwise": frozenset({"instruction", "response", "criteria", "guidance", "evidence"}),
    "rationale": frozenset(
        {
            "instruction",
            "response_a",
            "response_b",
            "label",
            "votes",
            "judge_verdict",
            "judge_reason",
        }
    ),
    "distil": frozenset({"rationales", "scope"}),
}
# persona stages: templates in rubrics/personas/prompts/
PERSONA_STAGE_FIELDS: dict[str, frozenset[str]] = {
    "profile": frozenset({"description", "dimensions"}),
    "rewrite_changes": frozenset({"task", "profile", "entry_point"}),
    "rewrite_compose": frozenset({"task", "profile", "changes", "entry_point"}),
    "rewrite_prefix": frozenset({"task", "profile"}),
    "preserve": frozenset({"original", "rewritten"}),
    "compare": frozenset({"user", "instruction", "response_a", "response_b", "dimensions"}),
}
STAGE_FIELDS.update(PERSONA_STAGE_FIELDS)


class TemplateError(ValueError):
    """A prompt template is malformed (missing separator, unknown placeholder)."""


@dataclass(frozen=True)
class Template:
    """One stage's prompt.

    Attributes:
        stage: Stage name (the file's stem).
        system: The system message.
        user: The user message template.
        path: Where it was read from.
    """

    stage: str
    system: str
    user: str
    path: Path

    def render(self, **values: str) -> tuple[str, str]:
        """Fill the placeholders.

        Args:
            **values: One string per placeholder the template uses.

        Returns:
            ``(system, user)`` messages.

        Raises:
            TemplateError: When a placeholder the template uses has no value.
        """
        missing = sorted(set(PLACEHOLDER.findall(self.system + self.user)) - set(values))
        if missing:
            raise TemplateError(f"{self.path}: no value for {', '.join(missing)}")

        def fill(text: str) -> str:
            return PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), text)

        return fill(self.system).strip(), fill(self.user).strip()


def parse_template(stage: str, text: str, path: Path) -> Template:
    """Parse and check one template.

    Args:
        stage: The stage it belongs to (decides the allowed placeholders).
        text: The file's text.
        path: The file, for messages.

    Returns:
        The template.

    Raises:
        TemplateError: Without a ``=== user ===`` line, or with unknown placeholders.
    """
    if stage not in STAGE_FIELDS:
        raise TemplateError(f"{path}: unknown judge stage {stage!r}")
    lines = text.splitlines()
    try:
        cut = next(i for i, line in enumerate(lines) if line.strip() == SEPARATOR)
    except StopIteration:
        raise TemplateError(
            f"{path}: no line {SEPARATOR!r} between system and user parts"
        ) from None
    system, user = "\n".join(lines[:cut]), "\n".join(lines[cut + 1 :])
    for number, line in enumerate(lines, start=1):
        unknown = set(PLACEHOLDER.findall(line)) - STAGE_FIELDS[stage]
        if unknown:
            raise TemplateError(
                f"{path}:{number}: unknown placeholder(s) {sorted(unknown)}; stage {stage!r} "
                f"provides {sorted(STAGE_FIELDS[stage])}"
            )
    return Template(stage=stage, system=system, user=user, path=path)


@cache
def load_template(stage: str, folder: str | None = None) -> Template:
    """Load a stage's template from ``rubrics/judge/`` or ``rubrics/personas/prompts/``.

    Args:
        stage: Stage name, e.g. ``criteria``.
        folder: A folder of user templates overriding the shipped ones.

    Returns:
        The parsed template.
    """
    if folder:
        base = Path(folder)
    elif stage in PERSONA_STAGE_FIELDS:
        base = data_dir("rubrics") / "personas" / "prompts"
    else:
        base = data_dir("rubrics") / "judge"
    path = base / f"{stage}.md"
    return parse_template(stage, path.read_text(encoding="utf-8"), path)


def fence(text: str) -> str:
    """Return ``text`` in a Markdown fence longer than any fence inside it."""
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}\n{text.rstrip()}\n{ticks}"
