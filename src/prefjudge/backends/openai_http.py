"""The ``openai`` backend: any OpenAI-compatible HTTP endpoint through the official client.

This is how prefjudge reaches a ``vllm serve`` deployment, OpenAI itself, or any compatible
server. Requests run concurrently on asyncio (bounded by ``max_concurrency``); timeouts,
connection errors, 429, 5xx and malformed response bodies are retried with exponential
backoff, honouring ``Retry-After``. ``timeout`` is a deadline for a whole HTTP call
(connect, send, and every byte of the reply), so a server that trickles bytes or never ends
its body cannot stall a run. Structured requests send the standard
``response_format={"type": "json_schema", ...}``.

Connections: the backend keeps one event loop and each replica's clients for its whole
life (:class:`~prefjudge.backends.session.Session`), so the calls of every batch
(``prefjudge judge`` sends one per chunk of pairs) reuse the connections earlier batches
opened instead of opening new ones; the clients keep ``max_concurrency`` connections idle
between batches and open new ones a few at a time (:mod:`prefjudge.backends.connections`).
Opening hundreds of connections at once per batch cost CPU on both sides and overflowed
the accept queue of servers with a short listen backlog (reset connections, retried).

Replicas (:mod:`prefjudge.backends.replicas`): ``base_url`` may list several servers of
one model (``vllm serve`` replicas, a data-parallel deployment's front ends). Each has its
own client and its own ``max_concurrency`` slots
(:class:`~prefjudge.backends.replicas.ReplicaPool`); every call goes to the least-loaded
replica that is up (fewest calls in flight, ties to the one given first). A replica whose
call fails with a connection error, a timeout or a 5xx is left alone for a cool-down (the
backoff delay, doubling while it keeps failing) and the call is retried on another one,
at once when one has a free slot: the same retry budget (``max_retries``) covers every
replica. The cache key names the set of replicas, never the one that answered (see
``BackendBase.identity``); which one answered is in ``Result.endpoint`` and the run's
summary (:attr:`OpenAIBackend.notice`).

Dead endpoints: until a replica has answered once, a refused connection or a host name
that does not resolve marks it unreachable, and when every replica is, the batch stops at
once with a :class:`BackendError` naming the URLs and the model (no backoff: nothing
listens there). 401, 403 and 404 stop it too, from any replica (a bad key or URL), with a
hint (the key's variable; ``is base_url missing /v1?``). Once a replica has answered, its
connection errors are retried as any others (it may be restarting). And a server that
fails every call stops the backend after ``max_failure_streak`` failed calls in a row
(:class:`~prefjudge.backends.base.FailureStreak`) instead of costing every request its
whole retry budget.

Hostile servers (:mod:`prefjudge.backends.replies`): a reply is untrusted bytes. Its body
is read as it arrives and refused past :data:`~prefjudge.backends.connections.MAX_BODY`
bytes decoded (a compressed bomb, an endless body), and its JSON is read by prefjudge, not
by the SDK (:func:`parse_reply`): at most :data:`MAX_JSON_VALUES` values, nesting refused
past the interpreter's recursion limit, and numbers no float can hold (``1e400``) or
``NaN`` refused. Each is that request's malformed response, retried as such; the other
requests go on.

The replicas, the reading of replies and the kept event loop are modules of their own
(above, and :mod:`prefjudge.backends.session`); their public names are re-exported here,
where they were first published.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Sequence
from typing import Any, ClassVar
from urllib.parse import urlsplit

from prefjudge.backends.base import (
    AttemptState,
    BackendBase,
    BackendError,
    Call,
    CallFailure,
    Completion,
    FailureStreak,
    OnResult,
    Request,
    Result,
)
from prefjudge.backends.cache import ResponseCache
from prefjudge.backends.connections import (
    http_client,
    replica_clients,
    root_cause,
    unreachable_reason,
)
from prefjudge.backends.replicas import (
    OPENAI_URL,
    Replica,
    ReplicaPool,
    endpoint_identity,
    normalize_base_url,
    replica_urls,
)
from prefjudge.backends.replies import (
    MAX_JSON_VALUES,
    MAX_TEXT_BYTES,
    REPLY_ERRORS,
    MalformedResponse,
    completion_of,
    error_detail,
    parse_reply,
    parse_retry_after,
)
from prefjudge.backends.session import Session, T, Work, run_sync, within
from prefjudge.lazy import heavy_imports

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
FATAL_STATUS = frozenset({401, 403, 404})
NO_KEY = "EMPTY"

__all__ = [  # the backend, and the names of the modules split from this one
    "FATAL_STATUS", "MAX_JSON_VALUES", "MAX_TEXT_BYTES", "NO_KEY", "OPENAI_URL", "REPLY_ERRORS",
    "RETRYABLE_STATUS", "MalformedResponse", "OpenAIBackend", "Replica", "endpoint_identity",
    "normalize_base_url", "parse_reply", "parse_retry_after", "replica_urls",
]


class OpenAIBackend(BackendBase):
    """Chat completions over HTTP with the official ``openai`` client.

    Args:
        model: Model name the server serves (``--model``).
        base_url: Endpoint, e.g. ``http://127.0.0.1:8000/v1``; None means OpenAI's. A list
            of URLs names replicas of one model (``--base-url`` given several times): each
            call goes to the least-loaded one, and a failed call is retried on another.
        api_key_env: Name of the environment variable holding the API key. A local
            endpoint (``base_url`` set) works without one.
        api_key: The key itself (overrides ``api_key_env``; for tests and embedding).
        model_id: Model name in results and cache keys; defaults to ``model``. The endpoint
            (``base_url``) is part of every cache key already, so the same name on two
            servers never shares answers; set ``model_id`` when one URL serves different
            weights over time under the same name (e.g. a server restarted with another
            checkpoint), which nothing else can tell apart.
        endpoint_id: The endpoint as cache keys and output bindings know it, instead of
            the URL (or the replicas' sorted URLs); see :func:`endpoint_identity`.
        cache: Response cache, or None for no caching.
        max_concurrency: Most requests in flight at once, per replica.
        timeout: Deadline in seconds for one whole HTTP call (connect, send and the complete
            reply); a call past it is abandoned and retried like any timeout.
        max_retries: Transport retries per call (timeouts, connection errors, 429, 5xx), on
            whichever replicas they go to.
        max_failure_streak: Calls failed in a row (each after its retries) with no answer
            in between that stop the backend with a :class:`BackendError`; 0 never stops.
        backoff_base: First backoff delay in seconds (doubles per retry, with jitter); also
            the first cool-down of a failing replica.
        backoff_max: Longest single wait, ``Retry-After`` included, and longest cool-down.
        max_output_retries: Repair attempts for a structured reply that fails validation.
        strict_schema: Send ``"strict": true`` with the JSON schema (OpenAI's strict mode
            needs every property required and ``additionalProperties: false``).
        extra_body: Extra JSON fields for every request (part of the cache key).

    Raises:
        BackendError: Without an API key for OpenAI's own endpoint, or when ``base_url``
            is an empty list or names one endpoint twice.
        ValueError: When ``max_concurrency`` is below 1 or ``max_failure_streak`` below 0.
    """

    kind: ClassVar[str] = "openai"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | Sequence[str] | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        api_key: str | None = None,
        model_id: str | None = None,
        endpoint_id: str | None = None,
        cache: ResponseCache | None = None,
        max_concurrency: int = 8,
        timeout: float = 120.0,
        max_retries: int = 6,
        max_failure_streak: int = 20,
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
            with heavy_imports("openai"):
                import openai  # noqa: F401
        except ImportError as exc:
            raise BackendError(
                "the openai backend needs the `openai` package: pip install 'prefjudge[backends]'"
            ) from exc
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        try:
            urls = replica_urls(base_url)
        except ValueError as exc:
            raise BackendError(f"--base-url: {exc}") from exc
        key = api_key or os.environ.get(api_key_env)
        if not key:
            if not urls:
                raise BackendError(
                    f"no API key: set the environment variable {api_key_env} "
                    "(or name another one with --api-key-env)"
                )
            key = NO_KEY
        self.model = model
        self.base_url = base_url
        self.replicas = [Replica(url, normalize_base_url(url)) for url in urls or [None]]
        self.endpoint = endpoint_identity(base_url, endpoint_id)
        self._api_key = key
        self.api_key_env = api_key_env
        self._key_given = api_key is not None
        self.streak = FailureStreak(max_failure_streak)
        self.max_concurrency = max_concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.strict_schema = strict_schema
        self.extra_body = dict(extra_body or {})
        self._session: Session | None = None

    def output_options(self) -> dict[str, Any]:
        """Settings that change outputs: strict schema mode and extra request fields."""
        return {"strict": self.strict_schema, "extra_body": self.extra_body}

    def _endpoint_identity(self) -> str:
        return self.endpoint

    @property
    def notice(self) -> str | None:  # type: ignore[override]
        """With several replicas, the calls each answered: shown in the run's summary.

        Which replica answered is provenance of the run, not of its records: a record is
        the same whichever replica gave it (and a cached one came from none), so records
        and cache keys never name it. None with one endpoint, or before any call.
        """
        if len(self.replicas) < 2 or not any(r.calls for r in self.replicas):
            return None
        parts = []
        for replica in self.replicas:
            part = f"{replica.endpoint} answered {replica.answered} of {replica.calls} call(s)"
            if replica.failed:
                part += f" ({replica.failed} failed)"
            parts.append(part)
        return f"{len(self.replicas)} replicas: " + "; ".join(parts)

    # -- public ----------------------------------------------------------------------------

    def generate(
        self, requests: Sequence[Request], *, on_result: OnResult | None = None
    ) -> list[Result]:
        """Answer every request concurrently; see :meth:`Backend.generate`.

        Results come back in request order whichever replica answered each.

        Raises:
            BackendError: On 401/403/404 from any replica (bad key, forbidden, unknown model
                or URL); when no replica could ever be reached (connection refused, unknown
                host) before one answered; or after ``max_failure_streak`` failed calls in
                a row. Requests finished before it have had their ``on_result``.
        """
        if not requests:
            return []
        batch = list(requests)
        return self._run(lambda clients: self._generate(batch, clients, on_result))

    def close(self) -> None:
        """Close the connections and the event loop, then the cache."""
        session, self._session = self._session, None
        try:
            if session is not None:
                session.close()
        finally:
            super().close()

    def list_models(self) -> list[str]:
        """Return the model names the endpoint lists (``GET /models``).

        With several replicas: the names every replica lists, in the first one's order.

        Raises:
            BackendError: When an endpoint cannot be reached or refuses.
        """

        async def one(url: str | None) -> list[str]:
            import openai

            client = self._client(url, http_client(url, 1))
            try:
                page = await asyncio.wait_for(client.models.list(), self.timeout)
                return [m.id for m in page.data]
            except asyncio.TimeoutError as exc:
                raise BackendError(
                    f"cannot list models at {self._where(url)}: no answer in {self.timeout:g} s"
                ) from exc
            except openai.APIStatusError as exc:
                raise BackendError(
                    f"cannot list models: {self._refusal(url, exc.status_code, error_detail(exc))}"
                ) from exc
            except openai.APIConnectionError as exc:
                reason = unreachable_reason(exc, url)
                if reason is None:
                    raise BackendError(f"cannot list models at {self._where(url)}: {exc}") from exc
                raise BackendError(self._unreachable([(self._where(url), reason)])) from exc
            except (openai.OpenAIError, TypeError, AttributeError, *REPLY_ERRORS) as exc:
                detail = f"{type(exc).__name__}: {str(exc)[:300]}"
                raise BackendError(f"cannot list models at {self._where(url)}: {detail}") from exc
            finally:
                await client.close()

        async def run() -> list[str]:
            listed = [await one(replica.url) for replica in self.replicas]
            return [name for name in listed[0] if all(name in other for other in listed[1:])]

        return run_sync(run())

    # -- internals -------------------------------------------------------------------------

    @staticmethod
    def _where(url: str | None) -> str:
        """The endpoint's URL as given, or the one the client uses when none was given."""
        return url or normalize_base_url(None)

    def _unreachable(self, dead: Sequence[tuple[str, str]]) -> str:
        """The message of endpoints no connection could be made to: ``(URL, reason)`` each."""
        if len(dead) == 1:
            url, reason = dead[0]
            return f"the openai backend cannot reach {url} (model {self.model!r}): {reason}"
        each = "; ".join(f"{url}: {reason}" for url, reason in dead)
        return f"the openai backend cannot reach any of its replicas (model {self.model!r}): {each}"

    def _refusal(self, url: str | None, status: int, detail: str) -> str:
        """The message of a 401, 403 or 404: the URL, the model, and what to check."""
        where = self._where(url)
        message = f"{where} answered {status} for model {self.model!r}: {detail}"
        if status == 404 and not urlsplit(where).path.rstrip("/").endswith("/v1"):
            return f"{message}; is base_url missing /v1?"
        if status in (401, 403):
            if self._key_given:
                return f"{message}; the API key given was refused"
            if self._api_key == NO_KEY:
                return (
                    f"{message}; no API key was sent: set ${self.api_key_env} (or name "
                    "another variable with --api-key-env)"
                )
            return f"{message}; the key in ${self.api_key_env} was refused"
        return message

    def _check_reachable(
        self, replica: Replica, replicas: Sequence[Replica], exc: Exception
    ) -> str:
        """Note a connection error; stop when no replica was ever reachable.

        Args:
            replica: The replica the call went to.
            replicas: Every replica.
            exc: The connection error.

        Returns:
            What to say of the failed call (it is retried as usual).

        Raises:
            BackendError: When every replica is unreachable (refused or an unknown host)
                and none has answered yet.
        """
        reason = unreachable_reason(exc, replica.url)
        if reason is not None and not replica.answered:
            replica.unreachable = reason
            if all(r.unreachable is not None for r in replicas):
                dead = [(r.where, r.unreachable or "") for r in replicas]
                raise BackendError(self._unreachable(dead)) from exc
        return f"connection failed: {reason or root_cause(exc)}"

    def _client(self, base_url: str | None, http: Any = None) -> Any:
        import openai

        return openai.AsyncOpenAI(
            base_url=base_url,
            api_key=self._api_key,
            timeout=self.timeout,
            max_retries=0,
            http_client=http,
        )

    def _clients(self) -> list[Any]:
        """Each replica's clients (:func:`~prefjudge.backends.connections.replica_clients`)."""
        return [
            replica_clients(
                lambda http, url=replica.url: self._client(url, http),
                replica.url,
                self.max_concurrency,
            )
            for replica in self.replicas
        ]

    def _run(self, work: Work[T]) -> T:
        """Run a batch on the kept session; on a loop and clients of its own when it is busy.

        Python 3.10 has no :class:`asyncio.Runner`: each batch has its own loop and clients.
        """
        if self._session is None and hasattr(asyncio, "Runner"):
            self._session = Session(self._clients)
        done = None if self._session is None else self._session.run(work)
        if done is not None:
            return done[0]

        async def alone() -> T:
            clients = self._clients()
            try:
                return await work(clients)
            finally:
                await asyncio.gather(*(client.close() for client in clients))

        return run_sync(alone())

    async def _generate(
        self, requests: list[Request], clients: list[Any], on_result: OnResult | None
    ) -> list[Result]:
        pool = ReplicaPool(
            replicas=self.replicas,
            clients=clients,
            limit=self.max_concurrency,
            backoff_base=self.backoff_base,
            backoff_max=self.backoff_max,
            streak=self.streak,
        )

        async def one(request: Request) -> Result:
            state = AttemptState(self, request)
            while state.result is None:
                completion = self._lookup(state.call)
                if completion is None:
                    outcome = await self._complete(pool, state.call)
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
            pool.close()

    def _request_body(self, call: Call) -> dict[str, Any]:
        """The JSON body of one chat completion (``extra_body`` merged in, as the SDK does)."""
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
        return {**kwargs, **self.extra_body}

    async def _complete(self, pool: ReplicaPool, call: Call) -> Completion | CallFailure:
        """One call with transport retries; never raises for per-request problems.

        Each HTTP call gets ``timeout`` seconds in all. A 2xx response with a malformed body
        (truncated or not JSON, no choices, wrong types) is retried like a 5xx: it is most
        often a cut connection or a proxy's error page. Every attempt takes a slot from
        ``pool``; a retry goes to another replica when there is one, at once when one is
        up with a free slot, else after the backoff (which keeps the failed slot, as one
        replica's semaphore always did).

        The body goes with the client's ``post`` (the SDK's way to send a request as it
        is): ``chat.completions.create`` would first walk the whole body, response schema
        included, through its parameter transform, which took longer than the rest of
        the SDK's work per call, to send the same bytes. The reply comes back as the
        HTTP response (its body read, bounded, by the client's hook) and its JSON is read
        by :func:`parse_reply`, not by the SDK.
        """
        body = self._request_body(call)
        last = "no attempt made"
        several = len(pool.replicas) > 1
        tried: set[str] = set()
        index: int | None = await pool.acquire()
        try:
            for attempt in range(self.max_retries + 1):
                replica = pool.replicas[index]
                replica.calls += 1
                outcome, last, retry_after, down = await self._attempt(pool, index, body)
                if outcome is not None:
                    pool.answered(index)
                    return outcome
                pool.failed(index, down=down)
                if several:
                    tried.add(replica.endpoint)
                    last = f"{replica.endpoint}: {last}"
                if attempt == self.max_retries:
                    break
                self.usage.retries += 1
                if not pool.other_free(index):
                    await asyncio.sleep(self._delay(attempt, retry_after))
                held, index = index, None
                index = await pool.acquire(held=held)
            where = f" on {len(tried)} of {len(pool.replicas)} replicas" if several else ""
            message = f"{last} (after {self.max_retries + 1} attempt(s){where})"
            urls = ", ".join(replica.where for replica in pool.replicas)
            self.streak.failed(message, where=urls, model=self.model)
        except BackendError:
            pool.stop()  # before the slot is given back: no other call goes out
            raise
        finally:
            if index is not None:
                pool.release(index)
        return CallFailure("request_failed", message)

    async def _attempt(
        self, pool: ReplicaPool, index: int, body: dict[str, Any]
    ) -> tuple[Completion | CallFailure | None, str, float | None, bool]:
        """One HTTP call to replica ``index``: its outcome, or why it failed.

        Args:
            pool: The batch's replicas and clients.
            index: The replica whose slot the call holds.
            body: The request's JSON body.

        Returns:
            ``(outcome, last, retry_after, down)``: the completion or the call's final
            failure (a rejection such as a 400: the replica answered); or None and what
            failed (to retry), the delay the server asked for, and whether the failure is
            the replica's (a connection error, a timeout or a 5xx).

        Raises:
            BackendError: On 401, 403 or 404, or when no replica was ever reachable.
        """
        import httpx2
        import openai

        replica = pool.replicas[index]
        try:
            response = await within(
                self.timeout,
                pool.clients[index].post("/chat/completions", body=body, cast_to=httpx2.Response),
            )
            outcome = completion_of(parse_reply(response.content))
        except (asyncio.TimeoutError, openai.APITimeoutError):
            return None, f"timed out after {self.timeout:g} s", None, True
        except openai.APIConnectionError as exc:
            return None, self._check_reachable(replica, pool.replicas, exc), None, True
        except openai.APIStatusError as exc:
            status, detail = exc.status_code, error_detail(exc)
            if status in FATAL_STATUS:
                raise BackendError(self._refusal(replica.url, status, detail)) from exc
            if status not in RETRYABLE_STATUS and status < 500:
                return CallFailure("rejected", f"HTTP {status}: {detail}"), "", None, False
            retry_after = parse_retry_after(exc.response.headers)
            return None, f"HTTP {status}: {detail}", retry_after, status >= 500
        except (openai.APIError, *REPLY_ERRORS) as exc:
            return None, f"malformed response: {type(exc).__name__}: {str(exc)[:300]}", None, False
        if isinstance(outcome, Completion):
            outcome.endpoint = replica.endpoint
        return outcome, "", None, False

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.backoff_max)
        ceiling = min(self.backoff_max, self.backoff_base * (2**attempt))
        return ceiling * (0.5 + random.random() / 2)
