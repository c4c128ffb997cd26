"""A journal's binding: the file beside an output (``OUTPUT.journal.json``) that says what made it.

The binding holds the stage, a fingerprint (resolved path, size, SHA-256) of every input
file and the settings that change the records (:class:`prefjudge.journal.Journal` makes
it). This module is the one place that reads it (:func:`read_binding`), compares it with a
new run's (:func:`check_binding`: a resume that would mix results is refused, naming each
difference) and writes it (:func:`write_binding`, atomically), with the fingerprints and
digests bound in it. :class:`JournalError` is defined here, where the first refusals are
made; :mod:`prefjudge.journal` re-exports all of it.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

JOURNAL_FORMAT = 1
BINDING_SUFFIX = ".journal.json"
BACKUP_SUFFIX = ".bak"


class JournalError(ValueError):
    """A journal cannot be opened or written; the message says why and what to do."""


def binding_path(output: str | os.PathLike[str]) -> Path:
    """Return the binding file of ``output`` (``OUTPUT.journal.json``)."""
    output = Path(output)
    return output.with_name(output.name + BINDING_SUFFIX)


def file_fingerprint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Return what identifies an input file's content: resolved path, size and SHA-256.

    Args:
        path: The file.

    Returns:
        ``{"path", "bytes", "sha256"}``.

    Raises:
        JournalError: When the file cannot be read.
    """
    path = Path(path)
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise JournalError(f"{path}: cannot read input ({exc.strerror or exc})") from exc
    return {"path": str(path.resolve()), "bytes": path.stat().st_size, "sha256": digest.hexdigest()}



