"""HumanEval runner: ``check(candidate)`` on the code's entry point.

As in OpenAI's harness, code and tests share one namespace (tests may use helpers the
prompt defines, e.g. ``poly`` in HumanEval/32). The tests are first loaded on their own,
before any of the code runs: tests that do not load, or define no ``check``, are the
benchmark's problem (``error``); once they load on their own, whatever keeps them from
loading or running after the code ran is the code's doing (``fail``).
"""

from __future__ import annotations

import builtins

import _pj_common as common

CODE_FILE = "solution.py"
TESTS_FILE = "tests.py"


def _tests_problem(tests: object) -> dict[str, str] | None:
    """Whether the tests load on their own and define ``check``; None when they do.

    Run before any of the code: the tests are the benchmark's, so a problem here is an
    ``error`` (a declared library missing, tests that raise or define no ``check``).
    """
    namespace = {"__name__": "__tests__", "__builtins__": builtins}
    try:
        exec(tests, namespace)
    except BaseException as exc:
        found = common.environment_error(exc)
        if found is not None:
            return found
        return {"status": "error", "detail": "the tests failed to load: " + str(exc)[:500]}
    if not callable(namespace.get("check")):
        return {"status": "error", "detail": "the tests define no check(candidate) function"}
    return None


def run(payload: dict) -> dict[str, str]:
    """Execute the code, then the tests' ``check`` on the entry point."""
    entry_point = payload["entry_point"]
    snapshot = common.Snapshot({"builtins": builtins.__dict__})
    try:
        code = common.compile_source(payload["code"], CODE_FILE)
    except (SyntaxError, ValueError) as exc:
        return {"status": "fail", "detail": f"the code does not compile: {exc}"}
    try:
        tests = common.compile_source(payload["tests"], TESTS_FILE)
    except (SyntaxError, ValueError) as exc:
        return {"status": "error", "detail": f"the tests do not compile: {exc}"}
    problem = _tests_problem(tests)
    if problem is not None:
        return problem
    namespace = {"__name__": "__solution__", "__builtins__": builtins}
    try:
        exec(code, namespace)
    except BaseException as exc:
        return common.failure_from_exception(exc, (CODE_FILE,), "failed at import: ")
    candidate = namespace.get(entry_point)
    if not callable(candidate):
        return {"status": "fail", "detail": f"the code defines no function {entry_point!r}"}
    try:
        exec(tests, namespace)
    except BaseException as exc:  # they loaded before the code ran: its doing
        return common.failure_from_exception(
            exc, (CODE_FILE, TESTS_FILE), "the tests no longer load after the code ran: ")
    check = namespace.get("check")
    if not callable(check):
        return {"status": "fail", "detail": "the code kept the tests from defining check"}
    try:
        check(candidate)
    except BaseException as exc:
        return common.failure_from_exception(exc, (CODE_FILE, TESTS_FILE))
    return common.tampered(snapshot) or {"status": "pass", "detail": "check passed"}
