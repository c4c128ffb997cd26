"""Pydantic records that cross stage boundaries.

Every stage reads and writes these as JSONL, so any stage can run alone from files.
Records that carry user data (generations, tasks) keep unknown fields and pass them
through untouched; generations and their turns are written back with the keys, and in
the order, they were read with.

The contracts between stages: :class:`Generation` (``generate`` → ``score``; the
protocol fields ``protocol``, ``k``, ``sample``, ``turns`` and ``error`` are typed, and
required in :class:`ProtocolGeneration`), :class:`ScoredSample` (``score`` →
``report``), :class:`Battle` (``judge`` → ``rank``: :meth:`Verdict.battle`, and
:func:`battle_of` for a verdict read from a file: the one rule of what counts) and
:class:`Usage` (a backend's counters and one judged item's cost).

The records live in one module per job (:mod:`prefjudge.records.names`, ``ids``,
``tasks``, ``generations``, ``scored``, ``battles``, ``pairs``, ``usage``, ``verdicts``,
``personas``); every name is exported here, where stages import it from. A record module
is imported when one of its names is first asked for (module ``__getattr__``), so a stage
that needs pairs and verdicts does not pay for the task, generation or persona models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefjudge.lazy import lazy_getattr

if TYPE_CHECKING:
    from prefjudge.records.battles import (
        Battle,
        Rating,
    )
    from prefjudge.records.generations import (
        Generation,
        ProtocolGeneration,
        ProtocolName,
        Turn,
        generation_failed,
    )
    from prefjudge.records.ids import (
        generation_id,
        journal_key,
    )
    from prefjudge.records.names import (
        METHOD_NAME_PATTERN,
        SIDE_WINNERS,
        CheckStatus,
        CriterionOutcome,
        EvidenceKind,
        FactOutcome,
        FuncStatus,
        JudgeMethodName,
        ModelName,
        Side,
        TestFormat,
        Winner,
        check_method_name,
        model_name_warnings,
        normalize_model_name,
    )
    from prefjudge.records.pairs import (
        Pair,
    )
    from prefjudge.records.personas import (
        DimensionVerdict,
        InputPreferences,
        OutputPreferences,
        Persona,
        PersonaComparison,
    )
    from prefjudge.records.scored import (
        SCORED_FIELDS,
        CheckResult,
        FuncResult,
        ScoredSample,
        SetResult,
        is_scored_record,
    )
    from prefjudge.records.tasks import (
        MOST_PER_TASK,
        AugmentedTask,
        AugmentStats,
        InstructionRef,
        InstructionSpec,
        ParamSpec,
        StdioCase,
        Task,
        VerifierSpec,
    )
    from prefjudge.records.usage import (
        Count,
        ItemCost,
        Usage,
    )
    from prefjudge.records.verdicts import (
        BATTLE_FIELDS,
        NO_EVIDENCE,
        VERDICT_KEYS,
        Criterion,
        CriterionVerdict,
        Fact,
        Verdict,
        battle_of,
        is_verdict_row,
    )

_HOMES: dict[str, tuple[str, ...]] = {
    "battles": (
        "Battle",
        "Rating",
    ),
    "generations": (
        "Generation",
        "ProtocolGeneration",
        "ProtocolName",
        "Turn",
        "generation_failed",
    ),
    "ids": (
        "generation_id",
        "journal_key",
    ),
    "names": (
        "METHOD_NAME_PATTERN",
        "SIDE_WINNERS",
        "CheckStatus",
        "CriterionOutcome",
        "EvidenceKind",
        "FactOutcome",
        "FuncStatus",
        "JudgeMethodName",
        "ModelName",
        "Side",
        "TestFormat",
        "Winner",
        "check_method_name",
        "model_name_warnings",
        "normalize_model_name",
    ),
    "pairs": ("Pair",),
    "personas": (
        "DimensionVerdict",
        "InputPreferences",
        "OutputPreferences",
        "Persona",
        "PersonaComparison",
    ),
    "scored": (
        "SCORED_FIELDS",
        "CheckResult",
        "FuncResult",
        "ScoredSample",
        "SetResult",
        "is_scored_record",
    ),
    "tasks": (
        "MOST_PER_TASK",
        "AugmentedTask",
        "AugmentStats",
        "InstructionRef",
        "InstructionSpec",
        "ParamSpec",
        "StdioCase",
        "Task",
        "VerifierSpec",
    ),
    "usage": (
        "Count",
        "ItemCost",
        "Usage",
    ),
    "verdicts": (
        "BATTLE_FIELDS",
        "NO_EVIDENCE",
        "VERDICT_KEYS",
        "Criterion",
        "CriterionVerdict",
        "Fact",
        "Verdict",
        "battle_of",
        "is_verdict_row",
    ),
}
"""Each record module and the names it exports here (checked against :data:`__all__` by
``tests/judge/test_h8_lazy_imports.py``)."""

_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__getattr__ = lazy_getattr(__name__, {name: f"{__name__}.{module}"
                                      for name, module in _HOME_OF.items()})


def __dir__() -> list[str]:
    """The module's names, the lazily imported records included."""
    return sorted({*globals(), *_HOME_OF})


__all__ = [
    "BATTLE_FIELDS",
    "METHOD_NAME_PATTERN",
    "MOST_PER_TASK",
    "NO_EVIDENCE",
    "SCORED_FIELDS",
    "SIDE_WINNERS",
    "VERDICT_KEYS",
    "AugmentStats",
    "AugmentedTask",
    "Battle",
    "CheckResult",
    "CheckStatus",
    "Count",
    "Criterion",
    "CriterionOutcome",
    "CriterionVerdict",
    "DimensionVerdict",
    "EvidenceKind",
    "Fact",
    "FactOutcome",
    "FuncResult",
    "FuncStatus",
    "Generation",
    "InputPreferences",
    "InstructionRef",
    "InstructionSpec",
    "ItemCost",
    "JudgeMethodName",
    "ModelName",
    "OutputPreferences",
    "Pair",
    "ParamSpec",
    "Persona",
    "PersonaComparison",
    "ProtocolGeneration",
    "ProtocolName",
    "Rating",
    "ScoredSample",
    "SetResult",
    "Side",
    "StdioCase",
    "Task",
    "TestFormat",
    "Turn",
    "Usage",
    "Verdict",
    "VerifierSpec",
    "Winner",
    "battle_of",
    "check_method_name",
    "generation_failed",
    "generation_id",
    "is_scored_record",
    "is_verdict_row",
    "journal_key",
    "model_name_warnings",
    "normalize_model_name",
]
