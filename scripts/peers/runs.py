"""Run one tool on one sample file, time it, and read its per-sample verdicts.

Time: wall seconds around the tool's process, and CPU seconds (user + system) of the whole
process tree: the increase of ``resource.getrusage(RUSAGE_CHILDREN)`` around
``subprocess.run``, which waits for the tool's process; the kernel adds a process's usage to
its parent's children usage when the parent waits for it, so every descendant that was
waited for up the chain counts (EvalPlus's and BigCodeBench's pools and per-sample
processes, prefjudge's sandboxes and zygotes). A descendant left to be reaped by init would
not count (none is, in a normal run). Runs are never concurrent: only one tool runs at a
time on the machine's cores.

Verdicts are keyed ``(task_id, n)``: n counts the earlier lines of the sample file with the
same task (EvalPlus's and BigCodeBench's ``completion_id``, prefjudge's ``sample``).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

Key = tuple[str, int]

RUN_TIMEOUT_S = 3600.0


@dataclass
class Verdict:
    """One tool's verdict on one sample.

    Attributes:
        status: ``pass``, ``fail``, ``timeout``, ``error`` or ``missing`` (no record).
        detail: Why, in a line (the tool's own words, shortened).
        sets: HumanEval+/MBPP+ only: status on ``base`` and ``plus`` inputs, when known.
    """

    status: str
    detail: str = ""
    sets: dict[str, str] = field(default_factory=dict)


@dataclass
class Run:
    """One run of one tool on one benchmark's sample file."""

    tool: str
    bench: str
    rep: int  # 0: the untimed warm-up
    wall: float
    cpu: float
    rc: int
    log: str
    verdicts: dict[Key, Verdict]
    problem: str = ""

    def summary(self) -> dict:
        """The run without its verdicts, JSON-ready."""
        counts: dict[str, int] = {}
        for verdict in self.verdicts.values():
            counts[verdict.status] = counts.get(verdict.status, 0) + 1
        return {"tool": self.tool, "bench": self.bench, "rep": self.rep,
                "wall_s": round(self.wall, 3), "cpu_s": round(self.cpu, 3), "rc": self.rc,
                "log": self.log, "statuses": counts, "problem": self.problem}


def timed(cmd: list[str], env: dict[str, str], cwd: Path, log: Path,
          stdin: str | None = None) -> tuple[int, float, float]:
    """Run ``cmd`` to its end; its exit status, wall seconds and process-tree CPU seconds.

    Args:
        cmd: The command.
        env: Its environment.
        cwd: Its working folder.
        log: Where its stdout and stderr go.
        stdin: Text for its standard input (None: none).

    Returns:
        Exit status (-9 when killed past :data:`RUN_TIMEOUT_S`), wall and CPU seconds.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                text=True, start_new_session=True)
        try:
            proc.communicate(stdin, timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc.returncode, wall, cpu


def log_tail(log: Path, lines: int = 6) -> str:
    """The last lines of a log, for a message."""
    try:
        return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# --- readers -----------------------------------------------------------------------------


def _short(text: object, limit: int = 160) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def result_file(samples: Path) -> Path:
    """Where EvalPlus and BigCodeBench write results for a ``.jsonl`` sample file."""
    return samples.with_name(samples.name.replace(".jsonl", "_eval_results.json"))


def read_evalplus(path: Path) -> dict[Key, Verdict]:
    """EvalPlus's ``eval_results.json``: ``base_status`` and ``plus_status`` per sample."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out: dict[Key, Verdict] = {}
    for task_id, entries in data["eval"].items():
        for n, entry in enumerate(entries):
            base, plus = entry.get("base_status"), entry.get("plus_status")
            overall = base if base != "pass" else (plus or base)
            failing = entry.get("base_fail_tests") or entry.get("plus_fail_tests") or []
            detail = f"base {base}, plus {plus}"
            if failing:
                detail += f"; failing input {_short(failing[-1], 80)}"
            sets = {"base": base} | ({"plus": plus} if plus is not None else {})
            out[(task_id, n)] = Verdict(overall or "missing", detail, sets)
    return out


def read_bigcodebench(path: Path) -> dict[Key, Verdict]:
    """BigCodeBench's ``*_eval_results.json``: ``status`` and failing tests per sample."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out: dict[Key, Verdict] = {}
    for task_id, entries in data["eval"].items():
        for n, entry in enumerate(entries):
            details = entry.get("details") or {}
            detail = ""
            if details:
                first = next(iter(details.values()))
                last = str(first).strip().splitlines()[-1] if str(first).strip() else ""
                detail = f"{', '.join(sorted(details))[:80]}: {_short(last, 100)}"
            out[(task_id, n)] = Verdict(entry.get("status") or "missing", detail)
    return out


def read_prefjudge(path: Path) -> dict[Key, Verdict]:
    """prefjudge's scored JSONL: ``func.status`` and, when present, ``func.sets``."""
    out: dict[Key, Verdict] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            record = json.loads(line)
            func = record.get("func") or {}
            sets = {name: s.get("status") for name, s in (func.get("sets") or {}).items()}
            out[(record["task_id"], int(record.get("sample", 0)))] = Verdict(
                func.get("status", "missing"), _short(func.get("detail", ""), 400), sets)
    return out


READERS = {"evalplus": read_evalplus, "bigcodebench": read_bigcodebench,
           "prefjudge": read_prefjudge}
