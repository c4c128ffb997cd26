"""The house rules of docs/architecture.md, checked on the source: imports run one way."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "prefjudge"
# higher layers may import lower ones, never the other way round
LAYERS = {
    "__main__": 5, "cli": 4,
    "experiment": 3,
    "testbed": 2, "view": 2, "judge": 2, "scale": 2, "persona": 2, "ranking": 2,
    "scoring": 1,
    "backends": 0, "sandbox": 0, "plots": 0,
}
SHARED = {"records", "io", "journal", "journal_binding", "journal_lock", "live_views", "stats",
          "paths", "features", "reporting", "interrupts", "lazy", "__init__"}
# imports between stages of one layer that the architecture allows
ALLOWED_SIDEWAYS = {("persona", "judge"), ("scale", "judge")}


def _imports() -> list[tuple[str, str, str]]:
    """``(importing package, imported package, where)`` for every prefjudge import."""
    found = []
    for path in SRC.rglob("*.py"):
        if "child" in path.parts:  # the sandbox's child scripts run alone, inside it
            continue
        rel = path.relative_to(SRC)
        here = rel.parts[0].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] in ("click", "rich"):
                    found.append((here, parts[0], f"{rel}:{node.lineno}"))
                elif parts[0] == "prefjudge":
                    there = parts[1] if len(parts) > 1 else "__init__"
                    if there != here:
                        found.append((here, there, f"{rel}:{node.lineno}"))
    return found


def test_only_the_command_line_uses_click_or_rich() -> None:
    """Stages and ``experiment/`` report through :mod:`prefjudge.reporting`; only cli/ prints."""
    offenders = [f"{where}: {there}" for here, there, where in _imports()
                 if there in ("click", "rich") and here not in ("cli", "__main__")]
    assert offenders == []


def test_imports_run_one_way() -> None:
    upward = []
    for here, there, where in _imports():
        if there in ("click", "rich") or there in SHARED:
            continue
        if here in SHARED:
            upward.append(f"{where}: shared module imports {there}")
            continue
        mine, theirs = LAYERS.get(here, 4), LAYERS[there]
        if theirs > mine or (theirs == mine and (here, there) not in ALLOWED_SIDEWAYS):
            upward.append(f"{where}: {here} imports {there}")
    assert upward == []


def test_the_rule_sees_imports() -> None:
    """The check above is not vacuous: it finds the imports the architecture allows."""
    pairs = {(here, there) for here, there, _ in _imports()}
    assert ("cli", "scoring") in pairs and ("testbed", "scoring") in pairs
    assert ("persona", "judge") in pairs and ("scoring", "sandbox") in pairs


# -- no import circles, between any two modules ------------------------------------------------

# Circles that exist today outside the evidence facts; each is to be removed (then its entry
# deleted here). A circle found must lie within one of these, module for module.
KNOWN_CIRCLES: tuple[frozenset[str], ...] = (
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.AST, module: str, is_package: bool, known: set[str]) -> list[str]:
    """The prefjudge modules an import statement names (a package for its ``__init__``)."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:  # relative: from the module's package, up level - 1
            package = module.split(".") if is_package else module.split(".")[:-1]
            base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
        targets = [f"{base}.{alias.name}" for alias in node.names]
    else:
        return []
    found = []
    for target in targets:
        while target not in known and "." in target:  # a name in a module, not a module
            target = target.rsplit(".", 1)[0]
        if target in known and target != module:
            found.append(target)
    return found


def _import_graph() -> dict[str, set[str]]:
    """Every module of prefjudge and the modules it imports, wherever the import statement is
    (top level, inside a function, under ``TYPE_CHECKING``)."""
    paths = {_module_name(path): path for path in SRC.rglob("*.py")}
    known = set(paths)
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[module] = {target for node in ast.walk(tree)
                         for target in _imported(node, module, path.name == "__init__.py", known)}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[frozenset[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = {stack.pop()}
            while module not in component:
                component.add(stack.pop())
            if len(component) > 1:
                circles.append(frozenset(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return circles


def test_no_module_imports_itself_round_a_circle() -> None:
    unknown = [sorted(circle) for circle in _circles(_import_graph())
               if not any(circle <= known for known in KNOWN_CIRCLES)]
    assert unknown == []


def test_the_circle_check_sees_circles() -> None:
    """Not vacuous: it finds a circle made up for it, and the imports of real modules."""
    graph = _import_graph()
    assert "prefjudge.judge.facts.correctness" in graph["prefjudge.judge.facts.kinds"]
    assert "prefjudge.sandbox" in graph["prefjudge.judge.facts.kinds"]  # the package itself
    made_up = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(made_up) == [frozenset({"a", "b", "c"})]
