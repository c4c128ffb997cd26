"""Sandbox zygote: import the tests' libraries once, then fork one sandboxed run per request.

Started by prefjudge (one per worker) as ``python -I -S -B zygote.py ZYGOTE_DIR SOCKET_FD``
under ``unshare``, exactly where a launcher would run: pid 1 of fresh pid, mount, network,
IPC and UTS namespaces (namespace modes only). It

1. reads ``ZYGOTE_DIR/config.json``, builds the same minimal root filesystem as the
   launcher and pivots into it (the host's tree, ``ZYGOTE_DIR`` included, is gone);
2. only then turns on ``site`` (so it sees site-packages as a fresh harness does),
   imports the harness's modules and the libraries to preload, checks that it is still
   single-threaded, and freezes what it imported (``gc.freeze``: fewer pages copied);
3. says ``ready`` on the socket, then, per request (a small JSON object and three file
   descriptors: the run's output pipe, its report pipe and a file holding its payload),
   forks a child and answers ``forked``. The zygote itself never reads a payload, so no
   nonce, code or test of any run ever lives in it.

The forked child is pid 1 of a fresh pid namespace (the run's supervisor, like the
launcher); it enters fresh mount, UTS, IPC and network namespaces of its own (nothing of
a run outlives it: no System V IPC object or socket of one run reaches the next), mounts
a fresh /tmp, /var/tmp, /dev/shm and /proc, bounds System V IPC as a fresh run does
(:func:`launcher.limit_ipc`), reads the payload, and forks the harness process. That one
confines itself exactly as a fresh harness (:func:`launcher.confine`: per-run uid or no
capabilities, rlimits, ``no_new_privs``, seccomp), re-seeds the random generators the
preloaded libraries made, and serves the payload with the same code as ``harness.py``.
The supervisor waits for it, kills what is left, and reports as the launcher does.

A zygote ends when prefjudge closes its socket, and dies with prefjudge (its ``unshare``
gets the parent-death signal; the kernel kills a pid namespace whose first process died).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import importlib.util
import json
import os
import resource
import socket
import sys
import threading
import types

HERE = os.path.dirname(os.path.abspath(__file__))
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000
CLONE_NEWPID = 0x20000000
RUN_NAMESPACES = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET
"""What a run's supervisor unshares: the namespaces a fresh run gets from ``unshare``
(besides its pid namespace, made at the fork). Without the IPC one, System V message queues,
semaphores and shared memory of one run would outlive it, to be read by the next run of
the same zygote; without the network one, its abstract unix sockets would be shared."""
REQUEST_MAX_BYTES = 1 << 16
PAYLOAD_MAX_BYTES = 256 << 20
FDS_PER_REQUEST = 3
NEVER_PRELOAD = frozenset({
    "antigravity", "this", "tkinter", "turtle", "turtledemo", "idlelib", "__hello__",
    "__phello__",
})
SERVE_FD_LIMIT = 1 << 16


def _load(name: str, path: str) -> types.ModuleType:
    """Import the file ``path`` as module ``name`` (the harness's files are not a package)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


launcher = _load("_pj_launcher", os.path.join(HERE, "launcher.py"))
_libc = ctypes.CDLL(None, use_errno=True)


def thread_count() -> int:
    """Threads of this process, as the kernel counts them (C threads included)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _status_kb(field: str) -> int:
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return 0


class ThreadedModuleError(Exception):
    """Importing a module started a thread (the zygote cannot fork safely after it)."""

    def __init__(self, name: str):
        super().__init__(f"preloading {name!r} started a thread; a zygote must fork "
                         "single-threaded")
        self.name = name


def _import_one(entry: str) -> None:
    """Import an entry: ``module``, or ``module:name`` for ``from module import name``.

    For the latter, the submodule ``module.name`` is imported too when ``name`` is one.
    """
    module_name, _, member = entry.partition(":")
    module = importlib.import_module(module_name)
    if member and not hasattr(module, member):
        with contextlib.suppress(ModuleNotFoundError):
            importlib.import_module(f"{module_name}.{member}")


def preload(entries: list[str]) -> tuple[list[str], dict[str, str]]:
    """Import ``entries``; return those imported and why the others were not.

    An entry is a module name, or ``module:name`` for ``from module import name``. A
    module that fails to import is left out (the run that needs it will see the same
    error itself). One that starts a thread makes the zygote unusable: forking a
    multithreaded process can leave the child with locks nobody will release.

    Raises:
        ThreadedModuleError: An import started a thread.
    """
    loaded, skipped = [], {}
    for entry in entries:
        if entry.split(".", 1)[0].split(":", 1)[0] in NEVER_PRELOAD:
            skipped[entry] = "never preloaded (side effects at import)"
            continue
        try:
            _import_one(entry)
        except BaseException as exc:  # e.g. SystemExit from a module's import
            skipped[entry] = f"{type(exc).__name__}: {exc}"[:300]
            continue
        if thread_count() > 1:
            raise ThreadedModuleError(entry)
        loaded.append(entry)
    return loaded, skipped


def random_generators() -> list[object]:
    """The random generators the preloaded libraries made (re-seeded in every run).

    ``random``'s own module-level generator is re-seeded by Python at every fork; other
    ``random.Random`` instances and numpy's generators are not, and without this every
    run of a zygote would draw the same "random" numbers.
    """
    kinds: list[type] = []
    if "random" in sys.modules:
        kinds.append(sys.modules["random"].Random)
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        kinds += [numpy_random.RandomState, numpy_random.Generator]
    if not kinds:
        return []
    wanted = tuple(kinds)
    return [obj for obj in gc.get_objects() if isinstance(obj, wanted)]


def reseed(generators: list[object]) -> None:
    """Give each generator fresh OS entropy, as a fresh process's would have."""
    numpy_random = sys.modules.get("numpy.random")
    for generator in generators:
        if numpy_random is not None and isinstance(generator, numpy_random.Generator):
            fresh = type(generator.bit_generator)()
            generator.bit_generator.state = fresh.state
        else:
            generator.seed()  # random.Random and numpy's RandomState: from OS entropy


def _send(control: socket.socket, message: dict) -> None:
    control.send(json.dumps(message).encode())


def _read_all(fd: int, cap: int) -> bytes:
    chunks, size = [], 0
    while True:
        data = os.read(fd, 1 << 20)
        if not data:
            return b"".join(chunks)
        size += len(data)
        if size > cap:
            raise ValueError(f"payload larger than {cap} bytes")
        chunks.append(data)


class Zygote:
    """The state every run is forked from (nothing in it belongs to a run)."""

    def __init__(self, control: socket.socket, config: dict):
        self.control = control
        self.config = config
        self.harness: types.ModuleType | None = None
        self.extra_memory = 0
        self.generators: list[object] = []
        self.own_pid_namespace = -1

    def start(self, zygote_dir: str) -> dict:
        """Enter the minimal root, import what runs need; return the ``ready`` message."""
        config = self.config
        harness_files = launcher.read_dir(config["harness_src"])
        notes = launcher.enter_minimal_root(config, zygote_dir)
        os.mkdir(launcher.NS_HARNESS_DIR, 0o755)
        launcher.write_files(launcher.NS_HARNESS_DIR, harness_files, None, 0o644)
        os.mkdir(launcher.NS_WORK_DIR, 0o700)
        os.chdir(launcher.NS_WORK_DIR)
        os.environ.clear()
        os.environ.update(config["env"], HOME=launcher.NS_WORK_DIR, TMPDIR="/tmp")
        import site

        site.main()  # site-packages as the sandbox sees them (a fresh harness runs site)
        self.harness = _load("_pj_harness", os.path.join(launcher.NS_HARNESS_DIR, "harness.py"))
        for module_name, _ in self.harness.RUNNERS.values():
            importlib.import_module(module_name)
        base_kb = _status_kb("VmSize")
        loaded, skipped = preload(list(config["preload"]))
        self.extra_memory = max(0, _status_kb("VmSize") - base_kb) * 1024
        self.generators = random_generators()
        self.own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        sys.stdout.flush()
        sys.stderr.flush()
        gc.collect()
        gc.freeze()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "ready": True,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "preloaded": loaded,
            "skipped": skipped,
            "extra_memory": self.extra_memory,
            "rss_kb": _status_kb("VmRSS"),
            "notes": notes,
        }

    def serve(self) -> None:
        """Fork one run per request until prefjudge closes the socket."""
        while True:
            self._reap()
            try:
                message, fds, _, _ = socket.recv_fds(self.control, REQUEST_MAX_BYTES,
                                                     FDS_PER_REQUEST)
            except OSError:
                return
            if not message:
                for fd in fds:
                    os.close(fd)
                return
            if len(fds) != FDS_PER_REQUEST:
                for fd in fds:
                    os.close(fd)
                _send(self.control, {"forked": False, "why": f"{len(fds)} descriptors sent"})
                continue
            request = json.loads(message)
            try:
                self._fork_run(request, fds)
            except OSError as exc:
                _send(self.control, {"forked": False, "why": str(exc)})
            else:
                _send(self.control, {"forked": True, "rss_kb": _status_kb("VmRSS")})
            finally:
                for fd in fds:
                    os.close(fd)

    def _fork_run(self, request: dict, fds: list[int]) -> None:
        """Fork the run's supervisor as pid 1 of a new pid namespace (a child of ours).

        ``unshare(CLONE_NEWPID)`` only says where our next child goes; ``setns`` back to our
        own pid namespace afterwards lets the next run get a new one again.
        """
        if _libc.unshare(CLONE_NEWPID) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"unshare(CLONE_NEWPID): {os.strerror(err)}")
        try:
            pid = os.fork()
            if pid == 0:
                self._run(request, *fds)  # never returns
        finally:
            if _libc.setns(self.own_pid_namespace, CLONE_NEWPID) != 0:
                err = ctypes.get_errno()
                raise SystemExit(f"zygote: setns back to its pid namespace: {os.strerror(err)}")

    @staticmethod
    def _reap() -> None:
        """Collect finished runs (their supervisors are ours once their parents exit)."""
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    def _run(self, request: dict, out_fd: int, report_fd: int, payload_fd: int) -> None:
        """The forked child, pid 1 of its pid namespace: namespaces of its own, the run.

        Its own mount, UTS, IPC and network namespaces, as a fresh run's ``unshare`` gives
        it: what a run leaves in them (IPC objects, sockets) dies with the run.
        """
        try:
            self.control.close()
            os.close(self.own_pid_namespace)
            if _libc.unshare(RUN_NAMESPACES) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"unshare(mount, UTS, IPC, network): {os.strerror(err)}")
            self._supervise({**self.config, **request}, out_fd, report_fd, payload_fd)
        except BaseException as exc:  # reported, never back into the loop
            self._fail(report_fd, exc)
        os._exit(0)

    @staticmethod
    def _fail(report_fd: int, exc: BaseException) -> None:
        outcome = launcher.new_outcome()
        outcome["setup_error"] = f"zygote run: {exc}"
        with contextlib.suppress(OSError):
            launcher.send_outcome(report_fd, outcome)
        os._exit(launcher.EXIT_SETUP_FAILED)

    def _supervise(self, config: dict, out_fd: int, report_fd: int, payload_fd: int) -> None:
        """Pid 1 of the run's namespace: scratch space, the harness, the report."""
        launcher.prctl(launcher.PR_SET_DUMPABLE, 0)
        outcome = launcher.new_outcome()
        try:
            launcher.renew_scratch(config)
            payload = _read_all(payload_fd, PAYLOAD_MAX_BYTES)
            os.close(payload_fd)
            work = launcher.NS_WORK_DIR
            os.mkdir(work, 0o700)
            if config["mode"] == "namespaces":
                os.chown(work, config["uid"], config["gid"])
        except (OSError, ValueError, launcher.SetupError) as exc:
            outcome["setup_error"] = str(exc)
            launcher.send_outcome(report_fd, outcome)
            os._exit(launcher.EXIT_SETUP_FAILED)
        directory = launcher.open_dir(work)
        pid = os.fork()
        if pid == 0:
            self._harness(config, payload, out_fd)  # never returns
        os.close(out_fd)
        del payload
        launcher.supervise(pid, config, work, directory, report_fd, outcome)

    def _harness(self, config: dict, payload: bytes, out_fd: int) -> None:
        """The harness process: confined like a fresh one, then the harness's own code."""
        try:
            null = os.open("/dev/null", os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(out_fd, 1)
            os.dup2(out_fd, 2)
            os.closerange(3, SERVE_FD_LIMIT)  # the socket, the report pipe, the zygote's log
            launcher.confine(config, launcher.NS_WORK_DIR, 1, self.extra_memory)
            reseed(self.generators)
            self.generators = []
            sys.argv = [os.path.join(launcher.NS_HARNESS_DIR, "harness.py")]
            sys.modules["__main__"] = types.ModuleType("__main__")
            harness, self.harness = self.harness, None
            assert harness is not None
            harness.serve(json.loads(payload))
        except BaseException as exc:  # said on the run's output, as exec fails
            os.write(2, f"prefjudge sandbox: cannot start the harness: {exc!r}\n".encode())
        os._exit(launcher.EXIT_EXEC_FAILED)


def main() -> int:
    """Start the zygote as described in the module docstring."""
    zygote_dir, control_fd = sys.argv[1], int(sys.argv[2])
    # Not dumpable: nothing the runs start may read its memory or attach to it.
    launcher.prctl(launcher.PR_SET_DUMPABLE, 0)
    control = socket.socket(fileno=control_fd)
    with open(os.path.join(zygote_dir, "config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    zygote = Zygote(control, config)
    try:
        ready = zygote.start(zygote_dir)
    except ThreadedModuleError as exc:
        _send(control, {"ready": False, "setup_error": str(exc), "threaded": exc.name})
        return launcher.EXIT_SETUP_FAILED
    except (OSError, launcher.SetupError, KeyError, ValueError, ImportError) as exc:
        _send(control, {"ready": False, "setup_error": str(exc)})
        return launcher.EXIT_SETUP_FAILED
    _send(control, ready)
    zygote.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
