"""An independent port of the SWE-IF reference instruction checkers, for parity tests.

Source of the behaviour reproduced here: repository ``maszhongming/SWE-IF`` at commit
``767d190`` (767d1908cb37c24f0af77b15146eec035720dea0), files

* ``swe_if/evaluator.py``: the 30 checkers of ``TEST_DISPATCHER``, ``_run_ruff_check``,
  ``evaluate_if_constraint`` and ``IFEvaluator.evaluate_instance``;
* ``swe_if/code_generator.py``: ``CodeGenerator._extract_code_from_response``.

This module is written from a reading of those files, not copied from them; it is kept
deliberately separate from ``prefjudge.scoring.verify`` (it imports nothing from
prefjudge) so that the parity tests hold prefjudge against an outside definition.

What the reference does, and this port with it:

* **The code a check sees.** ``doc_4`` and ``doc_6`` look at the whole response; the 28
  others at the *solution* extracted from it: every match of the regex
  ```` ```(?:\\w*\\n)?(.*?)``` ```` (DOTALL) is tried in order and the first whose content
  is not blank after stripping is returned unstripped; when there are matches but all are
  blank the solution is ``""``; with no match at all it is the whole response. (So the
  *first* fenced block counts, a ```` ```bash ```` block included, an unclosed fence is no
  match, and a fence whose info string is not a run of word characters directly followed
  by a newline leaves that info string in the solution.)
* **Ruff checks.** ``ruff check - <args> --no-fix --force-exclude`` with the code on
  standard input (UTF-8); a check passes iff Ruff exits with status 0. Any other status
  (1: findings or a syntax error, 2: Ruff refused its arguments) and any exception while
  running it (the code cannot be encoded as UTF-8, Ruff missing...) is a fail. The
  arguments per id are in :data:`RUFF_CHECKS`.
* **Python checks.** doc_4: ``ast.parse`` of the whole response succeeds (an empty
  response passes). doc_5: no ``COMMENT`` token in the solution, the solution tokenizes
  and parses, and no module, class or (async) function has a docstring
  (``ast.get_docstring``). doc_6: the whole response matches
  ``^\\s*```python\\s*([\\s\\S]+?)\\s*```\\s*```json\\s*([\\s\\S]+?)\\s*```\\s*$``
  (``re.search``, DOTALL) and ``json.loads`` accepts the second group (any JSON value).
* **Exceptions.** The reference's dispatcher turns any exception raised by a checker
  into a fail, and so does an unknown id or a parameter the checker does not take.
* **Parameters.** Passed as keyword arguments to the checker, formatted with ``str()``
  into the Ruff arguments; a missing one takes the checker's default (see
  :data:`RUFF_CHECKS`). doc_2's parameter is called ``line_length`` there.

**PD901 (library_2).** The reference selects ``PD901,PD002,PD011``. The pinned Ruff no
longer has PD901 ("Rule PD901 was removed and cannot be selected", exit 2), which would
make library_2 fail every response. This port therefore runs ``PD002,PD011`` through
Ruff and emulates PD901 itself, as Ruff's rule behaved while it existed: it flagged an
assignment statement (``ast.Assign``) with exactly one target that is the plain name
``df``, anywhere in the module (nested bodies too); never an annotated assignment, a
chained assignment (``a = df = ...``), tuple or list targets, ``for``/``with`` targets,
augmented assignments, the walrus operator, imports or function parameters. Ruff's
``# noqa`` handling is reproduced for it: a line-level ``# noqa`` (blanket, or with
``PD901`` among its codes) on the line of the ``df`` target, where a line inside a
multi-line triple-quoted string or a backslash continuation counts as the last line of
that string or continuation; and a file-level ``# ruff: noqa`` / ``# flake8: noqa``
(blanket, or listing ``PD901``) on a line of its own. (The reference pins
``ruff==0.11.13`` in its requirements.txt, a version that still has PD901; the parity
tests can hold this emulation against it, see ``PREFJUDGE_PD901_RUFF``.) The emulation
uses Python's own parser (the interpreter running the tests); when Python cannot parse
the code and Ruff reports a syntax error, the check fails (as with the reference). Code
that Ruff parses but this Python does not (``type X = int`` on Python 3.11) leaves PD901
undetermined here: when PD002/PD011 pass, the outcome is ``None`` (undetermined), which
only prefjudge's ``error`` matches (Ruff 0.11.13, which still has PD901, would flag a
``df = ...`` there; on Python 3.12+ both parse and the emulation decides).

**Isolation.** Every Ruff process runs from an empty temporary working directory, with
every ``RUFF_*`` environment variable removed and ``HOME``/``XDG_CONFIG_HOME`` pointed at
an empty temporary directory, so that no user or project configuration applies; before
the first run the port checks that no Ruff configuration file sits in the working
directory's ancestors. prefjudge isolates its own Ruff runs from configuration in the
same way, so both sides see Ruff's defaults plus the arguments of the check.

The Ruff binary is the one of the installed ``ruff`` package (the pinned version),
falling back to ``ruff`` on ``PATH``.
"""

