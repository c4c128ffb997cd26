"""Pair records: two responses to one instruction, to be judged (``pair`` → ``judge``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from prefjudge.records.names import ModelName, Side
from prefjudge.records.tasks import InstructionRef

_CODE_FLAGS = ("response_a_is_code", "response_b_is_code")


class Pair(BaseModel):
    """Two responses to one instruction, to be judged (optionally with a human label).

    Attributes:
        pair_id: Unique key of the pair within its file (resume key of ``prefjudge judge``).
        task_id: The task both responses answer.
        instruction: What the user asked for (the prompt both models saw).
        response_a: The first response (code or a full reply).
        response_b: The second response.
        model_a: Who wrote ``response_a`` (``A`` when unknown).
        model_b: Who wrote ``response_b`` (``B`` when unknown).
        label: The human preference, when known: ``A``, ``B`` or ``tie``.
        votes: Individual human votes behind ``label`` (``A``/``B``/``tie`` each), if any.
        aspect_votes: Per-aspect human votes (aspect → ``A``/``B``/``tie``), if the data has them.
        category: A grouping for per-category guidance and reports (e.g. ``bigcodebench``).
        evidence_a: Deterministic facts about ``response_a`` (verifier and test results).
        evidence_b: Deterministic facts about ``response_b``.
        source: Which loader produced the pair and from what file.
        criterion: What decides the pair for the evidence judge: one evidence kind, or an
            ordered combination separated by commas (``correctness,efficiency``); set by
            loaders that know it (CodePrefBench: the split).
        instructions: The instructions both responses were asked to follow (pairs joined
            from generations of augmented tasks), for the evidence judge's checks.
        response_a_is_code: ``response_a`` is code as a whole, never Markdown to find code
            in (joined from a sample file's ``solution``: see
            :attr:`Generation.response_is_code`); written only when true.
        response_b_is_code: The same for ``response_b``.
    """

    model_config = ConfigDict(extra="allow")

    pair_id: str
    task_id: str
    instruction: str
    response_a: str
    response_b: str
    model_a: ModelName = "A"
    model_b: ModelName = "B"
    label: Side | None = None
    votes: list[Side] = Field(default_factory=list)
    aspect_votes: dict[str, Side] = Field(default_factory=dict)
    category: str | None = None
    evidence_a: list[str] = Field(default_factory=list)
    evidence_b: list[str] = Field(default_factory=list)
    source: str | None = None
    criterion: str | None = None
    instructions: list[InstructionRef] = Field(default_factory=list)
    response_a_is_code: bool = Field(default=False, strict=True)
    response_b_is_code: bool = Field(default=False, strict=True)

    @model_serializer(mode="wrap")
    def _code_flags_when_true(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Write ``response_a_is_code``/``response_b_is_code`` only when true."""
        data = handler(self)
        for name in _CODE_FLAGS:
            if data.get(name) is False:
                del data[name]
        return data

    def is_code(self, side: Literal["A", "B"]) -> bool:
        """Whether that side's response is code as a whole (never fence-extracted)."""
        return self.response_a_is_code if side == "A" else self.response_b_is_code
