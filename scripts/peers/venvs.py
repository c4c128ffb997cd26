"""The peers' virtual environments, made with pip from PyPI and reused when present.

Each peer gets a venv of its own under the peers folder (never prefjudge's venv):
``<peers>/evalplus`` and ``<peers>/bigcodebench``. A venv is reused when its Python
reports the pinned version of the peer; otherwise it is (re)created and the pin installed,
with pip's output in ``<peers>/<name>.install.log``.

BigCodeBench tasks import third-party libraries; :func:`align_libraries` installs into the
BigCodeBench venv the exact versions prefjudge's venv has of the ones it lacks (or has at
another version), so the two judge the same code with the same libraries.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

PEERS: dict[str, tuple[str, str]] = {
    "evalplus": ("evalplus", "0.3.1"),
    "bigcodebench": ("bigcodebench", "0.2.5"),
}
"""Peer name → (distribution, pinned version)."""

# Run in a venv's Python: which modules import there, and from which distribution at which
# version. Reads a JSON list of module names on stdin, writes a JSON object on stdout.
PROBE = r"""
import contextlib, importlib, importlib.metadata as md, io, json, os, sys, warnings
names = json.loads(sys.stdin.read())
dists = md.packages_distributions()
out = {}
real_stdout = os.dup(1)
for name in names:
    entry = {"ok": False, "dists": {}}
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            importlib.import_module(name)
        entry["ok"] = True
    except BaseException as exc:
        entry["error"] = f"{type(exc).__name__}: {exc}"[:200]
    for dist in dists.get(name, []):
        with contextlib.suppress(Exception):
            entry["dists"][dist] = md.version(dist)
    out[name] = entry
os.write(real_stdout, json.dumps(out).encode())
"""


@dataclass(frozen=True)
class PeerEnv:
    """A peer's virtual environment.

    Attributes:
        name: ``evalplus`` or ``bigcodebench``.
        root: The venv folder.
        version: The peer's installed version.
    """

    name: str
    root: Path
    version: str

    @property
    def python(self) -> Path:
        """The venv's interpreter."""
        return self.root / "bin" / "python"

    def environ(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The environment to run the peer in: this one, the venv first on PATH, plus ``extra``.

        Args:
            extra: Variables to set (override paths, cache folder).

        Returns:
            A new environment mapping.
        """
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env["VIRTUAL_ENV"] = str(self.root)
        env["PATH"] = f"{self.root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["TOKENIZERS_PARALLELISM"] = "false"
        env["PYTHONWARNINGS"] = "ignore"
        env.update(extra or {})
        return env


class PeerSetupError(RuntimeError):
    """A peer's venv or a library could not be installed (the message says why)."""


def installed_version(python: Path, dist: str) -> str | None:
    """The version of ``dist`` installed for ``python``, or None when it is not (or no python)."""
    if not python.exists():
        return None
    code = f"import importlib.metadata as m; print(m.version({dist!r}))"
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def _pip(python: Path, args: list[str], log: Path, console: Console) -> None:
    with log.open("a", encoding="utf-8") as out:
        out.write(f"\n$ {python} -m pip install {' '.join(args)}\n")
        out.flush()
        proc = subprocess.run([str(python), "-m", "pip", "install", *args], stdout=out,
                              stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
        raise PeerSetupError(f"pip install {' '.join(args)} failed (exit {proc.returncode}); "
                             f"last lines of {log}:\n" + "\n".join(tail))
    console.log(f"installed {' '.join(args)} (log: {log})")


def ensure_peer(peers_dir: Path, name: str, console: Console, *, install: bool = True) -> PeerEnv:
    """Return the peer's venv, creating it and installing the pinned peer when needed.

    Args:
        peers_dir: The folder holding the peers' venvs.
        name: A key of :data:`PEERS`.
        console: Where progress goes (stderr).
        install: Whether a missing venv may be made (False: raise instead).

    Returns:
        The venv, with the pinned version installed.

    Raises:
        PeerSetupError: When the venv is missing and ``install`` is False, or pip fails.
    """
    dist, version = PEERS[name]
    root = peers_dir / name
    python = root / "bin" / "python"
    found = installed_version(python, dist)
    if found == version:
        console.log(f"{name} {version}: reusing {root}")
        return PeerEnv(name, root, version)
    if not install:
        raise PeerSetupError(f"{root} has {dist} {found or 'not installed'}, "
                             f"{version} needed (run without --no-install)")
    peers_dir.mkdir(parents=True, exist_ok=True)
    if not python.exists():
        console.log(f"{name}: creating {root}")
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    console.log(f"{name}: pip install {dist}=={version} (first time: several minutes; "
                "bigcodebench pulls in its generation backends, several GB)")
    _pip(python, [f"{dist}=={version}"], peers_dir / f"{name}.install.log", console)
    return PeerEnv(name, root, version)


def probe(python: Path | str, modules: list[str]) -> dict[str, dict]:
    """Import each module in a fresh ``python``; report which import and their distributions.

    Args:
        python: The interpreter to probe.
        modules: Top-level module names.

    Returns:
        Module → ``{"ok": bool, "dists": {dist: version}, "error"?: str}``.

    Raises:
        PeerSetupError: When the probe itself fails.
    """
    proc = subprocess.run([str(python), "-c", PROBE], input=json.dumps(sorted(modules)),
                          capture_output=True, text=True, check=False, timeout=600)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise PeerSetupError(f"import probe failed in {python} (exit {proc.returncode}): "
                             f"{proc.stderr[-800:]}") from exc


def align_libraries(peer: PeerEnv, modules: list[str], console: Console,
                    *, install: bool = True) -> tuple[set[str], dict]:
    """Make the peer import what prefjudge's venv imports, at prefjudge's versions.

    For each module that imports here but not in the peer's venv, or whose distribution
    has another version there, ``dist==version`` (this venv's) is installed into the peer's
    venv (when ``install``). Then both are probed again.

    Args:
        peer: The peer's venv (BigCodeBench's).
        modules: Top-level modules the tasks need.
        console: Where progress goes.
        install: Whether to install (False: only report).

    Returns:
        The modules that import in both venvs, and a report: the pins installed and the
        version differences left.
    """
    ours = probe(sys.executable, modules)
    theirs = probe(peer.python, modules)
    pins: dict[str, str] = {}
    for name, entry in ours.items():
        if not entry["ok"]:
            continue
        other = theirs.get(name, {})
        for dist, version in entry["dists"].items():
            if not other.get("ok") or other.get("dists", {}).get(dist) != version:
                pins[dist] = version
    if pins and install:
        console.log(f"bigcodebench venv: aligning {len(pins)} libraries with prefjudge's venv: "
                    + ", ".join(f"{d}=={v}" for d, v in sorted(pins.items())))
        _pip(peer.python, [f"{d}=={v}" for d, v in sorted(pins.items())],
             peer.root.parent / f"{peer.name}.install.log", console)
        theirs = probe(peer.python, modules)
    both = {n for n in modules if ours.get(n, {}).get("ok") and theirs.get(n, {}).get("ok")}
    differ = {}
    for name in sorted(both):
        a, b = ours[name]["dists"], theirs[name]["dists"]
        if a != b:
            differ[name] = {"prefjudge": a, peer.name: b}
    report = {"pinned": pins if install else {}, "version_differences": differ,
              "only_prefjudge": sorted(n for n in modules if ours.get(n, {}).get("ok")
                                       and not theirs.get(n, {}).get("ok")),
              "only_peer": sorted(n for n in modules if theirs.get(n, {}).get("ok")
                                  and not ours.get(n, {}).get("ok"))}
    return both, report