from __future__ import annotations

import ast
import gzip
import io
import json
import os
import random
import re
import shutil
import subprocess
import tempfile
import threading
import tokenize
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

SOURCE = "maszhongming/SWE-IF@767d190 (swe_if/evaluator.py, swe_if/code_generator.py)"

CHECK_IDS: tuple[str, ...] = (
    *(f"style_{n}" for n in range(1, 10)),
    *(f"logic_{n}" for n in range(1, 10)),
    *(f"doc_{n}" for n in range(1, 7)),
    *(f"error_{n}" for n in range(1, 5)),
    "library_1",
    "library_2",
)
WHOLE_RESPONSE_IDS = frozenset({"doc_4", "doc_6"})
PYTHON_IDS = frozenset({"doc_4", "doc_5", "doc_6"})

# --------------------------------------------------------------------------- extraction

_FENCE = re.compile(r"```(?:\w*\n)?(.*?)```", re.DOTALL)


def solution_of(response: str) -> str:
    """The solution the reference extracts from a response (see the module docstring).

    Args:
        response: The model's whole response.

    Returns:
        The content of the first non-blank fenced block (unstripped), ``""`` when every
        fenced block is blank, or the whole response when there is no fenced block.
    """
    if not response:
        return ""
    contents = _FENCE.findall(response)
    if not contents:
        return response
    return next((content for content in contents if content.strip()), "")


def checked_text(check_id: str, response: str) -> str:
    """The text a check looks at: the whole response for doc_4/doc_6, else the solution.

    Args:
        check_id: Instruction id (``style_1`` ... ``library_2``).
        response: The model's whole response.

    Returns:
        The text handed to the reference checker.
    """
    return response if check_id in WHOLE_RESPONSE_IDS else solution_of(response)


# --------------------------------------------------------------------------- Ruff checks


@dataclass(frozen=True)
class RuffCheck:
    """How the reference runs one instruction through Ruff.

    Attributes:
        select: The ``--select`` value.
        param: Name of the checker's parameter (None when it takes none).
        default: The parameter's default in the checker's signature.
        option: ``--config`` key the parameter sets; ``None`` with a parameter means the
            ``--line-length`` flag (style_3).
        quoted: The value is wrapped in single quotes inside ``--config`` (doc_3).
        preview: ``--preview`` is passed.
    """

    select: str
    param: str | None = None
    default: Any = None
    option: str | None = None
    quoted: bool = False
    preview: bool = False

    def arguments(self, params: Mapping[str, Any]) -> list[str] | None:
        """Ruff's arguments for these parameters; None where the checker would raise.

        Args:
            params: Keyword arguments given to the checker.

        Returns:
            The argument list after ``ruff check -`` (without ``--no-fix
            --force-exclude``), or None when ``params`` holds a name the checker does
            not take (the reference's TypeError, turned into a fail).
        """
        allowed = {self.param} if self.param else set()
        if set(params) - allowed:
            return None
        args = ["--select", self.select]
        if self.param is not None:
            value = str(params.get(self.param, self.default))
            if self.option is None:
                args += ["--line-length", value]
            else:
                shown = f"'{value}'" if self.quoted else value
                args += ["--config", f"{self.option}={shown}"]
        if self.preview:
            args.append("--preview")
        return args


