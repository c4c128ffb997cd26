"""Docstrings promise only what the code does, checked on the source (Google style).

* every ``Args:`` entry names a parameter (ruff's D417 checks the other way: every
  parameter of a documented function is described);
* ``Returns:`` only on a function that returns a value, ``Yields:`` only on a generator
  (protocol and abstract stubs excepted);
* every ``Attributes:`` entry of a class is one of its fields (or a base class's);
* every ``Raises:`` entry names an exception that exists (a built-in, a prefjudge class,
  a name the module imports, or ``library.Name`` of an installed library);
* every ``:func:``, ``:class:``... reference to prefjudge names something that exists.
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "prefjudge"
SECTIONS = {"Args", "Attributes", "Returns", "Yields", "Raises", "Note", "Example", "Examples"}
ENTRY = re.compile(r"^(\*{0,2}[\w.]+)\s*(?:\([^)]*\))?\s*:")
ROLE = re.compile(r":(?:func|meth|class|data|attr|exc|obj):`~?([^`]+)`")

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _trees() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(encoding="utf-8")) for path in sorted(SRC.rglob("*.py"))}


TREES = _trees()


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(SRC.parent)}:{getattr(node, 'lineno', 1)}"


def sections(doc: str) -> dict[str, list[tuple[int, str]]]:
    """Google-style sections of a docstring: name → its body lines ``(indent, text)``."""
    found: dict[str, list[tuple[int, str]]] = {}
    current, base = None, 0
    for line in doc.expandtabs().splitlines():
        text = line.strip()
        indent = len(line) - len(line.lstrip())
        header = re.fullmatch(r"(\w[\w ]*):", text)
        if header and header.group(1) in SECTIONS:
            current, base = header.group(1), indent
            found[current] = []
        elif current is not None and text and indent <= base:
            current = None
        elif current is not None:
            found[current].append((indent, text))
    return found


def entries(body: list[tuple[int, str]]) -> list[str]:
    """The names a section describes (its least indented lines, up to the colon)."""
    lines = [(indent, text) for indent, text in body if text]
    if not lines:
        return []
    first = min(indent for indent, _ in lines)
    names = []
    for indent, text in lines:
        if indent == first:
            match = ENTRY.match(text)
            names.append(match.group(1) if match else text)
    return names


def own_nodes(func: Function) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of functions or classes inside it."""
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        yield node
        stack.extend(
            child for child in ast.iter_child_nodes(node)
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
                              | ast.Lambda)
        )


def parameters(func: Function) -> set[str]:
    args = func.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    for star, arg in (("*", args.vararg), ("**", args.kwarg)):
        if arg is not None:
            names |= {arg.arg, star + arg.arg}
    return names


def is_stub(func: Function) -> bool:
    """A body of only a docstring and ``...``, ``pass`` or ``raise NotImplementedError``."""
    body = func.body[1:] if ast.get_docstring(func) else func.body
    return all(
        (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
        or isinstance(node, ast.Pass)
        or (isinstance(node, ast.Raise) and "NotImplementedError" in ast.unparse(node))
        for node in body
    )


def functions() -> Iterator[tuple[Path, Function, dict[str, list[tuple[int, str]]]]]:
    for path, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node)
                if doc:
                    yield path, node, sections(doc)


def classes() -> Iterator[tuple[Path, ast.ClassDef]]:
    for path, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                yield path, node


def defined_names() -> set[str]:
    """Every name prefjudge defines: modules, functions, classes, assigned names, attributes."""
    names: set[str] = set()
    for path, tree in TREES.items():
        names |= set(path.relative_to(SRC).with_suffix("").parts)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            else:
                for part in assigned(node):
                    names.add(part.id if isinstance(part, ast.Name) else part.attr)
    return names


def assigned(node: ast.AST) -> Iterator[ast.Name | ast.Attribute]:
    """The names and attributes an assignment ``node`` binds (nothing for other nodes)."""
    if not isinstance(node, ast.Assign | ast.AnnAssign):
        return
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        for part in ast.walk(target):
            if isinstance(part, ast.Name | ast.Attribute):
                yield part


