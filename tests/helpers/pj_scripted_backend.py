"""The one scripted model of the tests, an in-process backend (as inspect's mockllm).

For unit tests of prompt assembly, parsing and bookkeeping: it answers each request with a
reply function of the request (which sees the rendered prompt, exactly as a model would),
validates structured replies with the request's schema like the real backends do, fails the
requests its function answers None for, and records every request and every batch. Without
a reply function it answers ``reply <n>``, n being the request's number of user turns (so
multi-turn conversations can be followed). Real-model tests live in ``tests/backends/``.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from prefjudge.backends import Request, Result, Usage

Reply = Callable[[Request], Any]


def user_text(request: Request) -> str:
    """The user message of a request."""
    return next(m.content for m in request.messages if m.role == "user")


def shown(request: Request, label: str) -> str:
    """The text of ``Answer <label>`` as shown in the prompt."""
    text = user_text(request)
    match = re.search(rf"## Answer {label}\n(`{{3,}})\n(.*?)\n\1", text, re.S)
    assert match, f"no Answer {label} in prompt"
    return match.group(2)


def user_turns(request: Request) -> int:
    """The number of user turns in a request (its system message not counted)."""
    return sum(m.role == "user" for m in request.messages)


def turn_reply(request: Request) -> str:
    """The default reply: ``reply <n>`` for a request with n user turns."""
    return f"reply {user_turns(request)}"


def criterion_ids(request: Request) -> list[str]:
    """The criterion ids listed in a criterion-judging or pointwise prompt."""
    section = user_text(request).split("## Criteria", 1)[1]
    return re.findall(r"^(c[\d.]+): ", section, re.M)


class ScriptedBackend:
    """A :class:`prefjudge.backends.Backend` whose replies come from a Python function.

    Args:
        reply: The model: a function of the request returning the reply, a string (the
            text) or any other JSON value (sent as its JSON text), or None to fail the
            request (error ``failure``, kind ``request_failed``, as a call that timed out).
            Default: :func:`turn_reply`.
        model_id: The model's name in results (``Result.model``, selectors, verdicts).
        failure: The error of the requests ``reply`` answers None for.

    Attributes:
        requests: Every request, in the order they came.
        calls: The batches: one list of requests per ``generate`` call.
    """

    kind = "scripted"
    notice = None

    def __init__(self, reply: Reply | None = None, model_id: str = "scripted-judge", *,
                 failure: str = "request failed"):
        self.reply = reply or turn_reply
        self.model_id = model_id
        self.failure = failure
        self.usage = Usage()
        self.requests: list[Request] = []
        self.calls: list[list[Request]] = []

    def identity(self) -> dict:
        return {"backend": self.kind, "model": self.model_id, "endpoint": "scripted"}

    def fresh_calls(self):
        return contextlib.nullcontext()

    def generate(self, requests: Sequence[Request], *, on_result: Any = None) -> list[Result]:
        self.calls.append(list(requests))
        out = []
        for request in requests:
            self.requests.append(request)
            out.append(self._answer(request))
            if on_result:
                on_result(out[-1])
        return out

    def _answer(self, request: Request) -> Result:
        raw = self.reply(request)
        self.usage.requests += 1
        self.usage.model_calls += 1
        if raw is None:
            self.usage.errors += 1
            return Result(request_id=request.id, model=self.model_id, error=self.failure,
                          error_kind="request_failed", attempts=1)
        text = raw if isinstance(raw, str) else json.dumps(raw)
        result = Result(request_id=request.id, model=self.model_id, text=text, attempts=1,
                        prompt_tokens=len(user_text(request)) // 4, completion_tokens=10)
        if request.schema_model is not None:
            try:
                result.parsed = request.schema_model.model_validate_json(text)
            except ValidationError as exc:  # worded as the real backends word it
                result.error = "; ".join(
                    f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
                    for err in exc.errors()[:5])
                result.error_kind = "invalid_output"
                self.usage.errors += 1
        return result

    def close(self) -> None:
        pass

    def stage(self, name: str) -> list[Request]:
        """The requests of one stage (see :func:`stage_of`)."""
        return [r for r in self.requests if stage_of(r) == name]


STAGES = ("refined judging", "judging", "refine", "criteria", "synthesis", "monolithic",
          "pointwise", "rationale", "distil")


def stage_of(request: Request) -> str:
    """The stage a judge request belongs to, from its id (``<pair_id>:<stage>[:<order>]``)."""
    for name in STAGES:
        if f":{name}:" in request.id + ":" or request.id.startswith(f"{name}:"):
            return name
    raise AssertionError(f"unknown stage in request id {request.id!r}")