RUFF_CHECKS: dict[str, RuffCheck] = {
    "style_1": RuffCheck("E,W"),
    "style_2": RuffCheck("I"),
    "style_3": RuffCheck("E501", "line_length", 79),
    "style_4": RuffCheck("COM812"),
    "style_5": RuffCheck("Q"),
    "style_6": RuffCheck("N806"),
    "style_7": RuffCheck("UP015"),
    "style_8": RuffCheck("PLR2004"),
    "style_9": RuffCheck("RUF059", preview=True),
    "logic_1": RuffCheck("F"),
    "logic_2": RuffCheck(
        "PLR1702", "max_nested_blocks", 1, "lint.pylint.max-nested-blocks", preview=True
    ),
    "logic_3": RuffCheck("PLR0912", "max_branches", 2, "lint.pylint.max-branches"),
    "logic_4": RuffCheck("PLR0915", "max_statements", 6, "lint.pylint.max-statements"),
    "logic_5": RuffCheck("PLR0914", "max_locals", 2, "lint.pylint.max-locals", preview=True),
    "logic_6": RuffCheck("RET504,RET505,RET506,RET507,RET508"),
    "logic_7": RuffCheck("C901", "max_complexity", 2, "lint.mccabe.max-complexity"),
    "logic_8": RuffCheck("PERF401,PERF402,PERF403"),
    "logic_9": RuffCheck("PLR0916", "max_bool_expr", 1, "lint.pylint.max-bool-expr", preview=True),
    "doc_1": RuffCheck("ANN001,ANN002,ANN003,ANN201,ANN202,ANN204,ANN205,ANN206,ANN401"),
    "doc_2": RuffCheck("W505", "line_length", 72, "lint.pycodestyle.max-doc-length"),
    "doc_3": RuffCheck("D", "convention", "pep257", "lint.pydocstyle.convention", quoted=True),
    "error_1": RuffCheck("B904"),
    "error_2": RuffCheck("EM101,EM102,EM103"),
    "error_3": RuffCheck("UP024"),
    "error_4": RuffCheck("TRY003"),
    "library_1": RuffCheck("PTH"),
    # The reference selects PD901,PD002,PD011; PD901 is emulated (module docstring).
    "library_2": RuffCheck("PD002,PD011"),
}

# Parameters of the checkers that take one, with their defaults (the reference's names).
PARAM_DEFAULTS: dict[str, tuple[str, Any]] = {
    check_id: (check.param, check.default)
    for check_id, check in RUFF_CHECKS.items()
    if check.param is not None
}

_CONFIG_FILES = ("ruff.toml", ".ruff.toml")


