"""Running the pinned Ruff binary: isolated configuration, JSON output, failures as errors.

Every run is isolated from user and project configuration (``--isolated``; Ruff refuses
``--isolated`` together with a configuration file, so the whole configuration goes on the
command line as ``--config KEY = VALUE`` pairs): :data:`BASE_SETTINGS` plus the
instructions' selectors and settings. No cache, no fixes, JSON output. Anything but a clean
exit, or output that is not Ruff's JSON report, is a :class:`RuffRunError`.

The verification profile (:mod:`prefjudge.scoring.profiles`) decides two more things,
carried by :class:`RuffConfig`: whether ``# noqa`` comments count (the reference profile
honours them, as the SWE-IF checkers do; strict passes ``--ignore-noqa`` so a response
cannot silence a check) and the target version (reference: none, Ruff's own choice, so
the newest syntax parses; strict: ``py311``, so code using newer syntax "does not parse").

:data:`BASE_SETTINGS` (the same in every profile):

- ``line-length = 88`` (Ruff's default): E501 and W505 take their limits from
  ``lint.pycodestyle.max-line-length`` / ``max-doc-length`` instead; this only sizes what
  other rules suggest, such as isort's wrapping of long imports.
- ``src = []``: otherwise isort would count modules found in the working directory as
  first-party, and results would depend on where prefjudge runs.
- ``lint.unfixable = ["ALL"]``: Ruff leaves fix suggestions out of its report, which is
  then much smaller to parse.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from prefjudge.scoring.profiles import Profile

BASE_SETTINGS: dict[str, Any] = {
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
class RuffOptions:
    """What a verification profile sets for every Ruff run.

    Attributes:
        honour_noqa: Whether ``# noqa`` comments silence rules (else ``--ignore-noqa``).
        target_version: ``target-version`` setting (None: Ruff's own default).
    """

    honour_noqa: bool = True
    target_version: str | None = None

    @classmethod
    def of(cls, profile: Profile) -> RuffOptions:
        """The options of a verification profile."""
        return cls(profile.honour_noqa, profile.target_version)


@dataclass(frozen=True)
class RuffConfig:
    """One complete Ruff configuration: rules, preview mode and settings.

    Attributes:
        select: Rule selectors (codes or prefixes), sorted.
        preview: Whether preview mode is on.
        settings: TOML dotted keys and values, sorted by key (BASE_SETTINGS come on top).
        options: The profile's Ruff-wide options.
    """

    select: tuple[str, ...]
    preview: bool = False
    settings: tuple[tuple[str, Any], ...] = ()
    options: RuffOptions = field(default_factory=lambda: RuffOptions())

    @classmethod
    def build(
        cls,
        select: Iterable[str],
        preview: bool,
        settings: dict[str, Any],
        options: RuffOptions | None = None,
    ) -> RuffConfig:
        """A config from unsorted parts."""
        frozen = tuple(sorted((key, _freeze(value)) for key, value in settings.items()))
        return cls(tuple(sorted(set(select))), preview, frozen, options or RuffOptions())

    def arguments(self) -> list[str]:
        """The command-line arguments that set this configuration."""
        values = {**BASE_SETTINGS, **dict(self.settings), "lint.select": list(self.select)}
        if self.options.target_version is not None:
            values["target-version"] = self.options.target_version
        args = ["--preview"] if self.preview else []
        if not self.options.honour_noqa:
            args.append("--ignore-noqa")
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
    return _installed_ruff()


@lru_cache(maxsize=1)
def _installed_ruff() -> str:
    """Find the Ruff executable once (each look-up reads sysconfig: ~1 ms per Ruff run)."""
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
        "--exit-zero",
        "--output-format",
        "json",
        *config.arguments(),
    ]
    # The report goes to a file, not a pipe: a pipe is drained by a Python thread that
    # needs the GIL for every 64 KiB, and while the other threads keep the GIL busy
    # (checks, writing records) Ruff stalls on the full pipe.
    report_file = _report_file(workdir)
    if report_file is not None:
        command += ["--output-file", report_file]
    command += ["--", *names]
    try:
        done = subprocess.run(
            command,
            cwd=workdir,
            capture_output=True,
            timeout=timeout,
            env=_clean_env(),
            check=False,
        )
        output = _read_report(report_file) or done.stdout
    except subprocess.TimeoutExpired as exc:
        raise RuffRunError(f"ruff timed out after {timeout:g} s") from exc
    except OSError as exc:
        raise RuffRunError(f"ruff could not be started: {exc.strerror or exc}") from exc
    finally:
        if report_file is not None:
            with contextlib.suppress(OSError):
                os.unlink(report_file)
    if done.returncode == -signal.SIGINT:
        # Interrupted with the rest of the process group (Ctrl-C): stop, rather than redo
        # the interrupted run check by check as for a failure (minutes of Ruff runs).
        raise KeyboardInterrupt("ruff was interrupted")
    stderr = done.stderr.decode("utf-8", "replace").replace(os.fspath(workdir), "<tmp>")
    if done.returncode != 0:
        raise RuffRunError(f"ruff exited with status {done.returncode}: {_summary(stderr)}")
    try:
        report = json.loads(output)
    except json.JSONDecodeError as exc:
        raise RuffRunError(f"ruff printed no valid JSON report ({exc.msg})") from exc
    if not isinstance(report, list):
        raise RuffRunError("ruff's JSON report is not a list")
    return report


def _report_file(workdir: Path) -> str | None:
    """A new empty file in ``workdir`` for Ruff's report (None when none can be made)."""
    try:
        handle, path = tempfile.mkstemp(prefix=".ruff-report-", suffix=".json", dir=workdir)
    except OSError:
        return None
    os.close(handle)
    return path


def _read_report(path: str | None) -> bytes:
    """What Ruff wrote to its report file (empty when it wrote nothing there)."""
    if path is None:
        return b""
    with open(path, "rb") as handle:
        return handle.read()


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
