"""The ids records are known by: a generation's id and its key in a journal."""

from __future__ import annotations


def generation_id(
    task_id: str, protocol: str | None, k: int | None, sample: int | None = 0
) -> str:
    """Return the id of one generation: ``{task_id}::{protocol}::k{k}::s{sample}``.

    The one place this id is built: ``prefjudge generate`` names its records with it,
    ``prefjudge score`` names sample-file generations with it, and joining two models'
    generations labels its keys with it. A part given as None is left out (a join on
    fewer fields labels its keys ``{task_id}::k{k}``, ...).

    Args:
        task_id: The task answered.
        protocol: ``single``, ``multi`` (or another protocol's name), or None.
        k: Number of instructions asked for, or None.
        sample: Sample index, or None.

    Returns:
        The id, e.g. ``BigCodeBench/13::multi::k3::s0``.
    """
    parts = (("", protocol), ("k", k), ("s", sample))
    return task_id + "".join(f"::{prefix}{value}" for prefix, value in parts if value is not None)


def journal_key(model: str, record_id: str) -> str:
    """Return the journal key of a record that has an id: ``{model}::{id}``.

    The resume key of ``prefjudge generate`` and ``prefjudge score``: an id is unique per
    model, so the model names the record among every model's.

    Args:
        model: The model that wrote the record.
        record_id: The record's id (:func:`generation_id` for ``generate`` output).

    Returns:
        The key.
    """
    return f"{model}::{record_id}"
