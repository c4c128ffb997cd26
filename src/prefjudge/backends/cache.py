"""A persistent response cache in SQLite, shared by every backend.

Each model reply is committed as soon as it arrives, so a stage killed mid-run and started
again finds its finished calls here and repeats none of them. WAL mode lets several
processes read and write the same file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

DEFAULT_CACHE_NAME = "responses.sqlite"


def default_cache_path() -> Path:
    """Return the default cache file.

    ``$PREFJUDGE_CACHE`` when set, else ``$XDG_CACHE_HOME/prefjudge/responses.sqlite``
    (``~/.cache/prefjudge/responses.sqlite``).

    Returns:
        The path (not created).
    """
    env = os.environ.get("PREFJUDGE_CACHE")
    if env:
        return Path(env).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "prefjudge" / DEFAULT_CACHE_NAME


class ResponseCache:
    """Key → reply store. Keys are computed by the backends (see ``BackendBase.cache_key``).

    Args:
        path: SQLite file; parent folders are created.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # one thread at a time uses it, but not always the thread that opened it
        self._conn = sqlite3.connect(
            self.path, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS responses ("
            " key TEXT PRIMARY KEY, model TEXT NOT NULL, created REAL NOT NULL,"
            " response TEXT NOT NULL)"
        )

    def get(self, key: str) -> dict[str, Any] | None:
        """Return the stored reply for ``key``, or None."""
        row = self._conn.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, response: dict[str, Any], *, model: str) -> None:
        """Store (or replace) the reply for ``key`` and commit it at once."""
        self._conn.execute(
            "INSERT OR REPLACE INTO responses (key, model, created, response) VALUES (?, ?, ?, ?)",
            (key, model, time.time(), json.dumps(response, ensure_ascii=False)),
        )

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Close the database connection."""
        self._conn.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
