"""Running the pinned Ruff binary: isolated configuration, JSON output, failures as errors.

Every run is isolated from user and project configuration (``--isolated``; Ruff refuses
``--isolated`` together with a configuration file, so the whole configuration goes on the
command line as ``--config KEY = VALUE`` pairs): :data:`BASE_SETTINGS` plus the
instructions' selectors and settings. No cache, no fixes, ``# noqa`` comments ignored
(a response cannot silence a check), JSON output. Anything but a clean exit, or output
that is not Ruff's JSON report, is a :class:`RuffRunError`.

:data:`BASE_SETTINGS`:

- ``target-version = "py311"``: fixed, so results do not depend on the machine; 3.11 is
  the Python prefjudge is developed and tested with. Code using newer syntax (PEP 695
  generics, nested f-string quotes) is reported by Ruff as a syntax error, i.e. it does
  not parse.
- ``line-length = 88`` (Ruff's default): E501 and W505 take their limits from
  ``lint.pycodestyle.max-line-length`` / ``max-doc-length`` instead; this only sizes what
  other rules suggest, such as isort's wrapping of long imports.
- ``src = []``: otherwise isort would count modules found in the working directory as
  first-party, and results would depend on where prefjudge runs.
- ``lint.unfixable = ["ALL"]``: Ruff leaves fix suggestions out of its report, which is
  then much smaller to parse.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

TARGET_VERSION = "py311"
BASE_SETTINGS: dict[str, Any] = {
    "target-version": TARGET_VERSION,
    "line-length": 88,
    "src": [],
    "lint.unfixable": ["ALL"],
}
RUN_TIMEOUT_S = 300.0
_RULE_CODE = re.compile(r"^[A-Z]+[0-9]+$")


@lru_cache(maxsize=2048)
def is_rule_code(code: str) -> bool:
    """Whether Ruff's ``code`` field names a rule (``E501``) rather than, say, a syntax error."""
    return _RULE_CODE.match(code) is not None


class RuffRunError(RuntimeError):
    """Ruff could not be run or did not finish cleanly; the message says why."""


class Diagnostic(NamedTuple):
    """One Ruff finding in one file.

    Attributes:
        row: 1-based line.
        column: 1-based column.
        code: Rule code; for findings that are not rules (syntax errors) Ruff writes null
            in preview mode and ``invalid-syntax`` otherwise.
        name: Rule name (``invalid-syntax`` for syntax errors).
        message: Ruff's message.
    """

    row: int
    column: int
    code: str | None
    name: str
    message: str

    @property
    def is_rule(self) -> bool:
        """Whether this is a rule's finding (not a syntax error or other problem)."""
        return self.code is not None and is_rule_code(self.code)

    @property
    def is_syntax_error(self) -> bool:
        """Whether Ruff could not parse the file here."""
        return "invalid-syntax" in (self.name, self.code)

    def describe(self) -> str:
        """``E501 line 3: Line too long (95 > 79)``."""
        return f"{self.code or self.name} line {self.row}: {self.message}"


@dataclass(frozen=True)
class RuffConfig:
    """One complete Ruff configuration: rules, preview mode and settings.

    Attributes:
        select: Rule selectors (codes or prefixes), sorted.
        preview: Whether preview mode is on.
        settings: TOML dotted keys and values, sorted by key (BASE_SETTINGS come on top).
    """

    select: tuple[str, ...]
    preview: bool = False
    settings: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def build(cls, select: Iterable[str], preview: bool, settings: dict[str, Any]) -> RuffConfig:
        """A config from unsorted parts."""
        frozen = tuple(sorted((key, _freeze(value)) for key, value in settings.items()))
        return cls(tuple(sorted(set(select))), preview, frozen)

    def arguments(self) -> list[str]:
        """The command-line arguments that set this configuration."""
        values = {**BASE_SETTINGS, **dict(self.settings), "lint.select": list(self.select)}
        args = ["--preview"] if self.preview else []
        for key, value in sorted(values.items()):
            args += ["--config", f"{key} = {toml_value(value)}"]
        return args


