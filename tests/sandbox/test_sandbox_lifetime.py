"""Nothing outlives prefjudge: sandboxes die with it, and run dirs never stay behind.

Real processes throughout: a separate Python process runs the sandbox and is then killed
(SIGKILL) or interrupted (SIGINT); the checks scan /proc and the run dirs it left.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypeVar

import pytest
from pj_processes import descends_from

from prefjudge.records import Task
from prefjudge.sandbox import SandboxLimits, SandboxUnavailableError, resolve_isolation, run_one
from prefjudge.sandbox.isolation import IsolationPlan
from prefjudge.sandbox.process import (
    OWNER_FILE,
    RUN_DIR_PREFIX,
    _remove_tree,
    clean_orphaned_run_dirs,
)

SRC = Path(__file__).resolve().parents[2] / "src"
FAST = SandboxLimits(
    timeout_s=4, cpu_s=8, memory_mb=1024, nproc=32, fsize_mb=8, disk_mb=32, max_output_kb=64
)
CHECK = "def check(candidate):\n    assert candidate() == 1\n"
GOOD = "def f():\n    return 1\n"
T = TypeVar("T")

# The sample under test hangs, as a process whose command line shows TOKEN: it replaces
# itself (the harness, which has announced its start by then) with a sleeping interpreter.
HANG = """import os, sys
def f():
    os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", TOKEN])
"""
# Run by a separate interpreter: ``CHILD ENTRY TIMEOUT_S`` runs the hanging sample through
# run_functional (in a worker thread) or run_one (in the main thread). TOKEN comes in the
# environment, so that only the sample's command line shows it.
CHILD = f"""
import os, sys
from prefjudge.records import Task
from prefjudge.sandbox import SandboxLimits, resolve_isolation, run_functional, run_one
entry, timeout, token = sys.argv[1], float(sys.argv[2]), os.environ["PJ_TEST_TOKEN"]
task = Task(task_id="T/1", entry_point="f", test_format="humaneval", tests={CHECK!r})
code = {HANG!r}.replace("TOKEN", repr(token))
limits = SandboxLimits(timeout_s=timeout, cpu_s=int(timeout) + 1, memory_mb=1024, nproc=32)
if entry == "run_functional":
    print(run_functional([(task, code)], limits=limits, workers=1), flush=True)
else:
    print(run_one(task, code, resolve_isolation(), limits), flush=True)
"""


@dataclass(frozen=True)
class Proc:
    pid: int
    args: list[str]
    pid_namespace: str | None


def live_processes() -> list[Proc]:
    """Every process now running (zombies count as gone)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # gone meanwhile
        try:
            namespace: str | None = os.readlink(f"/proc/{entry}/ns/pid")
        except OSError:
            namespace = None  # not ours to inspect
        if state not in (b"Z", b"X"):
            args = os.fsdecode(cmdline).split("\0")
            found.append(Proc(int(entry), args, namespace))
    return found


def mentions(proc: Proc, text: str | Path) -> bool:
    return any(str(text) in arg for arg in proc.args)


def wait_for(probe: Callable[[], T], timeout_s: float, what: str) -> T:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout_s} s waiting for {what}")


def run_dirs(root: Path) -> list[Path]:
    return sorted(root.glob(f"{RUN_DIR_PREFIX}*"))


@dataclass(frozen=True)
class Sandbox:
    """A hanging sample's sandbox, seen from outside."""

    run_dir: Path
    token: str
    namespaces: frozenset[str]  # its pid namespaces other than ours (namespace modes)

    def processes(self) -> list[Proc]:
        """Its live processes: those naming its dir or token, and all in its namespaces."""
        return [
            p
            for p in live_processes()
            if mentions(p, self.run_dir)
            or mentions(p, self.token)
            or p.pid_namespace in self.namespaces
        ]


