"""The ``openai`` backend: any OpenAI-compatible HTTP endpoint through the official client.

This is how prefjudge reaches a ``vllm serve`` deployment, OpenAI itself, or any compatible
server. Requests run concurrently on asyncio (bounded by ``max_concurrency``); timeouts,
connection errors, 429, 5xx and malformed response bodies are retried with exponential
backoff, honouring ``Retry-After``. ``timeout`` is a deadline for a whole HTTP call
(connect, send, and every byte of the reply), so a server that trickles bytes or never ends
its body cannot stall a run. Structured requests send the standard
``response_format={"type": "json_schema", ...}``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import email.utils
import os
import random
import time
from collections.abc import Sequence
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

from prefjudge.backends.base import (
    AttemptState,
    BackendBase,
    BackendError,
    Call,
    CallFailure,
    Completion,
    OnResult,
    Request,
    Result,
)
from prefjudge.backends.cache import ResponseCache

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
FATAL_STATUS = frozenset({401, 403, 404})
NO_KEY = "EMPTY"
OPENAI_URL = "https://api.openai.com/v1"


class MalformedResponse(ValueError):
    """A 2xx response whose body is not a usable chat completion (retried like a 5xx)."""


def normalize_base_url(base_url: str | None) -> str:
    """Return the endpoint as it identifies answers in the cache.

    Args:
        base_url: ``--base-url``; None means what the ``openai`` client uses then:
            ``$OPENAI_BASE_URL``, else OpenAI's own API.

    Returns:
        The URL with surrounding spaces and trailing slashes removed and the scheme and
        host lower-cased, e.g. ``http://127.0.0.1:8000/v1``.
    """
    url = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL).strip()
    parts = urlsplit(url)
    if parts.scheme and parts.netloc:
        url = urlunsplit(
            (parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, parts.fragment)
        )
    return url.rstrip("/")


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


class OpenAIBackend(BackendBase):
    """Chat completions over HTTP with the official ``openai`` client.

    Args:
        model: Model name the server serves (``--model``).
        base_url: Endpoint, e.g. ``http://127.0.0.1:8000/v1``; None means OpenAI's.
        api_key_env: Name of the environment variable holding the API key. A local
            endpoint (``base_url`` set) works without one.
        api_key: The key itself (overrides ``api_key_env``; for tests and embedding).
        model_id: Model name in results and cache keys; defaults to ``model``. The endpoint
            (``base_url``) is part of every cache key already, so the same name on two
            servers never shares answers; set ``model_id`` when one URL serves different
            weights over time under the same name (e.g. a server restarted with another
            checkpoint), which nothing else can tell apart.
        cache: Response cache, or None for no caching.
        max_concurrency: Most requests in flight at once.
        timeout: Deadline in seconds for one whole HTTP call (connect, send and the complete
            reply); a call past it is abandoned and retried like any timeout.
        max_retries: Transport retries per call (timeouts, connection errors, 429, 5xx).
        backoff_base: First backoff delay in seconds (doubles per retry, with jitter).
        backoff_max: Longest single wait, ``Retry-After`` included.
        max_output_retries: Repair attempts for a structured reply that fails validation.
        strict_schema: Send ``"strict": true`` with the JSON schema (OpenAI's strict mode
            needs every property required and ``additionalProperties: false``).
        extra_body: Extra JSON fields for every request (part of the cache key).
    """

    kind: ClassVar[str] = "openai"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        api_key: str | None = None,
        model_id: str | None = None,
        cache: ResponseCache | None = None,
        max_concurrency: int = 8,
        timeout: float = 120.0,
        max_retries: int = 6,
        backoff_base: float = 0.5,
        backoff_max: float = 60.0,
        max_output_retries: int = 2,
        strict_schema: bool = False,
        extra_body: dict[str, Any] | None = None,
    ):
        super().__init__(
            model_id=model_id or model, cache=cache, max_output_retries=max_output_retries
        )
        try:
            import openai  # noqa: F401
        except ImportError as exc:
            raise BackendError(
                "the openai backend needs the `openai` package: pip install 'prefjudge[backends]'"
            ) from exc
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        key = api_key or os.environ.get(api_key_env)
        if not key:
            if base_url is None:
                raise BackendError(
                    f"no API key: set the environment variable {api_key_env} "
                    "(or name another one with --api-key-env)"
                )
            key = NO_KEY
        self.model = model
        self.base_url = base_url
        self.endpoint = normalize_base_url(base_url)
        self._api_key = key
        self.max_concurrency = max_concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.strict_schema = strict_schema
        self.extra_body = dict(extra_body or {})

    def output_options(self) -> dict[str, Any]:
        """Settings that change outputs: strict schema mode and extra request fields."""
        return {"strict": self.strict_schema, "extra_body": self.extra_body}

    def _endpoint_identity(self) -> str:
        return self.endpoint

    # -- public ----------------------------------------------------------------------------

    def generate(
        self, requests: Sequence[Request], *, on_result: OnResult | None = None
    ) -> list[Result]:
        """Answer every request concurrently; see :meth:`Backend.generate`.

        Raises:
            BackendError: On 401/403/404 (bad key, forbidden, unknown model or URL).
        """
        if not requests:
            return []
        return _run_sync(self._generate(list(requests), on_result))

    def list_models(self) -> list[str]:
        """Return the model names the endpoint lists (``GET /models``).

        Raises:
            BackendError: When the endpoint cannot be reached or refuses.
        """

        async def run() -> list[str]:
            import openai

            client = self._client()
            try:
                page = await asyncio.wait_for(client.models.list(), self.timeout)
                return [m.id for m in page.data]
            except asyncio.TimeoutError as exc:
                raise BackendError(
                    f"cannot list models at {self._where()}: no answer in {self.timeout:g} s"
                ) from exc
            except (openai.OpenAIError, ValueError, TypeError, AttributeError) as exc:
                raise BackendError(f"cannot list models at {self._where()}: {exc}") from exc
            finally:
                await client.close()

        return _run_sync(run())

    # -- internals -------------------------------------------------------------------------

    def _where(self) -> str:
        return self.base_url or "the OpenAI API"

    def _client(self) -> Any:
        import openai

        return openai.AsyncOpenAI(
            base_url=self.base_url, api_key=self._api_key, timeout=self.timeout, max_retries=0
        )

    async def _generate(self, requests: list[Request], on_result: OnResult | None) -> list[Result]:
        client = self._client()
        semaphore = asyncio.Semaphore(self.max_concurrency)

        async def one(request: Request) -> Result:
            state = AttemptState(self, request)
            while state.result is None:
                completion = self._lookup(state.call)
                if completion is None:
                    async with semaphore:
                        outcome = await self._complete(client, state.call)
                    if isinstance(outcome, CallFailure):
                        state.fail(outcome)
                        break
                    completion = outcome
                state.take(completion)
            assert state.result is not None
            if on_result is not None:
                on_result(state.result)
            return state.result

        tasks = [asyncio.ensure_future(one(r)) for r in requests]
        try:
            return list(await asyncio.gather(*tasks))
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await client.close()

    def _request_kwargs(self, call: Call) -> dict[str, Any]:
        request = call.request
        sampling = request.sampling
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": call.messages,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        seed = request.effective_seed()
        if seed is not None:
            kwargs["seed"] = seed
        if sampling.stop:
            kwargs["stop"] = list(sampling.stop)
        schema = request.json_schema()
        if schema is not None:
            json_schema: dict[str, Any] = {"name": request.response_format_name(), "schema": schema}
            if self.strict_schema:
                json_schema["strict"] = True
            kwargs["response_format"] = {"type": "json_schema", "json_schema": json_schema}
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        return kwargs

    async def _complete(self, client: Any, call: Call) -> Completion | CallFailure:
        """One call with transport retries; never raises for per-request problems.

        Each HTTP call gets ``timeout`` seconds in all. A 2xx response with a malformed body
        (truncated or not JSON, no choices, wrong types) is retried like a 5xx: it is most
        often a cut connection or a proxy's error page.
        """
        import openai

        kwargs = self._request_kwargs(call)
        last = "no attempt made"
        for attempt in range(self.max_retries + 1):
            retry_after: float | None = None
            try:
                response = await asyncio.wait_for(
                    client.chat.completions.create(**kwargs), self.timeout
                )
                outcome = _completion_of(response)
            except (asyncio.TimeoutError, openai.APITimeoutError):
                last = f"timed out after {self.timeout:g} s"
            except openai.APIConnectionError as exc:
                last = f"connection failed: {exc}"
            except openai.APIStatusError as exc:
                status = exc.status_code
                detail = _error_detail(exc)
                if status in FATAL_STATUS:
                    raise BackendError(
                        f"{self._where()} answered {status} for model {self.model!r}: {detail}"
                    ) from exc
                if status not in RETRYABLE_STATUS and status < 500:
                    return CallFailure("rejected", f"HTTP {status}: {detail}")
                last = f"HTTP {status}: {detail}"
                retry_after = parse_retry_after(exc.response.headers)
            except (openai.APIError, ValueError) as exc:  # ValueError: JSON, pydantic, ours
                last = f"malformed response: {type(exc).__name__}: {str(exc)[:300]}"
            else:
                return outcome
            if attempt == self.max_retries:
                break
            self.usage.retries += 1
            await asyncio.sleep(self._delay(attempt, retry_after))
        return CallFailure("request_failed", f"{last} (after {self.max_retries + 1} attempt(s))")

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.backoff_max)
        ceiling = min(self.backoff_max, self.backoff_base * (2**attempt))
        return ceiling * (0.5 + random.random() / 2)


def _run_sync(coroutine: Any) -> Any:
    """Run a coroutine to completion, also from code that already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _error_detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        message = body.get("message") or body.get("error", {})
        if isinstance(message, dict):
            message = message.get("message")
        if message:
            return str(message)[:500]
    return str(getattr(exc, "message", exc))[:500]


