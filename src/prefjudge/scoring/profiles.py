"""Verification profiles: the paper's verdicts by default, a hardened profile on request.

``reference`` (the default) gives the verdicts of the SWE-IF authors' own checkers
(maszhongming/SWE-IF, ``swe_if/evaluator.py`` and ``swe_if/code_generator.py``, commit
767d190) on the same response with the same Ruff binary, so IF numbers stay comparable with
the paper's. ``strict`` is prefjudge's hardened reading of the same 30 instructions. What
differs, item by item (also in the README):

- **code checked** (code-level checks and unit tests): reference, the first fenced block
  with non-blank content, of any language, else the whole response; strict, the last
  ```` ```python ````/``py``/bare block, else the whole response.
- **``# noqa`` comments**: reference honours them (a response can silence a rule); strict
  ignores them (``--ignore-noqa``).
- **isort action comments** (``# isort: skip_file``, ``# isort: off``, ``# isort: skip``,
  ``# isort: split``, their ``# ruff: isort: ...`` forms): reference honours them, as Ruff
  does (a response can exempt its imports from style_2); Ruff's ``--ignore-noqa`` leaves
  them in force, so strict neutralises them in the code before any check reads it
  (:func:`~prefjudge.scoring.verify.extract.neutralise_isort_actions`).
- **Ruff target version**: reference leaves it to Ruff (the newest syntax parses);
  strict pins ``py311``.
- **style_1 (PEP 8)**: reference uses Ruff's defaults (E501 at 88, no W505); strict PEP 8's
  numbers (E501 at 79, W505 at 72).
- **doc_4 (pure code)**: an empty response passes in reference, fails in strict.
- **doc_6 (code then JSON)**: reference wants exactly a ```` ```python ```` block then a
  ```` ```json ```` block with only whitespace around, any JSON value; strict a Python block
  (``python``, ``py``, bare) followed later by a ``json`` block holding an object, prose
  allowed.

Kept in both (they never turn a verdict into its opposite): a check that cannot run
(Ruff crash, invalid setting, code Python cannot parse where Ruff can) is ``error`` and
leaves the denominators; Ruff runs isolated from user and project configuration; the
``df`` part of library_2 flags exactly what Ruff's removed PD901 flagged.

Per-instruction differences are data: a verifier in ``rubrics/vericode.yaml`` may carry
``profiles: {strict: {...}}`` overrides of its fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Extraction = Literal["first_fence", "last_python_block"]


@dataclass(frozen=True)
class Profile:
    """How instruction checks read a response and run Ruff.

    Attributes:
        name: ``reference`` or ``strict``; recorded in every scored record's ``meta``.
        extraction: Which code code-level checks (and unit tests) look at.
        honour_noqa: Whether ``# noqa`` comments silence Ruff rules.
        honour_isort_actions: Whether isort action comments (``# isort: skip_file`` ...)
            exempt imports from Ruff's import sorting.
        target_version: Ruff ``target-version`` (None: Ruff's own choice).
        summary: One line for the run summary.
    """

    name: str
    extraction: Extraction
    honour_noqa: bool
    honour_isort_actions: bool
    target_version: str | None
    summary: str


REFERENCE = Profile(
    name="reference",
    extraction="first_fence",
    honour_noqa=True,
    honour_isort_actions=True,
    target_version=None,
    summary="the SWE-IF authors' verdicts (first fenced block, noqa honoured, Ruff defaults)",
)
STRICT = Profile(
    name="strict",
    extraction="last_python_block",
    honour_noqa=False,
    honour_isort_actions=False,
    target_version="py311",
    summary="hardened (last Python block, noqa and isort actions ignored, PEP 8 79/72, "
    "target py311)",
)
PROFILES: dict[str, Profile] = {REFERENCE.name: REFERENCE, STRICT.name: STRICT}
DEFAULT_PROFILE = REFERENCE.name
"""What ``score`` checks with: the paper's verdicts, comparable with its numbers."""
JUDGE_PROFILE = STRICT.name
"""What the evidence judge checks instructions with: a response cannot silence a check."""


def get_profile(profile: str | Profile | None = None) -> Profile:
    """The profile with this name (the default profile for None).

    Args:
        profile: A name, a profile (returned as is) or None.

    Returns:
        The profile.

    Raises:
        ValueError: For an unknown name.
    """
    if isinstance(profile, Profile):
        return profile
    name = DEFAULT_PROFILE if profile is None else profile
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(PROFILES)
        raise ValueError(f"unknown verification profile {name!r} (known: {known})") from None