def read_binding(output: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The journal binding beside ``output``, parsed (what made the output).

    Args:
        output: The output file (its binding is :func:`binding_path`).

    Returns:
        The binding's object; None when there is none, it cannot be read, or it is not a
        JSON object.
    """
    try:
        return _load(binding_path(output))
    except (OSError, ValueError, RecursionError):
        return None


def _load(where: Path) -> dict[str, Any]:
    """A binding file's object (raises OSError or ValueError when it is not one)."""
    data = json.loads(where.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def check_binding(output: Path, binding: Mapping[str, Any], *, flag: str,
                  changing_inputs: Iterable[str] = ()) -> set[str]:
    """Refuse to resume ``output`` when its binding differs from the new run's.

    Args:
        output: The output, which holds records (its binding must be there).
        binding: The new run's binding (``format``, ``stage``, ``inputs``, ``settings``).
        flag: How the user starts the output again (named in the refusals).
        changing_inputs: Input roles whose files (the same paths) may have changed: such a
            change is returned, not refused (the stage checks it record by record).

    Returns:
        The roles of ``changing_inputs`` whose files changed.

    Raises:
        JournalError: When there is no binding, it cannot be read, or it differs.
    """
    where = binding_path(output)
    if not where.exists():
        raise JournalError(
            f"{output} already holds records but has no {where.name}, so what made them "
            f"is unknown (an older prefjudge, another tool, or a copied file). Use another "
            f"-o, or {flag} to start it again (the old file is kept as "
            f"{output.name}{BACKUP_SUFFIX})."
        )
    try:
        old = _load(where)
    except (OSError, ValueError, RecursionError) as exc:
        raise JournalError(
            f"{where}: unreadable journal binding ({exc}); use {flag} to start "
            f"{output.name} again"
        ) from exc
    changed: set[str] = set()
    differences = _differences(old, binding, frozenset(changing_inputs), changed)
    if differences:
        shown = "\n".join(f"  {line}" for line in differences)
        raise JournalError(
            f"{output} was written by a different run; resuming would mix results:\n"
            f"{shown}\nUse another -o, or {flag} to start {output.name} again "
            f"(the old file is kept as {output.name}{BACKUP_SUFFIX})."
        )
    return changed


def _differences(old: Mapping[str, Any], new: Mapping[str, Any],
                 changing_inputs: frozenset[str], changed: set[str]) -> list[str]:
    """What differs between two bindings, one line each.

    The roles of ``changing_inputs`` whose files changed are added to ``changed``, not
    listed as differences.
    """
    stage = new["stage"]
    if old.get("stage") != stage:
        return [f"it is the output of `prefjudge {old.get('stage')}`, not of {stage}"]
    lines = []
    old_inputs = old.get("inputs") or {}
    new_inputs = new["inputs"]
    for role in sorted(set(old_inputs) | set(new_inputs)):
        before, now = old_inputs.get(role) or [], new_inputs.get(role) or []
        if [f.get("sha256") for f in before] == [f["sha256"] for f in now]:
            continue
        same_paths = [f.get("path") for f in before] == [f["path"] for f in now]
        if role in changing_inputs and same_paths:  # checked record by record
            changed.add(role)
            continue
        if len(before) != len(now):
            was = ", ".join(f.get("path", "?") for f in before) or "none"
            lines.append(
                f"input {role}: {was} then, {', '.join(f['path'] for f in now) or 'none'} now"
            )
            continue
        for prev, cur in zip(before, now, strict=True):
            if prev.get("sha256") == cur["sha256"]:
                continue
            same_path = prev.get("path") == cur["path"]
            what = (
                f"{cur['path']} has changed since"
                if same_path
                else (f"{prev.get('path')} then, {cur['path']} now (other content)")
            )
            lines.append(
                f"input {role}: {what} (sha256 {str(prev.get('sha256'))[:12]} then, "
                f"{cur['sha256'][:12]} now; {prev.get('bytes')} then, {cur['bytes']} bytes now)"
            )
    old_settings, new_settings = old.get("settings") or {}, new["settings"]
    for name in sorted(set(old_settings) | set(new_settings)):
        before, now = old_settings.get(name, "(not set)"), new_settings.get(name, "(not set)")
        if before != now:
            lines.append(f"setting {name}: {_short(before)} then, {_short(now)} now")
    return lines


def write_binding(output: Path, binding: Mapping[str, Any], *, records: int, created: bool,
                  version: str) -> None:
    """Write ``output``'s binding (atomically): the run's, with its dates and counts.

    Args:
        output: The output.
        binding: The run's binding (``format``, ``stage``, ``inputs``, ``settings``).
        records: Records the output holds.
        created: Whether the output is new (else its first binding's date is kept).
        version: The prefjudge version that writes it.
    """
    from prefjudge.io import dumps_json

    old = {} if created else read_binding(output) or {}
    text = dumps_json({
        **binding,
        "output": output.name,
        "created": old.get("created") or _now(),
        "updated": _now(),
        "prefjudge_version": version,
        "records": records,
    }, indent=2)
    atomic_write(binding_path(output), text + "\n")


def normalize(value: Any) -> Any:
    """JSON round trip, so a value compares equal to itself read back from the binding."""
    return json.loads(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _short(text: Any, width: int = 60) -> str:
    shown = json.dumps(text, ensure_ascii=False, sort_keys=True, default=str)
    return shown if len(shown) <= width else shown[: width - 1] + "…"


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def content_digest(path: str | os.PathLike[str]) -> str:
    """A short SHA-256 of a file, or of every file under a folder (names and contents).

    Used to bind outputs to the prompt templates and rubrics that shaped them.

    Args:
        path: A file or a folder.

    Returns:
        16 hex digits.
    """
    root = Path(path)
    digest = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    for file in files:
        digest.update(str(file.relative_to(root) if root.is_dir() else file.name).encode())
        digest.update(b"\0")
        digest.update(file.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def model_settings(backend: Any, sampling: Any) -> dict[str, Any]:
    """The settings a model stage's output depends on: who answers, and how it samples.

    Args:
        backend: A :class:`prefjudge.backends.Backend` (its ``identity()`` covers kind, model,
            endpoint, weights and output options).
        sampling: The stage's :class:`prefjudge.backends.Sampling`.

    Returns:
        ``{"model": identity, "sampling": ...}`` for a journal's settings.
    """
    return {"model": backend.identity(), "sampling": sampling.model_dump(mode="json")}


__all__ = [
    "BACKUP_SUFFIX",
    "BINDING_SUFFIX",
    "JOURNAL_FORMAT",
    "JournalError",
    "atomic_write",
    "binding_path",
    "check_binding",
    "content_digest",
    "file_fingerprint",
    "model_settings",
    "normalize",
    "read_binding",
    "write_binding",
]
