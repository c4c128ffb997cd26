"""Security evidence: bandit's findings in both responses, weighted by severity and confidence.

Each response's code is the code its tests run: for a pair,
:func:`~prefjudge.judge.facts.correctness.response_code` (the function the correctness and
efficiency facts run code from); for a response given alone,
:func:`~prefjudge.scoring.verify.extract.code_of` as that function calls it (a response
that is code as a whole, a sample file's ``solution``, as it is). A usage example after
the tested block is never what is analysed. The code is written to a temporary file and
analysed by bandit (:data:`BANDIT_PIN`), run as a subprocess of the same Python
(``python -m bandit``) over many files at once; the code is parsed, never executed. Bandit
runs with its default tests, ``--ignore-nosec`` (a response cannot silence a finding with a
``# nosec`` comment) and no configuration file.

Beside bandit's findings stand those of :func:`unresolved_findings` (rules ``PJ001`` to
``PJ004``, :data:`UNRESOLVED_PASS`): a call bandit cannot resolve (a dynamic import of
``os``, ``getattr(subprocess, ...)``, ``sys.modules['pickle']``, a module passed on under
another name) has no bandit finding, so hiding a call that way would lower a response's
risk; each such way counts against the response, as heavy as the worst call on that module.

A finding weighs ``severity × confidence`` with ``LOW, MEDIUM, HIGH = 1, 3, 9`` for both
(:data:`RANK_WEIGHTS`; a fixed scale, nothing fitted to data), and a response's ``risk`` is
the sum over its findings. The response with the lower risk is the safer one; equal risks
are a tie. On CodePrefBench's security split this decides every pair bandit can parse on
both sides correctly except five ties (``scripts/evidence_security.py`` measures it,
beside Ruff's ``S`` rules and plain counts).

Code that does not parse is never counted as clean. When a prefix of whole lines parses
(generations cut off mid-statement are common), that prefix is analysed and the report is
``partial``: its risk is a lower bound. A partial report decides a pair only when that
cannot be wrong about what was analysed: the other side is fully analysed and has a lower
risk than the partial side's lower bound, or both are partial and the text left
unanalysed is the same on both sides (so the difference lies in what was analysed).
Otherwise, and when nothing parses or bandit itself fails, the outcome is ``error``.

A response's report does not depend on the other responses analysed with it. Bandit's time
is not linear in the code's size: a dict or list of N string literals on N lines costs it
N² steps (4,000 lines take seconds, 28,000 lines over five minutes). So its work on each
file is estimated before it runs (:func:`bandit_work`, linear in the code), and code over
:data:`MAX_WORK` (2-3 s of bandit's CPU) is an ``error`` that names the bound, without
running bandit. The rest is batched into runs of at most :data:`CHUNK_FILES` files and
:data:`CHUNK_WORK`. A run that fails or times out anyway (a shape the estimate misses) is
split into :data:`SPLIT_PARTS` parts that are rerun, down to single files: only a file that
fails alone is an ``error`` (a timeout one with the reason ``bandit timed out after 60 s``,
never a clean report), and every other file gets the report it gets alone. A file that
makes runs time out costs at most three timeouts (its run of up to 250 files, its part of
up to 16, itself) and one more trivial run that tells a broken bandit (then every file is
an ``error``) from a broken file.
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
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from prefjudge.judge.facts.correctness import response_code
from prefjudge.records import Fact, Pair
from prefjudge.scoring.verify.extract import code_of

BANDIT_PIN = "1.9.4"
"""The bandit version prefjudge is pinned to (pyproject); reports record the one used."""

ANALYSER = "bandit"
RANK_WEIGHTS: dict[str, int] = {"UNDEFINED": 0, "LOW": 1, "MEDIUM": 3, "HIGH": 9}
"""Weight of a bandit severity or confidence rank; a finding weighs their product."""

CHUNK_FILES = 250
"""Files per bandit process (one start costs ~0.4 s; 400 files take ~1.5 s)."""

MAX_WORK = 100_000_000
"""Per-file bound on :func:`bandit_work`: 1.6-2.4 s of bandit's CPU at the bound, measured."""

