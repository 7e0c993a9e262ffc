"""Exact posteriors by quadrature: Normal records with a noisy sum, and a scalar θ on a grid."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..mechanisms import Mechanism
from ._common import as_pairs, check_orders, log_eta

__all__ = ["grid_moments", "grid_posterior", "normal_sum_gaussian_posterior", "normal_sum_moments"]


def _normal_moments(mean, var, orders):
    """E[Xᵏ] for X ~ N(mean, var), elementwise: m_k = mean m_{k−1} + (k − 1) var m_{k−2}."""
    raw = [np.ones_like(mean), mean]
    for k in range(2, max(orders, default=0) + 1):
        raw.append(mean * raw[k - 1] + (k - 1) * var * raw[k - 2])
    return [raw[k] for k in orders]


def normal_sum_moments(
    n: int,
    releases: ArrayLike,
    mechanisms: Mechanism | Sequence[Mechanism],
    *,
    prior_mean: float = 0.0,
    prior_sd: float = 1.0,
    record_sd: float = 1.0,
    orders: Sequence[int] = (1, 2),
) -> tuple[float, ...]:
    """Exact posterior moments of μ for n N(μ, σ²) records, μ ~ N(m₀, v₀), given noisy sums (any noise).

    T = Σᵢ xᵢ ~ N(n m₀, nσ² + n²v₀) a priori and μ | T is Normal, so E[μᵏ | s] is one integral over T,
    done by the trapezoid rule on nodes 1/50 of the narrowest width (prior sd of T, noise scales)
    apart, spanning 40 widths about the prior mean of T and about each release (and a node at each).

    Args:
        n: the number of records.
        releases: the release of T, or several releases of it (one per mechanism).
        mechanisms: a :class:`~dpjax.Mechanism` (with a ``scale``), or a sequence matching ``releases``.
        prior_mean: m₀.
        prior_sd: √v₀.
        record_sd: σ.
        orders: the moments wanted, k for E[μᵏ | releases].

    Returns:
        ``(E[μ^k] for k in orders)`` as floats.

    Example:
        >>> import dpjax
        >>> from dpjax.testing import normal_sum_gaussian_posterior, normal_sum_moments
        >>> mech = dpjax.GaussianMechanism(sigma=3.0)
        >>> m1, m2 = normal_sum_moments(10, 25.0, mech, prior_sd=2.0)
        >>> mean, var = normal_sum_gaussian_posterior(10, 25.0, 3.0, prior_sd=2.0)
        >>> round(m1, 5) == round(mean, 5), round(m2 - m1**2, 5) == round(var, 5)
        (True, True)
    """
    pairs, orders = as_pairs(releases, mechanisms), check_orders(orders)
    v0, s2 = prior_sd**2, record_sd**2
    sd_t = np.sqrt(n * s2 + n**2 * v0)
    scales = [float(np.max(getattr(m, "scale", np.nan))) for _, m in pairs]
    if not all(np.isfinite(scales)):
        raise ValueError("normal_sum_moments needs mechanisms with a finite `scale`.")
    centres = [(n * prior_mean, sd_t)] + [(float(np.mean(s)), c) for (s, _), c in zip(pairs, scales)]
    lo, hi = min(c - 40 * w for c, w in centres), max(c + 40 * w for c, w in centres)
    nodes = int(np.ceil((hi - lo) / (min(w for _, w in centres) / 50))) + 1
    if nodes > 5_000_000:
        raise ValueError(f"normal_sum_moments would need {nodes} nodes: the releases are too far apart.")
    t = np.union1d(np.linspace(lo, hi, nodes), [c for c, _ in centres])
    log_w = -0.5 * (t - n * prior_mean) ** 2 / sd_t**2 + log_eta(pairs, [t] * len(pairs))
    w = np.exp(log_w - log_w.max())
    mass = np.trapezoid(w, t)
    var = 1.0 / (1.0 / v0 + n / s2)
    mean = (prior_mean / v0 + t / s2) * var
    return tuple(float(np.trapezoid(w * m, t) / mass) for m in _normal_moments(mean, var, orders))


def normal_sum_gaussian_posterior(
    n: int,
    release: float,
    noise_sd: float,
    *,
    prior_mean: float = 0.0,
    prior_sd: float = 1.0,
    record_sd: float = 1.0,
) -> tuple[float, float]:
    """Closed-form posterior of μ for n N(μ, σ²) records, μ ~ N(m₀, v₀), and Gaussian noise on Σᵢ xᵢ.

    ``s | μ ~ N(nμ, nσ² + τ²)``, so μ | s is Normal with precision ``1/v₀ + n²/(nσ² + τ²)``.

    Args:
        n: the number of records.
        release: the noisy sum s.
        noise_sd: τ, the noise's standard deviation (``GaussianMechanism(sigma=τ)``).
        prior_mean: m₀.
        prior_sd: √v₀.
        record_sd: σ.

    Returns:
        ``(E[μ | s], Var[μ | s])``.

    Example:
        >>> from dpjax.testing import normal_sum_gaussian_posterior
        >>> normal_sum_gaussian_posterior(1, 2.0, 0.0, prior_sd=1.0)  # s = x₁ ~ N(μ, 1): halfway
        (1.0, 0.5)
    """
    v = n * record_sd**2 + noise_sd**2
    precision = 1.0 / prior_sd**2 + n**2 / v
    return float((prior_mean / prior_sd**2 + n * release / v) / precision), float(1.0 / precision)


def grid_posterior(theta: ArrayLike, log_density: ArrayLike, *, discrete: bool = False) -> np.ndarray:
    """Quadrature weights of a scalar θ's posterior known up to a constant on a grid.

    ``Σ_g w_g f(θ_g)`` is then E[f(θ) | s]: for a continuous θ by the trapezoid rule (the grid
    must be increasing and cover the posterior), for a discrete θ (``discrete=True``: ``theta``
    is its support) the normalized pmf.

    Args:
        theta: ``(G,)`` the grid, or the support of θ.
        log_density: ``(G,)`` log prior + log likelihood at ``theta``, up to a constant; −inf allowed.
        discrete: whether θ is discrete.

    Returns:
        The ``(G,)`` weights (they sum to 1).

    Example:
        >>> import numpy as np
        >>> from dpjax.testing import grid_posterior
        >>> grid_posterior(np.array([0.0, 1.0, 2.0]), np.zeros(3))
        array([0.25, 0.5 , 0.25])
    """
    theta, log_density = np.asarray(theta, float), np.asarray(log_density, float)
    if theta.ndim != 1 or theta.shape != log_density.shape:
        raise ValueError("`theta` and `log_density` must be 1-D arrays of the same length.")
    w = np.exp(log_density - np.max(log_density))
    if not discrete:
        if np.any(np.diff(theta) <= 0):
            raise ValueError("`theta` must be increasing for the trapezoid rule (or pass discrete=True).")
        h = np.diff(theta)
        w = w * (np.concatenate([h, [0.0]]) + np.concatenate([[0.0], h])) / 2
    return w / w.sum()


def grid_moments(
    theta: ArrayLike, log_density: ArrayLike, *, discrete: bool = False, orders: Sequence[int] = (1, 2)
) -> tuple[float, ...]:
    """Posterior moments of a scalar θ from its log density on a grid (see :func:`grid_posterior`).

    Args:
        theta: ``(G,)`` the grid, or the support of θ.
        log_density: ``(G,)`` log prior + log likelihood at ``theta``, up to a constant.
        discrete: whether θ is discrete (``theta`` is its support).
        orders: the moments wanted, k for E[θᵏ | s].

    Returns:
        ``(E[θ^k] for k in orders)`` as floats.

    Example:
        A Beta(3, 2) density on a fine grid: E[θ] = 3/5.

        >>> import numpy as np
        >>> from dpjax.testing import grid_moments
        >>> p = np.linspace(0, 1, 2001)[1:-1]  # the density vanishes at 0 and 1
        >>> round(grid_moments(p, 2 * np.log(p) + np.log1p(-p))[0], 5)
        0.6
    """
    w = grid_posterior(theta, log_density, discrete=discrete)
    theta = np.asarray(theta, float)
    return tuple(float(w @ theta**k) for k in check_orders(orders))
