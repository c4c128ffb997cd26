"""Running bandit: the part of a code text it gets, batched runs, and reports from its JSON.

A run that fails is split into :data:`SPLIT_PARTS` parts that are rerun, down to single
files, so that only a file that fails alone is an ``error``.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefjudge.judge.facts.security_models import SecurityFinding, SecurityReport
from prefjudge.judge.facts.security_unresolved import unresolved_findings
from prefjudge.judge.facts.security_work import bandit_work

SPLIT_PARTS = 16
"""Parts a failed bandit run is split into for rerunning."""


def _chunks(
    todo: Sequence[tuple[int, _Prepared]], size: int, work: int
) -> list[list[tuple[int, _Prepared]]]:
    """``todo`` in order, cut into runs of at most ``size`` files and ``work`` (or one file)."""
    chunks: list[list[tuple[int, _Prepared]]] = []
    total = 0
    for entry in todo:
        if not chunks or len(chunks[-1]) >= size or total + entry[1].work > work:
            chunks.append([])
            total = 0
        chunks[-1].append(entry)
        total += entry[1].work
    return chunks



@dataclass(frozen=True)
class _Prepared:
    """The part of one code text bandit gets, and what was left out.

    Attributes:
        text: The first ``analysed`` lines of the code (all ``lines`` when it parses).
        lines: Lines of the code.
        analysed: Lines given to bandit.
        reason: Why the rest was left out (empty when nothing was).
        rest: The text left out.
        work: :func:`bandit_work` of ``text``.
        unresolved: :func:`unresolved_findings` of ``text``.
    """

    text: str
    lines: int
    analysed: int
    reason: str
    rest: str
    work: int
    unresolved: tuple[SecurityFinding, ...] = ()


def _prepare(code: str) -> _Prepared | str:
    """The longest prefix of whole lines that parses, or why nothing does (a str)."""
    lines = code.splitlines(keepends=True)
    parsed = _parse(code)
    if isinstance(parsed, ast.Module):
        return _Prepared(code, len(lines), len(lines), "", "", bandit_work(parsed),
                         tuple(unresolved_findings(parsed)))
    if parsed[0] is None:  # not a syntax error (null bytes, nesting too deep)
        return parsed[1]
    first = parsed[1]
    keep = min(len(lines) - 1, parsed[0] - 1)
    while keep > 0:
        found = _parse("".join(lines[:keep]))
        if isinstance(found, ast.Module):
            rest = "".join(lines[keep:])
            reason = (f"only lines 1-{keep} of {len(lines)} parse; the rest does not "
                      f"({first})")
            return _Prepared("".join(lines[:keep]), len(lines), keep, reason, rest,
                             bandit_work(found), tuple(unresolved_findings(found)))
        if found[0] is None:
            return found[1]
        keep = min(keep - 1, found[0] - 1)
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return f"the code does not parse as Python {python} ({first})"


def _parse(text: str) -> ast.Module | tuple[int | None, str]:
    """The tree of ``text``, or ``(line of the syntax error or None, message)``."""
    try:
        with warnings.catch_warnings():  # invalid escapes in the response are not our problem
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except SyntaxError as exc:
        return max(exc.lineno or 1, 1), f"line {exc.lineno}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, f"the code cannot be parsed: {type(exc).__name__}: {exc}"




@dataclass
class _Runner:
    """Runs bandit over groups of files, isolating the files that make a run fail.

    Attributes:
        version: The bandit version (for the reports).
        timeout: Seconds per bandit run.
        healthy: Whether bandit analyses a trivial file (None until a run has failed).
    """

    version: str
    timeout: float
    healthy: bool | None = None

    def analyse(self, items: Sequence[_Prepared]) -> list[SecurityReport]:
        """Reports of ``items``; only a file that fails alone (or any, if bandit is broken) errs.

        A run that fails (times out, crashes, writes no report) is split into at most
        :data:`SPLIT_PARTS` parts that are rerun, recursively, down to single files: the
        others get the findings they get alone. When bandit cannot analyse even a trivial
        file, the failure is bandit's, not the files', and every file gets it.

        Args:
            items: Prepared code, each within the per-file bound.

        Returns:
            One report per item, in order.
        """
        try:
            return _run_bandit(items, self.version, self.timeout)
        except BanditRunError as exc:
            if len(items) == 1 or not self._bandit_works():
                return [_error(item, str(exc), self.version) for item in items]
        step = -(-len(items) // SPLIT_PARTS)
        return [report for start in range(0, len(items), step)
                for report in self.analyse(items[start : start + step])]

    def _bandit_works(self) -> bool:
        """Whether bandit analyses a trivial file (asked once)."""
        if self.healthy is None:
            trivial = _Prepared("x = 1\n", 1, 1, "", "", 0)
            try:
                _run_bandit([trivial], self.version, self.timeout)
            except BanditRunError:
                self.healthy = False
            else:
                self.healthy = True
        return self.healthy


def _error(item: _Prepared, reason: str, version: str) -> SecurityReport:
    return SecurityReport(version=version, status="error", reason=reason, lines=item.lines)


def _run_bandit(items: Sequence[_Prepared], version: str, timeout: float) -> list[SecurityReport]:
    """Run bandit once over ``items``.

    Raises:
        BanditRunError: The run failed (the caller decides which files to blame).
    """
    with tempfile.TemporaryDirectory(prefix="prefjudge-bandit-") as workdir:
        names = []
        unwritable: dict[int, str] = {}
        for index, item in enumerate(items):
            name = f"r{index:05d}.py"
            try:
                Path(workdir, name).write_text(item.text, encoding="utf-8")
            except (UnicodeEncodeError, OSError) as exc:
                unwritable[index] = f"the code could not be written for bandit: {exc}"
                continue
            names.append(name)
        output = _bandit_json(names, Path(workdir), timeout) if names else {}
    return [
        _error(item, unwritable[index], version)
        if index in unwritable
        else _report(item, f"r{index:05d}.py", output, version)
        for index, item in enumerate(items)
    ]


class BanditRunError(RuntimeError):
    """Bandit could not be run or did not finish cleanly; the message says why."""


def _bandit_json(names: Sequence[str], workdir: Path, timeout: float) -> dict[str, Any]:
    """Bandit's JSON report over files in ``workdir``."""
    report = workdir / ".bandit-report.json"
    command = [sys.executable, "-m", "bandit", "--format", "json", "--quiet", "--ignore-nosec",
               "--exit-zero", "--number", "1", "--output", str(report), "--", *names]
    try:
        done = subprocess.run(command, cwd=workdir, capture_output=True, timeout=timeout,
                              check=False, env=_bandit_env())
    except subprocess.TimeoutExpired as exc:
        raise BanditRunError(f"bandit timed out after {timeout:g} s") from exc
    except OSError as exc:
        raise BanditRunError(f"bandit could not be started: {exc}") from exc
    stderr = done.stderr.decode("utf-8", "replace").replace(os.fspath(workdir), "<tmp>")
    if done.returncode != 0:
        last = stderr.strip().splitlines()[-1:] or ["no error message"]
        raise BanditRunError(f"bandit exited with status {done.returncode}: {last[0][:300]}")
    try:
        parsed = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BanditRunError(f"bandit wrote no valid JSON report ({exc})") from exc
    if not isinstance(parsed, dict) or not isinstance(parsed.get("results"), list):
        raise BanditRunError("bandit's JSON report has no results list")
    return parsed


