"""prefjudge's own generation records (``prefjudge generate``; a ``response`` field).

They are validated as :class:`~prefjudge.records.Generation` as they are (no converter);
a line with ``response`` and a generator's field but no ``model`` cannot be told apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prefjudge.scoring.sample_formats.registry import (
    SampleFormat,
    expected_samples,
    register_sample_format,
)

_SAMPLE_FIELDS = ("solution", "completion", "full_response", "if_info")
"""Fields of generators' samples that a prefjudge record does not have."""


def _detect(record: Mapping[str, Any]) -> str | None:
    return "response" if "response" in record else None


def _ambiguous(record: Mapping[str, Any]) -> str | None:
    others = [name for name in _SAMPLE_FIELDS if name in record]
    if not others or "model" in record:
        return None
    return (
        f"cannot tell the format: the line has 'response' (prefjudge generation) "
        f"and {others[0]!r} (a generator's sample) but no 'model'; {expected_samples()}"
    )


FORMAT = register_sample_format(
    SampleFormat(
        name="prefjudge",
        description="prefjudge generation records (a 'response' field)",
        expected="prefjudge generations ('response')",
        detect=_detect,
        convert=None,
        order=10,
        marks=("response",),
        ambiguous=_ambiguous,
    )
)
