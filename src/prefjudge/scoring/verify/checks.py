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
import tokenize
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from prefjudge.scoring.verify.extract import fenced_blocks

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
    """doc_4: the whole response is Python source, with no prose and no fences."""
    if not response.strip():
        return "the response is empty"
    problem = parse_problem(response)
    return None if problem is None else f"the whole response is not Python ({problem})"


def code_then_json(response: str) -> str | None:
    """doc_6: a fenced Python code block followed by a fenced json block holding an object."""
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


def no_generic_df_name(code: str, tree: ast.Module) -> str | None:
    """library_2 (Ruff's removed PD901): no variable is assigned the generic name ``df``."""
    del code
    lines = sorted(
        {
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Name) and node.id == "df" and isinstance(node.ctx, ast.Store)
        }
    )
    if not lines:
        return None
    return join_reasons(
        [
            f"PD901 line {line}: Avoid using the generic variable name `df` for DataFrames"
            for line in lines
        ]
    )


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
    "code_then_json": code_then_json,
}
CODE_CHECKS: dict[str, CodeCheck] = {
    "no_comments_or_docstrings": CodeCheck(no_comments_or_docstrings),
    "no_generic_df_name": CodeCheck(no_generic_df_name, relevant=mentions_df),
}
