"""Seeded percentile bootstrap: how every prefjudge interval draws resamples and reads bounds.

The one way to bootstrap in this project:

1. :func:`resample_indices` draws a ``(resamples, n)`` matrix of unit indices with
   replacement from ``numpy.random.default_rng(seed)`` (one ``integers`` call, so the same
   seed gives the same resamples whatever is computed from them). Index several arrays
   with the same matrix for a *paired* bootstrap (both sides of a unit move together).
2. The statistic is computed on each resample (vectorised: ``values[idx].mean(axis=1)``).
3. :func:`percentile_interval` (one statistic) or :func:`percentile_bands` (a vector of
   statistics per resample, e.g. a curve) reads the central ``level`` percentile interval
   off the resampled statistics: quantiles ``(1 - level) / 2`` and ``1 - (1 - level) / 2``
   with numpy's default linear interpolation, or, with ``outward=True``, the observed value
   at or below the lower quantile and at or above the upper one (for ranks and grid points,
   which must not be interpolated). Resamples whose statistic is not finite (a rate with an
   empty denominator, a correlation of a constant vector) are left out; when none is left
   the bounds are NaN.

:func:`bootstrap_ci` chains the three steps for one array of per-unit values.

``scipy.stats.bootstrap`` (``method="percentile"``) draws the same indices and gives the same
interval for a mean over two or more units, but it rejects a single unit, cannot leave out
undefined resamples, and has no outward (non-interpolated) bounds, so it is not used here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

# NumPy is imported where it is used: importing this module for its defaults costs a
# command's start nothing.
if TYPE_CHECKING:
    import numpy as np

DEFAULT_LEVEL = 0.95
DEFAULT_RESAMPLES = 1000
"""Bootstrap resamples of every interval, unless a command is told otherwise."""
DEFAULT_SEED = 0
"""Seed of those resamples, unless told otherwise."""


def resample_indices(n: int, n_resamples: int, seed: int | None) -> np.ndarray:
    """Seeded bootstrap resamples of ``n`` units, as indices.

    Args:
        n: Number of resampling units (tasks, pairs, models); at least 1.
        n_resamples: Number of resamples (rows); 0 gives an empty matrix.
        seed: Seed of ``numpy.random.default_rng`` (None: fresh entropy, not reproducible).

    Returns:
        Integer array of shape ``(resamples, n)``; row ``r`` lists the units drawn, with
        replacement, for resample ``r``. It is exactly
        ``default_rng(seed).integers(0, n, size=(resamples, n))``.

    Raises:
        ValueError: When ``n`` is below 1 or ``n_resamples`` is negative.
    """
    import numpy as np

    if n < 1:
        raise ValueError(f"a bootstrap needs at least one unit to resample; got n={n}")
    if n_resamples < 0:
        raise ValueError(f"the number of resamples cannot be negative; got {n_resamples}")
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(n_resamples, n))


def _tails(level: float, tails: tuple[float, float] | None) -> tuple[float, float]:
    """The lower and upper quantiles of a central ``level`` interval (or ``tails`` as given)."""
    if tails is not None:
        return tails
    if not 0 <= level <= 1:
        raise ValueError(f"level must be between 0 and 1; got {level}")
    alpha = (1.0 - level) / 2.0
    return alpha, 1.0 - alpha


def _bounds(
    finite: np.ndarray, low_q: float, high_q: float, outward: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Quantiles ``low_q`` and ``high_q`` along axis 0 of resampled statistics."""
    import numpy as np

    if outward:
        return (
            np.quantile(finite, low_q, axis=0, method="lower"),
            np.quantile(finite, high_q, axis=0, method="higher"),
        )
    low, high = np.quantile(finite, [low_q, high_q], axis=0)
    return low, high


def percentile_interval(
    stats: Sequence[float] | np.ndarray,
    level: float = DEFAULT_LEVEL,
    *,
    outward: bool = False,
    tails: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """Percentile interval of one bootstrapped statistic.

    Args:
        stats: The statistic on each resample, shape ``(resamples,)``.
        level: Coverage of the central interval (0 to 1).
        outward: Take observed values instead of interpolating: the largest value at or
            below the lower quantile's position and the smallest at or above the upper one
            (numpy methods ``lower`` and ``higher``).
        tails: The lower and upper quantiles themselves, overriding ``level``.

    Returns:
        ``(lower, upper)`` over the finite statistics (NaN and ±inf are left out);
        ``(nan, nan)`` when no statistic is finite (including no resamples at all).

    Raises:
        ValueError: When ``level`` is outside [0, 1] or ``stats`` is not one-dimensional.
    """
    import numpy as np

    values = np.asarray(stats)
    if values.ndim != 1:
        raise ValueError(f"stats must be one-dimensional; got shape {values.shape}")
    low_q, high_q = _tails(level, tails)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return float("nan"), float("nan")
    low, high = _bounds(finite, low_q, high_q, outward)
    return float(low), float(high)


def percentile_bands(
    stats: np.ndarray,
    level: float = DEFAULT_LEVEL,
    *,
    outward: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals of several statistics bootstrapped together (e.g. a curve).

    Args:
        stats: Shape ``(resamples, k)``: the ``k`` statistics on each resample.
        level: Coverage of each central interval (0 to 1).
        outward: Observed values instead of interpolation (see :func:`percentile_interval`).

    Returns:
        ``(lower, upper)``, each of shape ``(k,)``. A resample with any non-finite statistic
        is left out of every column, so all bounds come from the same resamples; the bounds
        are NaN when no resample is left.

    Raises:
        ValueError: When ``level`` is outside [0, 1] or ``stats`` is not two-dimensional.
    """
    import numpy as np

    values = np.asarray(stats)
    if values.ndim != 2:
        raise ValueError(f"stats must be two-dimensional; got shape {values.shape}")
    low_q, high_q = _tails(level, None)
    finite = values[np.isfinite(values).all(axis=1)]
    if finite.shape[0] == 0:
        nan = np.full(values.shape[1], np.nan)
        return nan, nan.copy()
    return _bounds(finite, low_q, high_q, outward)


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    *,
    statistic: Callable[[np.ndarray], float] | None = None,
    n_resamples: int = 1000,
    seed: int | None = 0,
    level: float = DEFAULT_LEVEL,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` over per-unit ``values``.

    Args:
        values: One value per resampling unit (e.g. per task).
        statistic: Function of one resampled array (None: ``np.mean``); ``np.mean``
            takes a vectorised path with the same numbers.
        n_resamples: Number of resamples.
        seed: RNG seed (see :func:`resample_indices`).
        level: Coverage of the interval.

    Returns:
        ``(lower, upper)`` (see :func:`percentile_interval`); ``(nan, nan)`` when there
        are no values or any value is NaN (a unit without a value cannot be resampled:
        drop it first).
    """
    import numpy as np

    data = np.asarray(values, dtype=float)
    if data.size == 0 or np.isnan(data).any():
        return float("nan"), float("nan")
    idx = resample_indices(data.size, n_resamples, seed)
    if statistic is None or statistic is np.mean:
        stats = data[idx].mean(axis=1)
    else:
        stats = np.array([statistic(data[row]) for row in idx], dtype=float)
    return percentile_interval(stats, level)
