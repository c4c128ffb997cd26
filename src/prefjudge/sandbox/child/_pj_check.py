"""HumanEval runner: ``check(candidate)`` on the code's entry point.

As in OpenAI's harness, code and tests share one namespace (tests may use helpers the
prompt defines, e.g. ``poly`` in HumanEval/32).
"""

from __future__ import annotations

import builtins

import _pj_common as common

CODE_FILE = "solution.py"
TESTS_FILE = "tests.py"


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
    except BaseException as exc:
        return {"status": "error", "detail": "the tests failed to load: " + str(exc)[:500]}
    check = namespace.get("check")
    if not callable(check):
        return {"status": "error", "detail": "the tests define no check(candidate) function"}
    try:
        check(candidate)
    except BaseException as exc:
        return common.failure_from_exception(exc, (CODE_FILE, TESTS_FILE))
    return common.tampered(snapshot) or {"status": "pass", "detail": "check passed"}
