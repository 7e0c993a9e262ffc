"""Exact answers shared by the engine tests: posterior moments by numerical summation over the
confidential statistic (the Poisson count of Gong §5.1 and a Beta–Bernoulli count)."""

import numpy as np
import numpyro
import numpyro.distributions as dist
from scipy.special import betaln, gammaln

import dpjax

EPS, S_DP = 0.2, 37.4


def exact_poisson(alpha, s_dp=S_DP):
    """E[θ | s_dp], E[θ² | s_dp]: sum over the confidential count k (NegBin(α, 1/2) prior predictive)."""
    k = np.arange(0, 400)
    log_w = gammaln(alpha + k) - gammaln(alpha) - gammaln(k + 1) - (alpha + k) * np.log(2)
    log_w += np.asarray(
        dpjax.LaplaceMechanism(epsilon=EPS, sensitivity=1.0).log_density(s_dp, k.astype(float))
    )
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    return float(w @ ((alpha + k) / 2)), float(w @ ((alpha + k) * (alpha + k + 1) / 4))


def bernoulli_model(release=None):
    p = numpyro.sample("p", dist.Beta(2.0, 2.0))
    with numpyro.plate("people", 30):
        x = numpyro.sample("x", dist.Bernoulli(p))
    mech = dpjax.DiscreteLaplaceMechanism(epsilon=0.5)
    dpjax.privatized("count", mech, lambda r: r["x"], {"x": x}, plate="people", obs=release)


def exact_bernoulli(s_dp, n=30):
    k = np.arange(n + 1)
    log_w = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1) + betaln(2 + k, 2 + n - k)
    log_w += np.asarray(dpjax.DiscreteLaplaceMechanism(epsilon=0.5).log_density(s_dp, k.astype(float)))
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    return float(w @ ((2 + k) / (n + 4))), float(w @ ((2 + k) * (3 + k) / ((n + 4) * (n + 5))))


def exact_unknown_n(s_dp, n_dp, mech_s, mech_n, log_prior_n, n_max, a=2.0, b=2.0):
    """Unknown n (Awan, Barrientos & Ju): Bernoulli(p) records, p ~ Beta(a, b), a noisy count
    ``s_dp`` of the ones and a noisy size ``n_dp`` (None: no release of n). Exact posterior by
    double enumeration over n ≤ n_max and the count k ≤ n (Beta–Binomial in k given n).

    Returns ``(pmf of n on 0..n_max, E[p], E[p²])``; ``log_prior_n(n)`` may be −inf."""
    n = np.arange(n_max + 1)[:, None]
    k = np.arange(n_max + 1)[None, :]
    ok = k <= n
    kk, nn = np.where(ok, k, 0), np.where(ok, n, 0)
    log_w = (
        gammaln(nn + 1) - gammaln(kk + 1) - gammaln(nn - kk + 1) + betaln(a + kk, b + nn - kk) - betaln(a, b)
    )
    log_w = log_w + np.asarray(mech_s.log_density(s_dp, k.astype(float)))
    if n_dp is not None:
        log_w = log_w + np.asarray(mech_n.log_density(n_dp, n.astype(float)))
    log_w = log_w + np.array([log_prior_n(m) for m in n[:, 0]])[:, None]
    log_w = np.where(ok, log_w, -np.inf)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    mean = (a + k) / (a + b + n)
    second = (a + k) * (a + k + 1) / ((a + b + n) * (a + b + n + 1))
    return w.sum(1), float(np.sum(w * mean)), float(np.sum(w * second))


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
