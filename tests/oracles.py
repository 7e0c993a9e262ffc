"""Exact answers shared by the engine tests: posterior moments by numerical summation over the
confidential statistic (the Poisson count of Gong §5.1 and a Beta–Bernoulli count). The general
oracles live in :mod:`dpjax.testing`; these fix the tests' models and releases."""

import numpy as np
import numpyro
import numpyro.distributions as dist

import dpjax
from dpjax.testing import beta_bernoulli_count_moments, beta_bernoulli_unknown_n, gamma_poisson_sum_moments

EPS, S_DP = 0.2, 37.4


def exact_poisson(alpha, s_dp=S_DP):
    """E[θ | s_dp], E[θ² | s_dp]: θ ~ Gamma(α, 1), one Poisson(θ) count, Laplace noise on it."""
    mech = dpjax.LaplaceMechanism(epsilon=EPS, sensitivity=1.0)
    return gamma_poisson_sum_moments(1, s_dp, mech, shape=alpha, rate=1.0)


def bernoulli_model(release=None):
    p = numpyro.sample("p", dist.Beta(2.0, 2.0))
    with numpyro.plate("people", 30):
        x = numpyro.sample("x", dist.Bernoulli(p))
    mech = dpjax.DiscreteLaplaceMechanism(epsilon=0.5)
    dpjax.privatized("count", mech, lambda r: r["x"], {"x": x}, plate="people", obs=release)


def exact_bernoulli(s_dp, n=30):
    return beta_bernoulli_count_moments(n, s_dp, dpjax.DiscreteLaplaceMechanism(epsilon=0.5), a=2.0, b=2.0)


def exact_unknown_n(s_dp, n_dp, mech_s, mech_n, log_prior_n, n_max, a=2.0, b=2.0):
    """Unknown n (Awan, Barrientos & Ju): Bernoulli(p) records, p ~ Beta(a, b), a noisy count
    ``s_dp`` of the ones and a noisy size ``n_dp`` (None: no release of n). Exact posterior by
    double enumeration over n ≤ n_max and the count k ≤ n (Beta–Binomial in k given n).

    Returns ``(pmf of n on 0..n_max, E[p], E[p²])``; ``log_prior_n(n)`` may be −inf."""
    pmf, (mean, second) = beta_bernoulli_unknown_n(s_dp, mech_s, n_dp, mech_n, log_prior_n, n_max, a=a, b=b)
    return pmf, mean, second


def exact_unknown_n_normal(s_dp, n_dp, mech_s, mech_n, n_max, m0=2.0, v0=1.0, grid=20_001):
    """Unknown n with continuous records: μ ~ N(m0, v0), xᵢ ~ N(μ, 1), a flat prior on n ∈ 1..n_max,
    a noisy sum ``s_dp`` of the records and a noisy size ``n_dp``. Given n, T = Σxᵢ ~ N(n·m0, n + n²v0)
    and μ | T, n is Normal (conjugate), so p(s | n) and E[μᵏ | s, n] are one integral over T, done by
    the trapezoid rule on a grid of ±40 noise scales around ``s_dp``.

    Returns ``(pmf of n on 0..n_max, E[μ], E[μ²])``."""
    n = np.arange(1, n_max + 1)[:, None].astype(float)
    reach = 40 * float(np.max(mech_s.scale))
    t = np.linspace(s_dp - reach, s_dp + reach, grid)[None, :]
    var_t = n + n**2 * v0
    log_w = -0.5 * (t - n * m0) ** 2 / var_t - 0.5 * np.log(2 * np.pi * var_t)
    log_w = (
        log_w
        + np.asarray(mech_s.log_density(s_dp, t), float)
        + np.asarray(mech_n.log_density(n_dp, n), float)
    )
    w = np.exp(log_w - log_w.max())
    mass = np.trapezoid(w, t, axis=1)
    post_var = 1.0 / (1.0 / v0 + n[:, 0])
    post_mean = (m0 / v0 + t) * post_var[:, None]
    first = np.trapezoid(w * post_mean, t, axis=1) / mass
    second = post_var + np.trapezoid(w * post_mean**2, t, axis=1) / mass
    pmf = np.concatenate([[0.0], mass / mass.sum()])
    return pmf, float(pmf[1:] @ first), float(pmf[1:] @ second)


def exact_unit_sizes(s_dp, n_dp, mech_s, mech_n, capacity, a=2.0, b=2.0, log_prior_n=None, nodes=200):
    """One unknown n per unit: p ~ Beta(a, b) shared by G units, n_g ~ Uniform{0..capacity} (or
    ``log_prior_n``, (G, capacity + 1)), Bernoulli(p) records, a noisy count ``s_dp[g]`` and (unless
    ``mech_n`` is None) a noisy size ``n_dp[g]`` per unit. Given p the units are independent, each
    likelihood L_g(p) = Σ_n Σ_k p(n) η(n_dp_g − n) Bin(k; n, p) η(s_g − k) a polynomial in p, so
    Gauss–Legendre quadrature in p with ``nodes`` nodes is exact.

    Returns ``(E[p], E[p²], E[n_g] (G,), E[n_g²] (G,))``."""
    from scipy import special, stats

    u, weights = np.polynomial.legendre.leggauss(nodes)
    p = (u + 1) / 2
    log_w = np.log(weights) + stats.beta.logpdf(p, a, b)
    n = np.arange(capacity + 1)
    k = np.arange(capacity + 1)
    log_binom = stats.binom.logpmf(k[None, :, None], n[:, None, None], p[None, None, :])  # (n, k, p)
    per_n = []  # per unit: log Σ_k Bin(k; n, p) η(s − k) η(n_dp − n), shape (n, p)
    prior = np.zeros((len(s_dp), capacity + 1)) if log_prior_n is None else np.asarray(log_prior_n, float)
    for g, s in enumerate(np.asarray(s_dp, float)):
        log_eta_k = np.asarray(mech_s.log_density(s, k.astype(float)), float)
        log_n = prior[g].copy()
        if mech_n is not None:
            log_n += np.asarray(mech_n.log_density(float(n_dp[g]), n.astype(float)), float)
        per_n.append(special.logsumexp(log_binom + log_eta_k[None, :, None], axis=1) + log_n[:, None])
    log_units = [special.logsumexp(t, axis=0) for t in per_n]  # log L_g(p)
    log_post = log_w + sum(log_units)
    post = np.exp(log_post - special.logsumexp(log_post))
    mean_n = np.array([post @ (np.exp(t - lu) * n[:, None]).sum(0) for t, lu in zip(per_n, log_units)])
    second_n = np.array([post @ (np.exp(t - lu) * n[:, None] ** 2).sum(0) for t, lu in zip(per_n, log_units)])
    return float(post @ p), float(post @ p**2), mean_n, second_n
