"""A persistent response cache in SQLite, shared by every backend.

Each valid model reply is committed as soon as it arrives, so a stage killed mid-run and
started again finds its finished calls here and repeats none of them. WAL mode lets several
processes read and write the same file.

Keys are computed by the backends (``BackendBase.cache_key``) and include
:data:`CACHE_FORMAT`; each row also records the backend kind, model id and endpoint that
produced it (for ``prefjudge cache info|clear``). A file written by an older prefjudge is
migrated in place (the new columns are added); its rows were keyed by an older recipe, so
they are never read again: ``stats`` counts them as old-format rows and ``clear`` removes
them.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

DEFAULT_CACHE_NAME = "responses.sqlite"

#: Version of the key recipe. 2: keys cover the backend's identity (endpoint, weights) and
#: only valid replies are stored. Rows of older formats are never read.
CACHE_FORMAT = 2

# columns added after format 1 (name -> declaration), added in place to older files
_NEW_COLUMNS = {"backend": "TEXT", "endpoint": "TEXT", "format": "INTEGER"}
_LATEST_TIME = 1e11
"""Latest ``created`` a row may hold (seconds since the epoch: the year 5138)."""

_PROBLEM = (
    "(CASE"
    " WHEN typeof(key) != 'text' THEN 'key is not text'"
    " WHEN typeof(model) != 'text' THEN 'model is not text'"
    " WHEN typeof(created) NOT IN ('integer', 'real') OR NOT created BETWEEN 0 AND "
    f"{_LATEST_TIME:.0f} THEN 'created is not a time'"
    " WHEN typeof(response) != 'text' OR substr(response, 1, 1) != '{'"
    " THEN 'response is not a JSON object'"
    " WHEN backend IS NOT NULL AND typeof(backend) != 'text' THEN 'backend is not text'"
    " WHEN endpoint IS NOT NULL AND typeof(endpoint) != 'text' THEN 'endpoint is not text'"
    " WHEN format IS NOT NULL AND typeof(format) != 'integer' THEN 'format is not an integer'"
    " END)"
)
"""SQL: why a row is not what :meth:`ResponseCache.put` writes (text key and model, a time
in seconds, a JSON object, text or NULL backend and endpoint, an integer or NULL format),
or NULL for a row that is: the one rule: :meth:`ResponseCache.get` never reads such a row,
``stats`` counts and names them, ``clear(damaged=True)`` removes them."""

_VALID = f"{_PROBLEM} IS NULL"
_DAMAGED_ROW = f"{_PROBLEM} IS NOT NULL"
_OLD = f"({_VALID} AND (format IS NULL OR format < ?))"
_CURRENT = f"({_VALID} AND format >= ?)"

DAMAGED_EXAMPLES = 10
"""Most damaged rows :meth:`ResponseCache.stats` names (all are counted)."""


class CacheError(ValueError):
    """A cache file that SQLite cannot read (corrupt, or not a database): says which file."""


_DAMAGED = (sqlite3.DatabaseError, UnicodeDecodeError)
"""What SQLite raises on a damaged file (its message may hold the file's bytes, which are
then not UTF-8 either)."""


def _unusable(path: Path, exc: Exception) -> CacheError:
    return CacheError(
        f"{path}: not a usable response cache "
        f"({'not UTF-8 inside' if isinstance(exc, UnicodeDecodeError) else exc}); "
        "move it away or delete it "
        "(the next run then starts a new one)"
    )


def _text(raw: bytes) -> str:
    """SQLite text as str: bytes that are not UTF-8 (a damaged file) become U+FFFD."""
    return raw.decode("utf-8", errors="replace")


def _seconds(value: Any) -> float | None:
    """A ``created`` value as seconds, or None when a damaged row holds something else."""
    if isinstance(value, int | float) and value == value:
        return float(value)
    return None


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


def _iso(when: float | None) -> str | None:
    if when is None:
        return None
    return datetime.fromtimestamp(when, tz=timezone.utc).isoformat(timespec="seconds")


@dataclass
class CacheGroup:
    """The current-format entries of one backend kind, model id and endpoint.

    Attributes:
        backend: Backend kind (``openai``, ``vllm``, ``embedded``).
        model: Model id.
        endpoint: Normalised base URL, or ``vllm:<model>`` for in-process engines.
        entries: Number of stored replies.
        oldest: When the oldest was stored (seconds since the epoch; None when a damaged
            file holds no time).
        newest: When the newest was stored.
    """

    backend: str | None
    model: str
    endpoint: str | None
    entries: int
    oldest: float | None
    newest: float | None

    def as_dict(self) -> dict[str, Any]:
        """Return the group as JSON-ready values (dates as ISO 8601, UTC)."""
        out = asdict(self)
        out["oldest"], out["newest"] = _iso(self.oldest), _iso(self.newest)
        return out


@dataclass
class DamagedRow:
    """A row that is not what prefjudge writes (never read; ``clear --damaged`` removes it).

    Attributes:
        row: SQLite's rowid.
        key: The key as text (None when the row holds none).
        problem: What is wrong, e.g. ``created is not a time``.
    """

    row: int
    key: str | None
    problem: str


@dataclass
class CacheStats:
    """What a cache file holds.

    Attributes:
        path: The file.
        size_bytes: Size on disk (the database plus its write-ahead log).
        entries: All rows.
        old_format_entries: Rows of an older key format (never read; ``clear`` removes them).
        groups: Current-format rows by backend, model and endpoint, most entries first.
        damaged_entries: Rows that are not what prefjudge writes (never read; neither old
            format nor in a group).
        damaged: The first :data:`DAMAGED_EXAMPLES` of them, by rowid.
    """

    path: Path
    size_bytes: int
    entries: int
    old_format_entries: int
    groups: list[CacheGroup] = field(default_factory=list)
    damaged_entries: int = 0
    damaged: list[DamagedRow] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Return the statistics as JSON-ready values."""
        return {
            "path": str(self.path),
            "size_bytes": self.size_bytes,
            "entries": self.entries,
            "old_format_entries": self.old_format_entries,
            "format": CACHE_FORMAT,
            "groups": [g.as_dict() for g in self.groups],
            "damaged_entries": self.damaged_entries,
            "damaged": [asdict(d) for d in self.damaged],
        }


