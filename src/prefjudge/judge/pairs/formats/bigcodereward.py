"""The ``bigcodereward`` pair format: ``bigcode/bigcodereward`` rows as JSONL(.gz) or Parquet.

Parquet is read when pandas with pyarrow is installed (imported only then).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from prefjudge.io import InputError, InputIssue, iter_objects
from prefjudge.judge.pairs.formats.base import (
    RowIssues,
    UniqueIds,
    convert_rows,
    finish,
    make_pair,
)
from prefjudge.judge.pairs.formats.registry import PairFormatSpec, register_pair_format
from prefjudge.records import Pair, Side

BIGCODEREWARD_VOTES: dict[str, Side] = {
    "leftvote": "A",
    "rightvote": "B",
    "tievote": "tie",
    "bothbad_vote": "tie",
    "a": "A",
    "b": "B",
    "tie": "tie",
    "model_a": "A",
    "model_b": "B",
}
"""``human_vote`` values (lower-cased) and the side each one means."""


def load_bigcodereward(
    path: str | os.PathLike[str], *, skip_invalid: bool = False
) -> tuple[list[Pair], list[InputIssue]]:
    """Load ``bigcode/bigcodereward`` rows (JSONL(.gz), or Parquet when pandas can read it).

    A response is the content of the last message of ``states.model_A.messages`` (resp.
    ``model_B``) whose role contains ``assistant`` (case-insensitive; FastChat roles look
    like ``<|im_start|>assistant``). Messages are ``[role, content]`` pairs or
    ``{"role", "content"}`` objects. Without ``states``, ``response_A``/``response_B`` are
    used. ``human_vote`` maps ``leftvote``→A, ``rightvote``→B, ``tievote`` and
    ``bothbad_vote``→tie, and ``A``/``B``/``tie``/``model_A``/``model_B``
    case-insensitively; the raw value is kept in the extra field ``human_vote`` and
    ``votes`` holds the one vote. ``evidence_a``/``evidence_b`` are built from the
    non-empty execution outputs and errors (``execution output: ...``, ``execution error:
    ...``, at most :data:`EVIDENCE_CHARS` characters each). ``pair_id`` and ``task_id`` are
    ``chat_session_id``; ``category`` is ``category_name``. For Parquet, an issue's
    "line" is the 1-based row number.

    Args:
        path: JSONL (optionally gzipped) or Parquet file.
        skip_invalid: Return unusable rows as issues instead of raising.

    Returns:
        ``(pairs, issues)``.

    Raises:
        InputError: On any unusable row unless ``skip_invalid``, or on a Parquet file when
            pandas/pyarrow are not installed.
    """
    spath = str(path)
    source = f"bigcodereward:{Path(path).name}"
    with Path(path).open("rb") as probe:
        parquet = probe.read(4) == b"PAR1"
    rows: Iterable[tuple[int, dict[str, Any] | InputIssue]]
    rows = _parquet_rows(path) if parquet else iter_objects(path)
    pairs, issues = bigcodereward_pairs(rows, spath, source)
    return finish(pairs, issues, skip_invalid)


def bigcodereward_pairs(
    rows: Iterable[tuple[int, dict[str, Any] | InputIssue]], spath: str, source: str
) -> tuple[list[Pair], list[InputIssue]]:
    """BigCodeReward rows (from a file or a dataset) into pairs (see :func:`load_bigcodereward`).

    Args:
        rows: ``(line or row number, record or issue)`` pairs.
        spath: Where the rows are from, for issues (a path or ``hub:NAME[SPLIT]``).
        source: The pairs' ``source`` field.

    Returns:
        ``(pairs, issues)``.
    """
    unique = UniqueIds()
    return convert_rows(
        rows, lambda number, data: _bigcodereward_pair(spath, number, data, source, unique)
    )


def _parquet_rows(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    advice = (
        "reading Parquet needs pandas with pyarrow ({why}); install them, or convert the "
        "file to JSONL first, e.g. with the `datasets` library: "
        "load_dataset('bigcode/bigcodereward', split='train').to_json('bigcodereward.jsonl')"
    )
    try:
        import pandas as pd
    except ImportError as exc:
        raise InputError([InputIssue(str(path), 0, "", advice.format(why=exc))]) from exc
    try:
        frame = pd.read_parquet(path)
    except ImportError as exc:
        raise InputError([InputIssue(str(path), 0, "", advice.format(why=exc))]) from exc
    except Exception as exc:  # pyarrow raises its own errors on a corrupt or truncated file
        message = f"not a readable Parquet file ({type(exc).__name__}: {exc})"
        raise InputError([InputIssue(str(path), 0, "", message)]) from exc
    for number, record in enumerate(frame.to_dict("records"), start=1):
        yield number, _plain(record)


def _plain(value: Any) -> Any:
    """Turn numpy arrays and scalars (as pandas gives them) into plain Python values."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        return _plain(value.tolist())
    if isinstance(value, float) and value != value:  # NaN stands for a missing value
        return None
    return value