def _bandit_env() -> dict[str, str]:
    """The environment without PYTHON* variables that could change what bandit imports."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONSAFEPATH")}


def _report(item: _Prepared, name: str, output: dict[str, Any], version: str) -> SecurityReport:
    """One file's report from bandit's JSON output."""
    errors = [e for e in output.get("errors", []) if Path(str(e.get("filename"))).name == name]
    if errors:
        reason = "; ".join(str(e.get("reason", "unknown error")) for e in errors)
        return SecurityReport(version=version, status="error", reason=f"bandit: {reason}",
                              lines=item.lines)
    metrics = output.get("metrics", {})
    if not any(Path(str(key)).name == name for key in metrics):
        return SecurityReport(version=version, status="error", lines=item.lines,
                              reason="bandit did not report on this file")
    found = [_finding(r) for r in output["results"] if Path(str(r.get("filename"))).name == name]
    findings = sorted([*found, *item.unresolved], key=lambda f: (f.line, f.rule))
    partial = item.analysed < item.lines
    return SecurityReport(
        version=version, status="partial" if partial else "ok", reason=item.reason,
        findings=findings, risk=sum(f.weight for f in findings), lines=item.lines,
        lines_analysed=item.analysed,
        unanalysed_digest=_digest(item.rest) if partial else "")


def _finding(result: dict[str, Any]) -> SecurityFinding:
    cwe = result.get("issue_cwe") or {}
    return SecurityFinding(
        rule=str(result.get("test_id", "")), name=str(result.get("test_name", "")),
        severity=str(result.get("issue_severity", "UNDEFINED")),
        confidence=str(result.get("issue_confidence", "UNDEFINED")),
        line=int(result.get("line_number", 0)), message=str(result.get("issue_text", "")),
        cwe=cwe.get("id") if isinstance(cwe, dict) else None)


def _digest(text: str) -> str:
    return hashlib.sha256(text.strip().encode("utf-8", "surrogatepass")).hexdigest()


# -- comparing two responses ---------------------------------------------------------------------
