"""Checks implemented in Python: whole-response shape, comments and docstrings, names.

Each check returns ``None`` when the instruction is followed, or the reason it is not.
Code-level checks receive the code's parsed AST (the caller has already established
that the code parses); response-level checks receive the whole response.
"""

from __future__ import annotations

import ast
import io
import json
import re
import sys
import tempfile
import tokenize
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prefjudge.scoring.verify.extract import fenced_blocks
from prefjudge.scoring.verify.ruff_engine import (
    RuffConfig,
    RuffOptions,
    RuffRunError,
    diagnostic_of,
    run_ruff,
)

MAX_REASONS = 10


def parse(source: str) -> ast.Module:
    """``ast.parse`` without the warnings (invalid escapes...) it prints about the code.

    Raises:
        SyntaxError: And ValueError, RecursionError, MemoryError, as ``ast.parse`` does.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source)


def parse_problem(source: str) -> str | None:
    """Why ``source`` does not parse as Python (None when it parses)."""
    try:
        parse(source)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        return f"{type(exc).__name__}: {exc}"
    return None


def join_reasons(items: list[str]) -> str:
    """Join reason items with ``; ``, keeping the first :data:`MAX_REASONS`."""
    shown = "; ".join(items[:MAX_REASONS])
    extra = len(items) - MAX_REASONS
    return f"{shown}; … and {extra} more" if extra > 0 else shown


def pure_code(response: str) -> str | None:
    """doc_4 (reference): the whole response parses as Python; an empty response does."""
    problem = parse_problem(response)
    return None if problem is None else f"the whole response is not Python ({problem})"


def pure_code_nonempty(response: str) -> str | None:
    """doc_4 (strict): the whole response is non-empty Python source, no prose, no fences."""
    if not response.strip():
        return "the response is empty"
    return pure_code(response)


# The whole response: a ```python block, then a ```json block, only whitespace around them.
# The spelling of the SWE-IF reference's doc_6 check (evaluator.py, test_json_format),
# anchored at both ends; the first way the text splits into the two blocks is the one
# whose JSON is read, as there.
_CODE_THEN_JSON = re.compile(r"\s*```python\s*(.+?)\s*```\s*```json\s*(.+?)\s*```\s*", re.DOTALL)


def code_then_json(response: str) -> str | None:
    """doc_6 (reference): exactly a python block then a json block holding any JSON value."""
    stripped = response.strip()
    shaped = stripped.startswith("```python") and stripped.endswith("```")
    match = _CODE_THEN_JSON.fullmatch(response) if shaped and "```json" in stripped else None
    if match is None:
        return (
            "the response is not exactly a ```python block followed by a ```json block "
            "(only whitespace may surround them)"
        )
    try:
        json.loads(match.group(2))
    except json.JSONDecodeError as exc:
        return f"the json block is not valid JSON: {exc.msg}"
    except (ValueError, RecursionError) as exc:  # a 5,000-digit number, absurd nesting
        return f"the json block cannot be read as JSON: {type(exc).__name__}: {exc}"
    return None


def code_then_json_blocks(response: str) -> str | None:
    """doc_6 (strict): a fenced Python block, later a fenced json block holding an object."""
    blocks = fenced_blocks(response)
    code_positions = [i for i, block in enumerate(blocks) if block.is_python]
    if not code_positions:
        return "no fenced Python code block"
    last_code = code_positions[-1]
    json_blocks = [block for block in blocks[last_code + 1 :] if block.tag == "json"]
    if not json_blocks:
        return "no fenced json block after the last code block"
    block = json_blocks[0]
    try:
        value = json.loads(block.text)
    except json.JSONDecodeError as exc:
        return f"the json block (line {block.start_line}) is not valid JSON: {exc.msg}"
    except (ValueError, RecursionError) as exc:
        return (f"the json block (line {block.start_line}) cannot be read as JSON: "
                f"{type(exc).__name__}: {exc}")
    if not isinstance(value, dict):
        kind = type(value).__name__
        return f"the json block (line {block.start_line}) holds a {kind}, not an object"
    return None


def no_comments_or_docstrings(code: str, tree: ast.Module) -> str | None:
    """doc_5: no comment tokens and no module, class or function docstrings."""
    found = [(line, f"comment at line {line}") for line in comment_lines(code)]
    found += [(line, f"docstring of {owner} at line {line}") for line, owner in _docstrings(tree)]
    found = sorted(set(found))
    return join_reasons([text for _, text in found]) if found else None


_DEFINITIONS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _docstrings(tree: ast.Module) -> list[tuple[int, str]]:
    """``(line, owner)`` of every docstring; walks statements only, not expressions."""
    found = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, _DEFINITIONS):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                found.append((first.lineno, _describe(node)))
        for name in _BODIES:
            stack.extend(getattr(node, name, ()))
    return found


# String literals (triple-quoted first) or a '#': how Python 3.10/3.11 tokenize finds
# comments, since a '#' inside a string literal is not one. Only for code that parses.
_STRING_OR_COMMENT = re.compile(
    r"""(?P<string>'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\""""
    r"""|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")|(?P<comment>\#[^\r\n]*)""",
    re.DOTALL,
)


