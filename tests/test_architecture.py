"""The house rules of docs/architecture.md, checked on the source: imports run one way."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "prefjudge"
# higher layers may import lower ones, never the other way round
LAYERS = {
    "__main__": 5, "cli": 4,
    "experiment": 3, "view": 3,
    "testbed": 2, "judge": 2, "scale": 2, "persona": 2, "ranking": 2,
    "scoring": 1,
    "backends": 0, "sandbox": 0, "plots": 0,
}
SHARED = {"records", "io", "journal", "stats", "paths", "features", "__init__"}
# imports between stages of one layer that the architecture allows
ALLOWED_SIDEWAYS = {("persona", "judge")}


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
                if parts[0] == "click":
                    found.append((here, "click", f"{rel}:{node.lineno}"))
                elif parts[0] == "prefjudge":
                    there = parts[1] if len(parts) > 1 else "__init__"
                    if there != here:
                        found.append((here, there, f"{rel}:{node.lineno}"))
    return found


def test_only_the_command_line_uses_click() -> None:
    offenders = [where for here, there, where in _imports() if there == "click" and here != "cli"]
    assert offenders == []


def test_imports_run_one_way() -> None:
    upward = []
    for here, there, where in _imports():
        if there == "click" or there in SHARED:
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