CHUNK_WORK = 250_000_000
"""Bound on the summed :func:`bandit_work` of one bandit run (about 5 s of CPU)."""

RUN_TIMEOUT_S = 60.0
"""Seconds a bandit run may take; a file errs for it only when it ran out of time alone."""

SPLIT_PARTS = 16
"""Parts a failed bandit run is split into for rerunning."""
ReportStatus = Literal["ok", "partial", "error"]
Outcome = Literal["A", "B", "tie", "error"]


class SecurityFinding(BaseModel):
    """One finding: bandit's, or of the pass over calls bandit cannot resolve.

    Attributes:
        rule: Bandit test id (``B602``), or ``PJ001``-``PJ004`` (:func:`unresolved_findings`).
        name: Test name (``subprocess_popen_with_shell_equals_true``).
        severity: ``LOW``, ``MEDIUM`` or ``HIGH``.
        confidence: ``LOW``, ``MEDIUM`` or ``HIGH``.
        line: 1-based line in the analysed code (the extracted code, not the response).
        message: What was found.
        cwe: CWE id bandit gives, if any.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: str
    name: str
    severity: str
    confidence: str
    line: int
    message: str
    cwe: int | None = None

    @property
    def weight(self) -> int:
        """``severity × confidence`` on the 1/3/9 scale of :data:`RANK_WEIGHTS`."""
        return RANK_WEIGHTS.get(self.severity, 0) * RANK_WEIGHTS.get(self.confidence, 0)

    def describe(self) -> str:
        """``B602 at line 12 (high severity, high confidence: subprocess call ...)``."""
        message = self.message.rstrip(".")
        return (f"{self.rule} at line {self.line} ({self.severity.lower()} severity, "
                f"{self.confidence.lower()} confidence: {message})")


class SecurityReport(BaseModel):
    """Bandit's analysis of one response's code.

    Attributes:
        analyser: ``bandit``.
        version: The bandit version that ran (``unavailable`` when it is not installed).
        status: ``ok`` (the whole code was analysed), ``partial`` (only the first
            ``lines_analysed`` lines parse; the rest is unknown) or ``error`` (nothing
            could be analysed; ``reason`` says why).
        reason: Why the report is partial or an error (empty when ok).
        findings: Bandit's findings and :func:`unresolved_findings`, by line.
        risk: Sum of the findings' weights; None on error (never zero by default).
        lines: Lines of code extracted from the response.
        lines_analysed: Lines analysed (all of them when ok).
        unanalysed_digest: SHA-256 of the unanalysed text with surrounding whitespace
            removed (partial reports only): two partial reports with the same digest left
            the same text unanalysed.
    """

    model_config = ConfigDict(extra="forbid")

    analyser: str = ANALYSER
    version: str
    status: ReportStatus
    reason: str = ""
    findings: list[SecurityFinding] = Field(default_factory=list)
    risk: int | None = None
    lines: int = 0
    lines_analysed: int = 0
    unanalysed_digest: str = ""

    def risk_below(self, other: SecurityReport) -> bool:
        """Whether this report is complete and its risk below ``other``'s lower bound.

        Args:
            other: A report, possibly partial (its risk is then a lower bound).

        Returns:
            True when this side is provably the safer one.
        """
        return self.status == "ok" and (self.risk or 0) < (other.risk or 0)

    def summary(self, limit: int = 3) -> str:
        """The heaviest findings in words (``none`` when there are none)."""
        return _describe(self.findings, limit) or "none"


class SecurityDecision(BaseModel):
    """Which of two responses is safer, and why.

    Attributes:
        outcome: ``A`` or ``B`` (the safer side), ``tie`` (equal risk) or ``error`` (a
            side could not be analysed far enough to decide).
        fact: The reason in words.
        report_a: Response A's report.
        report_b: Response B's report.
    """

    model_config = ConfigDict(extra="forbid")

    outcome: Outcome
    fact: str
    report_a: SecurityReport
    report_b: SecurityReport


# -- analysing code ------------------------------------------------------------------------------


def bandit_version() -> str | None:
    """The installed bandit's version, or None when bandit is not installed."""
    try:
        return metadata.version("bandit")
    except metadata.PackageNotFoundError:
        return None


