"""Calls bandit cannot resolve (rules ``PJ001`` to ``PJ004``): findings beside its own."""

from __future__ import annotations

import ast

from prefjudge.judge.facts.security_models import SecurityFinding

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

