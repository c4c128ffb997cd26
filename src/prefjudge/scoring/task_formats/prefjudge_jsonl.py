"""The project's own task JSONL: records shaped like :class:`~prefjudge.records.Task`.

The catch-all format, tried last: any row with ``test_format``, or with ``task_id`` and
``prompt``, is validated as a Task.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prefjudge.records import Task
from prefjudge.scoring.task_formats.registry import TaskFormat, register_task_format


def _is_prefjudge_task(record: Mapping[str, Any]) -> bool:
    return "test_format" in record or ("task_id" in record and "prompt" in record)


FORMAT = register_task_format(
    TaskFormat(
        name="prefjudge",
        title="prefjudge",
        detect=_is_prefjudge_task,
        convert=Task.model_validate,
        order=90,
        test_formats=("bigcodebench", "humaneval", "evalplus", "stdio", "none"),
    )
)
