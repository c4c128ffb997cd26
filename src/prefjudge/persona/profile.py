"""Persona profiles and comparison dimensions: loading, validating, building from a description.

Built-in personas are YAML files in ``rubrics/personas/`` (``beginner``, ``intermediate``,
``ai_researcher``, ``advanced_engineer``); users pass their own YAML file anywhere a persona
name is accepted. Dimensions are data too (``rubrics/personas/dimensions.yaml``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from prefjudge.backends import Backend, Request, Sampling, chat
from prefjudge.io import InputError, read_text
from prefjudge.judge.prompts import load_template
from prefjudge.paths import check_path_name, data_dir
from prefjudge.records import Persona

GENERIC_USER = (
    "A typical professional developer with no particular preferences beyond a good, working "
    "answer to the request."
)


class PersonaError(ValueError):
    """A persona or dimension file is missing or invalid."""


@dataclass(frozen=True)
class Dimension:
    """One dimension of a user-aware comparison."""

    id: str
    name: str
    description: str


def personas_dir() -> Path:
    """The folder of the built-in personas."""
    return data_dir("rubrics") / "personas"


def builtin_personas() -> list[str]:
    """Names of the built-in personas."""
    return sorted(p.stem for p in personas_dir().glob("*.yaml") if p.stem != "dimensions")


def _builtin_persona(name: str) -> Path:
    """The file of the built-in persona ``name``; only a plain name is looked up.

    Raises:
        PersonaError: When ``name`` is not a plain name (:func:`check_path_name`: no
            ``../``, no folder) or no built-in persona has it.
    """
    try:
        candidate = personas_dir() / f"{check_path_name(name)}.yaml"
    except ValueError:
        candidate = None
    if candidate is None or not candidate.is_file() or name == "dimensions":
        known = ", ".join(builtin_personas())
        raise PersonaError(f"unknown persona {name!r}: use one of {known} or a YAML file")
    return candidate


def _load_yaml(path: Path) -> Any:
    try:
        text = read_text(path)
    except InputError as exc:
        raise PersonaError("; ".join(str(issue) for issue in exc.issues)) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise PersonaError(f"{path}{where}: not valid YAML ({exc})") from exc
    except RecursionError:
        raise PersonaError(f"{path}: not valid YAML (nested too deeply)") from None


def load_persona(name_or_path: str | Path) -> Persona:
    """Load a built-in persona by name, or a persona YAML file.

    Args:
        name_or_path: ``beginner`` etc., or a path to a YAML file.

    Returns:
        The validated persona.

    Raises:
        PersonaError: Unknown name, unreadable file, or a field that fails validation
            (the message names the file and field).
    """
    path = Path(name_or_path)
    if not path.is_file():
        path = _builtin_persona(str(name_or_path))
    data = _load_yaml(path)
    if not isinstance(data, dict):
        raise PersonaError(f"{path}: expected a mapping with name, description, input, output")
    try:
        persona = Persona.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"field {'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise PersonaError(f"{path}: {problems}") from exc
    unknown = set(persona.output.priorities) - {d.id for d in load_dimensions()}
    if unknown:
        raise PersonaError(
            f"{path}: field output.priorities: unknown dimension(s) {sorted(unknown)}"
        )
    return persona


@cache
def load_dimensions(path: str | None = None) -> tuple[Dimension, ...]:
    """Load the comparison dimensions (``rubrics/personas/dimensions.yaml`` by default)."""
    file = Path(path) if path else personas_dir() / "dimensions.yaml"
    data = _load_yaml(file)
    if not isinstance(data, list) or not data:
        raise PersonaError(f"{file}: expected a non-empty list of dimensions")
    dims = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not {"id", "name", "description"} <= set(item):
            raise PersonaError(f"{file}: item {i}: needs id, name and description")
        if not re.fullmatch(r"[a-z_]+", str(item["id"])):
            raise PersonaError(f"{file}: item {i}: id must be lower_snake_case")
        dims.append(Dimension(str(item["id"]), str(item["name"]), str(item["description"])))
    if len({d.id for d in dims}) != len(dims):
        raise PersonaError(f"{file}: duplicate dimension ids")
    return tuple(dims)


def input_profile_text(persona: Persona) -> str:
    """The persona's input preferences as prompt text."""
    prefs = persona.input
    lines = [
        f"About the user: {persona.description.strip()}",
        f"Expertise: {prefs.expertise}. Verbosity: {prefs.verbosity}. Tone: {prefs.tone}.",
    ]
    if prefs.mentions:
        lines.append("Tends to mention: " + "; ".join(prefs.mentions) + ".")
    if prefs.avoids:
        lines.append("Leaves out: " + "; ".join(prefs.avoids) + ".")
    return "\n".join(lines)


