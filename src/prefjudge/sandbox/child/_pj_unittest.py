"""BigCodeBench runner: the code and its ``unittest`` ``TestCases`` in one module.

Mirrors BigCodeBench's own harness: code and tests are executed together as module
``__test__`` (with ``sys``, ``os`` and ``environ`` pre-bound), then every test of
``TestCases`` runs; any failure or error fails the sample.

What the tests are is checked before any of the code runs: tests that do not compile on
their own or define no ``TestCases`` class with a test are the benchmark's problem
(``error``). After the code ran, whatever keeps the tests from compiling with it, loading
or running is the code's doing (``fail``), as in BigCodeBench.
"""

from __future__ import annotations

import ast
import builtins
import os
import sys
import types
import unittest
from typing import Any

import _pj_common as common

MODULE_NAME = "__test__"
FILENAME = "__test__.py"


class RecordingResult(unittest.TestResult):
    """A TestResult that also keeps the raw exceptions of failures and errors."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[tuple[str, BaseException | None]] = []

    def _keep(self, test: Any, err: Any) -> None:
        exc = err[1] if isinstance(err, tuple) and len(err) > 1 else None
        self.problems.append((getattr(test, "id", lambda: str(test))(), exc))

    def addError(self, test: Any, err: Any) -> None:
        """Record an error."""
        super().addError(test, err)
        self._keep(test, err)

    def addFailure(self, test: Any, err: Any) -> None:
        """Record a failure."""
        super().addFailure(test, err)
        self._keep(test, err)

    def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
        """Record a failing subtest."""
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._keep(subtest, err)


def _tests_problem(tests: str) -> dict[str, str] | None:
    """The benchmark's problem with its tests, seen before the code runs; None if none.

    The tests must compile on their own and after other code (no ``__future__`` import:
    they run after the code, in one module), and define a class ``TestCases`` with a
    method whose name starts with ``test`` (statically: no code runs here).
    """
    try:
        tree = compile(tests, "tests.py", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        compile(tree, "tests.py", "exec", dont_inherit=True)
        compile("pass\n\n" + tests, "tests.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return {"status": "error", "detail": f"the tests do not compile: {exc}"}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "TestCases" and any(
            isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
            and item.name.startswith("test") for item in node.body
        ):
            return None
    return {"status": "error", "detail": "the tests define no unittest TestCases class "
            "with a test"}


def _load_module(code: str, tests: str) -> tuple[types.ModuleType | None, dict[str, str] | None]:
    try:
        compile(code, "solution.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return None, {"status": "fail", "detail": f"the code does not compile: {exc}"}
    try:
        compiled = common.compile_source(code + "\n\n" + tests, FILENAME)
    except (SyntaxError, ValueError) as exc:  # each compiles alone, and the tests after code
        return None, {"status": "fail", "detail": f"the code and its tests do not compile "
                      f"together: {exc}"}
    module = types.ModuleType(MODULE_NAME)
    module.__dict__.update(
        __builtins__=builtins,
        __file__=FILENAME,
        __package__=None,
        __doc__=None,
        sys=sys,
        os=os,
        environ=os.environ,
    )
    sys.modules[MODULE_NAME] = module
    try:
        exec(compiled, module.__dict__)
    except BaseException as exc:
        return None, common.failure_from_exception(exc, (FILENAME,), "failed at import: ")
    return module, None


def _summarise(result: RecordingResult) -> dict[str, str]:
    for _, exc in result.problems:
        found = common.environment_error(exc) if exc is not None else None
        if found is not None:
            return found
    if result.problems:
        test_id, exc = result.problems[0]
        why = common.describe_exception(exc, (FILENAME,)) if exc is not None else "failed"
        head = f"{len(result.problems)} of {result.testsRun} tests failed; first: {test_id}\n"
        return {"status": "fail", "detail": common.truncate(head + why)}
    if result.unexpectedSuccesses:
        return {"status": "fail", "detail": "a test expected to fail passed"}
    return {"status": "pass", "detail": f"{result.testsRun} tests passed"}


def _watched() -> dict[str, Any]:
    """What the tests rely on: unittest's classes and modules, and the builtins."""
    import unittest.case
    import unittest.loader
    import unittest.result
    import unittest.suite

    return {
        "builtins": builtins.__dict__,
        "unittest": unittest,
        "unittest.case": unittest.case,
        "unittest.suite": unittest.suite,
        "unittest.loader": unittest.loader,
        "unittest.result": unittest.result,
        "unittest.TestCase": unittest.TestCase,
        "unittest.TestSuite": unittest.TestSuite,
        "unittest.TestLoader": unittest.TestLoader,
        "unittest.TestResult": unittest.TestResult,
        "unittest.case._Outcome": unittest.case._Outcome,
        "RecordingResult": RecordingResult,
    }


def run(payload: dict) -> dict[str, str]:
    """Run BigCodeBench-style ``TestCases`` against the code; return status and detail."""
    problem = _tests_problem(payload["tests"])
    if problem is not None:
        return problem
    snapshot = common.Snapshot(_watched())
    module, problem = _load_module(payload["code"], payload["tests"])
    if problem is not None:
        return problem
    # The tests define TestCases with a test (checked above): the code kept them from it.
    cases = getattr(module, "TestCases", None)
    if not (isinstance(cases, type) and issubclass(cases, unittest.TestCase)):
        return {"status": "fail", "detail": "the code kept the tests from defining TestCases"}
    suite = unittest.TestLoader().loadTestsFromTestCase(cases)
    result = RecordingResult()
    suite.run(result)
    if not result.testsRun:
        return {"status": "fail", "detail": "the code kept the tests from running: no test ran"}
    outcome = _summarise(result)
    if outcome["status"] == "pass":
        return common.tampered(snapshot) or outcome
    return outcome
