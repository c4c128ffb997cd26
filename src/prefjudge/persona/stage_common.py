"""What the persona use cases share: the persona and the tasks they load, and the chunk size.

A persona or task file that cannot be read becomes a :class:`~prefjudge.reporting.StageError`
saying why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from prefjudge.io import InputError
from prefjudge.persona.profile import PersonaError, load_persona
from prefjudge.records import Persona, Task
from prefjudge.reporting import StageError
from prefjudge.scoring.tasks import load_tasks

CHUNK = 32
"""Tasks (rewrite) or response pairs (compare) sent to the backend at a time."""


Condition = Literal["original", "persona"]


def _persona(name: str | Path) -> Persona:
    """The persona named (built-in name or YAML file), or a StageError saying why not."""
    try:
        return load_persona(name)
    except PersonaError as exc:
        raise StageError(str(exc)) from exc


def _tasks(path: Path) -> list[Task]:
    try:
        return list(load_tasks(path).values())
    except InputError as exc:
        raise StageError(str(exc)) from exc
