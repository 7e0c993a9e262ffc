"""The ε-DP histogram mechanisms the seed compares with (Lazzarini §3.3), for data in [0, 1].
Each picks, for a given ε, the smallest parameter its privacy condition admits, and returns the
m synthetic records with that parameter.

- smoothed histogram (Wasserman & Zhou): mixture (1 − s) f̂_k + s·Uniform, condition (13)
  m log((1 − s)k/(ns) + 1) ≤ ε, i.e. s = k / (k + n(e^{ε/m} − 1));
- perturbed histogram: counts + Laplace noise of variance 8/ε² (scale 2/ε), clipped at 0;
- Dirichlet–multinomial (Machanavajjhala et al.) over the observed values: αⱼ + Cⱼ ≥ m/(e^ε − 1),
  αⱼ = max(α_min, m/(e^ε − 1) − Cⱼ).

**Simulation-only comparisons, not for publishing real data.** These functions draw their noise
(Laplace, uniform, Dirichlet, categorical) in floating point with JAX's samplers. A floating-point
implementation of a mechanism that is ε-DP over the reals is in general *not* ε-DP: the set of
outputs it can produce depends on the data, so some outputs identify the input (Mironov, "On
significance of the least significant bits for differential privacy", CCS 2012). They exist to
compare the utility of the Pitman–Yor release with the histogram mechanisms in simulations, as the
seed does; a real release needs an implementation with exact (e.g. discrete or snapping) noise.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jax import random

from .._validate import positive_int
from .pitman_yor import check_real, check_records

__all__ = ["BaselineRelease", "dirichlet_multinomial", "perturbed_histogram", "smoothed_histogram"]


class BaselineRelease(NamedTuple):
    """``values`` (m synthetic records) and the mechanism's calibrated ``parameter``. Simulation
    output only: the noise is floating point, so it is not a DP release (see the module docstring)."""

    values: np.ndarray
    parameter: object


def _check(x, m, epsilon, bins=None):
    x = check_records(x, "x", canonical=False).astype(float)
    if x.min() < 0 or x.max() > 1:
        raise ValueError("`x` must be a non-empty 1-d array of records in [0, 1] (rescale first).")
    m = positive_int(m, "m")
    epsilon = check_real(epsilon, "epsilon", "a number > 0")
    if not epsilon > 0:
        raise ValueError(f"`epsilon` must be > 0, got {epsilon!r}.")
    if bins is not None and not (isinstance(bins, (int, np.integer)) and bins > 0):
        raise ValueError(f"`bins` must be a positive int, got {bins!r}.")
    return x, m


def _from_bins(key, probs, m, bins):
    k_bin, k_u = random.split(key)
    b = random.choice(k_bin, bins, (m,), p=jnp.asarray(probs))
    return np.asarray((b + random.uniform(k_u, (m,))) / bins)


def smoothed_histogram(rng_key, x, m: int, epsilon: float, bins: int = 10) -> BaselineRelease:
    """Smoothed histogram with the smallest smoothing s of condition (13); ``parameter`` is s.
    Simulation-only comparison: floating-point noise, not for publishing (see the module docstring).

    >>> import jax, numpy as np
    >>> out = smoothed_histogram(jax.random.key(0), np.linspace(0, 1, 39374), 5000, 4.2)
    >>> round(out.parameter, 4)  # the seed's 0.2321 for n = 39 374, m = 5000, 10 bins
    0.2321
    """
    x, m = _check(x, m, epsilon, bins)
    s = bins / (bins + x.size * np.expm1(epsilon / m))
    counts = np.bincount(np.minimum((x * bins).astype(int), bins - 1), minlength=bins)
    probs = (1 - s) * counts / x.size + s / bins
    return BaselineRelease(_from_bins(rng_key, probs, m, bins), float(s))


def perturbed_histogram(rng_key, x, m: int, epsilon: float, bins: int = 10) -> BaselineRelease:
    """Histogram of Laplace-perturbed counts (variance 8/ε²); ``parameter`` is the noise variance.

    Simulation-only comparison, not for publishing: the Laplace noise is drawn in floating point,
    which is not ε-DP (Mironov 2012; see the module docstring)."""
    x, m = _check(x, m, epsilon, bins)
    k_noise, k_draw = random.split(rng_key)
    counts = np.bincount(np.minimum((x * bins).astype(int), bins - 1), minlength=bins)
    noisy = np.maximum(counts + 2.0 / epsilon * np.asarray(random.laplace(k_noise, (bins,))), 0.0)
    probs = noisy / noisy.sum() if noisy.sum() > 0 else np.full(bins, 1.0 / bins)
    return BaselineRelease(_from_bins(k_draw, probs, m, bins), 8.0 / epsilon**2)


def dirichlet_multinomial(rng_key, x, m: int, epsilon: float, alpha_min: float = 1e-4) -> BaselineRelease:
    """Dirichlet–multinomial over the observed values with the smallest admissible prior;
    ``parameter`` is the vector α. Simulation-only comparison: floating-point sampling, not for
    publishing (see the module docstring)."""
    x, m = _check(x, m, epsilon)
    values, counts = np.unique(x, return_counts=True)
    alpha = np.maximum(alpha_min, m / np.expm1(epsilon) - counts)
    k_q, k_d = random.split(rng_key)
    q = random.dirichlet(k_q, jnp.asarray(alpha + counts))
    draws = random.categorical(k_d, jnp.log(q), shape=(m,))
    return BaselineRelease(values[np.asarray(draws)], alpha)
