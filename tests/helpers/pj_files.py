"""Input files the tests write: JSONL rows, plain or gzipped, as the stages read them."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

Row = Mapping[str, Any] | BaseModel


def jsonl_text(rows: Iterable[Row], *, ensure_ascii: bool = True) -> str:
    """The JSONL text of ``rows``: one JSON object a line, each line ending in a newline.

    Args:
        rows: Dicts, or pydantic records (written as their JSON-mode dump).
        ensure_ascii: Escape non-ASCII characters (``\\u00e9``), as :func:`json.dumps` does;
            False writes them as they are (UTF-8 in the file, as many real data sets are).
    """
    return "".join(
        json.dumps(row.model_dump(mode="json") if isinstance(row, BaseModel) else row,
                   ensure_ascii=ensure_ascii) + "\n"
        for row in rows
    )


def write_jsonl(
    path: Path, rows: Iterable[Row], gz: bool = False, *, ensure_ascii: bool = True
) -> Path:
    """Write ``rows`` as a UTF-8 JSONL file, gzip-compressed when ``gz``.

    Args:
        path: The file (its name does not decide the compression: ``gz`` does).
        rows: As for :func:`jsonl_text`.
        gz: Compress with gzip.
        ensure_ascii: As for :func:`jsonl_text`.

    Returns:
        ``path``.
    """
    data = jsonl_text(rows, ensure_ascii=ensure_ascii).encode("utf-8")
    path.write_bytes(gzip.compress(data) if gz else data)
    return path
