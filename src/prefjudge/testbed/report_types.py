"""The parts of a ``prefjudge report`` page (:class:`Report`, sections, tables), cell formats."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

PROTOCOL_NAMES = {"single": "single-turn", "multi": "multi-turn"}


@dataclass
class ReportTable:
    """One table of a section.

    Attributes:
        caption: What the table shows.
        data: The numbers (raw metric frame).
        display: The same rows formatted for reading (strings).
    """

    caption: str
    data: pd.DataFrame
    display: pd.DataFrame


@dataclass
class ReportSection:
    """A section of the report.

    Attributes:
        key: Stable identifier (used as the HTML anchor).
        title: Heading.
        text: A short explanation shown under the heading.
        tables: Tables, in order.
        figure: PNG bytes of the section's plot, or None.
    """

    key: str
    title: str
    text: str = ""
    tables: list[ReportTable] = field(default_factory=list)
    figure: bytes | None = None

    def table(self, caption_start: str) -> ReportTable:
        """The first table whose caption starts with ``caption_start``.

        Raises:
            KeyError: When there is none.
        """
        for table in self.tables:
            if table.caption.startswith(caption_start):
                return table
        raise KeyError(caption_start)


@dataclass
class Report:
    """A whole report: a title, a few facts about the input, and sections."""

    title: str
    facts: list[str] = field(default_factory=list)
    sections: list[ReportSection] = field(default_factory=list)

    def section(self, key: str) -> ReportSection:
        """The section with this key.

        Raises:
            KeyError: When there is none.
        """
        for section in self.sections:
            if section.key == key:
                return section
        raise KeyError(key)


def _ci(value: float, lower: float, upper: float, *, scale: float = 1.0, digits: int = 3) -> str:
    if pd.isna(value):
        return "—"
    text = f"{value * scale:.{digits}f}"
    if pd.isna(lower) or pd.isna(upper):
        return text
    return f"{text} [{lower * scale:.{digits}f}, {upper * scale:.{digits}f}]"


def _fmt(value: Any, digits: int = 3) -> str:
    if isinstance(value, float | np.floating):
        return "—" if np.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def _plain(frame: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """Every cell as a string; floats with ``digits`` decimals."""
    return frame.map(lambda v: _fmt(v, digits)) if len(frame) else frame.astype(str)


def _protocol_name(protocol: str) -> str:
    return PROTOCOL_NAMES.get(protocol, protocol)
