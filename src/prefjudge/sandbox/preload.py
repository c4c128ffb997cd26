"""Which modules a zygote imports before forking: those the benchmark's own files import.

Only trusted benchmark data decides (a task's ``libs``, its tests, its reference solution
and its prompt), never the model's code: the zygote runs its imports before any run, so
what it preloads must be what the benchmark authors wrote.
"""

from __future__ import annotations

import ast
import functools
import warnings
from collections.abc import Iterable

from prefjudge.records import Task


def imports_of(source: str) -> set[str]:
    """Preload entries for what ``source`` imports: ``a.b``, or ``a.b:c`` for ``from a.b import c``.

    Relative imports and unparsable sources give nothing.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. invalid escape sequences in old code
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.update(f"{node.module}:{alias.name}" for alias in node.names
                         if alias.name != "*")
            found.add(node.module)
    return found


def modules_to_preload(tasks: Iterable[Task], extra: Iterable[str] = ()) -> list[str]:
    """The preload entries for ``tasks`` plus ``extra``, sorted (no duplicates).

    Args:
        tasks: The tasks whose runs the zygote will fork.
        extra: More modules to import (a configurable set, e.g. from the command line).

    Returns:
        Entries the zygote imports in order; what is not installed is skipped there.
    """
    entries: set[str] = set(extra)
    seen: set[int] = set()
    for task in tasks:
        if id(task) in seen:
            continue
        seen.add(id(task))
        entries.update(task.libs)
        for source in (task.tests, task.canonical_solution or "", task.prompt or ""):
            if "import" in source:
                entries |= imports_of(source)
    return sorted(entries)


def declared_modules(task: Task) -> list[str]:
    """Top-level modules the benchmark itself declares for ``task``, sorted.

    Its ``libs`` (BigCodeBench lists them) and what its tests, reference solution and
    prompt import: the same trusted sources the zygotes preload from, never the model's
    code. The harness counts a run that fails for want of one of these, when it is not
    installed, as the environment's ``error``; for any other module, the code's ``fail``.
    """
    return list(_declared(tuple(task.libs), task.tests, task.canonical_solution or "",
                          task.prompt or ""))


@functools.lru_cache(maxsize=4096)
def _declared(libs: tuple[str, ...], *sources: str) -> tuple[str, ...]:
    names = {str(lib).split(".", 1)[0] for lib in libs}
    for source in sources:
        if "import" in source:
            names |= {entry.split(":", 1)[0].split(".", 1)[0] for entry in imports_of(source)}
    return tuple(sorted(name for name in names if name.isidentifier()))
