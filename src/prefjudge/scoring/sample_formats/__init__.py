"""Sample (generation file) formats: one module each, registered in :mod:`.registry` on import.

Importing this package registers the built-in formats (prefjudge generations, EvalPlus,
BigCodeBench, SWE-IF and SWE-IF editing), in the order messages list them. A new format
is one module that calls :func:`register_sample_format`, imported here or by the code
that uses it.
"""

from __future__ import annotations

import importlib

from prefjudge.scoring.sample_formats.registry import (
    SampleConverter,
    SampleFormat,
    SampleParts,
    expected_samples,
    get_sample_format,
    register_sample_format,
    sample_detection_order,
    sample_format_names,
    sample_formats,
    sample_marks,
    unregister_sample_format,
)

__all__ = [
    "SampleConverter",
    "SampleFormat",
    "SampleParts",
    "expected_samples",
    "get_sample_format",
    "register_sample_format",
    "sample_detection_order",
    "sample_format_names",
    "sample_formats",
    "sample_marks",
    "unregister_sample_format",
]

BUILTIN_MODULES = ("prefjudge_records", "evalplus", "swe_if")
"""The built-in formats' modules, imported (so registered) in this order: the order
messages and listings name the formats in."""

for _module in BUILTIN_MODULES:
    importlib.import_module(f"{__name__}.{_module}")