def _tokens(usage: Any, name: str) -> int:
    """A token count from the usage block; 0 when missing or not a count (never fatal)."""
    value = getattr(usage, name, None)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return 0
    return int(value)


def _completion_of(response: Any) -> Completion | CallFailure:
    """Read the reply out of a parsed response, checking its shape.

    The ``openai`` client does not validate response bodies, so anything may arrive here
    (a string for a non-JSON body, None, a list, fields of the wrong type).

    Raises:
        MalformedResponse: When the body is not a usable chat completion.
    """
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        what = "no choices" if not choices else f"choices of type {type(choices).__name__}"
        raise MalformedResponse(f"the server answered with {what}")
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        raise MalformedResponse("the server answered with a choice without a message")
    text = getattr(message, "content", None)
    refusal = getattr(message, "refusal", None)
    if text is None:
        if refusal:
            return CallFailure("rejected", f"the model refused: {str(refusal)[:500]}")
        text = ""
    if not isinstance(text, str):
        raise MalformedResponse(f"the reply's content is {type(text).__name__}, not text")
    finish_reason = getattr(choice, "finish_reason", None)
    if finish_reason is not None and not isinstance(finish_reason, str):
        raise MalformedResponse(f"finish_reason is {finish_reason!r}")
    usage = getattr(response, "usage", None)
    return Completion(
        text=text,
        finish_reason=finish_reason,
        prompt_tokens=_tokens(usage, "prompt_tokens"),
        completion_tokens=_tokens(usage, "completion_tokens"),
    )
