"""Persona records: a user profile, and two models compared for one user per dimension."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from prefjudge.paths import check_path_name
from prefjudge.records.names import ModelName, Side
from prefjudge.records.usage import ItemCost, Usage


class InputPreferences(BaseModel):
    """How a user writes prompts (what a persona rewrite imitates).

    Attributes:
        expertise: ``beginner``, ``intermediate``, ``advanced`` or ``expert``.
        verbosity: ``terse``, ``moderate`` or ``detailed``.
        tone: How the user sounds (e.g. "casual, a little unsure").
        mentions: What the user tends to mention (their goal, constraints, context).
        avoids: What the user leaves out or would not know to say.
    """

    model_config = ConfigDict(extra="forbid")

    expertise: Literal["beginner", "intermediate", "advanced", "expert"]
    verbosity: Literal["terse", "moderate", "detailed"]
    tone: str = Field(min_length=1)
    mentions: list[str] = Field(default_factory=list)
    avoids: list[str] = Field(default_factory=list)


class OutputPreferences(BaseModel):
    """What a user values in an answer (what user-aware judging applies).

    Attributes:
        values: What makes an answer good for this user, most important first.
        dislikes: What makes an answer worse for this user.
        explanation: How much explanation the user wants: ``none``, ``brief`` or ``thorough``.
        code_style: Notes on the code the user wants to receive.
        priorities: Dimension id → weight 1–5 (how much the user cares; 3 when absent).
    """

    model_config = ConfigDict(extra="forbid")

    values: list[str] = Field(min_length=1)
    dislikes: list[str] = Field(default_factory=list)
    explanation: Literal["none", "brief", "thorough"] = "brief"
    code_style: list[str] = Field(default_factory=list)
    priorities: dict[str, int] = Field(default_factory=dict)


class Persona(BaseModel):
    """A user profile: how they ask (input) and how they judge (output).

    Attributes:
        name: Short identifier (file stem for the built-ins): a name that may become a
            file name (:func:`prefjudge.paths.check_path_name`).
        description: The free-text description the profile was built from.
        input: Input preferences.
        output: Output preferences.
    """

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, AfterValidator(check_path_name)]
    description: str = Field(min_length=1)
    input: InputPreferences
    output: OutputPreferences


class DimensionVerdict(BaseModel):
    """One dimension of a user-aware comparison, in both orders.

    Attributes:
        dimension: Dimension id (from ``rubrics/personas/dimensions.yaml``).
        forward: Verdict with A shown first.
        swapped: Verdict with B shown first, mapped back to A/B.
        outcome: Both orders agreeing, else ``tie``; None when an order is missing.
        reason_forward: The judge's reason in the forward order.
        reason_swapped: The judge's reason in the swapped order.
    """

    model_config = ConfigDict(extra="forbid")

    dimension: str
    forward: Side | None = None
    swapped: Side | None = None
    outcome: Side | None = None
    reason_forward: str = ""
    reason_swapped: str = ""


class PersonaComparison(BaseModel):
    """Two models' responses to one task compared per dimension for one user.

    Attributes:
        task_id: The task.
        condition: ``original`` (benchmark prompt) or ``persona`` (the persona's rewrite).
        persona: The persona whose preferences the judge applied, or None (generic judging).
        model_a: First model.
        model_b: Second model.
        status: ``ok``, or ``error`` (then ``error`` says why; nothing is counted).
        dimensions: One verdict per dimension.
        error: What went wrong.
        judge_model: The judge's model identity.
        cost: Requests, calls, cache hits and tokens spent.
        features_a: Style features of response A (as in :class:`Verdict`).
        features_b: Style features of response B.
        features_by: How the features were counted.
    """

    model_config = ConfigDict(extra="forbid")

    task_id: str
    condition: Literal["original", "persona"]
    persona: str | None = None
    model_a: ModelName
    model_b: ModelName
    status: Literal["ok", "error"] = "ok"
    dimensions: list[DimensionVerdict] = Field(default_factory=list)
    error: str | None = None
    judge_model: str = ""
    cost: ItemCost = Field(default_factory=Usage)
    features_a: dict[str, float] | None = None
    features_b: dict[str, float] | None = None
    features_by: str | None = None
