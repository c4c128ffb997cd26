"""Benchmark task formats: one module each, registered in :mod:`.registry` on import.

Importing this package registers the built-in formats (BigCodeBench, HumanEval and the
EvalPlus releases, LiveCodeBench, prefjudge task JSONL), in the order messages list
them. A new format is one module that calls :func:`register_task_format` (or decorates
its converter with :func:`task_format`), imported here or by the code that uses it.
"""

from __future__ import annotations

import importlib

from prefjudge.scoring.task_formats.registry import (
    TaskFormat,
    detect_task_format,
    detection_order,
    expected_titles,
    file_task_format,
    get_task_format,
    is_task_record,
    register_task_format,
    task_format,
    task_format_names,
    task_formats,
    task_hub_datasets,
    unregister_task_format,
)

__all__ = [
    "TaskFormat",
    "detect_task_format",
    "detection_order",
    "expected_titles",
    "file_task_format",
    "get_task_format",
    "is_task_record",
    "register_task_format",
    "task_format",
    "task_format_names",
    "task_formats",
    "task_hub_datasets",
    "unregister_task_format",
]

BUILTIN_MODULES = ("bigcodebench", "humaneval", "livecodebench", "prefjudge_jsonl")
"""The built-in formats' modules, imported (so registered) in this order: the order
messages and listings name the formats in."""

for _module in BUILTIN_MODULES:
    importlib.import_module(f"{__name__}.{_module}")
