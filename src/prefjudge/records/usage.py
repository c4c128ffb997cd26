"""Request counters: a backend's over its lifetime, and what one judged item cost."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, WrapSerializer

Count = Annotated[int, Field(ge=0, le=2**63 - 1)]
"""A counter as records hold it: a whole number from 0 to 2**63 - 1 (a file read back with
a negative or astronomically large count is refused with its line and field)."""


class Usage(BaseModel):
    """Request counters: a backend's over its lifetime, or what one judged item cost.

    Backends count every field; the per-item cost of a verdict or persona comparison is
    counted from results (:class:`prefjudge.judge.common.Ledger`), which carry no
    transport retries or invalid replies, so :data:`ItemCost` leaves those two out of the
    record while they are zero.

    Attributes:
        requests: Requests handled (one per backend request, cached or not).
        model_calls: Completions obtained from the model (cache misses, repairs included).
        cache_hits: Completions served from the cache (per item: requests answered
            entirely from the cache).
        prompt_tokens: Prompt tokens of the model calls.
        completion_tokens: Completion tokens of the model calls.
        retries: Transport retries (timeouts, 429, 5xx).
        invalid_outputs: Structured replies that failed validation (retried or not).
        errors: Requests that ended in an error.
    """

    requests: Count = 0
    model_calls: Count = 0
    cache_hits: Count = 0
    prompt_tokens: Count = 0
    completion_tokens: Count = 0
    retries: Count = 0
    invalid_outputs: Count = 0
    errors: Count = 0

    def as_dict(self) -> dict[str, int]:
        """Return every counter as a plain dict, in field order."""
        return {name: getattr(self, name) for name in type(self).model_fields}


_BACKEND_COUNTERS = ("retries", "invalid_outputs")


def _item_cost(usage: Usage, handler: SerializerFunctionWrapHandler) -> Any:
    data = handler(usage)
    if isinstance(data, dict):
        for name in _BACKEND_COUNTERS:
            if not data.get(name):
                data.pop(name, None)
    return data


ItemCost = Annotated[Usage, WrapSerializer(_item_cost)]
"""What judging one item cost: a :class:`Usage` written without ``retries`` and
``invalid_outputs`` while they are zero (the per-item ledger does not count them)."""
