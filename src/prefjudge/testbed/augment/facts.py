"""What the augment stage reads from a task: facts and limit metrics of its reference solution.

Facts come from the reference solution's AST (``canonical_solution``), the task's ``libs``
and its prompt. They feed the taxonomy's applicability predicates
(:mod:`prefjudge.scoring.applicability`) and the rule selector's parameter choices. The
limit metrics approximate Ruff's per-function counting (branches, statements, locals,
McCabe complexity, nesting, boolean terms).
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterable

from prefjudge.records import Task
from prefjudge.scoring.applicability import TaskFacts
from prefjudge.scoring.tasks import imported_modules

__all__ = ["LIMIT_PARAMS", "TaskFacts", "function_metrics", "task_facts"]

_FILE_WORDS = re.compile(r"\b(files?|director(y|ies)|paths?|folders?|csv|json file)\b", re.I)
_FILE_MODULES = {"os", "shutil", "glob", "pathlib", "tempfile", "csv", "zipfile", "tarfile"}
_BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith)
LIMIT_PARAMS = {
    "max_branches": "branches",
    "max_statements": "statements",
    "max_locals": "locals",
    "max_complexity": "complexity",
    "max_nested_blocks": "nesting",
    "max_bool_expr": "bool_terms",
}
"""Taxonomy parameter of each "at most N" limit -> the metric it limits."""


def _parse(source: str | None) -> ast.Module | None:
    if not source:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _bool_terms(node: ast.AST) -> int:
    if isinstance(node, ast.BoolOp):
        return sum(_bool_terms(value) for value in node.values)
    return 1


def _nesting(nodes: Iterable[ast.AST], depth: int = 0) -> int:
    deepest = depth
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        inner = depth + 1 if isinstance(node, _BLOCKS) else depth
        deepest = max(deepest, _nesting(ast.iter_child_nodes(node), inner))
    return deepest


def _own_nodes(func: ast.AST) -> list[ast.AST]:
    """Nodes of a function body, not descending into nested functions or classes."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return out


def function_metrics(func: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, int]:
    """Approximate Ruff's per-function limit metrics on the AST.

    Args:
        func: A function definition.

    Returns:
        ``branches`` (PLR0912: ``if``/``elif``/``else``, loops and their ``else``,
        ``except``/``else``/``finally``), ``statements`` (PLR0915), ``locals`` (PLR0914:
        distinct assigned names, parameters excluded), ``complexity`` (C901: McCabe),
        ``nesting`` (PLR1702: deepest nested block), ``bool_terms`` (PLR0916: most
        boolean terms in one ``if`` condition).
    """
    nodes = _own_nodes(func)
    branches = 0
    complexity = 1
    bool_terms = 0
    for node in nodes:
        if isinstance(node, ast.If):
            branches += 1
            if node.orelse and not (len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)):
                branches += 1
            bool_terms = max(bool_terms, _bool_terms(node.test))
            complexity += 1
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            branches += 1 + bool(node.orelse)
            complexity += 1 + bool(node.orelse)
        elif isinstance(node, ast.Try):
            branches += len(node.handlers) + bool(node.orelse) + bool(node.finalbody)
            complexity += len(node.handlers) + bool(node.orelse)
        elif isinstance(node, (ast.IfExp, ast.comprehension)):
            complexity += 1 + (len(node.ifs) if isinstance(node, ast.comprehension) else 0)
        elif isinstance(node, ast.BoolOp):
            complexity += len(node.values) - 1
    params = {a.arg for a in func.args.args + func.args.kwonlyargs + func.args.posonlyargs}
    params |= {a.arg for a in (func.args.vararg, func.args.kwarg) if a is not None}
    stored = {
        node.id
        for node in nodes
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }
    return {
        "branches": branches,
        "statements": sum(isinstance(node, ast.stmt) for node in nodes),
        "locals": len(stored - params),
        "complexity": complexity,
        "nesting": _nesting(func.body),
        "bool_terms": bool_terms,
    }


def task_facts(task: Task) -> TaskFacts:
    """Read the facts the selectors need from a task.

    Args:
        task: Any task; the reference solution is parsed when present.

    Returns:
        The facts. Without parsable reference code only ``uses_pandas`` and ``uses_files``
        can be true (read from libs and prompt).
    """
    code = task.canonical_solution or ""
    tree = _parse(code)
    modules = imported_modules(code) | {lib.split(".", 1)[0] for lib in task.libs}
    prompt_pandas = "pandas" in task.prompt or "DataFrame" in task.prompt
    prompt_files = bool(_FILE_WORDS.search(task.prompt))
    if tree is None:
        return TaskFacts(
            uses_pandas="pandas" in modules or prompt_pandas,
            uses_files=bool(modules & _FILE_MODULES) or prompt_files,
        )
    nodes = list(ast.walk(tree))
    uses_open = any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "open"
        for n in nodes
    )
    functions = [n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    metrics: dict[str, int] = dict.fromkeys(LIMIT_PARAMS.values(), 0)
    for func in functions:
        for name, value in function_metrics(func).items():
            metrics[name] = max(metrics[name], value)
    docstrings = [ast.get_docstring(f) or "" for f in functions]
    return TaskFacts(
        has_code=True,
        uses_pandas="pandas" in modules or prompt_pandas,
        uses_files=bool(modules & _FILE_MODULES) or uses_open or prompt_files,
        uses_open=uses_open,
        raises=any(isinstance(n, ast.Raise) for n in nodes),
        catches=any(isinstance(n, ast.ExceptHandler) for n in nodes),
        imports=any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in nodes),
        compares_literal=any(
            isinstance(n, ast.Compare)
            and any(isinstance(c, ast.Constant) for c in [n.left, *n.comparators])
            for n in nodes
        ),
        unpacks=any(
            isinstance(n, (ast.Assign, ast.For, ast.comprehension))
            and any(
                isinstance(t, (ast.Tuple, ast.List))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            )
            for n in nodes
        ),
        branches_any=any(isinstance(n, (ast.If, ast.For, ast.While, ast.Try)) for n in nodes),
        loops=any(isinstance(n, (ast.For, ast.While)) for n in nodes),
        has_function=bool(functions),
        longest_line=max((len(line) for line in code.splitlines()), default=0),
        numpy_docstring=any(re.search(r"\n\s*-{3,}\s*\n", d) for d in docstrings),
        metrics=metrics,
    )
