"""Prompt templates: files in ``rubrics/judge/`` and ``rubrics/personas/prompts/``.

A template has a system part and a user part separated by a line ``=== user ===``.
Placeholders are ``{{name}}``; braces in code or JSON examples are left alone. Checked at
load time, with the file and line in the message: every placeholder a template uses must
be one its stage provides, the placeholders its stage needs (:data:`REQUIRED_FIELDS`) must
be there, and a malformed placeholder (``{{name}``, ``{name}}``, ``{{ name }}``,
``{{Name}}``, ``{name}`` for a field of the stage) is an error rather than text sent to a
model. A ``--templates`` folder overrides the shipped files it holds; the other stages use
the shipped ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from prefjudge.io import InputError, InputIssue, read_text
from prefjudge.judge.methods import METHOD_STAGES as METHOD_STAGES  # the templates by method
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
REQUIRED_FIELDS: dict[str, frozenset[str]] = {
    "criteria": frozenset({"instruction", "response_a", "response_b"}),
    "criterion_judge": frozenset({"instruction", "response_a", "response_b", "criteria"}),
    "refine": frozenset({"instruction", "response_a", "response_b", "criteria"}),
    "synthesis": frozenset({"instruction", "response_a", "response_b", "criterion_verdicts"}),
    "monolithic": frozenset({"instruction", "response_a", "response_b"}),
    "pointwise": frozenset({"instruction", "response", "criteria"}),
    "rationale": frozenset({"instruction", "response_a", "response_b", "label"}),
    "distil": frozenset({"rationales"}),
    "profile": frozenset({"description"}),
    "rewrite_changes": frozenset({"task", "profile"}),
    "rewrite_compose": frozenset({"task", "profile", "changes"}),
    "rewrite_prefix": frozenset({"task", "profile"}),
    "preserve": frozenset({"original", "rewritten"}),
    "compare": frozenset({"instruction", "response_a", "response_b", "dimensions"}),
}
"""Placeholders a stage's template must use: without them the model would judge blind."""
_OPENING = re.compile(r"\{\{")
_CLOSING = re.compile(r"\}\}")
_SINGLE = re.compile(r"(?<!\{)\{([a-z_]+)\}(?!\})")


