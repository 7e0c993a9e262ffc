"""Instance-level privacy of the Pitman–Yor release for *this* dataset (Lazzarini §4).

- :func:`delta_tilde` – the Monte Carlo estimate of δ̃(ε) of Theorem 4.1 (σ ∈ [0, 1); Corollary
  4.1 is its σ = 0 case) or of Proposition 4.2 (``histogram=True``, Algorithm 3), with the seed's
  error bar z_{1−α/2} σ̂/√N, α = 10⁻⁶;
- :func:`negative_sigma_epsilon` – Proposition 4.1's ε for σ < 0, θ = K_n|σ| (pure ε-DP);
- :func:`max_release_size` and :func:`admissible_theta` – calibration for a target (ε, δ);
- :func:`density_ratios` – Algorithm 2's check over neighbouring datasets (three neighbour types).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import random
from scipy.stats import norm

from .._validate import positive_int
from .pitman_yor import (
    as_partition,
    check_base,
    check_pitman_yor,
    check_real,
    check_records,
    log_predictive_density,
    predictive_release,
    urn_draws,
)

__all__ = [
    "DeltaEstimate",
    "admissible_theta",
    "delta_tilde",
    "density_ratios",
    "max_release_size",
    "negative_sigma_epsilon",
]

Z_SEED = float(norm.ppf(1 - 1e-6 / 2))  # the seed's α = 10⁻⁶ error bars


class DeltaEstimate(NamedTuple):
    """δ̃(ε) per ε with its error bar ``z_{1−α/2} σ̂ / √N`` (α = 10⁻⁶) and N."""

    epsilon: np.ndarray
    delta: np.ndarray
    error: np.ndarray
    num_draws: int

    @property
    def upper(self):
        return self.delta + self.error


def _check_counts(counts, sigma):
    if sigma > 0 and np.any(counts < 2):
        raise ValueError(
            "Theorem 4.1 needs every observed value to appear at least twice (nᵢ > 1) when sigma > 0; "
            "some appear once. Double them (as the seed does for its income data) or merge rare values "
            "before releasing (at sigma = 0, Corollary 4.1, values seen once are allowed)."
        )
    if sigma < 0:
        raise ValueError("`sigma` must be in [0, 1) here; for sigma < 0 use `negative_sigma_epsilon`.")


def _holds(counts, s_all, j, k_new, sigma, theta, epsilon, density_bounds, histogram):
    """Indicator of Theorem 4.1's event (or Proposition 4.2's) for one draw of the synthetic counts.
    ``counts`` is zero-padded to the length of ``s_all``: entries below ``j`` are the observed values,
    the others hold the new values (S > 0) or nothing."""
    old = jnp.arange(s_all.shape[0]) < j
    ratio = (counts - 1 - sigma) / (counts + s_all - 1 - sigma)  # (nᵢ − 1 − σ)/(nᵢ + Sᵢ − 1 − σ)
    e = jnp.exp(epsilon)
    counts_ok = jnp.all(~old | (s_all <= (e - 1) * (counts - 1 - sigma)))
    if histogram:
        return counts_ok
    c1, c2 = density_bounds
    is_new = ~old & (s_all > 0)
    scaled = (s_all - sigma) / (theta + j * sigma)
    upper = jnp.all(~is_new | (scaled * jnp.max(jnp.where(old, ratio, -jnp.inf)) / c1 <= e))
    lower = jnp.all(~is_new | (scaled * jnp.min(jnp.where(old, ratio, jnp.inf)) / c2 >= 1 / e))
    growth = (theta + (j + k_new) * sigma) / (theta + j * sigma) * ratio
    growth_ok = jnp.all(~old | ((growth >= 1 / e) & (growth <= e)))
    return upper & lower & growth_ok & counts_ok


@partial(jax.jit, static_argnames=("num_records", "m", "num_draws", "histogram"))
def _delta(key, counts, num_records, m, sigma, theta, epsilons, num_draws, density_bounds, histogram):
    j = jnp.sum(counts > 0)
    padded = jnp.concatenate([counts, jnp.zeros(m, counts.dtype)])

    def one(k):
        _, s_all, k_total = urn_draws(k, counts, num_records, m, sigma, theta)
        s_all = s_all - padded
        # σ = 0 only (σ > 0 refuses them): a value seen once that is not redrawn passes as a value seen
        # twice with S = 0 (ratio 1); a redrawn one keeps nᵢ = 1 and fails the count condition Sᵢ ≤ 0
        checked = jnp.where((padded == 1) & (s_all == 0), 2, padded)
        return jax.vmap(
            lambda eps: _holds(checked, s_all, j, k_total - j, sigma, theta, eps, density_bounds, histogram)
        )(epsilons)

    holds = jax.lax.map(jax.vmap(one), random.split(key, num_draws).reshape(-1, 100))  # batches of 100
    return holds.reshape(num_draws, -1).sum(0)  # events held, per ε


def _epsilons(epsilon) -> np.ndarray:
    """``epsilon`` (a number or a 1-d grid) as a float32 array of values in (0, inf]."""
    try:
        eps = np.asarray(epsilon, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"`epsilon` must be a number > 0 or a 1-d grid of them, got {epsilon!r}.") from None
    if eps.ndim > 1 or eps.size == 0 or not np.all(eps > 0):  # also rejects NaN
        raise ValueError(f"`epsilon` must be > 0 (a number or a 1-d grid, no NaN), got {epsilon!r}.")
    return np.atleast_1d(eps.astype(np.float32))


def _bucket(size: int) -> int:
    """Next power of two (at least 16): datasets of similar size reuse one compilation."""
    return max(16, 1 << (int(size) - 1).bit_length())


def delta_tilde(
    rng_key,
    data,
    m: int,
    sigma: float,
    theta: float,
    epsilon,
    *,
    num_draws: int = 10_000,
    density_bounds=(1.0, 1.0),
    histogram: bool = False,
) -> DeltaEstimate:
    """Monte Carlo δ̃(ε) for releasing m records from the PY(σ, θ, H) predictive given ``data``
    (Theorem 4.1; Corollary 4.1 at σ = 0; Proposition 4.2 with ``histogram=True``). The release
    is instance-level (ε, δ)-DP for every δ > δ̃(ε). ``density_bounds`` = (C₁, C₂) bound H's density
    (1, 1 for the uniform on [0, 1]ʳ). ``epsilon`` may be a grid; one set of draws serves all.

    Theorem 4.1 needs every observed value seen at least twice when σ > 0 (else a ``ValueError``). At
    σ = 0 (Corollary 4.1) its events extend exactly to values seen once: the neighbour that moves that
    record drops the value and θ + iσ = θ does not change, so an unredrawn singleton has ratio 1 and a
    redrawn one (Sᵢ > 0) breaks the bound at every ε.

    >>> import jax, numpy as np
    >>> x = np.repeat(np.linspace(0.05, 0.95, 10), 50)  # 10 values, 50 records each
    >>> est = delta_tilde(jax.random.key(0), x, 50, 0.0, 2.0, epsilon=[1.0, 3.0], num_draws=1000)
    >>> est.delta.round(3).tolist()
    [0.0, 0.0]
    """
    data = as_partition(data)
    check_pitman_yor(sigma, theta, len(data.counts))
    _check_counts(data.counts, sigma)
    m = positive_int(m, "m")
    if not (isinstance(num_draws, int) and num_draws >= 100 and num_draws % 100 == 0):
        raise ValueError(f"`num_draws` must be a positive multiple of 100, got {num_draws!r}.")
    eps = _epsilons(epsilon)
    if np.ndim(density_bounds) != 1 or np.size(density_bounds) != 2:
        raise ValueError(f"`density_bounds` must be a pair (C1, C2), got {density_bounds!r}.")
    c1, c2 = (check_real(c, "density_bounds", "a pair of numbers 0 < C1 <= C2") for c in density_bounds)
    if not 0 < c1 <= c2 < np.inf:
        raise ValueError(f"`density_bounds` must be 0 < C1 <= C2, got {density_bounds!r}.")
    counts = np.zeros(_bucket(data.counts.size), np.int32)
    counts[: data.counts.size] = data.counts
    capacity = _bucket(data.counts.sum())
    held = _delta(
        rng_key,
        jnp.asarray(counts),
        capacity,
        m,
        sigma,
        theta,
        jnp.asarray(eps),
        num_draws,
        (c1, c2),
        histogram,
    )
    delta = 1.0 - np.asarray(held, dtype=np.float64) / num_draws  # counted exactly, not in float32
    sd = np.sqrt(delta * (1 - delta))
    return DeltaEstimate(eps, delta, Z_SEED * sd / np.sqrt(num_draws), num_draws)


def negative_sigma_epsilon(data, m: int, sigma: float) -> float:
    """Proposition 4.1: with σ < 0 and θ = K_n|σ| (a Dirichlet–multinomial on the observed values)
    the release of m records is instance-level ε-DP for every ε > log(1 + m / (|σ| + min nᵢ − 1)).

    >>> round(negative_sigma_epsilon([0.1] * 30 + [0.7] * 40, m=10, sigma=-1.0), 4)
    0.2877
    """
    data = as_partition(data)
    sigma = check_real(sigma, "sigma", "a finite number < 0")
    if not -np.inf < sigma < 0:
        raise ValueError(f"Proposition 4.1 needs a finite `sigma` < 0, got {sigma}.")
    _check_counts(data.counts, 0.0)
    m = positive_int(m, "m")
    return float(np.log1p(m / (-sigma + data.counts.min() - 1)))


def max_release_size(rng_key, data, sigma, theta, epsilon, delta, *, m_max=100_000, num_draws=10_000, **kw):
    """The largest m ≤ ``m_max`` whose δ̃(ε) upper error bar stays ≤ ``delta`` (bisection on m; δ̃
    grows with m), or 0 if even m = 1 fails. For σ < 0 (θ = z|σ|, z ≥ the observed values),
    Proposition 4.1's closed form, m < (e^ε − 1)(|σ| + min nᵢ − 1), capped at ``m_max`` (``delta``
    unused)."""
    data = as_partition(data)
    check_pitman_yor(sigma, theta, len(data.counts))
    epsilon = check_real(epsilon, "epsilon", "a number > 0")
    if not epsilon > 0:
        raise ValueError(f"`epsilon` must be a number > 0, got {epsilon}.")
    delta = check_real(delta, "delta", "a number")
    if np.isnan(delta):
        raise ValueError(f"`delta` must be a number, got {delta}.")
    m_max = positive_int(m_max, "m_max")
    if sigma < 0:
        _check_counts(data.counts, 0.0)
        bound = np.expm1(epsilon) * (-sigma + data.counts.min() - 1)
        return int(min(m_max, max(0, np.ceil(bound) - 1)))
    ok = lambda m: (
        delta_tilde(rng_key, data, m, sigma, theta, epsilon, num_draws=num_draws, **kw).upper[0] <= delta
    )
    if not ok(1):
        return 0
    lo, hi = 1, 2
    while hi <= m_max and ok(hi):
        lo, hi = hi, 2 * hi
    hi = min(hi, m_max + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def admissible_theta(rng_key, data, m, sigma, epsilon, delta, thetas, *, num_draws=10_000, **kw):
    """``(thetas, upper)``: the θ of the grid whose δ̃(ε) upper error bar is ≤ ``delta``, and the
    upper bars of the whole grid."""
    data = as_partition(data)
    if np.ndim(epsilon) != 0:
        raise ValueError(f"`epsilon` must be a single number > 0, got {epsilon!r}.")
    thetas = np.atleast_1d(np.asarray(thetas))
    if thetas.ndim != 1:
        raise ValueError(f"`thetas` must be a 1-d grid of numbers, got shape {thetas.shape}.")
    for t in thetas:  # the whole grid before any draw
        check_pitman_yor(sigma, t, len(data.counts))
    uppers = np.array(
        [delta_tilde(rng_key, data, m, sigma, t, epsilon, num_draws=num_draws, **kw).upper[0] for t in thetas]
    )
    return np.asarray(thetas)[uppers <= delta], uppers


def density_ratios(rng_key, x, m, sigma, theta, *, num_synthetic=100, num_neighbours=100, base=None):
    """Algorithm 2 for one confidential dataset ``x`` (records): log q_n(z | x) − log q_n(z | y) for
    ``num_synthetic`` releases z and ``num_neighbours`` neighbours y each. A neighbour replaces
    the last record of x by (t = 0) another value of x, (t = 1) a value of z, or (t = 2) a fresh
    draw from H, with t uniform on {0, 1, 2}. Returns ``(log_ratios, neighbour_types)``, both shaped
    (num_synthetic, num_neighbours)."""
    x = check_records(x, "x")
    check_pitman_yor(sigma, theta)
    m = positive_int(m, "m")
    num_synthetic = positive_int(num_synthetic, "num_synthetic")
    num_neighbours = positive_int(num_neighbours, "num_neighbours")
    base = check_base(base)
    rng = np.random.default_rng(np.asarray(random.key_data(rng_key)))
    types = rng.integers(3, size=(num_synthetic, num_neighbours))
    ratios = np.empty(types.shape)
    others_x = x[x != x[-1]]
    for i, key in enumerate(random.split(rng_key, num_synthetic)):
        z = np.asarray(predictive_release(key, x, m, sigma, theta, base).values)
        log_q = log_predictive_density(z, x, sigma, theta, base)
        pools = (others_x, z[z != x[-1]])
        fresh = np.asarray(base.sample(random.fold_in(key, 1), (num_neighbours,)))
        for jn, t in enumerate(types[i]):
            y = x.copy()
            y[-1] = rng.choice(pools[t]) if t < 2 and pools[t].size else fresh[jn]
            ratios[i, jn] = log_q - log_predictive_density(z, y, sigma, theta, base)
    return ratios, types
