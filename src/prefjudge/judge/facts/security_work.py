"""Bandit's work on a parsed file, estimated before it runs (linear in the code)."""

from __future__ import annotations

import ast

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
