"""The backend contract: what a stage asks a model and what comes back.

Every LLM stage talks to a model through a :class:`Backend`: a list of :class:`Request`
in, a list of :class:`Result` out, in the same order; :func:`chat` builds a request from
plain turns. A backend that cannot work at all raises :class:`BackendError`; per-request
failures come back as :class:`Result` errors. The shared attempt logic every backend uses
(caching, validation, repairs, usage) is :mod:`prefjudge.backends.base`, which re-exports
these names.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from prefjudge.records import Usage

Role = Literal["system", "user", "assistant"]
ErrorKind = Literal["invalid_output", "truncated", "rejected", "request_failed"]
OnResult = Callable[["Result"], None]


class BackendError(RuntimeError):
    """A backend cannot work at all (not installed, wrong endpoint, bad credentials).

    Per-request failures never raise: they come back as :class:`Result` errors.
    """


class Message(BaseModel):
    """One chat message."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    content: str


class Sampling(BaseModel):
    """Sampling parameters; every field is part of the cache key.

    Attributes:
        temperature: Sampling temperature (0 is greedy).
        top_p: Nucleus sampling mass.
        max_tokens: Most tokens the reply may have; a structured reply cut here is invalid.
        seed: Sampling seed, when the backend supports one (offset by ``Request.sample``).
        stop: Stop strings.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float = Field(default=0.0, ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(default=1024, ge=1)
    seed: int | None = None
    stop: tuple[str, ...] = ()


class Request(BaseModel):
    """One chat completion a stage needs.

    Attributes:
        id: The caller's key for this request (echoed in the result; not in the cache key).
        messages: The conversation so far; the model writes the next assistant turn.
        sampling: Sampling parameters.
        schema_model: A pydantic model the reply must be JSON for, or None for free text.
            The backend asks the model for JSON matching its schema and validates the reply.
        schema_name: Name sent with the JSON schema (defaults to the model's class name).
        sample: Which sample of the same prompt this is (0, 1, ...): distinct samples get
            distinct cache entries, and distinct seeds when ``sampling.seed`` is set.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    id: str
    messages: tuple[Message, ...]
    sampling: Sampling = Sampling()
    schema_model: type[BaseModel] | None = Field(default=None, exclude=True)
    schema_name: str | None = None
    sample: int = Field(default=0, ge=0)

    def json_schema(self) -> dict[str, Any] | None:
        """Return the JSON schema the reply must match, or None for free text.

        A fresh dict each call, read from the schema's JSON text, which is made once per
        model class (pydantic builds a schema in about a millisecond, and every model call
        needs it twice: its cache key and its request).
        """
        return None if self.schema_model is None else json.loads(_schema_text(self.schema_model))

    def effective_seed(self) -> int | None:
        """Return the seed to send: ``sampling.seed + sample``, or None."""
        return None if self.sampling.seed is None else self.sampling.seed + self.sample

    def response_format_name(self) -> str:
        """Return the schema's name as sent to servers (letters, digits, ``_`` and ``-``)."""
        raw = self.schema_name or (self.schema_model.__name__ if self.schema_model else "reply")
        return "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in raw)[:64]


@functools.lru_cache(maxsize=1024)
def _schema_text(model: type[BaseModel]) -> str:
    """The JSON schema of ``model`` as JSON text (made once per class)."""
    return json.dumps(model.model_json_schema())


def chat(request_id: str, *turns: tuple[Role, str] | str, **kwargs: Any) -> Request:
    """Build a :class:`Request` from plain turns.

    Args:
        request_id: The request's id.
        *turns: ``(role, content)`` pairs, or plain strings (user turns).
        **kwargs: Other :class:`Request` fields (``sampling``, ``schema_model``, ...).

    Returns:
        The request.
    """
    messages = tuple(
        Message(role="user", content=t) if isinstance(t, str) else Message(role=t[0], content=t[1])
        for t in turns
    )
    return Request(id=request_id, messages=messages, **kwargs)


class Result(BaseModel):
    """What came back for one request.

    A result served from the cache is the stored final valid reply: ``cached`` is True,
    ``attempts`` is 1 (the repair turns that first produced it are not replayed) and the
    token counts are 0 (no model call was made). Only valid replies are ever cached.

    Attributes:
        request_id: The request's id.
        model: The model identity that answered (``model_id``; see ``Backend.identity``).
        text: Raw text of the last reply, whole (kept on errors too; None when no reply
            came). Repair turns and error messages quote only a bounded excerpt of it.
        parsed: The validated pydantic object for structured requests, else None.
        error: Why the request failed, or None when it succeeded.
        error_kind: ``invalid_output`` (reply failed validation after every retry),
            ``truncated`` (reply cut at ``max_tokens``), ``rejected`` (the server refused
            the request, e.g. 400) or ``request_failed`` (timeouts, 429, 5xx or a malformed
            response body after every retry, or an engine failure). Neither failed requests
            nor invalid replies are cached: a rerun asks the model again.
        finish_reason: The model's finish reason for the last reply.
        attempts: Replies taken for this request (1 + repair turns; 1 when cached).
        cached: True when the reply came from the cache (no model call was made).
        prompt_tokens: Prompt tokens of the model calls made for this request.
        completion_tokens: Completion tokens of the model calls made for this request.
        endpoint: Which server gave the last reply (``openai``: the normalised base URL of
            the replica that answered); None when the reply came from the cache, no reply
            came, or the model runs in process. Provenance only: never part of a cache key.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    request_id: str
    model: str
    text: str | None = None
    parsed: Any = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    finish_reason: str | None = None
    attempts: int = 0
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    endpoint: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the request succeeded (a usable reply, validated when structured)."""
        return self.error is None


@runtime_checkable
class Backend(Protocol):
    """What every backend offers. Batch-first: one call takes a whole list of requests.

    Attributes:
        kind: ``openai``, ``vllm`` or ``embedded``.
        model_id: The model's name in results and reports (``--model-id`` or the model
            name); part of :meth:`identity`.
        usage: Counters since the backend was created.
        notice: A line the CLI must show the user (e.g. the embedded model's caveat), or None.
    """

    kind: str
    model_id: str
    usage: Usage
    notice: str | None

    def identity(self) -> dict[str, Any]:
        """Return what identifies the model that answers: the basis of every cache key.

        A JSON-serialisable dict: ``backend`` (kind), ``model`` (``model_id``),
        ``endpoint`` (the normalised base URL for ``openai``; for several replicas of
        one model, their normalised URLs sorted and joined by ``", "``, so neither the
        order they were given in nor the replica that answered changes it; an explicit
        ``--endpoint-id`` instead of either; ``vllm:<model path or hub name>`` in process),
        ``weights`` (in process: the local folder with a fingerprint
        of its files, or the hub name and revision; None over HTTP, where the weights
        behind a URL cannot be seen) and ``options`` (settings that change outputs:
        strict schema mode, extra request fields, output-changing engine arguments).
        Equal identities mean "the same model answering the same way".

        One URL restarted with other weights under the same served name looks the same:
        give each its own ``--model-id`` (``model_id``) to keep their answers apart.

        Returns:
            The identity (a fresh dict each call).
        """
        ...

    def fresh_calls(self) -> AbstractContextManager[None]:
        """Return a context manager inside which the cache is not read (but still written).

        Every request made inside it goes to the model, even when a valid reply is
        cached; the new valid replies replace the cached ones.
        """
        ...

    def generate(
        self, requests: Sequence[Request], *, on_result: OnResult | None = None
    ) -> list[Result]:
        """Answer every request; results come back in request order.

        Args:
            requests: The requests.
            on_result: Called once per request as soon as its result is final (any order),
                e.g. to advance a progress bar or journal results.

        Returns:
            One result per request, in order. Per-request failures are results with
            ``error`` set, never exceptions.

        Raises:
            BackendError: When the backend cannot work at all.
        """
        ...

    def close(self) -> None:
        """Release connections, engines and the cache."""
        ...