def comment_lines(code: str) -> list[int]:
    """Lines holding a comment, for code that parses.

    Before Python 3.12 a regular expression that skips string literals finds them much
    faster than :mod:`tokenize` and agrees with it (tested); 3.12 tokenizes f-strings
    differently (quotes may nest) and its tokenizer is fast, so it is used there.
    """
    if "#" not in code:
        return []
    if sys.version_info >= (3, 12):
        return tokenized_comment_lines(code)
    return [
        code.count("\n", 0, match.start()) + 1
        for match in _STRING_OR_COMMENT.finditer(code)
        if match.lastgroup == "comment"
    ]


def tokenized_comment_lines(code: str) -> list[int]:
    """Lines holding a comment, according to :mod:`tokenize`."""
    lines = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.COMMENT:
                lines.append(token.start[0])
    except (tokenize.TokenError, SyntaxError):  # the code parsed; be safe anyway
        pass
    return lines


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Module):
        return "the module"
    kind = "class" if isinstance(node, ast.ClassDef) else "function"
    return f"{kind} {node.name}"  # type: ignore[attr-defined]


class CheckUndetermined(Exception):
    """A Python check could not decide; the check is ``error`` with this message."""


def no_generic_df_name(code: str, tree: ast.Module) -> str | None:
    """library_2's PD901 part, as Ruff's removed PD901 flagged it, ``# noqa`` honoured.

    Ruff removed PD901 (pandas-df-variable-name); this flags exactly what it flagged: an
    assignment statement with a single target that is the name ``df``. Annotated,
    augmented and chained assignments, tuple targets, loop variables, ``with ... as df``,
    ``:=`` and parameters were never flagged. Whether a ``# noqa`` comment silences a
    finding is left to Ruff itself (see :func:`unsilenced_targets`).

    Raises:
        CheckUndetermined: When Ruff cannot be run to read the ``# noqa`` comments.
    """
    targets = pd901_targets(code, tree)
    if targets and "noqa" in code.lower():
        targets = unsilenced_targets(code, targets)
    return _pd901_reason(targets)


def no_generic_df_name_ignoring_noqa(code: str, tree: ast.Module) -> str | None:
    """library_2's PD901 part for the strict profile: ``# noqa`` comments do not count."""
    return _pd901_reason(pd901_targets(code, tree))


def _pd901_reason(targets: list[tuple[int, int]]) -> str | None:
    if not targets:
        return None
    lines = sorted({row for row, _ in targets})
    return join_reasons(
        [
            f"PD901 line {line}: Avoid using the generic variable name `df` for DataFrames"
            for line in lines
        ]
    )


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def source_lines(code: str) -> list[str]:
    """The code's lines as Python and Ruff count them (split at LF, CR LF or CR)."""
    return _LINE_BREAK.split(code)


