"""The attempt logic every backend shares: cache keys and lookups, validation, repairs, usage.

Every LLM stage talks to a model through a :class:`Backend`: a list of :class:`Request`
in, a list of :class:`Result` out, in the same order (the contract,
:mod:`prefjudge.backends.contract`, whose names are re-exported here). Backends differ only
in how one round of completions is obtained; caching, pydantic validation of structured
output, bounded repair retries and usage accounting (:class:`prefjudge.records.Usage`,
re-exported here) are shared and live here.

What the response cache holds: only usable replies (free text, or structured replies that
validate against their schema), each under the key of the request's *first* attempt, so a
rerun of a request that needed repair turns is answered from the cache in one step. Invalid
replies and failed calls are never stored, so a rerun asks the model again.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import ValidationError

from prefjudge.backends.cache import CACHE_FORMAT, ResponseCache
from prefjudge.backends.contract import (
    Backend,
    BackendError,
    ErrorKind,
    Message,
    OnResult,
    Request,
    Result,
    Role,
    Sampling,
    chat,
)
from prefjudge.records import Usage

__all__ = [  # the attempt logic, and the contract's names (first published here)
    "PROBLEM_CHARS", "REPAIR_PROMPT", "REPAIR_QUOTE_CHARS", "REPAIR_QUOTE_TAIL", "AttemptState",
    "Backend", "BackendBase", "BackendError", "Call", "CallFailure", "Completion", "ErrorKind",
    "FailureStreak", "Message", "NoModel", "OnResult", "Request", "Result", "Role", "Sampling",
    "Usage", "chat", "excerpt",
]

REPAIR_PROMPT = (
    "Your previous reply could not be used: {error}\n"
    "Reply again with only a JSON object that matches the required schema."
)
#: Repair turns quote at most this many characters of an invalid reply (head and tail).
REPAIR_QUOTE_CHARS = 4000
#: Of those, this many come from the end of the reply.
REPAIR_QUOTE_TAIL = 1000
#: Longest description of one validation problem in an error message or repair turn.
PROBLEM_CHARS = 300


class FailureStreak:
    """Calls that failed in a row (after their retries) with no answer in between.

    A server that fails every call would otherwise cost each request its whole retry
    budget, for hours: after ``limit`` failed calls in a row :meth:`failed` raises instead.
    Any answer (:meth:`answered`) ends the streak. Shared by the batches of a backend's
    life (and their threads), so a run of small batches is stopped as one big one is.

    Args:
        limit: Failed calls in a row that stop the backend; 0 never stops it.

    Raises:
        ValueError: When ``limit`` is negative.
    """

    def __init__(self, limit: int):
        if limit < 0:
            raise ValueError("max_failure_streak must be >= 0")
        self.limit = limit
        self.count = 0
        self._lock = threading.Lock()

    def answered(self) -> None:
        """Record an answer: the streak is over."""
        with self._lock:
            self.count = 0

    def failed(self, error: str, *, where: str, model: str) -> None:
        """Record a call that failed after every retry.

        Args:
            error: Why it failed (its last error).
            where: The endpoint, e.g. its URL.
            model: The model asked.

        Raises:
            BackendError: When this call makes ``limit`` failed calls in a row.
        """
        with self._lock:
            self.count += 1
            count = self.count
            tripped = bool(self.limit) and count >= self.limit
            if tripped:
                self.count = 0  # a later batch (the server back, or not) gets a new streak
        if tripped:
            raise BackendError(
                f"{count} calls in a row to {where} (model {model!r}) failed, each after its "
                f"retries; stopping (max_failure_streak={self.limit}, 0 never stops). "
                f"The last error: {error}"
            )


@dataclass
class Completion:
    """One raw reply from a model (what the cache stores).

    ``endpoint`` says which server gave it (the replica, over HTTP); like ``cached`` it is
    not stored, so a cached reply is the same whichever replica first gave it.
    """

    text: str
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    endpoint: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the cached form (without the ``cached`` flag and the ``endpoint``)."""
        return {
            "text": self.text,
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


@dataclass
class CallFailure:
    """A call that produced no reply (rejected, or failed after every transport retry)."""

    kind: Literal["rejected", "request_failed"]
    message: str


@dataclass
class Call:
    """One model call: the request it serves and the exact messages of this attempt."""

    request: Request
    messages: list[dict[str, str]]
    key: str


def excerpt(text: str, limit: int = REPAIR_QUOTE_CHARS, tail: int = REPAIR_QUOTE_TAIL) -> str:
    """Return ``text``, or its head and tail with a marker when it is longer than ``limit``.

    Args:
        text: The text.
        limit: Most characters kept (the marker comes on top).
        tail: How many of them come from the end.

    Returns:
        The text, or its head, a line ``[... 9,996,000 characters cut ...]`` and its tail.
    """
    if len(text) <= limit:
        return text
    tail = min(tail, limit)
    head = limit - tail
    cut = len(text) - limit
    return f"{text[:head]}\n[... {cut:,} characters cut ...]\n{text[len(text) - tail :]}"


class BackendBase:
    """Shared machinery: identity, cache keys, cache lookups, validation, repairs, usage.

    Subclasses set ``kind`` and ``model_id`` and implement ``generate`` with the helpers
    below (``_call``, ``_lookup``, ``_assess``, ``_repair``, ``_finish``) and
    :class:`AttemptState`, which accounts model calls and stores valid replies.
    """

    kind: ClassVar[str] = "base"
    notice: str | None = None

    def __init__(
        self, *, model_id: str, cache: ResponseCache | None = None, max_output_retries: int = 2
    ):
        if max_output_retries < 0:
            raise ValueError("max_output_retries must be >= 0")
        self.model_id = model_id
        self.cache = cache
        self.max_output_retries = max_output_retries
        self.usage = Usage()
        self._fresh = 0

    # -- identity --------------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        """Return what identifies the model that answers; see :meth:`Backend.identity`.

        Every cache key is built from it. The endpoint is part of it, so the same
        ``--model`` name on two servers never shares answers; but one URL restarted with
        other weights under the same served name cannot be told apart: give each its own
        ``--model-id``.

        Returns:
            ``{"backend", "model", "endpoint", "weights", "options"}``, JSON-serialisable.
        """
        return json.loads(
            json.dumps(
                {
                    "backend": self.kind,
                    "model": self.model_id,
                    "endpoint": self._endpoint_identity(),
                    "weights": self._weights_identity(),
                    "options": self.output_options(),
                },
                sort_keys=True,
                default=str,
            )
        )

    def output_options(self) -> dict[str, Any]:
        """Backend settings that change outputs (part of :meth:`identity`)."""
        return {}

    def _endpoint_identity(self) -> str | None:
        """Where the model answers (a normalised URL, ``vllm:<model>``), or None."""
        return None

    def _weights_identity(self) -> dict[str, Any] | None:
        """Which weights answer, when the backend can see them, else None."""
        return None

    # -- cache -----------------------------------------------------------------------------

    def cache_key(self, request: Request, messages: list[dict[str, str]]) -> str:
        """Return the cache key of one attempt of ``request`` with ``messages``.

        The key covers what changes the output (:meth:`identity`: backend kind, model id,
        endpoint, weights, output options; and the messages, sampling, sample index, schema
        and how it is sent) and nothing that doesn't (request id, concurrency, timeouts,
        retry settings).

        Args:
            request: The request.
            messages: The exact messages sent in this attempt (repairs included).

        Returns:
            A hex SHA-256 digest.
        """
        payload = {
            "format": CACHE_FORMAT,
            "identity": self.identity(),
            "messages": messages,
            "sampling": request.sampling.model_dump(mode="json"),
            "sample": request.sample,
            "schema": request.json_schema(),
            "schema_name": request.response_format_name() if request.schema_model else None,
        }
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    @contextmanager
    def fresh_calls(self) -> Iterator[None]:
        """Inside this context the cache is not read: every request goes to the model.

        Valid replies are still written (replacing what was cached under the same key),
        so a later run outside the context finds the fresh answers. For retrying requests
        whose earlier answers are suspect (``--retry-errors``). Contexts may nest.

        Yields:
            Nothing.
        """
        self._fresh += 1
        try:
            yield
        finally:
            self._fresh -= 1

    def _call(self, request: Request, messages: list[dict[str, str]] | None = None) -> Call:
        msgs = messages if messages is not None else [m.model_dump() for m in request.messages]
        return Call(request=request, messages=msgs, key=self.cache_key(request, msgs))

    def _lookup(self, call: Call) -> Completion | None:
        if self.cache is None or self._fresh:
            return None
        data = self.cache.get(call.key)
        if data is None or not isinstance(data.get("text"), str):
            return None
        self.usage.cache_hits += 1
        return Completion(
            text=data["text"],
            finish_reason=data.get("finish_reason"),
            prompt_tokens=int(data.get("prompt_tokens") or 0),
            completion_tokens=int(data.get("completion_tokens") or 0),
            cached=True,
        )

    def _count_call(self, completion: Completion) -> None:
        """Account one reply obtained from the model (not from the cache)."""
        self.usage.model_calls += 1
        self.usage.prompt_tokens += completion.prompt_tokens
        self.usage.completion_tokens += completion.completion_tokens

    def _store(self, key: str, completion: Completion) -> None:
        """Cache a valid reply under ``key`` (committed at once)."""
        if self.cache is not None:
            self.cache.put(
                key,
                completion.to_json(),
                model=self.model_id,
                backend=self.kind,
                endpoint=self._endpoint_identity(),
            )

    # -- validation ------------------------------------------------------------------------

    def _assess(self, request: Request, completion: Completion) -> tuple[Any, str | None, bool]:
        """Validate one reply.

        Returns:
            ``(parsed, error, truncated)``: the parsed object (None for free text or on
            error), the validation error message or None, and whether the reply was cut at
            ``max_tokens``.
        """
        if request.schema_model is None:
            return None, None, False
        truncated = completion.finish_reason == "length"
        try:
            parsed = request.schema_model.model_validate_json(completion.text)
        except ValidationError as exc:
            self.usage.invalid_outputs += 1
            problems = "; ".join(
                excerpt(
                    f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}",
                    PROBLEM_CHARS,
                    PROBLEM_CHARS // 3,
                )
                for err in exc.errors()[:5]
            )
            if truncated:
                problems = f"cut at max_tokens={request.sampling.max_tokens} ({problems})"
            return None, problems, truncated
        return parsed, None, False

    def _repair(self, call: Call, text: str, error: str) -> Call:
        """Return the next attempt: the conversation plus the bad reply and what was wrong.

        The bad reply is quoted as an excerpt (at most ``REPAIR_QUOTE_CHARS`` characters,
        head and tail, with a marker of what was cut), so a runaway reply is not sent back
        in every repair turn.
        """
        quoted = excerpt(text)
        prompt = REPAIR_PROMPT.format(error=error)
        if quoted != text:
            prompt += (
                f"\n(Your reply was {len(text):,} characters long; only its beginning and end "
                "are quoted above.)"
            )
        messages = [
            *call.messages,
            {"role": "assistant", "content": quoted},
            {"role": "user", "content": prompt},
        ]
        return self._call(call.request, messages)

    def _finish(
        self,
        request: Request,
        *,
        completion: Completion | None,
        parsed: Any = None,
        error: str | None = None,
        error_kind: ErrorKind | None = None,
        attempts: int,
        all_cached: bool,
        prompt_tokens: int,
        completion_tokens: int,
    ) -> Result:
        self.usage.requests += 1
        if error is not None:
            self.usage.errors += 1
        return Result(
            request_id=request.id,
            model=self.model_id,
            text=None if completion is None else completion.text,
            parsed=parsed,
            error=error,
            error_kind=error_kind,
            finish_reason=None if completion is None else completion.finish_reason,
            attempts=attempts,
            cached=all_cached and attempts > 0,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            endpoint=None if completion is None or completion.cached else completion.endpoint,
        )

    def close(self) -> None:
        """Close the cache (subclasses release their own resources first)."""
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> BackendBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AttemptState:
    """The progress of one request through its attempts (used by every backend).

    Backends hand it every reply (:meth:`take`) or failure (:meth:`fail`); it accounts
    model calls and stores the final valid reply under the first attempt's key, so a rerun
    of the request is one cache hit whatever repairs it took.
    """

    def __init__(self, backend: BackendBase, request: Request):
        self.backend = backend
        self.request = request
        self.call = backend._call(request)
        self.first_key = self.call.key
        self.attempts = 0
        self.all_cached = True
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.last: Completion | None = None
        self.result: Result | None = None

    def take(self, completion: Completion) -> bool:
        """Take one reply; return True when the request is finished."""
        backend = self.backend
        self.attempts += 1
        self.last = completion
        if not completion.cached:
            self.all_cached = False
            self.prompt_tokens += completion.prompt_tokens
            self.completion_tokens += completion.completion_tokens
            backend._count_call(completion)
        parsed, error, truncated = backend._assess(self.request, completion)
        if error is None:
            if not completion.cached:
                backend._store(self.first_key, completion)
            self.result = self._finish(completion, parsed=parsed)
            return True
        if self.attempts > backend.max_output_retries:
            kind: ErrorKind = "truncated" if truncated else "invalid_output"
            message = f"reply not valid for {self.request.response_format_name()} after "
            message += f"{self.attempts} attempt(s): {error}"
            self.result = self._finish(completion, error=message, error_kind=kind)
            return True
        self.call = backend._repair(self.call, completion.text, error)
        return False

    def fail(self, failure: CallFailure) -> None:
        """Record a call that produced no reply; the request is finished."""
        self.all_cached = False
        self.result = self._finish(self.last, error=failure.message, error_kind=failure.kind)

    def _finish(self, completion: Completion | None, **kwargs: Any) -> Result:
        return self.backend._finish(
            self.request,
            completion=completion,
            attempts=self.attempts,
            all_cached=self.all_cached,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            **kwargs,
        )


class NoModel(BackendBase):
    """The backend of work no model takes part in (the ``evidence`` judge).

    Its identity names no model, so journals bind what actually decides (the evidence
    settings), and asking it anything is a :class:`BackendError`: a method that needs a
    model was given this one by mistake.
    """

    kind: ClassVar[str] = "none"

    def __init__(self, model_id: str = "prefjudge-evidence"):
        super().__init__(model_id=model_id)

    def generate(
        self, requests: Sequence[Request], *, on_result: OnResult | None = None
    ) -> list[Result]:
        """Refuse: no model is available.

        Raises:
            BackendError: Always, when there is any request.
        """
        if requests:
            raise BackendError("no judge model was opened (the evidence judge asks none)")
        return []

    def close(self) -> None:
        """Nothing to release."""