def security_findings(code: str) -> SecurityReport:
    """Analyse one response's code with bandit.

    Args:
        code: A response (fenced Markdown, read as :func:`code_of` reads it; or plain code).

    Returns:
        Its report (``error`` with a reason when bandit fails or nothing parses).
    """
    return security_findings_batch([code])[0]


def security_findings_batch(
    codes: Sequence[str],
    *,
    whole: Sequence[bool] = (),
    chunk_size: int = CHUNK_FILES,
    timeout: float = RUN_TIMEOUT_S,
    max_work: int = MAX_WORK,
    chunk_work: int = CHUNK_WORK,
) -> list[SecurityReport]:
    """Analyse many responses, batched into few bandit processes.

    A response's report does not depend on the others in the batch: code whose estimated
    bandit work (:func:`bandit_work`) exceeds ``max_work`` is an ``error`` without running
    bandit; the rest is grouped into runs of at most ``chunk_size`` files and ``chunk_work``;
    a run that fails is split and rerun (:meth:`_Runner.analyse`), so that only code that
    fails alone is an ``error``.

    Args:
        codes: Responses (fenced Markdown, read as :func:`code_of` reads it, or code).
        whole: Per response, whether it is code as a whole (a sample file's ``solution``:
            analysed as it is, a fenced docstring example included); missing: False.
        chunk_size: Files per bandit run.
        timeout: Seconds before a bandit run is abandoned; a file is an error for a timeout
            only when it ran out of time alone.
        max_work: The per-file bound on :func:`bandit_work`.
        chunk_work: The bound on the summed :func:`bandit_work` of one run (a file over it
            runs alone).

    Returns:
        One report per response, in order.
    """
    version = bandit_version()
    if version is None:
        why = f"bandit is not installed (pip install bandit=={BANDIT_PIN})"
        return [SecurityReport(version="unavailable", status="error", reason=why)
                for _ in codes]
    extracted = [code_of(code, is_code=index < len(whole) and whole[index])
                 for index, code in enumerate(codes)]
    prepared = [_prepare(code) for code in extracted]
    reports: dict[int, SecurityReport] = {}
    todo: list[tuple[int, _Prepared]] = []
    for index, item in enumerate(prepared):
        if isinstance(item, _Prepared) and item.work <= max_work:
            todo.append((index, item))
            continue
        problem = item if isinstance(item, str) else _over_bound(item, max_work)
        reports[index] = SecurityReport(version=version, status="error", reason=problem,
                                        lines=len(extracted[index].splitlines()))
    runner = _Runner(version, timeout)
    for chunk in _chunks(todo, max(chunk_size, 1), chunk_work):
        found = runner.analyse([item for _, item in chunk])
        reports.update((index, report) for (index, _), report in zip(chunk, found, strict=True))
    return [reports[index] for index in range(len(codes))]


def _over_bound(item: _Prepared, max_work: int) -> str:
    """Why ``item`` is not given to bandit: its estimated work is over the bound."""
    return (f"not analysed: the code is too large for bandit in bounded time (estimated work "
            f"{item.work:,} over the per-file bound of {max_work:,}; bandit's time grows with "
            f"the string literals of a statement times its lines)")


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


# -- bandit's work, estimated before it runs -----------------------------------------------------

_NODE_TESTS = {"Call": 33, "Assert": 1, "FunctionDef": 2, "ExceptHandler": 2, "Import": 1,
               "ImportFrom": 1}
