"""Fuzzing prefjudge's readers: seed files, mutators, the reader targets, a runner, a verdict.

One copy, used twice: ``tests/test_fuzz_readers.py`` runs a seeded sample of cases in
process (click's runner), ``scripts/fuzz_readers.py`` runs thousands as real subprocesses
(``python -m prefjudge ...``) with a timeout.

* :func:`make_seeds` writes real valid inputs once: the sample tasks and generations, and
  what the commands write from them (scores, verdicts, a judge-eval summary, ratings, an
  augmented output with its journal, a response cache, a configuration, an experiment).
* A :class:`Target` is one command reading one of those files; :data:`TARGETS` lists them.
* A mutator turns a seed's bytes into a hostile variant and says whether the variant is
  invalid *by construction* (junk after valid content, a required field removed, a wrong
  type, an empty file where records are required, bytes that are not UTF-8): a command
  that exits 0 on such a variant without a warning on stderr is a *silent accept*. A
  mutation that may leave the input valid (truncation at a line boundary, a 4 MiB name,
  NaN, a lone surrogate) is never counted as one.
* :func:`classify` sorts a finished case into ok, clean_error, traceback, hang or
  silent_accept.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pj_fuzz_mutators import MUTATORS, Mutated
from pj_fuzz_seeds import make_seeds
from pj_fuzz_targets import TARGET_NAMES, TARGETS, Target

STATUSES = ("ok", "clean_error", "traceback", "hang", "silent_accept")


__all__ = ["MUTATORS", "TARGETS", "TARGET_NAMES", "Mutated", "Target", "make_seeds"]

# ---------------------------------------------------------------------------------------------
# cases and their verdicts


@dataclass
class Case:
    """One fuzz case, ready to run.

    Attributes:
        target: The command and its input.
        mutation: The mutator's name.
        seed: The random seed the mutator used.
        folder: The case's folder (inputs copied in, outputs written there).
        file: The mutated input.
        mutated: The mutated bytes and their validity.
        argv: The command line after ``prefjudge``.
        env: Extra environment variables.
        cwd: Where the command runs.
    """

    target: Target
    mutation: str
    seed: int
    folder: Path
    file: Path
    mutated: Mutated
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None

    def reproducer(self) -> str:
        """A shell line that reruns the case (while its folder exists)."""
        env = " ".join(f"{k}={v}" for k, v in self.env.items())
        cd = f"cd {self.cwd} && " if self.cwd else ""
        args = " ".join(_quote(a) for a in self.argv)
        return f"{cd}{env + ' ' if env else ''}python -m prefjudge {args}"


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def prepare(
    target: Target, mutation: str, seed: int, seeds: Path, folder: Path, big: int
) -> Case | None:
    """Write the case's inputs into ``folder``; None when the mutator does not apply.

    Args:
        target: The command and its input.
        mutation: A key of :data:`MUTATORS`.
        seed: The mutator's random seed.
        seeds: The folder :func:`make_seeds` wrote.
        folder: The case's folder (created).
        big: Size in bytes of a huge name.
    """
    rng = random.Random(f"{target.name}/{mutation}/{seed}")
    source = seeds / target.seed
    mutated = MUTATORS[mutation](source.read_bytes(), target, rng, big)
    if mutated is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    for name in (
        "tasks.jsonl",
        "generations.jsonl",
        "scores.jsonl",
        "battles.csv",
        "ratings.csv",
        "response.py",
    ):
        shutil.copy(seeds / name, folder / name)
    if target.folder:
        shutil.copytree(seeds / target.folder, folder / target.folder)
        file = folder / target.seed
    else:
        file = folder / ("input" + Path(target.seed).suffix)
    if mutation == "corrupt_gzip":
        file = file.with_name(file.name + ".gz")
    file.write_bytes(mutated.data)
    env: dict[str, str] = {"PREFJUDGE_CACHE": str(folder / "default-cache.sqlite")}
    cwd = None
    if target.env == "config":
        env["PREFJUDGE_CONFIG"] = str(file)
    elif target.env == "cwd":
        file = file.rename(folder / "prefjudge.toml")
        cwd = folder
    argv = [str(a) for a in target.argv(file, folder)]
    return Case(target, mutation, seed, folder, file, mutated, argv, env, cwd)


@dataclass
class Outcome:
    """What a case did and its verdict.

    Attributes:
        status: One of :data:`STATUSES`.
        code: Exit status (None on a hang).
        seconds: Wall-clock time.
        exception: The uncaught exception's type, for a traceback.
        last_line: The last line of the traceback, or of the error message.
        output: The end of what it printed.
    """

    status: str
    code: int | None
    seconds: float
    exception: str = ""
    last_line: str = ""
    output: str = ""


WARNED = re.compile(
    r"skip|invalid|ignor|warn|not (?:a|an|valid)|line \d+|unusable|bad ", re.IGNORECASE
)
JUDGED_NOTHING = re.compile(
    r"are errors\b.*so\s+nothing\s+was\s+judged"
    r"|the\s+openai\s+backend\s+cannot\s+reach\s+http://127\.0\.0\.1:9/v1", re.S)
"""How a judging command ends when it reaches the model: the judge targets ask a dead
backend (port 9: connection refused), so a run that read its input fully ends so (exit 1:
every verdict an error, or the dead endpoint found before the first verdict), and counts as
having accepted the input (exit 0) for the verdict; an input it refused ends with its own
error instead."""
_EXC_LINE = re.compile(r"^(\w+(?:\.\w+)*(?:Error|Exception|Exit|Interrupt|Warning)?)(?::|$)")


def classify(
    case: Case,
    code: int | None,
    stdout: str,
    stderr: str,
    seconds: float,
    exception: BaseException | None = None,
) -> Outcome:
    """The verdict on a finished case (see the module's docstring for the rules).

    Args:
        case: The case.
        code: Exit status, or None when it was stopped at the timeout.
        stdout: What it printed on stdout.
        stderr: What it printed on stderr.
        seconds: How long it ran.
        exception: The exception an in-process run ended with (not SystemExit).
    """
    tail = (stdout[-1500:] + "\n" + stderr[-3000:]).strip()
    if code == 1 and exception is None and JUDGED_NOTHING.search(stderr):
        code = 0  # read and judged against the dead backend: the input was accepted
    if code is None:
        return Outcome("hang", None, seconds, output=tail)
    if (
        exception is not None
        or "Traceback (most recent call last)" in stdout + stderr
        or code not in (0, 1, 2)
    ):
        name, last = "", ""
        if exception is not None:
            name, last = type(exception).__name__, f"{type(exception).__name__}: {exception}"
        else:
            lines = [x for x in stderr.splitlines() if x.strip()]
            for line in reversed(lines):
                match = _EXC_LINE.match(line.strip())
                if match and not line.startswith(" "):
                    name, last = match.group(1).split(".")[-1], line.strip()
                    break
            else:
                last = lines[-1] if lines else f"exit {code}"
        return Outcome("traceback", code, seconds, name, last[:300], tail)
    if code == 0:
        if case.mutated.invalid and not WARNED.search(stderr):
            return Outcome("silent_accept", 0, seconds, output=tail)
        return Outcome("ok", 0, seconds, output=tail)
    message = [x for x in stderr.splitlines() if x.strip()]
    return Outcome(
        "clean_error", code, seconds, last_line=(message[-1] if message else "")[:300], output=tail
    )


def _case_env(case: Case) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "120", **case.env}
    if "PREFJUDGE_CONFIG" not in case.env:
        env.pop("PREFJUDGE_CONFIG", None)
    return env


def preload() -> None:
    """Import every command and the heavy libraries once (before :func:`launch` forks)."""
    import matplotlib

    matplotlib.use("Agg")
    import importlib
    import pkgutil

    import matplotlib.pyplot
    import pandas  # noqa: F401
    import scipy.stats  # noqa: F401

    import prefjudge
    from prefjudge.cli.commands import COMMAND_MODULES, load_command

    for name in COMMAND_MODULES:
        load_command(name)
    # every module the commands may import later, so that the children share one snapshot
    skip = ("vllm", "embedded", "ray", "scale", "sandbox.child")
    for module in pkgutil.walk_packages(prefjudge.__path__, "prefjudge."):
        if not any(part in module.name for part in skip):
            try:
                importlib.import_module(module.name)
            except Exception:  # an optional dependency missing: the child imports it itself
                continue


@dataclass
class Running:
    """A case started by :func:`launch`.

    Attributes:
        case: The case.
        pid: Its process (the leader of its own process group).
        started: When it started (``time.monotonic``).
        popen: The ``python -m prefjudge`` process, polled through it (subprocess reaps the
            processes it started); None for a forked one.
    """

    case: Case
    pid: int
    started: float
    popen: subprocess.Popen[bytes] | None = None

    def poll(self) -> int | None:
        """Its exit status once it ended (negative: killed by that signal), else None."""
        if self.popen is not None:
            return self.popen.poll()
        done, status = os.waitpid(self.pid, os.WNOHANG)
        return os.waitstatus_to_exitcode(status) if done else None

    def stop(self) -> int | None:
        """Kill it at the timeout: None (a hang), or its status if it ended just now."""
        code = self.poll()
        if code is not None:
            return code
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:  # ended between the poll and the kill
            pass
        if self.popen is not None:
            self.popen.wait()
        else:
            os.waitpid(self.pid, 0)
        return None

    def outcome(self, code: int | None) -> Outcome:
        """The case's verdict, given its exit status (None: stopped at the timeout)."""
        if code is not None and code < 0:
            code = 128 - code  # killed by a signal: not 0, 1 or 2
        read = [
            (self.case.folder / n).read_bytes().decode("utf-8", "replace")
            for n in ("stdout.txt", "stderr.txt")
        ]
        return classify(self.case, code, read[0], read[1], time.monotonic() - self.started)


def launch(case: Case, fork: bool) -> Running:
    """Start a case in its own process (poll it with :meth:`Running.poll`).

    Args:
        case: The case; its stdout and stderr go to ``stdout.txt`` and ``stderr.txt`` in
            its folder.
        fork: Fork this process (which ran :func:`preload`) and run the command in the
            child, instead of starting ``python -m prefjudge`` (which pays the imports on
            every case). Either way a real process with its own exit status, killed at
            the timeout.
    """
    out, err = case.folder / "stdout.txt", case.folder / "stderr.txt"
    started = time.monotonic()
    if not fork:
        with out.open("wb") as o, err.open("wb") as e:
            proc = subprocess.Popen(
                [sys.executable, "-m", "prefjudge", *case.argv],
                stdout=o,
                stderr=e,
                stdin=subprocess.DEVNULL,
                cwd=case.cwd or case.folder,
                env=_case_env(case),
                start_new_session=True,
            )
        return Running(case, proc.pid, started, proc)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return Running(case, pid, started)
    code = 1
    try:  # the child: never returns
        os.setsid()
        for fd, path in ((1, out), (2, err)):
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(handle, fd)
            os.close(handle)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.environ.clear()
        os.environ.update(_case_env(case))
        os.chdir(case.cwd or case.folder)
        from prefjudge.cli import main

        try:
            main.main(args=case.argv, prog_name="prefjudge", standalone_mode=True)
            code = 0
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def run_subprocess(case: Case, timeout: float, fork: bool = False) -> Outcome:
    """Run one case in its own process and classify it (a hang after ``timeout`` seconds)."""
    running = launch(case, fork)
    while True:
        code = running.poll()
        if code is not None:
            return running.outcome(code)
        if time.monotonic() - running.started > timeout:
            return running.outcome(running.stop())
        time.sleep(0.02)


def run_in_process(case: Case) -> Outcome:
    """Run a case through click's test runner in this process and classify it."""
    from click.testing import CliRunner

    from prefjudge.cli import main

    env = {"COLUMNS": "120", "PREFJUDGE_CONFIG": None, **case.env}
    here = Path.cwd()
    start = time.monotonic()
    os.chdir(case.cwd or case.folder)
    try:
        result = CliRunner(env=env).invoke(main, case.argv, catch_exceptions=True)
    finally:
        os.chdir(here)
    seconds = time.monotonic() - start
    exception = result.exception
    if isinstance(exception, SystemExit):
        exception = None
    return classify(
        case,
        result.exit_code if exception is None else 1,
        result.stdout,
        result.stderr,
        seconds,
        exception,
    )


def finding(case: Case, outcome: Outcome) -> dict[str, Any]:
    """A JSON-ready record of a case that is not ok or a clean error."""
    return {
        "target": case.target.name,
        "owner": case.target.owner,
        "mutation": case.mutation,
        "note": case.mutated.note,
        "seed": case.seed,
        "status": outcome.status,
        "code": outcome.code,
        "seconds": round(outcome.seconds, 2),
        "exception": outcome.exception,
        "last_line": outcome.last_line,
        "reproducer": case.reproducer(),
        "output": outcome.output[-1500:],
    }
