"""The shared seeded percentile bootstrap (prefjudge.stats)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from prefjudge import stats


def test_resample_indices_is_the_seeded_integers_draw():
    idx = stats.resample_indices(7, 50, seed=3)
    assert idx.shape == (50, 7)
    assert idx.min() >= 0 and idx.max() <= 6
    expected = np.random.default_rng(3).integers(0, 7, size=(50, 7))
    assert (idx == expected).all()
    assert (stats.resample_indices(7, 50, seed=3) == idx).all()
    assert not (stats.resample_indices(7, 50, seed=4) == idx).all()
    assert stats.resample_indices(1, 4, seed=0).tolist() == [[0], [0], [0], [0]]
    assert stats.resample_indices(5, 0, seed=0).shape == (0, 5)


def test_resample_indices_rejects_no_units():
    with pytest.raises(ValueError, match="at least one unit"):
        stats.resample_indices(0, 10, seed=0)
    with pytest.raises(ValueError, match="negative"):
        stats.resample_indices(3, -1, seed=0)


def test_percentile_interval_by_hand():
    values = np.arange(101, dtype=float)  # quantile q is 100 q exactly
    assert stats.percentile_interval(values) == pytest.approx((2.5, 97.5))
    assert stats.percentile_interval(values, 0.9) == pytest.approx((5.0, 95.0))
    assert stats.percentile_interval(values, tails=(0.1, 0.7)) == pytest.approx((10.0, 70.0))
    # outward: observed values at or outside the interpolated positions
    assert stats.percentile_interval(values, outward=True) == (2.0, 98.0)
    assert stats.percentile_interval(np.array([1.0, 2.0]), outward=True) == (1.0, 2.0)


def test_percentile_interval_ignores_non_finite_and_says_when_none_is_left():
    values = np.array([np.nan, 1.0, np.inf, 3.0, -np.inf, 2.0])
    assert stats.percentile_interval(values, 0.0) == (2.0, 2.0)
    assert stats.percentile_interval(values) == stats.percentile_interval([1.0, 3.0, 2.0])
    low, high = stats.percentile_interval([np.nan, np.nan])
    assert np.isnan(low) and np.isnan(high)
    low, high = stats.percentile_interval(np.array([]))
    assert np.isnan(low) and np.isnan(high)


def test_percentile_interval_rejects_bad_level_and_shape():
    with pytest.raises(ValueError, match="level"):
        stats.percentile_interval([1.0, 2.0], 1.5)
    with pytest.raises(ValueError, match="one-dimensional"):
        stats.percentile_interval(np.ones((3, 2)))


def test_percentile_bands_drop_whole_resamples():
    stats_ = np.array([[1.0, 10.0], [2.0, np.nan], [3.0, 30.0], [4.0, 40.0]])
    low, high = stats.percentile_bands(stats_, 0.0)  # medians over rows 0, 2 and 3
    assert low.tolist() == [3.0, 30.0] and high.tolist() == [3.0, 30.0]
    low, high = stats.percentile_bands(stats_, 1.0, outward=True)
    assert low.tolist() == [1.0, 10.0] and high.tolist() == [4.0, 40.0]
    low, high = stats.percentile_bands(np.full((3, 2), np.nan))
    assert np.isnan(low).all() and np.isnan(high).all() and low.shape == (2,)
    with pytest.raises(ValueError, match="two-dimensional"):
        stats.percentile_bands(np.ones(3))


def test_percentile_bands_equal_column_intervals_without_undefined_resamples():
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(200, 3))
    low, high = stats.percentile_bands(draws, 0.9)
    for column in range(3):
        assert (low[column], high[column]) == stats.percentile_interval(draws[:, column], 0.9)
    ranks = rng.integers(1, 6, size=(200, 3))
    low, high = stats.percentile_bands(ranks, outward=True)
    assert low.dtype.kind == "i" and set(low) | set(high) <= {1, 2, 3, 4, 5}


def test_bootstrap_ci_mean_path_equals_generic_path():
    values = np.random.default_rng(5).random(40)
    fast = stats.bootstrap_ci(values, n_resamples=300, seed=2)
    generic = stats.bootstrap_ci(values, statistic=lambda a: float(np.mean(a)), n_resamples=300,
                                 seed=2)
    assert fast == pytest.approx(generic, rel=1e-12)
    idx = stats.resample_indices(40, 300, seed=2)
    assert fast == stats.percentile_interval(values[idx].mean(axis=1))


def test_bootstrap_ci_empty_nan_and_single_unit():
    assert all(np.isnan(stats.bootstrap_ci([])))
    assert all(np.isnan(stats.bootstrap_ci([0.5, np.nan, 0.2])))
    assert stats.bootstrap_ci([0.4], n_resamples=20) == (0.4, 0.4)


def test_bootstrap_ci_matches_scipy_percentile_bootstrap():
    """An independent reference: scipy's percentile bootstrap draws the same indices."""
    values = np.random.default_rng(11).random(25)
    ours = stats.bootstrap_ci(values, n_resamples=500, seed=8, level=0.9)
    ref = scipy_stats.bootstrap(
        (values,), np.mean, n_resamples=500, method="percentile", confidence_level=0.9,
        rng=np.random.default_rng(8),
    ).confidence_interval
    assert ours == pytest.approx((ref.low, ref.high), rel=1e-12)