"""Bandit 1.9.4's default tests per node type; each scans the node's lines for ``# nosec``."""
_STR_TESTS = 4
"""Bandit 1.9.4's default tests of a string literal (B104, B105, B108, B608)."""
WORK_PER_NODE = 500
"""Work of visiting one node and running its checks, beyond the line scans."""
WORK_PER_FSTRING_PART = 3
"""Work per part of an f-string, for each of its string parts (B608 joins them all)."""
WORK_PER_CONCATENATION = 15
"""Work per node of a ``+``/``%`` expression, for each of its strings (B608 joins them)."""
WORK_TUPLE_DIVISOR = 16
"""A tuple of N elements given literally to a call costs N² / this (rebuilt per element)."""
_LITERALS = (ast.List, ast.Tuple, ast.Set)


def bandit_work(tree: ast.Module) -> int:
    """Estimate the work bandit 1.9.4 does on ``tree``, in units of 20-30 ns of CPU.

    Bandit's time is not linear in the code's size. For every check it runs (33 per call,
    4 per string literal, ...) it scans every line of the check's context for a ``# nosec``
    comment, even with ``--ignore-nosec``, and a string literal's context is its parent: a
    list, dict or call of N string literals on N lines costs N² line scans. B608 joins every
    part of an f-string for each of its parts, and every string of a ``+``/``%`` expression
    for each of its strings; a tuple given literally to a call is rebuilt one element at a
    time. The estimate counts these (one unit a line scan) plus a fixed cost per node, with
    weights measured on bandit 1.9.4 (re-measure them when :data:`BANDIT_PIN` changes).

    Args:
        tree: Parsed code.

    Returns:
        The estimated work: :data:`MAX_WORK` is 2-3 s of bandit's CPU time.
    """
    work = 0
    concats: list[list[int]] = []  # [nodes, string literals] per BinOp tree
    # (node, parent, lines the parent spans, index of the parent's BinOp tree, literal arg?)
    stack: list[tuple[ast.AST, ast.AST, int, int | None, bool]] = [
        (child, tree, 0, None, False) for child in ast.iter_child_nodes(tree)]
    while stack:
        node, parent, parent_span, concat, literal = stack.pop()
        span = _span(node, parent_span)
        work += WORK_PER_NODE + span * (1 + _NODE_TESTS.get(type(node).__name__, 0))
        if isinstance(node, ast.Constant):
            work += _string_work(node, parent, parent_span)
        if concat is None and isinstance(node, ast.BinOp):
            concats.append([0, 0])
            concat = len(concats) - 1
        if concat is not None:
            concats[concat][0] += 1
            concats[concat][1] += isinstance(node, ast.Constant) and isinstance(node.value, str)
        if literal and isinstance(node, ast.Tuple):
            work += len(node.elts) ** 2 // WORK_TUPLE_DIVISOR
        inner = concat if isinstance(node, ast.BinOp) else None
        stack.extend((child, node, span, inner, _literal_arg(node, child, literal))
                     for child in ast.iter_child_nodes(node))
    return work + sum(WORK_PER_CONCATENATION * nodes * strings for nodes, strings in concats)


def _span(node: ast.AST, parent_span: int) -> int:
    """Lines ``node`` spans; its parent's for a node without line numbers (0 for ``Load``)."""
    first = getattr(node, "lineno", None)
    if first is None:
        return parent_span if node._fields else 0
    return (getattr(node, "end_lineno", None) or first) - first + 1


def _string_work(node: ast.Constant, parent: ast.AST, parent_span: int) -> int:
    """A string literal's checks: its parent's lines scanned per test, f-string parts joined."""
    if isinstance(parent, ast.Expr):  # a docstring or a bare string: bandit skips it
        return 0
    if isinstance(node.value, bytes):
        return parent_span
    if not isinstance(node.value, str):
        return 0
    work = parent_span * (1 + _STR_TESTS)
    if isinstance(parent, ast.JoinedStr):
        work += WORK_PER_FSTRING_PART * len(parent.values)
    return work


def _literal_arg(parent: ast.AST, child: ast.AST, inherited: bool) -> bool:
    """Whether ``child`` is (in) a literal argument bandit converts for a call's checks."""
    if isinstance(parent, ast.Call):
        return child is not parent.func
    return inherited and isinstance(parent, (ast.keyword, *_LITERALS))


# -- calls bandit cannot resolve -----------------------------------------------------------------

