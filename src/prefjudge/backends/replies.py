"""Reading a chat completion's reply: untrusted bytes, bounded, checked for shape.

A reply is untrusted bytes. Its JSON is read here, not by the SDK (:func:`parse_reply`): at
most :data:`MAX_JSON_VALUES` values, nesting refused past the interpreter's recursion
limit, and numbers no float can hold (``1e400``) or ``NaN`` refused; then
:func:`completion_of` checks the shape of what was read. Each refusal is a
:class:`MalformedResponse`, that request's malformed response (retried as such). Also the
other things read from a reply: a requested delay (:func:`parse_retry_after`) and what an
error reply says (:func:`error_detail`).
"""

from __future__ import annotations

import email.utils
import json
import math
import re
import time
from typing import Any

from prefjudge.backends.base import CallFailure, Completion

#: JSON values (counted as commas and opening brackets, strings' included) a reply's body
#: may hold: a chat completion has tens. Each costs up to ~100 bytes once parsed, so this
#: bounds what a body of many tiny values (``[{},{},...]``, 24 times its size) costs.
MAX_JSON_VALUES = 100_000
#: Bytes the text of a reply's body may take in memory, twice (the body decoded, and the
#: strings read from it): a body whose characters need more (wide ones, 2 or 4 bytes
#: each in a Python string, e.g. one emoji among 16 MiB of text) is refused.
MAX_TEXT_BYTES = 40 << 20
#: Characters a Python string stores in more than one byte: raw (UTF-8 lead bytes of
#: U+0100 and above) or escaped (``\\uXXXX`` past U+00FF).
_WIDE = re.compile(rb"[\xc4-\xf4]|\\u(?!00)")
#: Characters stored in four bytes: raw (4-byte UTF-8) or escaped (a surrogate pair).
_ASTRAL = re.compile(rb"[\xf0-\xf4]|\\u[dD][89abAB]")
#: What reading a malformed reply may raise, besides the SDK's own errors: ours and the
#: client's hook's (``ValueError``), and the JSON reader's (``ValueError``,
#: ``RecursionError``, ``ArithmeticError``). Each is that request's malformed response.
REPLY_ERRORS: tuple[type[Exception], ...] = (ValueError, RecursionError, ArithmeticError)


class MalformedResponse(ValueError):
    """A 2xx response whose body is not a usable chat completion (retried like a 5xx)."""


def parse_reply(body: bytes) -> Any:
    """Read a reply's JSON defensively: bounded work and memory, no exception but ours.

    The body is already at most :data:`~prefjudge.backends.connections.MAX_BODY` bytes.

    Args:
        body: The reply's body as received (decoded from its content coding).

    Returns:
        The JSON value (of any type; :func:`completion_of` checks its shape).

    Raises:
        MalformedResponse: For more than :data:`MAX_JSON_VALUES` values, text that would
            take over :data:`MAX_TEXT_BYTES` (counted twice), nesting past the
            recursion limit, ``NaN``/``Infinity``, a number out of a float's range, or
            anything that is not JSON (invalid UTF-8 included).
    """
    values = body.count(b",") + body.count(b"[") + body.count(b"{")
    if values > MAX_JSON_VALUES:
        raise MalformedResponse(f"the body holds over {MAX_JSON_VALUES:,} JSON values")
    width = _char_width(body)
    if 2 * width * len(body) > MAX_TEXT_BYTES:
        raise MalformedResponse(
            f"the body's text would take over {MAX_TEXT_BYTES >> 20} MiB "
            f"({len(body):,} bytes of characters up to {width} bytes wide)"
        )
    try:
        return json.loads(body, parse_float=_finite_float, parse_constant=_no_constant)
    except RecursionError as exc:
        raise MalformedResponse("the body's JSON nests deeper than the recursion limit") from exc
    except MalformedResponse:
        raise
    except ValueError as exc:  # not JSON, invalid UTF-8, an integer of 4,300+ digits
        raise MalformedResponse(f"the body is not JSON: {str(exc)[:200]}") from exc


def _char_width(body: bytes) -> int:
    """Bytes per character of the widest string read from ``body`` may need: 1, 2 or 4."""
    if _WIDE.search(body) is None:
        return 1
    return 4 if _ASTRAL.search(body) is not None else 2


def _finite_float(text: str) -> float:
    """A JSON number with a fraction or exponent; one no float can hold is refused."""
    value = float(text)
    if not math.isfinite(value):
        raise MalformedResponse(f"the body holds a number out of range: {text[:40]}")
    return value


def _no_constant(name: str) -> float:
    """``NaN``, ``Infinity``, ``-Infinity``: not JSON, refused."""
    raise MalformedResponse(f"the body holds {name}, which is not JSON")


def parse_retry_after(headers: Any) -> float | None:
    """Read a server's requested delay from ``Retry-After`` / ``retry-after-ms`` headers.

    Args:
        headers: A mapping of response headers (case-insensitive lookups tried both ways).

    Returns:
        Seconds to wait, or None when the headers say nothing usable.
    """
    if headers is None:
        return None

    def header(name: str) -> str | None:
        value = headers.get(name)
        return value if value is not None else headers.get(name.title())

    ms = header("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = header("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def error_detail(exc: Any) -> str:
    """What an error reply says: its ``message`` when that is text, else the SDK's summary."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        message = body.get("message") or body.get("error", {})
        if isinstance(message, dict):
            message = message.get("message")
        if isinstance(message, str) and message:
            return message[:500]
    return str(getattr(exc, "message", exc))[:500]


def tokens_of(usage: Any, name: str) -> int:
    """A token count from the usage block; 0 when missing or not a count (never fatal)."""
    value = usage.get(name) if isinstance(usage, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if not math.isfinite(value) or value < 0:
        return 0
    return int(value)


def completion_of(reply: Any) -> Completion | CallFailure:
    """Read the reply out of a response's JSON (:func:`parse_reply`), checking its shape.

    Anything may arrive here (a string, None, a list, fields of the wrong type).

    Raises:
        MalformedResponse: When the body is not a usable chat completion.
    """
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not isinstance(choices, list) or not choices:
        what = "no choices" if not choices else f"choices of type {type(choices).__name__}"
        raise MalformedResponse(f"the server answered with {what}")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise MalformedResponse("the server answered with a choice without a message")
    text = message.get("content")
    refusal = message.get("refusal")
    if text is None:
        if refusal:
            said = refusal if isinstance(refusal, str) else type(refusal).__name__
            return CallFailure("rejected", f"the model refused: {said[:500]}")
        text = ""
    if not isinstance(text, str):
        raise MalformedResponse(f"the reply's content is {type(text).__name__}, not text")
    finish_reason = choice.get("finish_reason")
    if finish_reason is not None and not isinstance(finish_reason, str):
        raise MalformedResponse(f"finish_reason is {type(finish_reason).__name__}, not text")
    usage = reply.get("usage")
    return Completion(
        text=text,
        finish_reason=finish_reason,
        prompt_tokens=tokens_of(usage, "prompt_tokens"),
        completion_tokens=tokens_of(usage, "completion_tokens"),
    )
