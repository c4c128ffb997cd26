"""Join two models' generation files into pairs of responses to the same prompt.

:func:`join_generations` matches the generations of two files: on ``task_id``, and on
``protocol``, ``k`` and ``sample`` too when the records carry them (``prefjudge generate``
output, and sample files, whose ``sample`` counts the lines of a task id), so each pair
compares the two models on the same prompt. The files are read as ``prefjudge score``
reads them (:func:`prefjudge.scoring.formats.read_generations`);
:func:`pairs_from_generations` reads and joins two of them, stopping at the first problem.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel

from prefjudge.io import InputError, InputIssue
from prefjudge.records import Generation, Pair, generation_failed, generation_id
from prefjudge.scoring.formats import read_generations

JOIN_FIELDS: tuple[str, ...] = ("protocol", "k", "sample")
"""Fields of a ``prefjudge generate`` record that, with ``task_id``, name one generation."""

_Key = tuple[Any, ...]


class Joined(NamedTuple):
    """What :func:`join_generations` makes of two generation files.

    Attributes:
        pairs: The pairs to judge, in side A's order.
        notes: Human-readable notes (keys in one file only, repeated generations, join
            fields some generations lack, pairs waiting on failed generations).
        issues: One per joined key whose instruction is unknown (the key is left out).
        waiting: Ids of the pairs left out because a side's model call failed
            (:func:`~prefjudge.records.generation_failed`): never judged, they wait for
            that generation to be made again (``--retry-errors``).
    """

    pairs: list[Pair]
    notes: list[str]
    issues: list[InputIssue]
    waiting: list[str]


def _listing(ids: list[str], limit: int = 20) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", ... and {len(ids) - limit} more" if len(ids) > limit else "")


def join_values(record: BaseModel) -> dict[str, Any]:
    """The :data:`JOIN_FIELDS` a record was given, with their values.

    A field counts when the record was given it: as an extra field (a :class:`Pair`, or a
    record model without the field), or as a declared field set from the input or the
    constructor (a default value does not count: a record without ``sample`` has none).

    Args:
        record: A generation, scored sample or pair.

    Returns:
        Field → value, for each join field given with a string or a number (None or any
        other value is left out), in :data:`JOIN_FIELDS` order.
    """
    extra = record.model_extra or {}
    values = {}
    for name in JOIN_FIELDS:
        if name in extra:
            value = extra[name]
        elif name in record.model_fields_set:
            value = getattr(record, name)
        else:
            continue
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            values[name] = value
    return values


def _field(gen: Generation, name: str) -> Any:
    return join_values(gen).get(name)


def _join_fields(records: list[list[tuple[int, Generation]]], notes: list[str]) -> tuple[str, ...]:
    """The :data:`JOIN_FIELDS` that every generation of every file carries.

    A field some generations carry and others lack cannot name a generation; it is left out
    of the join and a note says so.
    """
    gens = [gen for file in records for _, gen in file]
    used = tuple(f for f in JOIN_FIELDS if gens and all(_field(g, f) is not None for g in gens))
    partial = [
        f for f in JOIN_FIELDS if f not in used and any(_field(g, f) is not None for g in gens)
    ]
    if partial:
        notes.append(
            f"{', '.join(partial)} not on every generation of both files: the join ignores "
            f"{'it' if len(partial) == 1 else 'them'} (joined on task_id"
            + "".join(f", {f}" for f in used)
            + ")"
        )
    return used


def _key(gen: Generation, fields: tuple[str, ...]) -> _Key:
    return (gen.task_id, *(_field(gen, f) for f in fields))


def _label(key: _Key, fields: tuple[str, ...]) -> str:
    """The key's :func:`~prefjudge.records.generation_id`, of the fields used.

    With all three fields this is the ``prefjudge generate`` record id
    (``{task_id}::{protocol}::k{k}::s{sample}``); a field not used is left out.
    """
    used = dict(zip(fields, key[1:], strict=True))
    return generation_id(str(key[0]), used.get("protocol"), used.get("k"), used.get("sample"))


def _first_per_key(
    path: str | os.PathLike[str],
    records: list[tuple[int, Generation]],
    fields: tuple[str, ...],
    notes: list[str],
) -> dict[_Key, tuple[int, Generation]]:
    first: dict[_Key, tuple[int, Generation]] = {}
    repeated: Counter[str] = Counter()
    for number, gen in records:
        key = _key(gen, fields)
        if key in first:
            repeated[_label(key, fields)] += 1
        else:
            first[key] = (number, gen)
    if repeated:
        notes.append(
            f"{path}: {len(repeated)} {_unit(fields)}(s) have several generations; the first "
            f"of each was used: {_listing(sorted(repeated))}"
        )
    return first


def _unit(fields: tuple[str, ...]) -> str:
    return "task id" if not fields else "/".join(("task_id", *fields)) + " key"


def pairs_from_generations(
    path_a: str | os.PathLike[str],
    path_b: str | os.PathLike[str],
    *,
    tasks: Mapping[str, str] | None = None,
) -> tuple[list[Pair], list[str]]:
    """Pair two models' generations of the same prompts, stopping at the first bad line.

    Both files are read as ``prefjudge score`` reads one
    (:func:`~prefjudge.scoring.formats.read_generations`: prefjudge records, EvalPlus,
    BigCodeBench or SWE-IF samples) and joined by :func:`join_generations`.

    Args:
        path_a: Generation JSONL of the first model.
        path_b: Generation JSONL of the second model.
        tasks: Prompt text by task id.

    Returns:
        ``(pairs, notes)``: see :func:`join_generations`.

    Raises:
        InputError: On an invalid generation line, or when a task's instruction is known
            neither from ``tasks`` nor from a ``prompt`` field (names file, line, task id).
    """
    read = [read_generations(path) for path in (path_a, path_b)]
    issues = [issue for _, found in read for issue in found]
    if issues:
        raise InputError(issues)
    joined = join_generations((path_a, read[0][0]), (path_b, read[1][0]), prompts=tasks)
    if joined.issues:
        raise InputError(joined.issues)
    return joined.pairs, joined.notes


def join_generations(
    side_a: tuple[str | os.PathLike[str], list[tuple[int, Generation]]],
    side_b: tuple[str | os.PathLike[str], list[tuple[int, Generation]]],
    *,
    prompts: Mapping[str, str] | None = None,
) -> Joined:
    """Pair two models' generations of the same prompts.

    Generations are joined on ``task_id`` and on each of ``protocol``, ``k`` and ``sample``
    that every generation of both files carries (``prefjudge generate`` output carries all
    three, so single-turn k=3 sample 0 of one model meets single-turn k=3 sample 0 of the
    other; EvalPlus samples carry ``sample`` too, counted per task id); the first
    generation of a key in each file is used. The instruction is ``prompts[task_id]`` when
    given, else the generation's ``prompt`` field (of side A's generation, then side B's).
    ``pair_id`` is ``f"{task_id}:{model_a}:{model_b}"`` when joined on ``task_id`` alone,
    else ``f"{task_id}::{protocol}::k{k}::s{sample}:{model_a}:{model_b}"`` (with the parts
    of the fields used), and the pair carries the fields used as extra fields
    (``protocol``, ``k``, ``sample``) for
    :func:`~prefjudge.judge.pairs.evidence.attach_evidence`. Pairs follow side A's order.

    Args:
        side_a: The first model's file and its valid generations with their line numbers
            (from :func:`~prefjudge.scoring.formats.read_generations`).
        side_b: The second model's file and generations.
        prompts: Prompt text by task id.

    A key where either side's model call failed is no pair to judge: it is left out and
    listed in ``waiting`` (with a note), until that generation is made again.

    Returns:
        ``(pairs, notes, issues, waiting)`` (:class:`Joined`): the pairs; human-readable
        notes on keys found in only one file, on repeated generations, on join fields only
        some generations carry and on pairs waiting; one issue per joined key whose
        instruction is known neither from ``prompts`` nor from a ``prompt`` field (naming
        file, line and task id; the key is left out); and the ids of the pairs waiting on a
        failed generation.
    """
    (path_a, records_a), (path_b, records_b) = side_a, side_b
    notes: list[str] = []
    fields = _join_fields([records_a, records_b], notes)
    gens_a = _first_per_key(path_a, records_a, fields, notes)
    gens_b = _first_per_key(path_b, records_b, fields, notes)
    for path, mine, other in ((path_a, gens_a, gens_b), (path_b, gens_b, gens_a)):
        only = [_label(k, fields) for k in mine if k not in other]
        if only:
            notes.append(f"{len(only)} {_unit(fields)}(s) only in {path}: {_listing(only)}")
    joined = Joined([], notes, [], [])
    for key, (line_a, gen_a) in gens_a.items():
        if key in gens_b:
            _join_one(joined, key, fields, (path_a, line_a, gen_a), (path_b, gens_b[key][1]),
                      prompts)
    if joined.waiting:
        notes.append(
            f"{len(joined.waiting)} pair(s) not judged: a side's model call failed, so there "
            "is no answer to judge; they wait for it to be made again (--retry-errors): "
            f"{_listing(joined.waiting)}"
        )
    return joined


def _join_one(
    joined: Joined,
    key: _Key,
    fields: tuple[str, ...],
    side_a: tuple[str | os.PathLike[str], int, Generation],
    side_b: tuple[str | os.PathLike[str], Generation],
    prompts: Mapping[str, str] | None,
) -> None:
    """Add the pair of one key to ``joined``: a pair, a pair waiting, or an issue."""
    (path_a, line_a, gen_a), (path_b, gen_b) = side_a, side_b
    pair_id = f"{_label(key, fields)}:{gen_a.model}:{gen_b.model}"
    if generation_failed(gen_a) or generation_failed(gen_b):
        joined.waiting.append(pair_id)
        return
    task_id = gen_a.task_id
    instruction = _instruction(task_id, prompts, gen_a, gen_b)
    if instruction is None:
        message = (
            f"no instruction for task {task_id!r}: name its tasks with --tasks (the "
            "benchmark's task file or dataset), or give the generation a 'prompt' field"
            if prompts is None
            else f"no instruction for task {task_id!r}: it is in none of the --tasks "
            "sources given (add its benchmark with another --tasks), and neither "
            "generation has a 'prompt' field"
        )
        joined.issues.append(InputIssue(str(path_a), line_a, "prompt", message))
        return
    joined.pairs.append(
        Pair(
            pair_id=pair_id,
            task_id=task_id,
            instruction=instruction,
            response_a=gen_a.response,
            response_b=gen_b.response,
            model_a=gen_a.model,
            model_b=gen_b.model,
            source=f"generations:{Path(path_a).name}+{Path(path_b).name}",
            instructions=gen_a.instructions if gen_a.instructions == gen_b.instructions else [],
            response_a_is_code=gen_a.response_is_code,
            response_b_is_code=gen_b.response_is_code,
            **dict(zip(fields, key[1:], strict=True)),
        )
    )


def _instruction(
    task_id: str, prompts: Mapping[str, str] | None, gen_a: Generation, gen_b: Generation
) -> str | None:
    """A pair's instruction: its task's prompt, else a generation's ``prompt`` field."""
    instruction = prompts.get(task_id) if prompts is not None else None
    if instruction is None:
        for gen in (gen_a, gen_b):
            prompt = (gen.model_extra or {}).get("prompt")
            if isinstance(prompt, str):
                return prompt
    return instruction
