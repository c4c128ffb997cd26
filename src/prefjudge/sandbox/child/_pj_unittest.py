"""BigCodeBench runner: the code and its ``unittest`` ``TestCases`` in one module.

Mirrors BigCodeBench's own harness: code and tests are executed together as module
``__test__`` (with ``sys``, ``os`` and ``environ`` pre-bound), then every test of
``TestCases`` runs; any failure or error fails the sample.
"""

from __future__ import annotations

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


def _load_module(code: str, tests: str) -> tuple[types.ModuleType | None, dict[str, str] | None]:
    try:
        compile(code, "solution.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return None, {"status": "fail", "detail": f"the code does not compile: {exc}"}
    try:
        compiled = common.compile_source(code + "\n\n" + tests, FILENAME)
    except (SyntaxError, ValueError) as exc:
        return None, {"status": "error", "detail": f"the tests do not compile: {exc}"}
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
        module = common.missing_module(exc) if exc is not None else None
        if module is not None:
            return {"status": "error", "detail": f"missing module {module!r} (not installed here)"}
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
    snapshot = common.Snapshot(_watched())
    module, problem = _load_module(payload["code"], payload["tests"])
    if problem is not None:
        return problem
    cases = getattr(module, "TestCases", None)
    if not (isinstance(cases, type) and issubclass(cases, unittest.TestCase)):
        return {"status": "error", "detail": "the tests define no unittest TestCases class"}
    suite = unittest.TestLoader().loadTestsFromTestCase(cases)
    result = RecordingResult()
    suite.run(result)
    outcome = _summarise(result) if result.testsRun else {"status": "error",
                                                          "detail": "no tests ran"}
    if outcome["status"] == "pass":
        return common.tampered(snapshot) or outcome
    return outcome
