"""Inference from the released synthetic data alone (Lazzarini §6).

By exchangeability the posterior predictive given the released Z equals the one given Z as if it
were data (§6.1), so :func:`posterior_predictive` is the PY predictive given Z. Empirical Bayes θ̂
maximises the EPPF (§7.1). The discovery probability estimator D̂ (§6.3) needs generalized
factorial coefficients, which overflow in floating point for n in the hundreds; they are built
here in log space by their three-term recursion

    C(n+1, k; σ, γ) = σ C(n, k−1; σ, γ) + (n − σk − γ) C(n, k; σ, γ),   C(0, 0) = 1,

whose terms are all positive for γ ≤ 0, so ``logaddexp`` is exact.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import gammaln, logsumexp

from .._validate import positive_int
from .pitman_yor import as_partition, check_pitman_yor, check_real, predictive_release

__all__ = [
    "discovery_probability",
    "empirical_bayes_theta",
    "log_eppf",
    "log_factorial_coefficients",
    "new_values_law",
    "posterior_predictive",
]


def _nonnegative_int(value, name):
    if isinstance(value, (bool, np.bool_)) or not (isinstance(value, (int, np.integer)) and value >= 0):
        raise ValueError(f"`{name}` must be a non-negative int, got {value!r}.")
    return int(value)


def log_eppf(counts, sigma: float, theta: float) -> float:
    """log p_k⁽ⁿ⁾(n₁, …, n_k) of PY(σ, θ), eq. (9).

    >>> round(log_eppf([1, 1], 0.0, 1.0), 6)  # two distinct draws from DP(1): 1/2
    -0.693147
    """
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 1 or counts.size == 0 or not np.all(np.isfinite(counts)) or np.any(counts < 1):
        raise ValueError(f"`counts` must be a non-empty 1-d array of positive counts, got {counts!r}.")
    check_pitman_yor(sigma, theta, counts.size)
    return _log_eppf(counts, sigma, theta)


def _log_eppf(counts, sigma, theta):
    k, n = counts.size, counts.sum()
    lp = np.sum(np.log(theta + sigma * np.arange(1, k)))
    lp -= gammaln(theta + n) - gammaln(theta + 1)
    return float(lp + np.sum(gammaln(counts - sigma) - gammaln(1 - sigma)))


def empirical_bayes_theta(data, sigma: float = 0.0, bounds=(1e-6, 1e6)) -> float:
    """θ̂ = argmax_θ EPPF(counts; σ, θ) (the seed's §7.1; σ fixed, default 0 as there).

    >>> round(empirical_bayes_theta([0.1] * 5 + [0.2] * 3 + [0.3, 0.4]), 3)
    1.956
    """
    counts = as_partition(data).counts.astype(float)
    sigma = check_real(sigma, "sigma", "a number in [0, 1)")
    if not 0 <= sigma < 1:
        raise ValueError(f"`sigma` must be in [0, 1), got {sigma}.")
    if np.ndim(bounds) != 1 or np.size(bounds) != 2 or not 0 < float(bounds[0]) < float(bounds[1]) < np.inf:
        raise ValueError(f"`bounds` must be a pair 0 < low < high < inf, got {bounds!r}.")
    res = minimize_scalar(
        lambda t: -_log_eppf(counts, sigma, np.exp(t)),
        bounds=(np.log(max(bounds[0], 1e-12 - sigma)), np.log(bounds[1])),
        method="bounded",
        options={"xatol": 1e-10},
    )
    return float(np.exp(res.x))


def log_factorial_coefficients(n: int, sigma: float, gamma=0.0, kmax: int | None = None) -> np.ndarray:
    """log C(n, k; σ, γ) for k = 0…kmax (default n), for each γ of ``gamma`` (shape
    ``gamma.shape + (kmax + 1,)``); −inf where the coefficient is 0. Needs σ ∈ (0, 1) and γ ≤ 0.
    Row n + 1 at k uses row n at k and k − 1 only, so truncating at kmax is exact: O(n · kmax)."""
    gamma = np.asarray(gamma, dtype=float)
    n = _nonnegative_int(n, "n")
    sigma = check_real(sigma, "sigma", "a number in (0, 1)")
    if not 0 < sigma < 1:
        raise ValueError(f"`sigma` must be in (0, 1), got {sigma}.")
    if not np.all(gamma <= 0):  # also rejects NaN
        raise ValueError("`gamma` must be <= 0 (then every term of the recursion is positive).")
    kmax = n if kmax is None else min(int(kmax), n)
    log_c = np.full(gamma.shape + (kmax + 1,), -np.inf)
    log_c[..., 0] = 0.0
    log_sigma, g = np.log(sigma), gamma[..., None]
    for i in range(n):  # row i + 1 from row i; only k <= i + 1 can be non-zero
        top = min(i + 2, kmax + 1)
        with np.errstate(divide="ignore"):
            stay = np.log(np.maximum(i - sigma * np.arange(top) - g, 0.0)) + log_c[..., :top]
        shifted = np.concatenate(
            [np.full(gamma.shape + (1,), -np.inf), log_sigma + log_c[..., : top - 1]], axis=-1
        )
        log_c[..., :top] = np.logaddexp(shifted, stay)
    return log_c


def new_values_law(n: int, j: int, m: int, sigma: float, theta: float) -> np.ndarray:
    """P[K_m⁽ⁿ⁾ = k | K_n = j], k = 0…m (Lijoi et al., 2007): the law of the number of new values in
    m predictive draws given j values among n records; σ ∈ (0, 1)."""
    n, j, m = positive_int(n, "n"), positive_int(j, "j"), positive_int(m, "m")
    if j > n:
        raise ValueError(f"`j` (values among the n records) must be <= n, got j={j}, n={n}.")
    check_pitman_yor(sigma, theta, j)
    k = np.arange(m + 1)
    log_c = log_factorial_coefficients(m, sigma, -n + j * sigma)
    log_prod = np.concatenate([[0.0], np.cumsum(np.log(theta + sigma * np.arange(j, j + m)))])  # Π_{i<j+k}
    lp = gammaln(theta + n) - gammaln(theta + n + m) + log_prod - k * np.log(sigma) + log_c
    return np.exp(lp)


def discovery_probability(n: int, m: int, k: int, sigma: float, theta: float) -> float:
    """D̂ (§6.3): the Bayes estimate of the probability that record n + m + 1 is a new value, from
    the number k of new values in the released m records alone (K_n is confidential):
    D̂ = (θ + kσ + σ E[Y]) / (θ + n + m), P[Y = j] ∝ (θ/σ + 1)_{j+k−1} C(n, j; σ) C(m, k; σ, −n + jσ).

    >>> round(discovery_probability(n=500, m=100, k=5, sigma=0.5, theta=3.0), 4)
    0.0638
    """
    check_pitman_yor(sigma, theta)
    if not 0 < float(sigma) < 1:
        raise ValueError(f"`sigma` must be in (0, 1) for the discovery-probability estimator, got {sigma}.")
    n, m, k = positive_int(n, "n"), positive_int(m, "m"), _nonnegative_int(k, "k")
    if not (0 <= k <= m and n > 0 and m > 0):
        raise ValueError(f"need n > 0, m > 0 and 0 <= k <= m; got n={n}, m={m}, k={k}.")
    a = theta / sigma + 1
    joint = lambda j, log_cn: (  # log of P[Y = j] up to a constant
        gammaln(a + j + k - 1) + log_cn + log_factorial_coefficients(m, sigma, -n + j * sigma, kmax=k)[:, k]
    )
    # P[Y = j] ∝ P[K_n = j] P[K_m = k | K_n = j] and the second factor is ≤ 1, so values j whose
    # P[K_n = j] is e⁴⁰ below the largest joint term are negligible; K_n's law is computed only
    # up to a kmax past them (exact truncation), doubling kmax until it is.
    kmax = min(n, 256)
    while True:
        j = np.arange(1, kmax + 1)
        log_cn = log_factorial_coefficients(n, sigma, kmax=kmax)[1:]
        log_prior = gammaln(a + j - 1) - np.log(sigma) + log_cn  # log P[K_n = j] + const
        near = log_prior >= log_prior.max() - 40
        # the largest log P[K_n = j] P[K_m = k | K_n = j] on log_prior's scale
        best = (
            joint(j[near], log_cn[near]).max() - np.log(sigma) - gammaln(theta + n + m) + gammaln(theta + n)
        )
        keep = log_prior >= best - 40
        if kmax == n or not keep[-1]:
            break
        kmax = min(2 * kmax, n)
    log_w = joint(j[keep], log_cn[keep])
    w = np.exp(log_w - logsumexp(log_w))
    j = j[keep]
    return float((theta + k * sigma + sigma * (w @ j)) / (theta + n + m))


def posterior_predictive(rng_key, released, num_samples: int, sigma: float, theta: float, base=None):
    """Draws from the posterior predictive of PY(σ, θ, H) given the *released* records only: by
    exchangeability (§6.1) it equals the predictive given the confidential data and the release,
    with the confidential data integrated out."""
    released = as_partition(released, "released")
    return predictive_release(rng_key, released, num_samples, sigma, theta, base).values