UNRESOLVED_PASS = "prefjudge-unresolved 1"
"""The name and version of the AST pass whose findings stand beside bandit's (``PJ`` rules)."""

_SHELL = ("HIGH", "HIGH", "starts processes and shells")
_DESERIALISE = ("MEDIUM", "HIGH", "deserialises data into objects")
_ANY_CODE = ("HIGH", "HIGH", "reaches code of any kind")
DANGEROUS_MODULES: dict[str, tuple[str, str, str]] = {
    **dict.fromkeys(("os", "posix", "nt", "subprocess", "pty", "commands", "popen2"), _SHELL),
    **dict.fromkeys(("pickle", "cPickle", "_pickle", "dill", "marshal", "shelve",
                     "jsonpickle"), _DESERIALISE),
    **dict.fromkeys(("builtins", "__builtin__", "importlib", "ctypes"), _ANY_CODE),
}
"""Modules whose calls bandit checks only when it sees them by name: per module, the
severity and confidence of the heaviest finding bandit gives such a call (B602/B605 for a
shell, B301/B302 for deserialising; ``builtins``, ``importlib`` and ``ctypes`` reach any
code) and what it does."""
UNKNOWN_MODULE = ("HIGH", "MEDIUM", "may be any module")
"""Severity and confidence of a module whose name is computed (it may be any of them)."""
IMPORT_FUNCTIONS = frozenset({"__import__", "importlib.import_module", "importlib.__import__",
                              "builtins.__import__"})
"""Functions that import a module named by a value."""
_UNRESOLVED_RULES = {
    "PJ001": "unresolved_dynamic_import",
    "PJ002": "unresolved_getattr_on_module",
    "PJ003": "unresolved_module_lookup",
    "PJ004": "unresolved_module_alias",
}


def unresolved_findings(tree: ast.Module) -> list[SecurityFinding]:
    """Findings of the calls bandit cannot resolve, which count against the code.

    Bandit checks a call of ``os.popen`` or ``pickle.loads`` only when it sees the module by
    name: reached another way, the call has no finding, so hiding it would lower a
    response's risk. Each way of reaching a module of :data:`DANGEROUS_MODULES` unseen is a
    finding weighing what bandit would give the worst call on it (a computed module name,
    :data:`UNKNOWN_MODULE`):

    - ``PJ001``: a dynamic import (``__import__('os')``, ``importlib.import_module(name)``,
      also through another name for the import function);
    - ``PJ002``: ``getattr`` on such a module (``getattr(os, 'system')``);
    - ``PJ003``: a lookup in a module table (``sys.modules['os']``, ``vars(os)[...]``,
      ``os.__dict__[...]``);
    - ``PJ004``: the module passed on as a value (``sp = subprocess``, ``run(os)``), or one
      of its functions given a new name (``p = os.popen``; not its upper-case constants).

    The code is parsed, never run; names bound anywhere in the code count everywhere.

    Args:
        tree: Parsed code.

    Returns:
        The findings, by line.
    """
    names = _bindings(tree)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = [finding for node in ast.walk(tree)
             if (finding := _unresolved(node, names, parents)) is not None]
    return sorted(found, key=lambda f: (f.line, f.rule))


