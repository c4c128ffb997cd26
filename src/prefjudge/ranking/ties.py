"""The tie policies of a Bradley–Terry fit: their names, what each does with a tie, the default.

The one place the names ``half``, ``drop`` and ``davidson`` are written; the fits
(:mod:`.pair_counts`, :mod:`.bt_fit`), ``rank --ties`` (:mod:`prefjudge.cli.defaults`) and
the experiment file's ``[rank] ties`` (:mod:`prefjudge.experiment.config`) read them from here.

Standard library only: the command line imports it for ``--help``.
"""

from __future__ import annotations

from typing import Literal, get_args

TiePolicy = Literal["half", "drop", "davidson"]
"""How a fit counts a tie:

* ``half``: half a win for each side (the default);
* ``drop``: left out, the fit sees the decisive battles only;
* ``davidson``: Davidson's (1970) tie model, with its own tie strength ν.
"""

TIE_POLICIES: tuple[str, ...] = get_args(TiePolicy)
"""The tie policies' names, in the order ``--ties`` and messages list them."""

DEFAULT_TIES: TiePolicy = "half"
"""The tie policy of ``rank`` and of an experiment's ``[rank]`` when none is named."""

_TIE_SHARES: dict[str, float] = {"half": 0.5, "drop": 0.0, "davidson": 0.0}
"""The share of a tie that a win matrix counts for each side, by policy."""


def tie_share(ties: str) -> float:
    """The share of a tie counted as a win for each side in a win matrix under ``ties``.

    Args:
        ties: A tie policy (not checked: see :func:`check_ties`).

    Returns:
        0.5 for ``half``; 0 otherwise (``drop`` and ``davidson`` leave ties out of it).
    """
    return _TIE_SHARES.get(ties, 0.0)


def counts_ties(ties: str) -> bool:
    """Whether tied battles count as comparisons under ``ties`` (every policy but ``drop``)."""
    return ties != "drop"


def check_ties(ties: object) -> str:
    """``ties`` when it names a tie policy.

    Args:
        ties: The name to check.

    Returns:
        The name.

    Raises:
        ValueError: Naming the tie policies, when it is not one of them.
    """
    if ties not in TIE_POLICIES:
        raise ValueError(f"unknown tie policy {ties!r}; expected one of {TIE_POLICIES}")
    return str(ties)