def output_profile_text(persona: Persona | None) -> str:
    """What the user values in an answer, as prompt text (a generic user for None)."""
    if persona is None:
        return GENERIC_USER
    prefs = persona.output
    lines = [
        f"{persona.description.strip()}",
        "Values, most important first: " + "; ".join(prefs.values) + ".",
    ]
    if prefs.dislikes:
        lines.append("Dislikes: " + "; ".join(prefs.dislikes) + ".")
    lines.append(f"Wants {prefs.explanation} explanation.")
    if prefs.code_style:
        lines.append("Code style: " + "; ".join(prefs.code_style) + ".")
    if prefs.priorities:
        ranked = sorted(prefs.priorities.items(), key=lambda kv: -kv[1])
        lines.append("Cares about (1–5): " + ", ".join(f"{k} {v}" for k, v in ranked) + ".")
    return "\n".join(lines)


Item = Annotated[str, Field(min_length=2, max_length=120)]
Items = Annotated[list[Item], Field(max_length=4)]


class _InputReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expertise: Literal["beginner", "intermediate", "advanced", "expert"]
    verbosity: Literal["terse", "moderate", "detailed"]
    tone: Item
    mentions: Items
    avoids: Items


def profile_schema() -> type[BaseModel]:
    """The reply schema of profile building.

    Bounded like a profile a person would write (at most four items of at most 120
    characters per list), with priorities restricted to the known dimensions, so a model's
    reply always fits its token budget and always loads as a :class:`Persona`.
    """
    ids = tuple(d.id for d in load_dimensions())
    priorities = create_model(
        "Priorities",
        __config__=ConfigDict(extra="forbid"),
        **{i: (int, Field(ge=1, le=5)) for i in ids},  # type: ignore[call-overload]
    )
    output = create_model(
        "OutputProfile",
        __config__=ConfigDict(extra="forbid"),
        values=(Annotated[list[Item], Field(min_length=1, max_length=4)], ...),
        dislikes=(Items, ...),
        explanation=(Literal["none", "brief", "thorough"], ...),
        code_style=(Items, ...),
        priorities=(priorities, ...),
    )
    return create_model(
        "PersonaProfile",
        __config__=ConfigDict(extra="forbid"),
        input=(_InputReply, ...),
        output=(output, ...),
    )


def profile_request(description: str, sampling: Sampling) -> Request:
    """The request that turns a free-text description into a profile."""
    dims = ", ".join(d.id for d in load_dimensions())
    system, user = load_template("profile").render(description=description.strip(), dimensions=dims)
    return chat(
        "persona:profile",
        ("system", system),
        user,
        schema_model=profile_schema(),
        sampling=sampling,
    )


def build_profile(description: str, name: str, backend: Backend, sampling: Sampling) -> Persona:
    """Build a persona profile from a description with a model.

    Args:
        description: Free-text description of the user.
        name: The persona's name.
        backend: The model.
        sampling: Sampling parameters.

    Returns:
        The validated persona.

    Raises:
        PersonaError: When the model's reply is not a valid profile (after the repair turns).
    """
    [result] = backend.generate([profile_request(description, sampling)])
    if not result.ok:
        raise PersonaError(f"the model gave no valid profile: {result.error_kind}: {result.error}")
    reply = result.parsed.model_dump()
    reply["output"]["priorities"] = dict(reply["output"]["priorities"])
    return Persona.model_validate({"name": name, "description": description.strip(), **reply})


def persona_yaml(persona: Persona) -> str:
    """The persona as YAML (the format of the built-in files)."""
    return yaml.safe_dump(
        persona.model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=92
    )