def class_fields(node: ast.ClassDef) -> set[str]:
    """Names a class sets: annotated or assigned in its body, ``self.x`` in its methods."""
    names: set[str] = set()
    for part in ast.walk(node):
        if isinstance(part, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(part.name)
        for item in assigned(part):
            if isinstance(item, ast.Name):
                names.add(item.id)
            elif ast.unparse(item.value) == "self":
                names.add(item.attr)
    return names


def test_documented_args_are_parameters() -> None:
    problems = []
    for path, func, found in functions():
        real = parameters(func)
        problems += [f"{_where(path, func)}: {func.name}() documents {name!r}, not a parameter"
                     for name in entries(found.get("Args", [])) if name not in real]
    for path, cls in classes():
        doc = ast.get_docstring(cls)
        init = next((n for n in cls.body
                     if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if not doc or init is None:
            continue
        real = parameters(init)
        problems += [f"{_where(path, cls)}: {cls.name} documents {name!r}, not an __init__ "
                     "parameter" for name in entries(sections(doc).get("Args", []))
                     if name not in real]
    assert problems == []


def test_returns_and_yields_match_the_body() -> None:
    problems = []
    for path, func, found in functions():
        if is_stub(func):
            continue
        body = list(own_nodes(func))
        generator = any(isinstance(n, ast.Yield | ast.YieldFrom) for n in body)
        returns = any(isinstance(n, ast.Return) and n.value is not None for n in body)
        if "Returns" in found and not (returns or generator):
            problems.append(f"{_where(path, func)}: {func.name}() documents Returns, "
                            "returns nothing")
        if "Returns" in found and func.returns is not None and ast.unparse(func.returns) == "None":
            problems.append(f"{_where(path, func)}: {func.name}() documents Returns, "
                            "annotated -> None")
        if "Yields" in found and not generator:
            problems.append(f"{_where(path, func)}: {func.name}() documents Yields, "
                            "is no generator")
    assert problems == []


def test_documented_attributes_exist() -> None:
    by_name = {cls.name: cls for _, cls in classes()}

    def fields(cls: ast.ClassDef, seen: frozenset[str] = frozenset()) -> set[str]:
        names = class_fields(cls)
        for base in cls.bases:
            parent = by_name.get(ast.unparse(base).split(".")[-1])
            if parent is not None and parent.name not in seen:
                names |= fields(parent, seen | {cls.name})
        return names

    problems = []
    for path, cls in classes():
        doc = ast.get_docstring(cls)
        if not doc:
            continue
        known = fields(cls)
        problems += [f"{_where(path, cls)}: {cls.name} documents attribute {name!r}, "
                     "which it does not have"
                     for name in entries(sections(doc).get("Attributes", []))
                     if name not in known]
    assert problems == []


def test_documented_exceptions_exist() -> None:
    defined = defined_names()
    imported: dict[Path, set[str]] = {}
    for path, tree in TREES.items():
        names = imported[path] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names}
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module.split(".")[0])
    problems = []
    for path, func, found in functions():
        for name in entries(found.get("Raises", [])):
            head, last = name.split(".")[0], name.split(".")[-1]
            known = (isinstance(getattr(builtins, last, None), type) or last in defined
                     or head in imported[path]
                     or ("." in name and importlib.util.find_spec(head) is not None))
            if not known:
                problems.append(f"{_where(path, func)}: {func.name}() documents raising "
                                f"{name!r}, which does not exist here")
    assert problems == []


def test_cross_references_resolve() -> None:
    defined = defined_names()
    problems = []
    for path, tree in TREES.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                              | ast.AsyncFunctionDef):
                continue
            for target in ROLE.findall(ast.get_docstring(node) or ""):
                target = re.sub(r"\s+", "", target).split("(")[0]
                head = target.split(".")[0]
                if "." in target and head != "prefjudge" and head not in defined:
                    continue  # another library's name (tempfile.gettempdir, ...)
                last = target.split(".")[-1]
                if last not in defined and not hasattr(builtins, last):
                    problems.append(f"{_where(path, node)}: reference to {target!r}, "
                                    "which prefjudge does not define")
    assert problems == []