def _bindings(tree: ast.Module) -> dict[str, str]:
    """Names bound to modules or import functions: by imports, then by plain assignments."""
    names = {"__builtins__": "builtins"}
    assigns: list[tuple[str, ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name.split(".")[0], a.name if a.asname else
                          a.name.split(".")[0]) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.update((a.asname or a.name, f"{node.module}.{a.name}") for a in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr) and node.value:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            assigns += [(t.id, node.value) for t in targets if isinstance(t, ast.Name)]
    for _ in range(len(assigns)):  # follow chains of names (x = os; y = x)
        changed = False
        for name, value in assigns:
            target = _dotted(value, names)
            if target is not None and _is_reachable(target) and names.get(name) != target:
                names[name], changed = target, True
        if not changed:
            break
    return names


def _is_reachable(target: str) -> bool:
    """Whether a dotted name is a dangerous module or an import function."""
    return target in DANGEROUS_MODULES or target in IMPORT_FUNCTIONS


def _dotted(node: ast.AST, names: dict[str, str]) -> str | None:
    """``os.path`` for ``o.path`` after ``import os as o``; None for anything but names."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(names.get(node.id, node.id))
    return ".".join(reversed(parts))


def _unresolved(node: ast.AST, names: dict[str, str],
                parents: dict[ast.AST, ast.AST]) -> SecurityFinding | None:
    """The finding of one node, if it reaches a dangerous module unseen."""
    if isinstance(node, ast.Call):
        called = _dotted(node.func, names)
        if called in IMPORT_FUNCTIONS:
            return _finding_of("PJ001", node, _imported(node), f"{called}() imports")
        if called in ("getattr", "builtins.getattr") and node.args:
            module = _module_of(node.args[0], names)
            return _finding_of("PJ002", node, module, "getattr() reaches") if module else None
    if isinstance(node, ast.Subscript):
        return _lookup(node, names)
    if isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Load):
        return _alias(node, names, parents.get(node))
    return None


def _alias(node: ast.Name | ast.Attribute, names: dict[str, str],
           parent: ast.AST | None) -> SecurityFinding | None:
    """``PJ004``: a module passed on as a value, or one of its functions given a new name."""
    root = node
    while isinstance(root, ast.Attribute):
        root = root.value
    dotted = _dotted(node, names)
    if dotted is None or not isinstance(root, ast.Name) or root.id not in names:
        return None
    module, _, attr = dotted.partition(".")
    if not attr and isinstance(node, ast.Name) and _passed_on(node, parent):
        return _finding_of("PJ004", node, module, "a value passed on reaches")
    assigned = isinstance(parent, ast.Assign | ast.AnnAssign | ast.NamedExpr) and (
        parent.value is node)
    if assigned and attr and "." not in attr and not attr.isupper():
        return _finding_of("PJ004", node, module, f"a new name for {dotted} reaches")
    return None


def _imported(call: ast.Call) -> str:
    """The module a dynamic import names (``""`` when it is computed)."""
    given = call.args[0] if call.args else next(
        (k.value for k in call.keywords if k.arg == "name"), None)
    if isinstance(given, ast.Constant) and isinstance(given.value, str):
        return given.value.split(".")[0]
    return ""


def _module_of(node: ast.AST, names: dict[str, str]) -> str | None:
    """The dangerous module an expression is (by name, or a dynamic import), else None."""
    if isinstance(node, ast.Call) and _dotted(node.func, names) in IMPORT_FUNCTIONS:
        module = _imported(node)
        return module if module in DANGEROUS_MODULES or not module else None
    dotted = _dotted(node, names)
    return dotted if dotted in DANGEROUS_MODULES else None


def _lookup(node: ast.Subscript, names: dict[str, str]) -> SecurityFinding | None:
    """``sys.modules[...]``, ``vars(os)[...]`` or ``os.__dict__[...]`` (``PJ003``)."""
    table = node.value
    if _dotted(table, names) == "sys.modules":
        key = node.slice
        module = key.value.split(".")[0] if (isinstance(key, ast.Constant)
                                             and isinstance(key.value, str)) else ""
        return _finding_of("PJ003", node, module, "sys.modules reaches")
    if isinstance(table, ast.Attribute) and table.attr == "__dict__":
        module = _module_of(table.value, names)
    elif (isinstance(table, ast.Call) and _dotted(table.func, names) == "vars"
          and len(table.args) == 1):
        module = _module_of(table.args[0], names)
    else:
        return None
    return _finding_of("PJ003", node, module, "its table reaches") if module is not None else None


def _passed_on(node: ast.Name, parent: ast.AST | None) -> bool:
    """Whether a module's name is used other than for an attribute or an unresolved lookup."""
    if isinstance(parent, ast.Attribute):
        return False
    return not (isinstance(parent, ast.Call) and parent.args and parent.args[0] is node
                and isinstance(parent.func, ast.Name) and parent.func.id in ("getattr", "vars"))


def _finding_of(rule: str, node: ast.AST, module: str | None,
                how: str) -> SecurityFinding | None:
    """The finding of ``rule`` for ``module`` (``""``: computed); None for a harmless one."""
    if module is None or (module and module not in DANGEROUS_MODULES):
        return None
    severity, confidence, does = DANGEROUS_MODULES[module] if module else UNKNOWN_MODULE
    what = f"module {module!r}, which {does}" if module else "a module whose name is computed"
    return SecurityFinding(
        rule=rule, name=_UNRESOLVED_RULES[rule], severity=severity, confidence=confidence,
        line=getattr(node, "lineno", 0),
        message=f"{how} {what}, in a way bandit cannot resolve: its calls are not checked, "
        "so the worst of them is counted")

# -- running bandit ------------------------------------------------------------------------------


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


def compare_security(code_a: str, code_b: str) -> SecurityDecision:
    """Decide which of two responses is safer (one bandit run for both).

    Args:
        code_a: Response A (fenced Markdown or plain code).
        code_b: Response B.

    Returns:
        The decision, with both reports.
    """
    report_a, report_b = security_findings_batch([code_a, code_b])
    return compare_reports(report_a, report_b)


def compare_security_batch(pairs: Sequence[tuple[str, str]],
                           whole: Sequence[bool] = ()) -> list[SecurityDecision]:
    """:func:`compare_security` for many pairs, bandit batched over all their responses.

    Args:
        pairs: ``(response A, response B)`` per pair.
        whole: Per response (A then B of each pair), whether it is code as a whole
            (:func:`security_findings_batch`).

    Returns:
        One decision per pair, in order.
    """
    reports = security_findings_batch([code for pair in pairs for code in pair], whole=whole)
    return [compare_reports(reports[2 * i], reports[2 * i + 1]) for i in range(len(pairs))]


def compare_reports(report_a: SecurityReport, report_b: SecurityReport) -> SecurityDecision:
    """Decide from two reports (see the module docstring for partial reports).

    Args:
        report_a: Response A's report.
        report_b: Response B's report.

    Returns:
        The decision.
    """
    reports = {"A": report_a, "B": report_b}
    failed = [side for side, r in reports.items() if r.status == "error"]
    if failed:
        why = "; ".join(f"{side}: {reports[side].reason}" for side in failed)
        return _decision("error", f"{' and '.join(failed)} could not be analysed ({why})",
                         report_a, report_b)
    risk_a, risk_b = report_a.risk or 0, report_b.risk or 0
    partial = [side for side, r in reports.items() if r.status == "partial"]
    if len(partial) == 2 and report_a.unanalysed_digest != report_b.unanalysed_digest:
        return _decision(
            "error", f"neither response parses to the end (A: {report_a.reason}; B: "
            f"{report_b.reason}) and the unparsed parts differ", report_a, report_b)
    if len(partial) == 1:
        side = partial[0]
        other = "B" if side == "A" else "A"
        if not reports[other].risk_below(reports[side]):
            return _decision(
                "error", f"{side} is only partly analysed ({reports[side].reason}); its "
                f"findings so far (risk {reports[side].risk}) do not exceed {other}'s "
                f"(risk {reports[other].risk})", report_a, report_b)
    note = _partial_note(partial, reports)
    if risk_a == risk_b:
        tally_a, tally_b = _tally(report_a.findings), _tally(report_b.findings)
        if not report_a.findings and not report_b.findings:
            fact = f"neither has a bandit finding{note}"
        elif tally_a == tally_b:
            fact = f"both have the same bandit findings, {tally_a} (risk {risk_a}){note}"
        else:
            fact = f"both have bandit risk {risk_a} (A: {tally_a}; B: {tally_b}){note}"
        return _decision("tie", fact, report_a, report_b)
    winner, loser = ("A", "B") if risk_a < risk_b else ("B", "A")
    extra = _excess(reports[loser].findings, reports[winner].findings)
    own = _excess(reports[winner].findings, reports[loser].findings)
    fact = (f"{loser} has {_count(extra)} {winner} lacks: {_describe(extra, 2)}; "
            f"{winner} has {_tally(own) or 'none'} that {loser} lacks "
            f"(bandit risk {loser} {reports[loser].risk} vs {winner} {reports[winner].risk})"
            f"{note}")
    return _decision(winner, fact, report_a, report_b)


def _partial_note(partial: Sequence[str], reports: dict[str, SecurityReport]) -> str:
    if not partial:
        return ""
    parts = [f"{side} analysed to line {reports[side].lines_analysed} of "
             f"{reports[side].lines}" for side in partial]
    same = "; the unparsed rest is the same in both" if len(partial) == 2 else ""
    return f" [{', '.join(parts)}{same}]"


def _excess(
    findings: Sequence[SecurityFinding], others: Sequence[SecurityFinding]
) -> list[SecurityFinding]:
    """Findings of ``findings`` beyond those ``others`` has (by rule, severity, confidence)."""
    left = Counter((f.rule, f.severity, f.confidence) for f in others)
    extra = []
    for finding in findings:
        key = (finding.rule, finding.severity, finding.confidence)
        if left[key]:
            left[key] -= 1
        else:
            extra.append(finding)
    return extra


def _describe(findings: Sequence[SecurityFinding], limit: int = 3) -> str:
    heaviest = sorted(findings, key=lambda f: (-f.weight, f.line))
    text = "; ".join(f.describe() for f in heaviest[:limit])
    more = len(heaviest) - limit
    return f"{text}; and {more} more" if more > 0 else text


def _tally(findings: Sequence[SecurityFinding]) -> str:
    """``2× B608 (medium/medium), 1× B101 (low/high)``, heaviest first."""
    counts = Counter((f.weight, f.rule, f.severity, f.confidence) for f in findings)
    return ", ".join(f"{n}× {rule} ({sev.lower()}/{conf.lower()})" for (_, rule, sev, conf), n
                     in sorted(counts.items(), key=lambda item: (-item[0][0], item[0][1])))


def _count(findings: Sequence[SecurityFinding]) -> str:
    return "1 finding" if len(findings) == 1 else f"{len(findings)} findings"


def _decision(outcome: Outcome, fact: str, a: SecurityReport, b: SecurityReport
              ) -> SecurityDecision:
    return SecurityDecision(outcome=outcome, fact=fact, report_a=a, report_b=b)


# -- facts for the evidence judge ----------------------------------------------------------------


def security_facts(pairs: Sequence[Pair]) -> list[Fact]:
    """The security fact of every pair, bandit batched over all responses.

    Each side's code is the code its tests run
    (:func:`~prefjudge.judge.facts.correctness.response_code`, the one function the
    correctness and efficiency facts read it with).

    Args:
        pairs: The pairs.

    Returns:
        One ``security`` fact per pair, in order; ``detail`` holds both risks, statuses
        and findings (``rule line severity/confidence``), the bandit version and the
        unresolved-call pass (``unresolved``).
    """
    decisions = compare_security_batch(
        [(response_code(p, "A"), response_code(p, "B")) for p in pairs],
        whole=[True] * (2 * len(pairs)))
    return [security_fact(decision) for decision in decisions]


def security_fact(decision: SecurityDecision) -> Fact:
    """A :class:`~prefjudge.records.Fact` of kind ``security`` from a decision."""
    a, b = decision.report_a, decision.report_b
    detail = {
        "analyser": f"{a.analyser} {a.version}", "unresolved": UNRESOLVED_PASS,
        "status_a": a.status, "status_b": b.status, "risk_a": a.risk, "risk_b": b.risk,
        "findings_a": [_short(f) for f in a.findings],
        "findings_b": [_short(f) for f in b.findings],
    }
    return Fact(kind="security", outcome=decision.outcome, fact=decision.fact, detail=detail)


def _short(finding: SecurityFinding) -> str:
    return f"{finding.rule} line {finding.line} {finding.severity}/{finding.confidence}"

