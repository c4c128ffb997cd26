"""stdin/stdout runner (LiveCodeBench style): run the program once per case.

Each case runs the program as its own process (still inside the sandbox) with the case
input on stdin, and its stdout is appended to the outputs file. The expected outputs are
never in the sandbox: prefjudge compares them outside (``prefjudge.sandbox.compare``), as
LiveCodeBench does, so a program that reads the harness, forges lines or kills its
parent can only fail. The run stops at the first case that exits with an error, times
out or floods its output (a forged early stop can only fail too). A program that exits
with an error fails, whatever it printed (a traceback for a module that is not
installed included), unless the module is a library the task itself declares.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time

import _pj_common as common

PROGRAM = "solution.py"
STDIN_FILE = ".case-input"
_MISSING = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")


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


OUTPUTS_MAX = 8 << 20  # characters of stdout kept over all cases


def _case_problem(
    index: int, code: int | None, err: bytes, problem: str, timeout_s: float
) -> dict[str, str] | None:
    stderr = err.decode("utf-8", errors="replace")
    if problem == "timeout":
        return {"status": "timeout", "detail": f"case #{index} exceeded {timeout_s:g} s"}
    if problem == "output":
        return {"status": "fail", "detail": f"case #{index}: output limit exceeded"}
    if code != 0:
        # The program's own words: only a library the task declares, missing here since
        # before the run, makes its failure the environment's (common.declared_missing).
        for name in _MISSING.findall(stderr[-8192:]):
            found = common.declared_missing(name)
            if found is not None:
                return found
        return {
            "status": "fail",
            "detail": common.truncate(
                f"case #{index}: exited with status {code}\n{stderr[-1500:]}"
            ),
        }
    return None


def run(payload: dict) -> dict[str, str]:
    """Run the program on every case, logging each stdout; stop at the first problem.

    Returns:
        ``ran`` when every case exited normally (prefjudge then compares the outputs
        outside), else the first problem.
    """
    log = common.OutputsLog()
    try:
        compile(payload["code"], PROGRAM, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return {"status": "fail", "detail": f"the code does not compile: {exc}"}
    with open(PROGRAM, "w", encoding="utf-8") as handle:
        handle.write(payload["code"])
    timeout_s = float(payload["case_timeout_s"])
    cap = int(payload.get("output_cap", 1 << 20))
    kept = 0
    for index, case_input in enumerate(payload["inputs"]):
        with open(STDIN_FILE, "w", encoding="utf-8") as handle:
            handle.write(case_input)
        argv = [sys.executable, "-I", "-B", PROGRAM]
        code, out, err, problem = run_bounded(argv, STDIN_FILE, timeout_s, cap)
        found = _case_problem(index, code, err, problem, timeout_s)
        if found is not None:
            return found
        stdout = out.decode("utf-8", errors="replace")
        kept += len(stdout)
        if kept > OUTPUTS_MAX:
            detail = f"case #{index}: more than {OUTPUTS_MAX >> 20} MiB of output over the cases"
            return {"status": "fail", "detail": detail}
        log.append({"i": index, "stdout": stdout})
    return {"status": "ran", "detail": f"{len(payload['inputs'])} cases ran"}