def pd901_targets(code: str, tree: ast.Module) -> list[tuple[int, int]]:
    """``(row, character column)`` (1-based row, 0-based column) of every PD901 target."""
    lines = source_lines(code)
    found = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "df"
        ):
            target = node.targets[0]
            line = lines[target.lineno - 1]
            column = len(line.encode("utf-8")[: target.col_offset].decode("utf-8", "replace"))
            found.add((target.lineno, column))
    return sorted(found)


# E741 (ambiguous variable name) flags any assignment to ``l``: written in place of a
# ``df`` target ("df" -> "l "), it stands in for PD901 at the same place, and Ruff's own
# handling of suppression comments (line mapping of multi-line strings and continuations,
# file-level exemptions) decides whether it is silenced. Codes in comments are swapped to
# match.
_PROXY_RULE = "E741"


def unsilenced_targets(code: str, targets: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The PD901 targets that no ``# noqa`` comment silences, according to Ruff.

    Args:
        code: Code that parses.
        targets: Its PD901 targets (:func:`pd901_targets`).

    Returns:
        The targets Ruff would still report.

    Raises:
        CheckUndetermined: When the comments cannot be read or Ruff cannot be run.
    """
    lines = source_lines(code)
    edits: dict[int, list[tuple[int, int, str]]] = {}
    for row, column in targets:
        edits.setdefault(row, []).append((column, column + 2, "l "))
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.COMMENT:
                (row, column), text = token.start, token.string
                swapped = text.replace(_PROXY_RULE, "X741").replace("PD901", _PROXY_RULE)
                if swapped != text:
                    edits.setdefault(row, []).append((column, column + len(text), swapped))
    except (tokenize.TokenError, SyntaxError) as exc:
        raise CheckUndetermined(f"the comments cannot be read ({exc})") from exc
    for row, changes in edits.items():
        line = lines[row - 1]
        for start, stop, text in sorted(changes, reverse=True):
            line = line[:start] + text + line[stop:]
        lines[row - 1] = line
    breaks = _LINE_BREAK.findall(code)
    proxy = "".join(line + brk for line, brk in zip(lines, [*breaks, ""], strict=True))
    config = RuffConfig.build([_PROXY_RULE], False, {}, RuffOptions(honour_noqa=True))
    with tempfile.TemporaryDirectory(prefix="prefjudge-pd901-") as workdir:
        (Path(workdir) / "proxy.py").write_bytes(proxy.encode("utf-8"))
        try:
            report = run_ruff(config, ["proxy.py"], workdir=Path(workdir))
        except RuffRunError as exc:
            raise CheckUndetermined(f"ruff error while reading # noqa comments: {exc}") from exc
    reported = {
        (d.row, d.column - 1) for d in map(diagnostic_of, report) if d.code == _PROXY_RULE
    }
    return [target for target in targets if target in reported]


def mentions_df(code: str) -> bool:
    """Cheap pre-test of :func:`no_generic_df_name`: False means it cannot fail."""
    return _DF_WORD.search(code) is not None


_DF_WORD = re.compile(r"\bdf\b")


@dataclass(frozen=True)
class CodeCheck:
    """A code-level check written in Python.

    Attributes:
        run: ``(code, tree) -> reason or None``.
        relevant: Optional cheap pre-test on the code; when it returns False the check
            passes without parsing the code (its Ruff part, if any, still reports code that
            does not parse).
    """

    run: Callable[[str, ast.Module], str | None]
    relevant: Callable[[str], bool] | None = None


RESPONSE_CHECKS: dict[str, Callable[[str], str | None]] = {
    "pure_code": pure_code,
    "pure_code_nonempty": pure_code_nonempty,
    "code_then_json": code_then_json,
    "code_then_json_blocks": code_then_json_blocks,
}
CODE_CHECKS: dict[str, CodeCheck] = {
    "no_comments_or_docstrings": CodeCheck(no_comments_or_docstrings),
    "no_generic_df_name": CodeCheck(no_generic_df_name, relevant=mentions_df),
    "no_generic_df_name_ignoring_noqa": CodeCheck(
        no_generic_df_name_ignoring_noqa, relevant=mentions_df
    ),
}
