"""Test harness run inside the sandbox (standalone, stdlib only).

Started by the launcher as ``python -I -B harness.py`` in the run's work dir, as the
unprivileged sandbox user. It reads ``.payload.json`` (and deletes it before any
untrusted code runs), announces its start on stdout, runs one test format, and only
then writes the final result -- tagged with the run's nonce -- to
``.prefjudge-result.json``. A program that exits early, kills its parent or is killed
leaves no final result, which the parent never counts as a pass.
"""

from __future__ import annotations

import importlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _pj_common as common  # noqa: E402 - our own directory is on sys.path only now

STARTED_MARKER = "[prefjudge-harness-started"
RUNNERS = {
    "bigcodebench": ("_pj_unittest", "run"),
    "humaneval": ("_pj_check", "run"),
    "evalplus": ("_pj_evalplus", "run"),
    "stdio": ("_pj_stdio", "run"),
    "perf": ("_pj_perf", "run"),
    "probe": ("_pj_probe", "run"),
    "generate": ("_pj_generate", "run"),
}


def load_payload() -> dict:
    """Read the payload and remove it, so the code under test cannot read the nonce there."""
    with open(".payload.json", encoding="utf-8") as handle:
        payload = json.load(handle)
    os.unlink(".payload.json")
    return payload


def not_dumpable() -> None:
    """Keep this process's memory from the programs it starts (stdio and EvalPlus runs).

    They run under the same uid: without this, ``/proc/<harness>/mem`` (and ptrace, which
    the seccomp filter refuses anyway) would give them the nonce and let them forge a
    result. Programs it starts become dumpable again when they exec; they hold no secret.
    """
    import ctypes

    pr_set_dumpable = 4
    if ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def serve(payload: dict) -> None:
    """Run the payload's test format and write the result; exits without cleanup hooks.

    Called in the harness process (here, or in a zygote's forked child, which passes the
    payload it was given) before any untrusted code has run.
    """
    not_dumpable()
    writer = common.ResultWriter(payload["nonce"])
    # Which libraries the task declares are missing, known before the code can run: a
    # failure for want of one is the environment's (error); any other, the code's (fail).
    common.note_declared(payload.get("libraries"))
    # Announce the start on the output pipe, which the code under test cannot rewrite.
    os.write(1, f"{STARTED_MARKER} {payload['nonce']}]\n".encode())
    module_name, function_name = RUNNERS[payload["format"]]
    runner = getattr(importlib.import_module(module_name), function_name)
    del module_name, function_name  # a frame's locals must not say which runner this is
    if HERE in sys.path:
        sys.path.remove(HERE)
    # The harness's modules are not importable by name from the code under test.
    for name in [name for name in sys.modules if name.startswith("_pj_")]:
        del sys.modules[name]
    sink = common.install_sinks(int(payload.get("output_cap", 1 << 20)))
    try:
        result = runner(payload)
    except BaseException as exc:
        result = common.failure_from_exception(exc, (), "the run was interrupted: ")
    if sink.overflowed and result.get("status") in ("pass", "ran"):
        result = {"status": "fail", "detail": "output limit exceeded (stdout/stderr flood)"}
    writer.write({"stage": "done", **result})
    os._exit(0)


def main() -> None:
    """Read the payload file the launcher wrote, then :func:`serve` it."""
    not_dumpable()  # before the nonce is in memory
    serve(load_payload())


if __name__ == "__main__":
    main()