def _freeze(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def toml_value(value: Any) -> str:
    """A Python value written as a TOML value (int, bool, str, or a list of them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as a Ruff setting")


def selector_matches(selector: str, code: str) -> bool:
    """Whether a Ruff selector (``E``, ``PLR09``, ``E501``) selects a rule code.

    Plain text prefixes are not enough: ``E`` selects ``E501`` but not ``EM101``.
    """
    if not code.startswith(selector):
        return False
    rest = code[len(selector) :]
    return not rest or rest[0].isdigit() or selector[-1].isdigit()


@lru_cache(maxsize=4096)
def any_selector_matches(selectors: tuple[str, ...], code: str) -> bool:
    """Whether any of the selectors selects the rule code (cached)."""
    return any(selector_matches(selector, code) for selector in selectors)


def ruff_binary() -> str:
    """Path of the Ruff executable: the one installed with the pinned ``ruff`` package."""
    try:
        from ruff.__main__ import find_ruff_bin

        return os.fsdecode(find_ruff_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("ruff")
        if found is None:
            raise RuffRunError("the ruff executable was not found (pip install ruff)") from None
        return found


def ruff_version() -> str:
    """The version of the Ruff that checks run with (e.g. ``0.17.6``).

    Returns:
        The version, or ``unavailable (<why>)`` when Ruff cannot be run.
    """
    try:
        return _version_of(ruff_binary())
    except RuffRunError as exc:
        return f"unavailable ({exc})"


@lru_cache(maxsize=4)
def _version_of(binary: str) -> str:
    try:
        done = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=60, env=_clean_env()
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise RuffRunError(f"ruff could not be started: {exc}") from exc
    if done.returncode != 0:
        raise RuffRunError(f"ruff --version exited with status {done.returncode}")
    return done.stdout.strip().removeprefix("ruff ").strip()


def _clean_env() -> dict[str, str]:
    """The parent's environment without RUFF_* variables (they could change results)."""
    return {key: value for key, value in os.environ.items() if not key.startswith("RUFF_")}


def run_ruff(
    config: RuffConfig, names: Sequence[str], *, workdir: Path, timeout: float = RUN_TIMEOUT_S
) -> list[dict[str, Any]]:
    """Run Ruff once over some files.

    Args:
        config: Rules and settings.
        names: Names of the files to check, directly inside ``workdir``.
        workdir: Working directory of the run; its path is hidden in error messages.
        timeout: Seconds before the run is abandoned.

    Returns:
        Ruff's JSON report: one object per finding (see :func:`diagnostic_of`).

    Raises:
        RuffRunError: When Ruff cannot start, times out, exits with an error status or
            prints something that is not its JSON report.
    """
    command = [
        ruff_binary(),
        "check",
        "--isolated",
        "--no-cache",
        "--no-fix",
        "--ignore-noqa",
        "--exit-zero",
        "--output-format",
        "json",
        *config.arguments(),
        "--",
        *names,
    ]
    try:
        done = subprocess.run(
            command,
            cwd=workdir,
            capture_output=True,
            timeout=timeout,
            env=_clean_env(),
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise RuffRunError(f"ruff timed out after {timeout:g} s") from exc
    except OSError as exc:
        raise RuffRunError(f"ruff could not be started: {exc.strerror or exc}") from exc
    stderr = done.stderr.decode("utf-8", "replace").replace(os.fspath(workdir), "<tmp>")
    if done.returncode != 0:
        raise RuffRunError(f"ruff exited with status {done.returncode}: {_summary(stderr)}")
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise RuffRunError(f"ruff printed no valid JSON report ({exc.msg})") from exc
    if not isinstance(report, list):
        raise RuffRunError("ruff's JSON report is not a list")
    return report


def _summary(stderr: str, limit: int = 400) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    text = " | ".join(lines[:6]) or "no error message"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def diagnostic_of(entry: dict[str, Any]) -> Diagnostic:
    """A finding of Ruff's JSON report as a :class:`Diagnostic`."""
    location = entry.get("location") or {}
    return Diagnostic(
        int(location.get("row") or 0),
        int(location.get("column") or 0),
        entry.get("code"),
        str(entry.get("name") or ""),
        str(entry.get("message") or ""),
    )


def file_of(entry: dict[str, Any]) -> str:
    """The file name (without directory) of a finding of Ruff's JSON report."""
    return str(entry.get("filename", "")).rpartition(os.sep)[2]


def diagnostic_order(diagnostic: Diagnostic) -> tuple[int, int, str, str, str]:
    """Sort key: position, then code, name and message."""
    return (
        diagnostic.row,
        diagnostic.column,
        diagnostic.code or "",
        diagnostic.name,
        diagnostic.message,
    )