def find_sandbox(root: Path, owner_pid: int, token: str) -> Sandbox | None:
    """The sandbox ``owner_pid`` runs its sample in, once the sample hangs (shows ``token``)."""
    procs = live_processes()
    if not any(mentions(p, token) for p in procs):
        return None
    ours = os.readlink("/proc/self/ns/pid")
    for run_dir in run_dirs(root):
        try:
            owner = json.loads((run_dir / OWNER_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if owner.get("pid") == owner_pid and (run_dir / "config.json").exists():
            spaces = {
                p.pid_namespace
                for p in procs
                if (mentions(p, run_dir) or mentions(p, token)) and p.pid_namespace != ours
            }
            return Sandbox(run_dir, token, frozenset(spaces - {None}))
    return None


def find_zygote_sandbox(owner_pid: int, token: str) -> Sandbox | None:
    """A zygote's run of the hanging sample: no run dir, but the zygote and the sample."""
    procs = live_processes()
    hanging = [p for p in procs if mentions(p, token)]
    zygotes = [p for p in procs
               if mentions(p, "child/zygote.py") and descends_from(p.pid, owner_pid)]
    if not hanging or not zygotes:
        return None
    ours = os.readlink("/proc/self/ns/pid")
    spaces = {p.pid_namespace for p in hanging + zygotes if p.pid_namespace != ours}
    return Sandbox(Path("/nonexistent-zygote-run"), token, frozenset(spaces - {None}))


def start_sample(
    root: Path, entry: str, timeout_s: float, log: Path, mode: str | None = None,
    zygote: bool = False,
):
    """Start a prefjudge process on the hanging sample; wait until the sample hangs.

    Fresh-process runs (the default here) are found by their run dir; zygote runs, which
    have none, by the zygote process and the sample's token.
    """
    token = f"pjhang{uuid.uuid4().hex[:12]}"
    env = {**os.environ, "PYTHONPATH": str(SRC), "TMPDIR": str(root), "PJ_TEST_TOKEN": token,
           "PREFJUDGE_SANDBOX_ZYGOTE": "1" if zygote else "0"}
    if mode is not None:
        env["PREFJUDGE_SANDBOX_MODE"] = mode
    find = find_zygote_sandbox if zygote else partial(find_sandbox, root)
    with log.open("wb") as out:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, entry, str(timeout_s)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        found = wait_for(
            lambda: find(child.pid, token) or child.poll() is not None,
            30,
            "the sample to run",
        )
        assert isinstance(found, Sandbox), log.read_text(errors="replace")
    except BaseException:
        child.kill()
        child.wait()
        raise
    return child, found


def kill_survivors(procs: list[Proc]) -> None:
    for proc in procs:
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            continue


@pytest.fixture
def run_root() -> Iterator[Path]:
    """A private temporary root for run dirs (TMPDIR of the child processes).

    World-traversable like /tmp, so that a per-run sandbox uid (rlimits mode as root)
    can reach its work dir inside the run dir.
    """
    root = Path(tempfile.mkdtemp(prefix="pj-lifetime-"))
    root.chmod(0o711)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def require_mode(mode: str) -> None:
    try:
        resolve_isolation(mode)
    except SandboxUnavailableError as exc:
        pytest.skip(f"sandbox mode {mode} cannot run here: {exc}")


# --- a SIGKILLed prefjudge takes its sandbox down ---------------------------------------------


@pytest.mark.parametrize("mode", ["namespaces", "userns", "rlimits"])
def test_sigkilled_prefjudge_leaves_no_sandbox_running(mode, run_root, tmp_path):
    require_mode(mode)
    child, sandbox = start_sample(run_root, "run_functional", 120, tmp_path / "child.log", mode)
    survivors = sandbox.processes()
    try:
        assert any(mentions(p, "launcher.py") for p in survivors)
        assert bool(sandbox.namespaces) == (mode != "rlimits")  # its own pid namespace
        os.kill(child.pid, signal.SIGKILL)  # prefjudge alone, not its process group
        child.wait(timeout=10)
        deadline = time.monotonic() + 10
        while (survivors := sandbox.processes()) and time.monotonic() < deadline:
            time.sleep(0.05)
        # unshare (namespace modes) or the launcher (rlimits mode) dies with prefjudge; the
        # sample dies with the launcher (its pid namespace, or the harness's own PDEATHSIG).
        assert survivors == []
        # Nobody could remove the dead process's run dir; a later run's cleanup does.
        assert sandbox.run_dir.is_dir()
        assert clean_orphaned_run_dirs(run_root) == [sandbox.run_dir]
        assert not sandbox.run_dir.exists()
    finally:
        child.kill()
        child.wait()
        kill_survivors(survivors)


@pytest.mark.parametrize("mode", ["namespaces", "userns"])
def test_sigkilled_prefjudge_takes_its_zygotes_and_their_runs_down(mode, run_root, tmp_path):
    require_mode(mode)
    child, sandbox = start_sample(run_root, "run_functional", 120, tmp_path / "child.log", mode,
                                  zygote=True)
    survivors = sandbox.processes()
    try:
        assert any(mentions(p, "child/zygote.py") for p in survivors)
        assert not any(mentions(p, "launcher.py") for p in survivors)  # forked, not started
        # the zygote's pid namespace, and the run's own inside it
        assert len(sandbox.namespaces) == 2, survivors
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        deadline = time.monotonic() + 10
        while (survivors := sandbox.processes()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert survivors == []
        # The zygote's dir went when it was ready; a zygote's runs have none.
        assert run_dirs(run_root) == []
    finally:
        child.kill()
        child.wait()
        kill_survivors(survivors)


# --- which run dirs a cleanup may remove ------------------------------------------------------


def make_run_dir(root: Path, name: str, owner: dict | None = None) -> Path:
    path = root / f"{RUN_DIR_PREFIX}{name}"
    path.mkdir()
    (path / "in").mkdir()
    (path / "in" / ".payload.json").write_text('{"nonce": "secret"}', encoding="utf-8")
    if owner is not None:
        (path / OWNER_FILE).write_text(json.dumps(owner), encoding="utf-8")
    return path


def own_start_time() -> int:
    return int(Path("/proc/self/stat").read_bytes().rsplit(b")", 1)[1].split()[19])


def test_removing_a_run_dir_never_changes_the_folder_that_holds_it(tmp_path):
    """Two processes removing the same orphan: the second finds it gone, and /tmp stays 1777.

    (Before, the error handler made the holder ``0700``: it did so to the real /tmp while
    two prefjudge processes cleaned the same orphans, and apt could no longer use it.)
    """
    holder = tmp_path / "tmp"
    holder.mkdir()
    holder.chmod(0o1777)
    _remove_tree(holder / f"{RUN_DIR_PREFIX}gone")  # vanished under us
    assert oct(holder.stat().st_mode & 0o7777) == "0o1777"
    run_dir = holder / f"{RUN_DIR_PREFIX}here"
    (run_dir / "in" / "locked").mkdir(parents=True)
    (run_dir / "in" / "locked" / "file").write_text("x")
    (run_dir / "in" / "locked").chmod(0o500)
    _remove_tree(run_dir)
    assert not run_dir.exists()
    assert oct(holder.stat().st_mode & 0o7777) == "0o1777"


def test_cleanup_removes_only_provable_orphans(run_root):
    me = {
        "pid": os.getpid(),
        "start_time": own_start_time(),
        "boot_id": Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
        "pid_namespace": os.readlink("/proc/self/ns/pid"),
    }
    alive = make_run_dir(run_root, "alive", me)
    reused_pid = make_run_dir(run_root, "reused", {**me, "start_time": me["start_time"] - 1})
    rebooted = make_run_dir(run_root, "rebooted", {**me, "boot_id": "another-boot"})
    other_ns = make_run_dir(run_root, "otherns", {**me, "pid": 1, "pid_namespace": "pid:[1]"})
    fresh_unmarked = make_run_dir(run_root, "fresh")
    old_unmarked = make_run_dir(run_root, "old")
    two_hours_ago = time.time() - 7200
    os.utime(old_unmarked, (two_hours_ago, two_hours_ago))
    torn_marker = make_run_dir(run_root, "torn")
    (torn_marker / OWNER_FILE).write_text('{"pid": 12', encoding="utf-8")  # being written
    link = run_root / f"{RUN_DIR_PREFIX}link"
    link.symlink_to(old_unmarked)  # never followed

    # Owned by a process that has exited (marked by a real, separate prefjudge process).
    dead = make_run_dir(run_root, "dead")
    marker = "from pathlib import Path; from prefjudge.sandbox.process import _write_owner;"
    subprocess.run(
        [sys.executable, "-c", f"{marker} _write_owner(Path({str(dead)!r}))"],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        check=True,
    )
    assert json.loads((dead / OWNER_FILE).read_text())["pid"] != os.getpid()
    # Orphaned too, but a live process still names it on its command line.
    in_use = make_run_dir(run_root, "inuse", {**me, "start_time": 0})
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(in_use)])
    try:
        wait_for(lambda: any(mentions(p, in_use) for p in live_processes()), 10, "the holder")
        removed = clean_orphaned_run_dirs(run_root)
    finally:
        holder.kill()
        holder.wait()

    assert sorted(removed) == sorted([reused_pid, rebooted, old_unmarked, dead])
    assert run_dirs(run_root) == sorted(
        [alive, other_ns, fresh_unmarked, torn_marker, link, in_use]
    )
    assert clean_orphaned_run_dirs(run_root) == [in_use]  # its holder is gone now


# --- run dirs are removed on every way out ----------------------------------------------------


@pytest.mark.parametrize(
    ("plan", "status", "detail"),
    [
        (None, "pass", ""),
        (IsolationPlan("no-such-mode", None, "test"), "error", "sandbox setup failed"),
        (IsolationPlan("namespaces", "/nonexistent/unshare", "test"), "error", "could not start"),
    ],
    ids=["normal-end", "launcher-fails", "start-raises"],
)
def test_run_dir_is_removed_when_a_run_ends(plan, status, detail, run_root, monkeypatch):
    plan = plan or resolve_isolation()
    monkeypatch.setattr(tempfile, "tempdir", str(run_root))
    task = Task(task_id="T/1", entry_point="f", test_format="humaneval", tests=CHECK)
    result = run_one(task, GOOD, plan, FAST)
    assert result.status == status and detail in result.detail, result
    assert run_dirs(run_root) == []


@pytest.mark.parametrize(("entry", "timeout_s"), [("run_one", 120), ("run_functional", 3)])
def test_interrupted_prefjudge_removes_its_run_dir(entry, timeout_s, run_root, tmp_path):
    log = tmp_path / "child.log"
    child, sandbox = start_sample(run_root, entry, timeout_s, log)
    try:
        os.kill(child.pid, signal.SIGINT)  # Ctrl-C
        child.wait(timeout=timeout_s / 10 + 10)
    finally:
        child.kill()
        child.wait()
    assert "KeyboardInterrupt" in log.read_text(errors="replace")
    assert not sandbox.run_dir.exists()
    assert run_dirs(run_root) == []
    assert sandbox.processes() == []
