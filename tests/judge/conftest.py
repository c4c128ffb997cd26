"""Fixtures the judge's sandboxed fact tests share: one isolation plan and one zygote pool
per test module (the efficiency tests measure through them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from prefjudge.sandbox import resolve_isolation
from prefjudge.sandbox.isolation import IsolationPlan
from prefjudge.sandbox.zygote import ZygotePool


@pytest.fixture(scope="module")
def plan() -> IsolationPlan:
    return resolve_isolation()


@pytest.fixture(scope="module")
def pool(plan: IsolationPlan) -> Iterator[ZygotePool]:
    with ZygotePool(plan) as zygotes:
        yield zygotes