def _bigcodereward_pair(
    spath: str,
    number: int,
    data: dict[str, Any],
    source: str,
    unique: UniqueIds,
) -> Pair | list[InputIssue]:
    issues = RowIssues(spath, number)
    bad = issues.bad
    session = issues.key(data, "chat_session_id")
    instruction = issues.text(data, "instruction")
    raw_vote = data.get("human_vote")
    label = BIGCODEREWARD_VOTES.get(raw_vote.strip().lower()) if isinstance(raw_vote, str) else None
    if label is None:
        known = "leftvote, rightvote, tievote, bothbad_vote, A, B, tie, model_A, model_B"
        bad("human_vote", f"unknown vote {raw_vote!r} (expected one of {known})")
    models = {}
    for side in ("A", "B"):
        models[side] = issues.key(data, f"model_{side}")
    responses = {side: _bigcodereward_response(data, side, bad) for side in ("A", "B")}
    category = data.get("category_name")
    if category is not None and not isinstance(category, str):
        bad("category_name", "expected a string")
    if issues:
        return issues
    assert isinstance(session, str)
    fields: dict[str, Any] = {
        "pair_id": unique(session),
        "task_id": session,
        "instruction": instruction,
        "response_a": responses["A"],
        "response_b": responses["B"],
        "model_a": models["A"],
        "model_b": models["B"],
        "label": label,
        "votes": [label],
        "category": category,
        "evidence_a": _execution_evidence(data, "A"),
        "evidence_b": _execution_evidence(data, "B"),
        "source": source,
        "human_vote": raw_vote,
    }
    if data.get("category_id") is not None:
        fields["category_id"] = data["category_id"]
    return make_pair(spath, number, fields)


def _bigcodereward_response(data: dict[str, Any], side: str, bad: Any) -> str | None:
    states = data.get("states")
    if states is None:
        response = data.get(f"response_{side}")
        if not isinstance(response, str):
            bad(f"states.model_{side}", f"no states and no response_{side} string")
            return None
        return response
    field = f"states.model_{side}.messages"
    state = states.get(f"model_{side}") if isinstance(states, dict) else None
    messages = state.get("messages") if isinstance(state, dict) else None
    if not isinstance(messages, list):
        bad(field, "expected a list of [role, content] messages")
        return None
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, dict):
            role, content = message.get("role"), message.get("content")
        elif isinstance(message, list | tuple) and len(message) == 2:
            role, content = message
        else:
            bad(f"{field}.{index}", "expected a [role, content] pair")
            return None
        if isinstance(role, str) and "assistant" in role.lower() and content is not None:
            if not isinstance(content, str):
                bad(f"{field}.{index}", f"expected string content, got {type(content).__name__}")
                return None
            return content
    bad(field, "no assistant message")
    return None


def _execution_evidence(data: dict[str, Any], side: str) -> list[str]:
    from prefjudge.judge.pairs.evidence import EVIDENCE_CHARS, shorten  # scored records: later

    lines = []
    for kind in ("output", "error"):
        text = data.get(f"execution_{kind}_{side}")
        if isinstance(text, str) and text.strip():
            lines.append(f"execution {kind}: {shorten(text, EVIDENCE_CHARS)}")
    return lines


def _has_keys(record: Mapping[str, Any]) -> bool:
    return "human_vote" in record or "chat_session_id" in record


register_pair_format(
    PairFormatSpec(
        "bigcodereward",
        load_bigcodereward,
        convert_rows=bigcodereward_pairs,
        json_keys=_has_keys,
        magic=b"PAR1",
        title="BigCodeReward",
        summary="``bigcode/bigcodereward`` rows as JSONL(.gz), or Parquet with pandas and pyarrow",
        rank=40,
    )
)
