"""The ``openai`` backend: any OpenAI-compatible HTTP endpoint through the official client.

This is how prefjudge reaches a ``vllm serve`` deployment, OpenAI itself, or any compatible
server. Requests run concurrently on asyncio (bounded by ``max_concurrency``); timeouts,
429 and 5xx are retried with exponential backoff, honouring ``Retry-After``. Structured
requests send the standard ``response_format={"type": "json_schema", ...}``.
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
        model_id: Model identity for cache keys; defaults to ``model``. Set it when the same
            name can mean different weights (e.g. ``default`` on two servers).
        cache: Response cache, or None for no caching.
        max_concurrency: Most requests in flight at once.
        timeout: Seconds one HTTP request may take before it is retried.
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
                page = await client.models.list()
                return [m.id for m in page.data]
            except openai.OpenAIError as exc:
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
                    self._store(state.call, completion)
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
        """One call with transport retries; never raises for per-request problems."""
        import openai

        kwargs = self._request_kwargs(call)
        last = "no attempt made"
        for attempt in range(self.max_retries + 1):
            retry_after: float | None = None
            try:
                response = await client.chat.completions.create(**kwargs)
            except openai.APITimeoutError:
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
            else:
                return _completion_of(response)
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


def _completion_of(response: Any) -> Completion | CallFailure:
    choices = getattr(response, "choices", None) or []
    if not choices:
        return CallFailure("request_failed", "the server answered with no choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    text = getattr(message, "content", None)
    refusal = getattr(message, "refusal", None)
    if text is None:
        if refusal:
            return CallFailure("rejected", f"the model refused: {refusal}")
        text = ""
    usage = getattr(response, "usage", None)
    return Completion(
        text=text,
        finish_reason=getattr(choice, "finish_reason", None),
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
    )
