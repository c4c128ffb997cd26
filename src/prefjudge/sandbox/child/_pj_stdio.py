"""stdin/stdout runner (LiveCodeBench style): run the program once per case.

Each case runs the program as its own process (still inside the sandbox) with the case
input on stdin. Outputs are compared as LiveCodeBench does: both stripped and split into
lines, each line stripped; lines must be equal, or else parse as the same sequence of
decimal numbers.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from decimal import Decimal, InvalidOperation

import _pj_common as common

PROGRAM = "solution.py"
STDIN_FILE = ".case-input"
_MISSING = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n")]


def _decimals(line: str) -> list[Decimal] | None:
    try:
        return [Decimal(token) for token in line.split()]
    except InvalidOperation:
        return None


def outputs_equal(got: str, expected: str) -> bool:
    """Whether two program outputs match, line by line (LiveCodeBench's rule)."""
    got_lines, expected_lines = _lines(got), _lines(expected)
    if len(got_lines) != len(expected_lines):
        return False
    for a, b in zip(got_lines, expected_lines, strict=True):
        if a == b:
            continue
        da, db = _decimals(a), _decimals(b)
        if da is None or db is None or da != db:
            return False
    return True


def run_bounded(
    argv: list[str], stdin_path: str, timeout_s: float, cap: int
) -> tuple[int | None, bytes, bytes, str]:
    """Run ``argv``; return (exit code, stdout, stderr, problem) with output capped."""
    with open(stdin_path, "rb") as stdin:
        proc = subprocess.Popen(
            argv,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    buffers = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    selector = selectors.DefaultSelector()
    for stream in buffers:
        selector.register(stream, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout_s
    problem = ""
    while selector.get_map() and not problem:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            problem = "timeout"
            break
        for key, _ in selector.select(min(remaining, 0.5)):
            chunk = os.read(key.fd, 65536)
            if not chunk:
                selector.unregister(key.fileobj)
                continue
            buffers[key.fileobj] += chunk
            if sum(len(b) for b in buffers.values()) > cap:
                problem = "output"
    if problem:
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        code = proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        code, problem = proc.wait(), problem or "timeout"
    for stream in buffers:
        stream.close()
    return code, bytes(buffers[proc.stdout]), bytes(buffers[proc.stderr]), problem


def _case_problem(
    index: int, case: dict, code: int | None, out: bytes, err: bytes, problem: str, timeout_s: float
) -> dict[str, str] | None:
    stderr = err.decode("utf-8", errors="replace")
    if problem == "timeout":
        return {"status": "timeout", "detail": f"case #{index} exceeded {timeout_s:g} s"}
    if problem == "output":
        return {"status": "fail", "detail": f"case #{index}: output limit exceeded"}
    if code != 0:
        missing = _MISSING.findall(stderr)
        if missing and common.missing_module(ModuleNotFoundError(name=missing[-1])):
            top = missing[-1].split(".")[0]
            return {"status": "error", "detail": f"missing module {top!r} (not installed here)"}
        return {
            "status": "fail",
            "detail": common.truncate(
                f"case #{index}: exited with status {code}\n{stderr[-1500:]}"
            ),
        }
    got = out.decode("utf-8", errors="replace")
    if not outputs_equal(got, case["output"]):
        detail = (
            f"case #{index}: wrong answer\ninput: {case['input'][:300]!r}\n"
            f"expected: {case['output'][:300]!r}\ngot: {got[:300]!r}"
        )
        return {"status": "fail", "detail": common.truncate(detail)}
    return None


def run(payload: dict) -> dict[str, str]:
    """Run the program on every case, stopping at the first that does not match."""
    try:
        compile(payload["code"], PROGRAM, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return {"status": "fail", "detail": f"the code does not compile: {exc}"}
    with open(PROGRAM, "w", encoding="utf-8") as handle:
        handle.write(payload["code"])
    timeout_s = float(payload["case_timeout_s"])
    cap = int(payload.get("output_cap", 1 << 20))
    for index, case in enumerate(payload["cases"]):
        with open(STDIN_FILE, "w", encoding="utf-8") as handle:
            handle.write(case["input"])
        argv = [sys.executable, "-I", "-B", PROGRAM]
        code, out, err, problem = run_bounded(argv, STDIN_FILE, timeout_s, cap)
        found = _case_problem(index, case, code, out, err, problem, timeout_s)
        if found is not None:
            return found
    return {"status": "pass", "detail": f"{len(payload['cases'])} cases passed"}