def ruff_binary() -> str:
    """The Ruff executable: the installed ``ruff`` package's, else ``ruff`` on PATH.

    Raises:
        RuntimeError: When neither exists.
    """
    try:
        from ruff.__main__ import find_ruff_bin

        return str(find_ruff_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("ruff")
        if found is None:
            raise RuntimeError("Ruff is not installed (pip install ruff)") from None
        return found


class RuffOutcome(NamedTuple):
    """One Ruff run of the reference.

    Attributes:
        passed: Ruff exited with status 0.
        detail: Exit status and the start of Ruff's output (or the exception), for
            messages.
    """

    passed: bool
    detail: str


class IsolatedRuff:
    """Runs Ruff the reference's way, isolated from any user or project configuration.

    Args:
        binary: Ruff executable (default: :func:`ruff_binary`).
    """

    def __init__(self, binary: str | None = None):
        self.binary = binary or ruff_binary()
        self._workdir = tempfile.TemporaryDirectory(prefix="swe-if-ref-cwd-")
        self._home = tempfile.TemporaryDirectory(prefix="swe-if-ref-home-")
        _refuse_inherited_configuration(Path(self._workdir.name))
        env = {key: value for key, value in os.environ.items() if not key.startswith("RUFF_")}
        env["HOME"] = self._home.name
        env["XDG_CONFIG_HOME"] = self._home.name
        self._env = env

    def run(self, code: str, arguments: Sequence[str]) -> RuffOutcome:
        """``ruff check - <arguments> --no-fix --force-exclude`` with ``code`` on stdin.

        Args:
            code: Source text.
            arguments: The check's arguments (see :meth:`RuffCheck.arguments`).

        Returns:
            Whether Ruff exited 0, and a short detail.
        """
        command = [self.binary, "check", "-", *arguments, "--no-fix", "--force-exclude"]
        try:
            done = subprocess.run(
                command,
                input=code,
                capture_output=True,
                text=True,
                encoding="utf-8",
                cwd=self._workdir.name,
                env=self._env,
                check=False,
            )
        except Exception as exc:  # the reference turns any failure into a fail
            return RuffOutcome(False, f"{type(exc).__name__}: {exc}")
        output = " | ".join(
            line.strip() for line in (done.stdout + done.stderr).splitlines() if line.strip()
        )
        return RuffOutcome(done.returncode == 0, f"ruff exit {done.returncode}: {output[:300]}")

    def close(self) -> None:
        """Remove the temporary directories."""
        self._workdir.cleanup()
        self._home.cleanup()


def _refuse_inherited_configuration(workdir: Path) -> None:
    """Raise if Ruff would find a configuration file from ``workdir`` upwards."""
    for folder in (workdir, *workdir.parents):
        for name in _CONFIG_FILES:
            if (folder / name).is_file():
                raise RuntimeError(f"{folder / name} would configure the reference's Ruff runs")
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and "[tool.ruff" in pyproject.read_text(errors="replace"):
            raise RuntimeError(f"{pyproject} would configure the reference's Ruff runs")


_DEFAULT_RUFF: IsolatedRuff | None = None
_DEFAULT_LOCK = threading.Lock()


def default_ruff() -> IsolatedRuff:
    """The shared :class:`IsolatedRuff` of this process (created on first use)."""
    global _DEFAULT_RUFF
    with _DEFAULT_LOCK:
        if _DEFAULT_RUFF is None:
            _DEFAULT_RUFF = IsolatedRuff()
        return _DEFAULT_RUFF


# --------------------------------------------------------------------------- Python checks


def _quietly(check: Callable[[str], bool]) -> Callable[[str], bool]:
    """Run a check with Python's compile-time warnings silenced and exceptions as fails.

    The warnings (invalid escape sequences...) are only printed by the reference; any
    exception is a fail there (its dispatcher catches everything).
    """

    def run(text: str) -> bool:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return check(text)
            except Exception:  # the reference's dispatcher: any exception is a fail
                return False

    run.__name__ = check.__name__
    run.__doc__ = check.__doc__
    return run


@_quietly
def whole_response_parses(response: str) -> bool:
    """doc_4: the whole response is Python source (an empty response is)."""
    try:
        ast.parse(response)
    except SyntaxError:
        return False
    return True


_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


@_quietly
def no_comments_or_docstrings(code: str) -> bool:
    """doc_5: no comment token, tokenizes and parses, no docstring anywhere."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.COMMENT:
                return False
    except (tokenize.TokenError, IndentationError):
        return False
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    return not any(
        isinstance(node, _DOCUMENTED) and ast.get_docstring(node) is not None
        for node in ast.walk(tree)
    )


_CODE_THEN_JSON = re.compile(
    r"^\s*```python\s*([\s\S]+?)\s*```\s*```json\s*([\s\S]+?)\s*```\s*$", re.DOTALL
)


@_quietly
def python_then_json(response: str) -> bool:
    """doc_6: a ```python block then a ```json block holding valid JSON, nothing else."""
    match = _CODE_THEN_JSON.search(response)
    if match is None:
        return False
    try:
        json.loads(match.group(2))
    except json.JSONDecodeError:
        return False
    return True


PYTHON_CHECKS: dict[str, Callable[[str], bool]] = {
    "doc_4": whole_response_parses,
    "doc_5": no_comments_or_docstrings,
    "doc_6": python_then_json,
}

# --------------------------------------------------------------------------- PD901


def pd901_lines(code: str) -> list[int] | None:
    """Lines where Ruff's PD901 (``df = ...``) would report, after ``# noqa`` handling.

    Args:
        code: Source text.

    Returns:
        1-based lines of the reported ``df`` targets (empty when none); None when Python
        cannot parse ``code`` and it holds the word ``df`` (undetermined).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(code)
        except Exception:  # not Python for this interpreter: undetermined, unless no `df`
            return None if re.search(r"\bdf\b", code) else []
    targets = [
        node.targets[0].lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id == "df"
    ]
    if not targets:
        return []
    noqa = _NoqaIndex(code)
    return sorted(line for line in targets if not noqa.suppresses(line, "PD901"))


_RUST_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


class _Cursor:
    """A position in a comment's text, with the few moves Ruff's noqa lexer makes."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def eof(self) -> bool:
        return self.pos >= len(self.text)

    def first(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def bump(self) -> str:
        char = self.first()
        self.pos += 1 if char else 0
        return char

    def past_next_hash(self) -> bool:
        """Move past the next ``#`` and the whitespace after it (False: no ``#`` left)."""
        while self.first() and self.first() != "#":
            self.bump()
        if not self.bump():
            return False
        self.eat_whitespace()
        return True

    def eat_whitespace(self) -> None:
        while self.first() and self.first() in _RUST_WHITESPACE:
            self.pos += 1

    def eat_word(self, word: str) -> bool:
        if self.text.startswith(word, self.pos):
            self.pos += len(word)
            return True
        return False

    def eat_noqa(self) -> bool:
        if (
            self.text[self.pos : self.pos + 4].lower() == "noqa"
            and self.text[self.pos : self.pos + 4].isascii()
        ):
            self.pos += 4
            return True
        return False


class _NoqaError(Exception):
    """An invalid ``noqa`` directive: Ruff warns and ignores it."""


_ALL = "all"


def _directive(cursor: _Cursor) -> str | tuple[str, ...]:
    """What follows ``noqa``: :data:`_ALL` or the codes; raises :class:`_NoqaError`."""
    char = cursor.bump()
    if char in ("", "#"):
        return _ALL
    if char in _RUST_WHITESPACE:
        cursor.eat_whitespace()
        if cursor.bump() != ":":
            return _ALL
    elif char != ":":
        raise _NoqaError("invalid suffix")
    codes: list[str] = []
    joined = False
    while not cursor.eof():
        cursor.eat_whitespace()
        if cursor.first() == ",":
            cursor.bump()
            continue
        start = cursor.pos
        char = cursor.bump()
        if not char:
            break
        if not ("A" <= char <= "Z"):
            break  # the first thing that is no code ends the list (a trailing remark)
        while "A" <= cursor.first() <= "Z":
            cursor.bump()
        if not ("0" <= cursor.first() <= "9"):
            if joined:
                raise _NoqaError("invalid code suffix")
            break
        while "0" <= cursor.first() <= "9":
            cursor.bump()
        codes.append(cursor.text[start : cursor.pos])
        after = cursor.first()
        if not after:
            break
        if after == ",":
            cursor.bump()
            joined = False
        elif after in _RUST_WHITESPACE or after == "#":
            joined = False
        elif "A" <= after <= "Z":
            joined = True
        else:
            raise _NoqaError("invalid code suffix")
    if not codes:
        raise _NoqaError("missing codes")
    return tuple(codes)


def _inline_noqa(comment: str) -> str | tuple[str, ...] | None:
    """The line-level directive in a comment (None: none, or an invalid one)."""
    cursor = _Cursor(comment)
    try:
        while not cursor.eof():
            if not cursor.past_next_hash():
                return None
            if cursor.eat_noqa():
                return _directive(cursor)
    except _NoqaError:
        return None
    return None


def _file_noqa(comment: str) -> str | tuple[str, ...] | None:
    """The file-level directive (``# ruff: noqa``, ``# flake8: noqa``) in a comment."""
    cursor = _Cursor(comment)
    try:
        while not cursor.eof():
            if not cursor.past_next_hash():
                return None
            if not (cursor.eat_word("ruff") or cursor.eat_word("flake8")):
                continue
            cursor.eat_whitespace()
            if cursor.first() != ":":
                continue
            cursor.bump()
            cursor.eat_whitespace()
            if cursor.eat_noqa():
                return _directive(cursor)
    except _NoqaError:
        return None
    return None


class _NoqaIndex:
    """Ruff's ``noqa`` view of a file: comments per line and the line remapping."""

    def __init__(self, code: str):
        self.comments: dict[int, str] = {}
        self.own_line: set[int] = set()
        self.ranges: list[tuple[int, int]] = []  # (first line, line whose noqa counts)
        try:
            self._index(code)
        except (tokenize.TokenError, SyntaxError, ValueError):
            self.comments.clear()  # cannot tokenize: no directive is seen

    def _index(self, code: str) -> None:
        lines = io.StringIO(code, newline=None).read().split("\n")
        spans: list[tuple[int, int, bool]] = []  # first line, end line, end at column 0
        fstring_starts: list[int] = []
        previous_end: tuple[int, int] | None = None
        continued: list[int] = []
        readline = io.StringIO(code, newline=None).readline
        for token in tokenize.generate_tokens(readline):
            if previous_end is not None:
                continued += _continuations(lines, previous_end, token.start)
            previous_end = token.end
            kind, (row, col), (end_row, _) = token.type, token.start, token.end
            if kind == tokenize.COMMENT:
                self.comments[row] = token.string
                if not lines[row - 1][:col].strip():
                    self.own_line.add(row)
            elif kind == tokenize.STRING and end_row > row and _triple_quoted(token.string):
                spans.append((row, end_row, False))
            elif kind == getattr(tokenize, "FSTRING_START", -1):
                fstring_starts.append(row)
            elif kind == getattr(tokenize, "FSTRING_END", -1) and fstring_starts:
                start_row = fstring_starts.pop()
                if not fstring_starts and end_row > start_row:
                    spans.append((start_row, end_row, False))
        for first, last in _chains(sorted(set(continued))):
            spans.append((first, last + 1, True))
        # Ruff merges overlapping or touching ranges; a range ends mid-line (a string's
        # closing quotes) or at the start of a line (after a continuation).
        merged: list[tuple[int, int, bool]] = []
        for first, last, at_line_start in sorted(spans):
            if merged and merged[-1][1] >= first:
                head, end, end_at_start = merged[-1]
                if (last, not at_line_start) > (end, not end_at_start):
                    end, end_at_start = last, at_line_start
                merged[-1] = (head, end, end_at_start)
            else:
                merged.append((first, last, at_line_start))
        self.ranges = [(first, last) for first, last, _ in merged]

    def noqa_line(self, line: int) -> int:
        """The line whose ``# noqa`` applies to a finding on ``line``."""
        for first, last in self.ranges:
            if first <= line <= last:
                return last
        return line

    def suppresses(self, line: int, code: str) -> bool:
        """Whether a ``code`` finding on ``line`` is suppressed by a noqa directive."""
        for row in sorted(self.own_line):
            directive = _file_noqa(self.comments[row])
            if directive == _ALL or (isinstance(directive, tuple) and code in directive):
                return True
        comment = self.comments.get(self.noqa_line(line))
        if comment is None:
            return False
        directive = _inline_noqa(comment)
        return directive == _ALL or (isinstance(directive, tuple) and code in directive)


def _triple_quoted(literal: str) -> bool:
    body = literal.lstrip("rRbBuUfFtT")
    return body.startswith(('"""', "'''"))


def _continuations(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> list[int]:
    """Lines ended by a backslash continuation in the gap between two tokens."""
    found = []
    row, col = start
    while row < end[0]:
        text = lines[row - 1] if row - 1 < len(lines) else ""
        if text[col:].rstrip("\r").endswith("\\"):
            found.append(row)
        row, col = row + 1, 0
    return found


def _chains(rows: list[int]) -> Iterator[tuple[int, int]]:
    """Runs of consecutive line numbers, as ``(first, last)``."""
    start = previous = None
    for row in rows:
        if previous is not None and row == previous + 1:
            previous = row
            continue
        if start is not None:
            yield start, previous
        start = previous = row
    if start is not None:
        yield start, previous


# --------------------------------------------------------------------------- verdicts


class Outcome(NamedTuple):
    """The reference's verdict on one check, with a detail for messages.

    Attributes:
        passed: The reference's True/False; None where the port cannot tell (PD901 on
            code only Ruff parses).
        detail: Why (Ruff's exit status and output, the Python check, PD901 lines).
    """

    passed: bool | None
    detail: str


class ReferenceCheck(NamedTuple):
    """One check for the batch runner.

    Attributes:
        check_id: Instruction id.
        response: The whole response.
        params: Keyword arguments for the checker (the reference's parameter names).
    """

    check_id: str
    response: str
    params: Mapping[str, Any] = {}


def _plan(check: ReferenceCheck) -> tuple[str, list[str] | None, str | None]:
    """``(text, ruff arguments or None, python check id or None)``; ids already valid."""
    text = checked_text(check.check_id, check.response)
    if check.check_id in PYTHON_CHECKS:
        return text, None, check.check_id
    return text, RUFF_CHECKS[check.check_id].arguments(check.params), None


def _python_outcome(check_id: str, text: str, params: Mapping[str, Any]) -> Outcome:
    if params:
        return Outcome(False, f"{check_id} takes no parameters (TypeError, a fail)")
    passed = PYTHON_CHECKS[check_id](text)
    return Outcome(passed, f"{check_id} Python check {'passed' if passed else 'failed'}")


def _combine(check_id: str, text: str, ruff: RuffOutcome) -> Outcome:
    if check_id != "library_2" or not ruff.passed:
        return Outcome(ruff.passed, ruff.detail)
    flagged = pd901_lines(text)
    if flagged is None:
        return Outcome(None, "PD901 undetermined: Ruff parses the code, this Python does not")
    if flagged:
        return Outcome(False, f"PD901 (emulated): df assigned on line(s) {flagged}")
    return Outcome(True, ruff.detail)


def reference_outcomes(
    checks: Sequence[ReferenceCheck], *, workers: int | None = None
) -> list[Outcome]:
    """The reference's verdicts on many checks, Ruff runs spread over a thread pool.

    Identical Ruff runs (same code, same arguments) are made once. The Python checks run
    in the calling thread while Ruff runs in the pool.

    Args:
        checks: The checks, in any order.
        workers: Ruff processes at a time (default: the CPU count).

    Returns:
        One outcome per check, in the order of ``checks``.
    """
    planned: list[tuple[str, list[str] | None, str | None] | None] = []
    ruff_jobs: dict[tuple[str, tuple[str, ...]], int] = {}
    for check in checks:
        if check.check_id not in RUFF_CHECKS and check.check_id not in PYTHON_CHECKS:
            planned.append(None)
            continue
        plan = _plan(check)
        planned.append(plan)
        text, arguments, _ = plan
        if arguments is not None:
            ruff_jobs.setdefault((text, tuple(arguments)), len(ruff_jobs))
    ruff = default_ruff()
    outcomes: list[Outcome] = []
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        futures = {key: pool.submit(ruff.run, key[0], list(key[1])) for key in ruff_jobs}
        early: dict[int, Outcome] = {}
        for index, (check, plan) in enumerate(zip(checks, planned, strict=True)):
            if plan is None:
                early[index] = Outcome(False, f"unknown instruction id {check.check_id!r}")
            elif plan[2] is not None:
                early[index] = _python_outcome(plan[2], plan[0], check.params)
            elif plan[1] is None:
                unexpected = dict(check.params)
                early[index] = Outcome(False, f"unexpected parameters {unexpected} (a fail)")
        for index, (check, plan) in enumerate(zip(checks, planned, strict=True)):
            if index in early:
                outcomes.append(early[index])
                continue
            assert plan is not None and plan[1] is not None
            result = futures[(plan[0], tuple(plan[1]))].result()
            outcomes.append(_combine(check.check_id, plan[0], result))
    return outcomes


def reference_verdicts(
    checks: Sequence[ReferenceCheck], *, workers: int | None = None
) -> list[bool]:
    """The reference's True/False for each check (see :func:`reference_outcomes`).

    Args:
        checks: The checks.
        workers: Ruff processes at a time (default: the CPU count).

    Returns:
        One verdict per check, in order.
    """
    return [outcome.passed for outcome in reference_outcomes(checks, workers=workers)]


def reference_verdict(
    check_id: str, response: str, params: Mapping[str, Any] | None = None
) -> bool:
    """The reference's verdict on one instruction for one whole response.

    Args:
        check_id: Instruction id (``style_1`` ... ``library_2``); an unknown one fails.
        response: The model's whole response (the solution is extracted as the
            reference does).
        params: The checker's keyword arguments (the reference's names, such as
            ``line_length`` for doc_2); missing ones take the checker's defaults.

    Returns:
        True when the reference would count the instruction as followed.
    """
    check = ReferenceCheck(check_id, response, dict(params or {}))
    return reference_outcomes([check], workers=1)[0].passed


# --------------------------------------------------------------------------- parity harness
#
# Comparing another implementation (prefjudge) with this port: cases, the real code they
# are built from, and readable differences. Kept free of prefjudge imports; the other side
# is a callable.

# Alternative values of every parametrised check (the reference's parameter names),
# default first; ``{}`` (the checker's own default) is always compared as well.
PARAM_VALUES: dict[str, tuple[Any, ...]] = {
    "style_3": (79, 88, 100, 120),
    "logic_2": (1, 2, 3, 5),
    "logic_3": (2, 1, 4, 10),
    "logic_4": (6, 3, 12, 50),
    "logic_5": (2, 1, 5, 20),
    "logic_7": (2, 1, 4, 15),
    "logic_9": (1, 2, 3, 5),
    "doc_2": (72, 60, 88),
    "doc_3": ("pep257", "google", "numpy"),
}


def param_variants(check_id: str) -> list[dict[str, Any]]:
    """``{}`` and every value of :data:`PARAM_VALUES` for a check (just ``{}`` if none).

    Args:
        check_id: Instruction id.

    Returns:
        Parameter dictionaries, the implicit default first.
    """
    if check_id not in PARAM_VALUES:
        return [{}]
    name = PARAM_DEFAULTS[check_id][0]
    return [{}, *({name: value} for value in PARAM_VALUES[check_id])]


@dataclass(frozen=True)
class Case:
    """One check of one response, to be compared.

    Attributes:
        label: Where the response comes from (``bcb:BigCodeBench/12 @ crlf``,
            ``targeted:style_3/line-85``...).
        response: The whole response.
        check_id: Instruction id.
        params: Parameters (the reference's names), as sorted ``(name, value)`` pairs.
    """

    label: str
    response: str
    check_id: str
    params: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, label: str, response: str, check_id: str, params: Mapping[str, Any]) -> Case:
        """A case from a parameter mapping."""
        return cls(label, response, check_id, tuple(sorted(params.items())))


# ours(items) -> per item, per (id, params): (status, reason); status pass | fail | error.
OurItems = list[tuple[str, list[tuple[str, dict[str, Any]]]]]
Ours = Callable[[OurItems], list[list[tuple[str, str]]]]


def crash_localised(verify: Ours) -> Ours:
    """``verify``, with a crash localised to its item: ``crash`` on each of that item's checks.

    The whole batch is tried first; when it raises, each item is verified alone.
    """

    def ours(items: OurItems) -> list[list[tuple[str, str]]]:
        try:
            return verify(items)
        except Exception:
            found = []
            for item in items:
                try:
                    (row,) = verify([item])
                    found.append(row)
                except Exception as exc:  # a difference on every check of the item
                    found.append([("crash", f"{type(exc).__name__}: {exc}")] * len(item[1]))
            return found

    return ours


def verdict_name(passed: bool | None) -> str:
    """``pass``, ``fail`` or, for an undetermined reference outcome, ``error``."""
    return "error" if passed is None else "pass" if passed else "fail"


@dataclass(frozen=True)
class Comparison:
    """The two verdicts on one case.

    Attributes:
        case: The case.
        reference: The reference's outcome.
        status: The other implementation's status (``pass``, ``fail``, ``error``...).
        reason: Its reason.
    """

    case: Case
    reference: Outcome
    status: str
    reason: str

    @property
    def agrees(self) -> bool:
        """``pass`` where the reference says True, ``fail`` for False, ``error`` for None."""
        return self.status == verdict_name(self.reference.passed)

    def render(self, excerpt: int = 300) -> str:
        """A readable account of the two verdicts, with an excerpt of the response."""
        case = self.case
        params = dict(case.params)
        reference = verdict_name(self.reference.passed)
        shown = repr(case.response[:excerpt]) + ("…" if len(case.response) > excerpt else "")
        return (
            f"{case.check_id} params={params} [{case.label}]\n"
            f"    reference: {reference} ({self.reference.detail[:200]})\n"
            f"    ours:      {self.status} ({self.reason[:200]})\n"
            f"    response:  {shown}"
        )


def compare(cases: Sequence[Case], ours: Ours, *, workers: int | None = None) -> list[Comparison]:
    """Both verdicts for every case (each response is given to ``ours`` once).

    Args:
        cases: The cases.
        ours: The implementation under test (see :data:`Ours`).
        workers: Ruff processes at a time for the reference.

    Returns:
        One comparison per case, in order.
    """
    order: dict[str, int] = {}
    items: OurItems = []
    slots: list[tuple[int, int]] = []
    for case in cases:
        index = order.setdefault(case.response, len(items))
        if index == len(items):
            items.append((case.response, []))
        refs = items[index][1]
        slots.append((index, len(refs)))
        refs.append((case.check_id, dict(case.params)))
    found = ours(items)
    references = reference_outcomes(
        [ReferenceCheck(c.check_id, c.response, dict(c.params)) for c in cases], workers=workers
    )
    return [
        Comparison(case, reference, *found[item][slot])
        for case, reference, (item, slot) in zip(cases, references, slots, strict=True)
    ]


def render_differences(differences: Sequence[Comparison], limit: int = 12) -> str:
    """The first ``limit`` differences, one block each, and how many were left out."""
    shown = "\n".join(difference.render() for difference in differences[:limit])
    more = len(differences) - limit
    return shown + (f"\n… and {more} more differences" if more > 0 else "")


# --------------------------------------------------------------------------- real code

BIGCODEBENCH = Path("benchmarks/bigcodebench/BigCodeBench_v0.1.0_hf.jsonl.gz")
EVALPERF = Path("generations/evalperf")


def bigcodebench_solutions(data: Path) -> list[tuple[str, str]]:
    """``(task id, complete_prompt + canonical_solution)`` of every BigCodeBench task.

    Args:
        data: The shared data folder (``../shared/data``).

    Returns:
        The solutions, in the file's order.
    """
    with gzip.open(data / BIGCODEBENCH, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [(row["task_id"], row["complete_prompt"] + row["canonical_solution"]) for row in rows]


def evalperf_solutions(
    data: Path, count: int, seed: int, *, files: int | None = None
) -> list[tuple[str, str]]:
    """A seeded sample of model-written EvalPerf solutions.

    Args:
        data: The shared data folder.
        count: How many solutions.
        seed: Chooses the files and the solutions.
        files: Read only this many result files (seeded choice; default all).

    Returns:
        ``(model/task#index, solution)`` pairs.
    """
    rng = random.Random(seed)
    paths = sorted((data / EVALPERF).glob("*_evalperf_results.brief.json"))
    if files is not None:
        paths = sorted(rng.sample(paths, min(files, len(paths))))
    pool: list[tuple[str, str]] = []
    for path in paths:
        model = path.name.removesuffix("_evalperf_results.brief.json")
        results = json.loads(path.read_text(encoding="utf-8"))["eval"]
        for task, result in sorted(results.items()):
            for index, entry in enumerate(result.get("profiled", [])):
                pool.append((f"{model}/{task}#{index}", entry["solution"]))
    return rng.sample(pool, min(count, len(pool)))