class TemplateError(InputError):
    """A prompt template cannot be used: ``file[:line]: what is wrong``.

    Causes: an unreadable or non-UTF-8 file, no separator, or an unknown, missing or
    malformed placeholder. It is an :class:`~prefjudge.io.InputError` (one issue), so a
    command that reports bad input reports a bad template the same way.
    """

    def __init__(self, path: str | Path, line: int, message: str):
        issue = InputIssue(str(path), line, "", message)
        super().__init__([issue])
        self.args = (str(issue),)


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
            raise TemplateError(self.path, 0, f"no value for {', '.join(missing)}")

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
        TemplateError: Without a ``=== user ===`` line, with an unknown or malformed
            placeholder, or without a placeholder the stage needs.
    """
    if stage not in STAGE_FIELDS:
        raise TemplateError(path, 0, f"unknown judge stage {stage!r}")
    lines = text.splitlines()
    try:
        cut = next(i for i, line in enumerate(lines) if line.strip() == SEPARATOR)
    except StopIteration:
        raise TemplateError(
            path, 0, f"no line {SEPARATOR!r} between system and user parts"
        ) from None
    system, user = "\n".join(lines[:cut]), "\n".join(lines[cut + 1 :])
    fields = STAGE_FIELDS[stage]
    for number, line in enumerate(lines, start=1):
        unknown = set(PLACEHOLDER.findall(line)) - fields
        if unknown:
            raise TemplateError(
                path,
                number,
                f"unknown placeholder(s) {sorted(unknown)}; stage {stage!r} provides "
                f"{sorted(fields)}",
            )
        bad = _malformed_placeholder(line, fields)
        if bad:
            raise TemplateError(
                path,
                number,
                f"malformed placeholder {bad!r}; write placeholders as {{{{name}}}} with one "
                f"of {sorted(fields)}",
            )
    missing = REQUIRED_FIELDS.get(stage, frozenset()) - set(PLACEHOLDER.findall(text))
    if missing:
        needed = ", ".join(f"{{{{{name}}}}}" for name in sorted(REQUIRED_FIELDS[stage]))
        raise TemplateError(
            path, 0, f"missing placeholder(s) {sorted(missing)}: stage {stage!r} needs {needed}"
        )
    return Template(stage=stage, system=system, user=user, path=path)


def _malformed_placeholder(line: str, fields: frozenset[str]) -> str | None:
    """The first broken placeholder of a line (unbalanced braces, spaces, capitals), if any.

    Braces of code and JSON examples are not placeholders and pass: only ``{{`` not
    opening a well-formed ``{{name}}``, ``}}`` right after a name that was not opened with
    ``{{``, and ``{name}`` where ``name`` is a field of the stage count as mistakes.
    """
    good = [m.span() for m in PLACEHOLDER.finditer(line)]

    def inside(pos: int) -> bool:
        return any(start <= pos < end for start, end in good)

    for match in _OPENING.finditer(line):
        if not inside(match.start()):
            start = match.start()
            close = line.find("}", start)
            if not 0 <= close < start + 40:
                return line[start : start + 40]
            return line[start : close + 2 if line[close + 1 : close + 2] == "}" else close + 1]
    for match in _CLOSING.finditer(line):
        if inside(match.start()):
            continue
        before = re.search(r"(\{\s*)?([A-Za-z_][\w-]*)\s*$", line[: match.start()])
        if before and (before.group(1) or before.group(2).lower().replace("-", "_") in fields):
            return line[before.start() : match.end()]
    for match in _SINGLE.finditer(line):
        if match.group(1) in fields and not inside(match.start()):
            return match.group()
    return None


@cache
def load_template(stage: str, folder: str | None = None) -> Template:
    """Load a stage's template from ``rubrics/judge/`` or ``rubrics/personas/prompts/``.

    Args:
        stage: Stage name, e.g. ``criteria``.
        folder: A folder of user templates overriding the shipped ones.

    Returns:
        The parsed template.

    Raises:
        TemplateError: When the stage is unknown, or the file cannot be read or is
            malformed (see :func:`parse_template`).
    """
    if stage not in STAGE_FIELDS:
        where = Path(folder or data_dir("rubrics") / "judge") / f"{stage}.md"
        raise TemplateError(where, 0, f"unknown template stage; known: {sorted(STAGE_FIELDS)}")
    if stage in PERSONA_STAGE_FIELDS:
        path = data_dir("rubrics") / "personas" / "prompts" / f"{stage}.md"
    else:
        path = data_dir("rubrics") / "judge" / f"{stage}.md"
    if folder:
        if not Path(folder).is_dir():
            raise TemplateError(folder, 0, "not a folder of prompt templates")
        override = Path(folder) / f"{stage}.md"
        if override.exists():
            path = override
    try:
        text = read_text(path)
    except InputError as exc:
        issue = exc.issues[0]
        raise TemplateError(issue.path, issue.line, issue.message) from None
    return parse_template(stage, text, path)


def check_templates(stages: Iterable[str], folder: str | None = None) -> list[Template]:
    """Load and check the templates of some stages now, before any model call.

    Args:
        stages: Stage names, e.g. ``METHOD_STAGES["criteralign"]``.
        folder: A ``--templates`` folder, or None for the shipped templates.

    Returns:
        The templates, in the order of ``stages``.

    Raises:
        TemplateError: On the first template that cannot be used, naming its file, line
            and placeholder.
    """
    return [load_template(stage, folder) for stage in stages]


def fence(text: str) -> str:
    """Return ``text`` in a Markdown fence longer than any fence inside it."""
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}\n{text.rstrip()}\n{ticks}"
