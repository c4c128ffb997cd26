"""A scripted in-process backend for unit tests of prompt assembly, parsing and bookkeeping.

It answers each request with a reply function of the request (which sees the rendered
prompt, exactly as a model would), validates structured replies with the request's schema
like the real backends do, and records every request. Real-model tests live in
``tests/backends/``.
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


def criterion_ids(request: Request) -> list[str]:
    """The criterion ids listed in a criterion-judging or pointwise prompt."""
    section = user_text(request).split("## Criteria", 1)[1]
    return re.findall(r"^(c[\d.]+): ", section, re.M)


class ScriptedBackend:
    """A :class:`prefjudge.backends.Backend` whose replies come from a Python function."""

    kind = "scripted"
    notice = None

    def __init__(self, reply: Reply, model_id: str = "scripted-judge"):
        self.reply = reply
        self.model_id = model_id
        self.usage = Usage()
        self.requests: list[Request] = []

    def identity(self) -> dict:
        return {"backend": self.kind, "model": self.model_id, "endpoint": "scripted"}

    def fresh_calls(self):
        return contextlib.nullcontext()

    def generate(self, requests: Sequence[Request], *, on_result: Any = None) -> list[Result]:
        out = []
        for request in requests:
            self.requests.append(request)
            raw = self.reply(request)
            text = raw if isinstance(raw, str) else json.dumps(raw)
            result = Result(request_id=request.id, model=self.model_id, text=text, attempts=1,
                            prompt_tokens=len(user_text(request)) // 4, completion_tokens=10)
            self.usage.requests += 1
            self.usage.model_calls += 1
            if request.schema_model is not None:
                try:
                    result.parsed = request.schema_model.model_validate_json(text)
                except ValidationError as exc:  # worded as the real backends word it
                    result.error = "; ".join(
                        f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
                        for err in exc.errors()[:5])
                    result.error_kind = "invalid_output"
                    self.usage.errors += 1
            out.append(result)
            if on_result:
                on_result(result)
        return out

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
