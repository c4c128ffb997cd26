"""The design of a style-controlled fit: battles with their style features as a model matrix.

:func:`build_design` checks the ``--control`` features of each battle
(:func:`missing_features`, :func:`feature_issues`), standardises the normalised
differences ``(f_a − f_b) / (f_a + f_b + 1)`` and keeps the winners and weights;
:func:`design_matrix` is the sparse matrix of model indicators (times ln 10) and
style columns that :mod:`prefjudge.ranking.style_fit` fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from prefjudge.io import InputIssue
from prefjudge.ranking import bradley_terry as bt
from prefjudge.ranking.inputs import FEATURE_FIELDS, feature_column

CONTROLS: dict[str, tuple[str, ...]] = {
    "length": ("token_len",),
    "markdown": ("header_count", "list_count", "bold_count"),
    "style": ("token_len", "header_count", "list_count", "bold_count"),
}
"""What each ``--control`` takes out: the features of :mod:`prefjudge.features`."""


STYLE_TIES: tuple[str, ...] = ("half", "drop")


LOG10 = math.log(10.0)


_MAX_ISSUES = 200


def _check_control(control: str) -> tuple[str, ...]:
    if control not in CONTROLS:
        raise ValueError(f"unknown control {control!r}; expected one of {', '.join(CONTROLS)}")
    return CONTROLS[control]


def missing_features(frame: pd.DataFrame, control: str) -> np.ndarray:
    """Which battles lack a feature that ``control`` needs, on either side.

    Args:
        frame: Battles from :func:`~prefjudge.ranking.inputs.read_battles`.
        control: A key of :data:`CONTROLS`.

    Returns:
        A boolean mask, one entry per battle.
    """
    missing = np.zeros(len(frame), dtype=bool)
    for name in _check_control(control):
        for side in ("a", "b"):
            column = feature_column(side, name)
            if column not in frame.columns:
                return np.ones(len(frame), dtype=bool)
            missing |= frame[column].isna().to_numpy()
    return missing


def feature_issues(frame: pd.DataFrame, control: str, source: str) -> list[InputIssue]:
    """One issue per battle that lacks a feature ``control`` needs (the first 200).

    Args:
        frame: Battles with their ``line`` column.
        control: A key of :data:`CONTROLS`.
        source: The input file, to name in the issues.

    Returns:
        Issues naming file, line and field, then one counting the battles not listed.
    """
    needed = _check_control(control)
    issues: list[InputIssue] = []
    rows = np.flatnonzero(missing_features(frame, control))
    for index in rows[:_MAX_ISSUES]:
        row = frame.iloc[index]
        for side in ("a", "b"):
            absent = [n for n in needed if pd.isna(row.get(feature_column(side, n)))]
            if absent:
                issues.append(InputIssue(
                    source, int(row["line"]), FEATURE_FIELDS[side],
                    f"no {', '.join(absent)} (needed by --control {control}; write them with "
                    "prefjudge.features.features_record)",
                ))
    if len(rows) > _MAX_ISSUES:
        issues.append(InputIssue(source, 0, "", f"{len(rows) - _MAX_ISSUES} more battles "
                                 "without the features, not listed"))
    return issues


@dataclass(frozen=True)
class StyleDesign:
    """Battles ready for the style-controlled fit (one row per battle, not duplicated).

    Attributes:
        models: Model names, sorted; positions are the model indices.
        a: Index of ``model_a`` per battle.
        b: Index of ``model_b`` per battle.
        target: 1 (a won), 0 (b won) or 0.5 (tie: one copy each way).
        weight: Battle weight.
        features: Feature names, in column order of ``style``.
        style: Standardised normalised differences ``z``, shape ``(battles, features)``;
            a column of zeros for a feature that is not estimable.
        mean: Mean of each normalised difference before standardising.
        std: Its population standard deviation (0: not estimable).
    """

    models: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    target: np.ndarray
    weight: np.ndarray
    features: tuple[str, ...]
    style: np.ndarray
    mean: np.ndarray
    std: np.ndarray

    @property
    def n_models(self) -> int:
        """Number of models."""
        return len(self.models)

    @property
    def estimable(self) -> np.ndarray:
        """Whether each feature varies across battles (a constant one is left out)."""
        return self.std > 0


def build_design(frame: pd.DataFrame, control: str, *, ties: str = "half") -> StyleDesign:
    """Turn battles with features into the style-controlled design.

    Args:
        frame: Battles (``model_a``, ``model_b``, ``winner``, optional ``weight``) with
            the feature columns ``fa_<name>``/``fb_<name>`` of every feature of ``control``.
        control: A key of :data:`CONTROLS`.
        ties: ``half`` (arena-hard's duplication trick) or ``drop`` (ties left out).

    Returns:
        The design.

    Raises:
        ValueError: On an unknown control or tie policy, a battle without the features
            (drop them first: :func:`missing_features`), or no battle left.
    """
    names = _check_control(control)
    if ties not in STYLE_TIES:
        raise ValueError(f"style control handles ties as {' or '.join(STYLE_TIES)}, "
                         f"not {ties!r}")
    if missing_features(frame, control).any():
        raise ValueError(f"some battles lack the features of --control {control}")
    if ties == "drop":
        frame = frame[frame["winner"] != "tie"]
    if frame.empty:
        raise bt.RankError("no battle left to fit")
    codes = bt.winner_codes(frame["winner"].to_numpy())
    size = len(frame)
    index, models = pd.factorize(
        np.concatenate([frame["model_a"].to_numpy(object), frame["model_b"].to_numpy(object)]),
        sort=True,
    )
    fa = frame[[feature_column("a", n) for n in names]].to_numpy(float)
    fb = frame[[feature_column("b", n) for n in names]].to_numpy(float)
    ratio = (fa - fb) / (fa + fb + 1.0)
    mean, std = ratio.mean(axis=0), ratio.std(axis=0)
    # a feature whose ratio does not vary carries no information (and has no z-score)
    std = np.where(std > 1e-12 * np.maximum(np.abs(mean), 1.0), std, 0.0)
    style = np.where(std > 0, (ratio - mean) / np.where(std > 0, std, 1.0), 0.0)
    weight = frame["weight"].to_numpy(float) if "weight" in frame.columns else np.ones(size)
    return StyleDesign(
        models=tuple(str(m) for m in models),
        a=index[:size].astype(np.int64),
        b=index[size:].astype(np.int64),
        target=np.select([codes == bt.FIRST_WINS, codes == bt.SECOND_WINS], [1.0, 0.0], 0.5),
        weight=weight,
        features=names,
        style=style,
        mean=mean,
        std=std,
    )


def design_matrix(design: StyleDesign) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """arena-hard-auto's duplicated design, for checking and for other solvers.

    Args:
        design: The design.

    Returns:
        ``(X, y, sample_weight)`` with ``2 · battles`` rows: X holds ``+ln 10`` in the
        column of ``model_a``, ``−ln 10`` in that of ``model_b`` and the ``z`` columns
        last; the first copy of a tie has ``y = 1``, the second ``y = 0``. Minimising
        ``½‖x‖² + Σ sample_weight · logloss(y, X x)`` is the ``l2`` fit.
    """
    n, p = len(design.a), design.n_models
    rows = np.arange(n)
    x = np.zeros((n, p + len(design.features)))
    x[rows, design.a] = LOG10
    x[rows, design.b] = -LOG10
    x[:, p:] = design.style
    first = np.where(design.target == 0.5, 1.0, design.target)
    second = np.where(design.target == 0.5, 0.0, design.target)
    return (np.vstack([x, x]), np.concatenate([first, second]),
            np.concatenate([design.weight, design.weight]))
