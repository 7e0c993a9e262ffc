"""Utility of synthetic data against the confidential data (Lazzarini §5, §7): 1-Wasserstein
distance between empirical measures (scipy), L² distance between Gaussian kernel density
estimates, and summary-statistic errors."""

from __future__ import annotations

import numpy as np
from scipy.stats import gaussian_kde, wasserstein_distance

from .pitman_yor import check_records

__all__ = ["kde_l2", "summary", "wasserstein1"]


def _records(x, name):
    """Finite real records as float64 on the host (NaN would give NaN metrics silently)."""
    return check_records(x, name, canonical=False).astype(float)


def wasserstein1(x, z) -> float:
    """W₁ between the empirical measures of ``x`` and ``z`` (``scipy.stats.wasserstein_distance``).

    >>> wasserstein1([0.0, 1.0], [0.5, 0.5])
    0.5
    """
    return float(wasserstein_distance(_records(x, "x"), _records(z, "z")))


def kde_l2(x, z, grid=None, bw_method=None) -> float:
    """‖f̂_x − f̂_z‖₂ of two Gaussian KDEs (Scott's bandwidth unless ``bw_method``), on ``grid``
    (default 2 000 points on [0, 1], the seed's scale), by the trapezoid rule."""
    grid = np.linspace(0.0, 1.0, 2000) if grid is None else np.asarray(grid, float)
    fx = gaussian_kde(_records(x, "x"), bw_method)(grid)
    fz = gaussian_kde(_records(z, "z"), bw_method)(grid)
    return float(np.sqrt(np.trapezoid((fx - fz) ** 2, grid)))


def summary(x) -> dict:
    """Mean, standard deviation and quartiles (the seed's Tables 7–8 columns)."""
    x = _records(x, "x")
    q25, q50, q75 = np.percentile(x, [25, 50, 75])
    return {"mean": x.mean(), "sd": x.std(ddof=1), "q25": q25, "q50": q50, "q75": q75}