class ResponseCache:
    """Key → reply store. Keys are computed by the backends (see ``BackendBase.cache_key``).

    Args:
        path: SQLite file; parent folders are created.

    Raises:
        CacheError: When the file is not a SQLite database or is damaged (also from
            :meth:`stats`, :meth:`count` and :meth:`clear`, which read every row).
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # one thread at a time uses it, but not always the thread that opened it
        self._conn = sqlite3.connect(
            self.path, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        self._conn.text_factory = _text
        try:
            self._open()
        except _DAMAGED as exc:
            self._conn.close()
            raise _unusable(self.path, exc) from None

    def _open(self) -> None:
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS responses ("
            " key TEXT PRIMARY KEY, model TEXT NOT NULL, created REAL NOT NULL,"
            " response TEXT NOT NULL, backend TEXT, endpoint TEXT, format INTEGER)"
        )
        self._migrate()

    def _migrate(self) -> None:
        """Add the columns a format-1 file lacks (its rows stay, never read again)."""
        have = {row[1] for row in self._conn.execute("PRAGMA table_info(responses)")}
        for name, declaration in _NEW_COLUMNS.items():
            if name in have:
                continue
            try:
                self._conn.execute(f"ALTER TABLE responses ADD COLUMN {name} {declaration}")
            except sqlite3.OperationalError as exc:  # another process added it first
                if "duplicate column" not in str(exc).lower():
                    raise

    def get(self, key: str) -> dict[str, Any] | None:
        """Return the stored reply for ``key``, or None.

        None too for a damaged row (see :meth:`stats`) or a reply that is not a JSON
        object: the request is then sent again, and its reply replaces the row.
        """
        row = self._conn.execute(
            f"SELECT response FROM responses WHERE key = ? AND {_VALID}", (key,)
        ).fetchone()
        if row is None:
            return None
        try:
            data = json.loads(row[0])
        except (ValueError, RecursionError):
            return None
        return data if isinstance(data, dict) else None

    def put(
        self,
        key: str,
        response: dict[str, Any],
        *,
        model: str,
        backend: str | None = None,
        endpoint: str | None = None,
    ) -> None:
        """Store (or replace) the reply for ``key`` and commit it at once.

        Args:
            key: The cache key.
            response: The reply (JSON-serialisable).
            model: Model id that produced it.
            backend: Backend kind that produced it.
            endpoint: Where it came from (normalised base URL or ``vllm:<model>``).
        """
        self._conn.execute(
            "INSERT OR REPLACE INTO responses"
            " (key, model, created, response, backend, endpoint, format)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                model,
                time.time(),
                json.dumps(response, ensure_ascii=False),
                backend,
                endpoint,
                CACHE_FORMAT,
            ),
        )

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    # -- maintenance (prefjudge cache info|clear) ------------------------------------------

    def stats(self) -> CacheStats:
        """Return what the file holds: counts by backend, model and endpoint, with dates."""
        try:
            return self._stats()
        except _DAMAGED as exc:
            raise _unusable(self.path, exc) from None

    def _stats(self) -> CacheStats:
        old = self._conn.execute(
            f"SELECT COUNT(*) FROM responses WHERE {_OLD}", (CACHE_FORMAT,)
        ).fetchone()[0]
        rows = self._conn.execute(
            # CAST: a damaged file may hold blobs where text belongs
            "SELECT CAST(backend AS TEXT), CAST(model AS TEXT), CAST(endpoint AS TEXT),"
            " COUNT(*), MIN(created), MAX(created)"
            f" FROM responses WHERE {_CURRENT} GROUP BY backend, model, endpoint"
            " ORDER BY COUNT(*) DESC, model",
            (CACHE_FORMAT,),
        ).fetchall()
        groups = [
            CacheGroup(b, m or "", e, int(n), _seconds(lo), _seconds(hi))
            for b, m, e, n, lo, hi in rows
        ]
        n_damaged = self._conn.execute(
            f"SELECT COUNT(*) FROM responses WHERE {_DAMAGED_ROW}"
        ).fetchone()[0]
        damaged = [
            DamagedRow(int(rowid), key, problem)
            for rowid, key, problem in self._conn.execute(
                f"SELECT rowid, CAST(key AS TEXT), {_PROBLEM} FROM responses"
                f" WHERE {_DAMAGED_ROW} ORDER BY rowid LIMIT ?",
                (DAMAGED_EXAMPLES,),
            )
        ]
        return CacheStats(
            path=self.path,
            size_bytes=self.size_bytes(),
            entries=len(self),
            old_format_entries=int(old),
            groups=groups,
            damaged_entries=int(n_damaged),
            damaged=damaged,
        )

    def size_bytes(self) -> int:
        """Return the size on disk: the database file plus its write-ahead log."""
        total = 0
        for path in (self.path, self.path.with_name(self.path.name + "-wal")):
            try:
                total += path.stat().st_size
            except OSError:
                pass
        return total

    @staticmethod
    def _where(
        model: str | None, older_than_days: float | None, old_format: bool, damaged: bool
    ) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if model is not None:
            prefix = f"{model} ["
            clauses.append("(model = ? OR substr(model, 1, ?) = ?)")
            params += [model, len(prefix), prefix]
        if older_than_days is not None:
            clauses.append("created < ?")
            params.append(time.time() - older_than_days * 86400.0)
        if old_format:
            clauses.append(_OLD)
            params.append(CACHE_FORMAT)
        if damaged:
            clauses.append(_DAMAGED_ROW)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def count(
        self,
        *,
        model: str | None = None,
        older_than_days: float | None = None,
        old_format: bool = False,
        damaged: bool = False,
    ) -> int:
        """Return how many rows :meth:`clear` with the same filters would delete."""
        where, params = self._where(model, older_than_days, old_format, damaged)
        try:
            row = self._conn.execute(f"SELECT COUNT(*) FROM responses{where}", params).fetchone()
        except _DAMAGED as exc:
            raise _unusable(self.path, exc) from None
        return int(row[0])

    def clear(
        self,
        *,
        model: str | None = None,
        older_than_days: float | None = None,
        old_format: bool = False,
        damaged: bool = False,
    ) -> int:
        """Delete rows: all of them, or those matching every filter given.

        Args:
            model: Only this model id; for in-process backends, whose ids carry the
                output-changing engine arguments (``name [dtype=...]``), the bare name
                matches them all.
            older_than_days: Only rows stored more than this many days ago.
            old_format: Only rows of an older key format (never read).
            damaged: Only rows that are not what prefjudge writes (never read).

        Returns:
            The number of rows deleted.
        """
        where, params = self._where(model, older_than_days, old_format, damaged)
        try:
            return int(self._conn.execute(f"DELETE FROM responses{where}", params).rowcount)
        except _DAMAGED as exc:
            raise _unusable(self.path, exc) from None

    def vacuum(self) -> None:
        """Give the space of deleted rows back to the file system."""
        try:
            self._conn.execute("VACUUM")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except _DAMAGED as exc:
            raise _unusable(self.path, exc) from None

    def close(self) -> None:
        """Close the database connection."""
        self._conn.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
