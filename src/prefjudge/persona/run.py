"""The persona stages as use cases: profile, rewrite, compare and flips, without a command line.

Each function takes typed settings, an open backend (the caller owns it: it opens and
closes it, and shows its usage) and a :class:`~prefjudge.reporting.Reporter`; it never
prints. ``prefjudge persona ...`` and ``prefjudge run`` both call them::

    outcome = rewrite_file(RewriteSettings(tasks, "beginner", out), backend, reporter)
    compared = compare_files(CompareSettings(gen_a, gen_b, "beginner", (out_tasks,), cmp_out,
                                             original=(orig_a, orig_b),
                                             original_tasks=(tasks,)), backend, reporter)

A failure a person must act on (a bad input file, an unknown persona, an output made with
other settings) raises :class:`~prefjudge.reporting.StageError`; records already written
are kept, and running the stage again resumes after them.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from prefjudge.backends import Backend, Sampling
from prefjudge.io import InputError, read_text
from prefjudge.persona.compare_run import (
    COMPARE_SAMPLING,
    CompareOutcome,
    CompareSettings,
    compare_files,
)
from prefjudge.persona.flips_run import (
    SHOWN_COLUMNS,
    FlipsOutcome,
    FlipsSettings,
    flips_file,
    flips_table,
    write_flips,
)
from prefjudge.persona.profile import PersonaError, build_profile, load_persona, persona_yaml
from prefjudge.persona.rewrite_run import (
    REWRITE_SAMPLING,
    RewriteOutcome,
    RewriteSettings,
    rejected_path,
    rewrite_file,
)
from prefjudge.records import Persona
from prefjudge.reporting import Reporter, StageError

PROFILE_SAMPLING: dict[str, Any] = {"max_tokens": 1536, "seed": 0}
"""The profile stage's sampling defaults (``BackendConfig.sampling(**PROFILE_SAMPLING)``)."""


@dataclass(frozen=True)
class ProfileSettings:
    """What ``persona profile`` builds.

    Attributes:
        description: A short free-text description of the user, or a text file holding it.
        name: The persona's name (checked by the caller with
            :func:`prefjudge.paths.check_path_name`).
        output: Persona YAML to write; None writes no file (the YAML is only returned).
        sampling: Sampling of the model call.
    """

    description: str
    name: str
    output: Path | None = None
    sampling: Sampling = field(default_factory=lambda: Sampling(**PROFILE_SAMPLING))


@dataclass(frozen=True)
class ProfileOutcome:
    """What ``persona profile`` made.

    Attributes:
        persona: The validated persona.
        yaml: Its YAML text (it loads back as the persona).
        output: The file written, or None.
    """

    persona: Persona
    yaml: str
    output: Path | None


def profile_file(settings: ProfileSettings, backend: Backend, reporter: Reporter) -> ProfileOutcome:
    """Build a structured persona profile from a short description, with one model call.

    Args:
        settings: The description, the name, where to write it and the sampling.
        backend: The model (open; the caller closes it).
        reporter: Unused today (no notes); taken as every stage takes one.

    Returns:
        The persona, its YAML and the file written.

    Raises:
        StageError: When the description file cannot be read, or the model gives no valid
            profile.
    """
    del reporter
    text = settings.description
    if Path(text).is_file():
        try:
            text = read_text(text)
        except InputError as exc:
            raise StageError(str(exc)) from exc
    try:
        made = build_profile(text, settings.name, backend, settings.sampling)
    except (PersonaError, ValidationError) as exc:
        raise StageError(str(exc)) from exc
    written = persona_yaml(made)
    try:
        if settings.output is None:
            with tempfile.TemporaryDirectory(prefix="prefjudge-persona-") as folder:
                check = Path(folder) / "persona.yaml"
                check.write_text(written, encoding="utf-8")
                load_persona(check)  # what we return must load back
        else:
            settings.output.write_text(written, encoding="utf-8")
            load_persona(settings.output)  # what we wrote must load back
    except PersonaError as exc:
        raise StageError(str(exc)) from exc
    return ProfileOutcome(persona=made, yaml=written, output=settings.output)


__all__ = [
    "COMPARE_SAMPLING",
    "PROFILE_SAMPLING",
    "REWRITE_SAMPLING",
    "SHOWN_COLUMNS",
    "CompareOutcome",
    "CompareSettings",
    "FlipsOutcome",
    "FlipsSettings",
    "ProfileOutcome",
    "ProfileSettings",
    "RewriteOutcome",
    "RewriteSettings",
    "compare_files",
    "flips_file",
    "flips_table",
    "profile_file",
    "rejected_path",
    "rewrite_file",
    "write_flips",
]
