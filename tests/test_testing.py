"""dpjax.testing: each oracle against an independent computation (scipy densities, quadrature with
scipy.integrate, brute-force enumeration, Gaussian conditioning), and the MCSE z-test's verdict:
it passes on the exact value and fails on a wrong one, for fixed seeds."""

from itertools import product

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from scipy import integrate, stats

import dpjax
from dpjax.diagnostics import mcse_z
from dpjax.testing import (
    ZTest,
    beta_bernoulli_count_moments,
    beta_bernoulli_unknown_n,
    gamma_poisson_sum_moments,
    grid_moments,
    grid_posterior,
    mcse_z_test,
    normal_sum_gaussian_posterior,
    normal_sum_moments,
    release_log_likelihood,
    statistic_posterior,
)

LAPLACE = dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=1.0)  # scipy: laplace(scale=2)
GAUSS = dpjax.GaussianMechanism(sigma=1.5)  # scipy: norm(scale=1.5)
DLAPLACE = dpjax.DiscreteLaplaceMechanism(epsilon=0.7)  # scipy: dlaplace(0.7)


def eta(s, t):
    """The three mechanisms' densities from scipy, for the releases (s_laplace, s_gauss)."""
    return stats.laplace.pdf(s[0], t, 2.0) * stats.norm.pdf(s[1], t, 1.5)


def test_public_api_is_in_the_package():
    assert dpjax.testing.mcse is dpjax.diagnostics.mcse and dpjax.testing.mcse_z is mcse_z
    assert all(hasattr(dpjax.testing, name) for name in dpjax.testing.__all__)


def test_statistic_posterior_is_bayes_rule():
    support, s = np.arange(13), (4.3, 6.1)
    log_prior = stats.betabinom.logpmf(support, 12, 2.0, 3.0)
    got = statistic_posterior(support, log_prior, s, [LAPLACE, GAUSS])
    want = np.exp(log_prior) * eta(s, support)
    np.testing.assert_allclose(got, want / want.sum(), rtol=1e-5)
    # a vector statistic with per-entry noise
    pairs = np.array([[a, b] for a in range(4) for b in range(4)], float)
    got = statistic_posterior(pairs, np.zeros(16), np.array([1.2, 2.9]), GAUSS)
    want = stats.norm.pdf([1.2, 2.9], pairs, 1.5).prod(1)
    np.testing.assert_allclose(got, want / want.sum(), rtol=1e-5)


def test_beta_bernoulli_count_moments_against_quadrature_over_p():
    n, a, b, s = 12, 2.0, 3.0, (4.3, 6.1)
    t = np.arange(n + 1)
    lik = lambda p: stats.binom.pmf(t, n, p) @ eta(s, t)
    post = lambda p, k: p**k * stats.beta.pdf(p, a, b) * lik(p)
    norm = integrate.quad(post, 0, 1, args=(0,), epsabs=0, epsrel=1e-11)[0]
    want = [integrate.quad(post, 0, 1, args=(k,), epsabs=0, epsrel=1e-11)[0] / norm for k in (1, 2, 3)]
    got = beta_bernoulli_count_moments(n, s, [LAPLACE, GAUSS], a=a, b=b, orders=(1, 2, 3))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_beta_bernoulli_count_moments_without_noise_are_the_beta_posteriors():
    exact = dpjax.DiscreteLaplaceMechanism(epsilon=40.0)
    got = beta_bernoulli_count_moments(20, 13.0, exact, a=0.5, b=4.0, orders=(0, 1, 2, 3))
    want = [stats.beta(0.5 + 13, 4.0 + 7).moment(k) for k in (0, 1, 2, 3)]
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("size_release", [None, 27.0])
def test_beta_bernoulli_unknown_n_against_a_double_loop(size_release):
    n_max, s, a, b = 60, 9.0, 2.0, 2.0
    prior_n = stats.poisson(25)
    joint = np.zeros((n_max + 1, 2))  # p(n, s) and E[p | n, s] p(n, s)
    for m in range(n_max + 1):
        t = np.arange(m + 1)
        w = stats.betabinom.pmf(t, m, a, b) * stats.dlaplace.pmf(s - t, 0.7) * prior_n.pmf(m)
        if size_release is not None:
            w = w * stats.laplace.pdf(size_release, m, 2.0)
        joint[m] = w.sum(), w @ ((a + t) / (a + b + m))
    pmf, (mean,) = beta_bernoulli_unknown_n(
        s, DLAPLACE, size_release, LAPLACE, prior_n.logpmf, n_max, a=a, b=b, orders=(1,)
    )
    np.testing.assert_allclose(pmf, joint[:, 0] / joint[:, 0].sum(), rtol=1e-5, atol=1e-12)
    np.testing.assert_allclose(mean, joint[:, 1].sum() / joint[:, 0].sum(), rtol=1e-5)
    # the prior as a sequence gives the same
    again = beta_bernoulli_unknown_n(
        s, DLAPLACE, size_release, LAPLACE, prior_n.logpmf(np.arange(61)), 60, a=a, b=b
    )
    np.testing.assert_allclose(again[0], pmf, rtol=1e-12)


def test_beta_bernoulli_unknown_n_with_n_known_is_the_known_n_answer():
    only_30 = lambda m: 0.0 if m == 30 else -np.inf
    pmf, moments = beta_bernoulli_unknown_n(11.0, DLAPLACE, None, None, only_30, 50, a=2.0, b=2.0)
    assert pmf[30] == pytest.approx(1.0) and pmf.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(moments, beta_bernoulli_count_moments(30, 11.0, DLAPLACE, a=2.0, b=2.0))


def test_gamma_poisson_sum_moments_against_quadrature_over_lambda():
    n, shape, rate, s = 3, 4.0, 0.5, (20.4, 23.0)
    t = np.arange(200)
    lik = lambda lam: stats.poisson.pmf(t, n * lam) @ eta(s, t)
    post = lambda lam, k: lam**k * stats.gamma.pdf(lam, shape, scale=1 / rate) * lik(lam)
    kw = dict(points=[4.0, 7.0, 10.0], epsabs=0, epsrel=1e-11, limit=200)
    norm = integrate.quad(post, 0, 60, args=(0,), **kw)[0]
    want = [integrate.quad(post, 0, 60, args=(k,), **kw)[0] / norm for k in (1, 2)]
    got = gamma_poisson_sum_moments(n, s, [LAPLACE, GAUSS], shape=shape, rate=rate)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    longer = gamma_poisson_sum_moments(n, s, [LAPLACE, GAUSS], shape=shape, rate=rate, t_max=500)
    np.testing.assert_allclose(longer, got, rtol=1e-12)  # the automatic range holds the mass


def test_gamma_poisson_sum_moments_without_noise_and_a_short_range():
    exact = dpjax.DiscreteLaplaceMechanism(epsilon=40.0)
    got = gamma_poisson_sum_moments(5, 31.0, exact, shape=2.0, rate=3.0, orders=(1, 2, 3))
    np.testing.assert_allclose(
        got, [stats.gamma(33.0, scale=1 / 8.0).moment(k) for k in (1, 2, 3)], rtol=1e-6
    )
    with pytest.raises(ValueError, match="top quarter"):
        gamma_poisson_sum_moments(5, 31.0, LAPLACE, shape=2.0, rate=3.0, t_max=40)


def test_normal_sum_gaussian_posterior_is_gaussian_conditioning():
    n, s, tau, m0, sd0, sigma = 7, 9.0, 2.5, 1.0, 1.5, 0.8
    # (μ, s) jointly Normal: s = n μ + Σ (xᵢ − μ) + noise
    cov = np.array([[sd0**2, n * sd0**2], [n * sd0**2, n**2 * sd0**2 + n * sigma**2 + tau**2]])
    mean = m0 + cov[0, 1] / cov[1, 1] * (s - n * m0)
    var = cov[0, 0] - cov[0, 1] ** 2 / cov[1, 1]
    got = normal_sum_gaussian_posterior(n, s, tau, prior_mean=m0, prior_sd=sd0, record_sd=sigma)
    np.testing.assert_allclose(got, (mean, var), rtol=1e-12)


def test_normal_sum_moments_with_gaussian_noise_are_the_closed_form():
    kw = dict(prior_mean=1.0, prior_sd=1.5, record_sd=0.8)
    mean, var = normal_sum_gaussian_posterior(7, 9.0, 2.5, **kw)
    got = normal_sum_moments(7, 9.0, dpjax.GaussianMechanism(sigma=2.5), orders=(1, 2, 3), **kw)
    np.testing.assert_allclose(got, [stats.norm(mean, np.sqrt(var)).moment(k) for k in (1, 2, 3)], rtol=1e-6)
    # two Gaussian releases of T are one release of their precision-weighted mean
    two = normal_sum_moments(7, [9.0, 4.0], [dpjax.GaussianMechanism(sigma=2.5), GAUSS], **kw)
    prec = 1 / 2.5**2 + 1 / 1.5**2
    mean, var = normal_sum_gaussian_posterior(7, (9.0 / 2.5**2 + 4.0 / 1.5**2) / prec, prec**-0.5, **kw)
    np.testing.assert_allclose(two, (mean, var + mean**2), rtol=1e-6)


def normal_laplace_pdf(s, m, v, b):
    """Density at s of N(m, v) plus Laplace(0, b) noise (the convolution in closed form)."""
    c = v / (2 * b**2)
    left = np.exp((m - s) / b + c) * stats.norm.cdf((s - m - v / b) / np.sqrt(v))
    right = np.exp((s - m) / b + c) * stats.norm.cdf((m - s - v / b) / np.sqrt(v))
    return (left + right) / (2 * b)


def test_normal_sum_moments_with_laplace_noise_against_quadrature_over_mu():
    n, s, m0, sd0, b = 5, 3.0, 0.5, 1.0, 2.0  # T | μ ~ N(nμ, n), s | T ~ Laplace(T, b)
    by_t = integrate.quad(lambda t: stats.norm.pdf(t, 4.0, np.sqrt(n)) * stats.laplace.pdf(s, t, b), -60, 60)
    assert normal_laplace_pdf(s, 4.0, n, b) == pytest.approx(by_t[0], rel=1e-8)  # the convolution

    def moment(k):
        f = lambda mu: mu**k * stats.norm.pdf(mu, m0, sd0) * normal_laplace_pdf(s, n * mu, n, b)
        return integrate.quad(f, -8, 9, epsabs=0, epsrel=1e-11)[0]

    got = normal_sum_moments(n, s, LAPLACE, prior_mean=m0, prior_sd=sd0)
    np.testing.assert_allclose(got, [moment(1) / moment(0), moment(2) / moment(0)], rtol=1e-5)


def test_release_log_likelihood_against_every_ordered_configuration():
    """Three-valued records (0, 1, 2); releases: the number of 2s (Laplace), the sum (Gaussian) and
    the vector (number of 0s, number of 1s) (Gaussian per entry)."""
    n, values = 4, np.array([0.0, 1.0, 2.0])
    theta = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1], [0.0, 0.5, 0.5]])  # a row per θ; log 0 allowed
    stats_ = [np.array([0.0, 0.0, 1.0]), values, np.eye(3)[:, :2]]
    s = [1.3, 3.8, np.array([0.7, 2.2])]
    with np.errstate(divide="ignore"):
        got = release_log_likelihood(np.log(theta), n, s, [LAPLACE, GAUSS, GAUSS], stats_)
    want = np.zeros(len(theta))
    for x in product(range(3), repeat=n):
        x = np.array(x)
        eta_x = stats.laplace.pdf(s[0], np.sum(x == 2), 2.0) * stats.norm.pdf(s[1], values[x].sum(), 1.5)
        eta_x *= stats.norm.pdf(s[2], [np.sum(x == 0), np.sum(x == 1)], 1.5).prod()
        want += theta[:, x].prod(1) * eta_x
    np.testing.assert_allclose(np.exp(got), want, rtol=1e-5)
    # a θ under which a record value is impossible (log pmf −inf): every record is 1, T = 3
    got = release_log_likelihood(np.array([[-np.inf, 0.0]]), 3, 2.0, GAUSS, np.array([0.0, 1.0]))
    np.testing.assert_allclose(got, stats.norm.logpdf(2.0, 3.0, 1.5), rtol=1e-6)
    with pytest.raises(ValueError, match="max_configurations"):
        release_log_likelihood(np.zeros((1, 10)), 30, 1.0, GAUSS, np.arange(10.0))


def test_release_log_likelihood_on_a_grid_gives_the_count_moments():
    """The route for a user's own model: log p(s | θ) by enumerating the records, the prior added,
    moments by quadrature on a grid; against the enumeration over the count."""
    n, s = 9, 3.0
    p = np.linspace(0, 1, 4001)[1:-1]
    log_lik = release_log_likelihood(np.log(np.stack([1 - p, p], 1)), n, s, DLAPLACE, np.array([0.0, 1.0]))
    got = grid_moments(p, stats.beta.logpdf(p, 2.0, 3.0) + log_lik)
    np.testing.assert_allclose(got, beta_bernoulli_count_moments(n, s, DLAPLACE, a=2.0, b=3.0), rtol=1e-5)
    # a discrete θ: its support and prior pmf, the weights a pmf
    support = np.array([0.1, 0.4, 0.8])
    log_lik = release_log_likelihood(np.log(np.stack([1 - support, support], 1)), n, s, DLAPLACE, [0.0, 1.0])
    prior = np.array([0.5, 0.3, 0.2])
    t = np.arange(n + 1)
    want = prior * (stats.binom.pmf(t, n, support[:, None]) @ stats.dlaplace.pmf(s - t, 0.7))
    np.testing.assert_allclose(
        grid_posterior(support, np.log(prior) + log_lik, discrete=True), want / want.sum(), rtol=1e-5
    )


def test_grid_posterior_is_the_trapezoid_rule():
    x = np.sort(np.random.default_rng(0).uniform(-3, 3, 50))
    f = stats.norm.pdf(x, 0.3, 0.9)
    w = grid_posterior(x, np.log(f))
    np.testing.assert_allclose(w @ np.cos(x), np.trapezoid(f * np.cos(x), x) / np.trapezoid(f, x), rtol=1e-12)
    np.testing.assert_allclose(
        grid_moments(x, np.log(f), discrete=True), (f @ x / f.sum(), f @ x**2 / f.sum())
    )
    with pytest.raises(ValueError, match="increasing"):
        grid_posterior(x[::-1], np.log(f))
    with pytest.raises(ValueError, match="non-negative ints"):
        grid_moments(x, np.log(f), orders=(1.5,))


# ------------------------------------------------------------------ the MCSE z-test
def ar1_chains(seed, rho, chains=4, draws=4000, mean=1.0):
    rng = np.random.default_rng(seed)
    noise = rng.normal(size=(chains, draws)) * np.sqrt(1 - rho**2)
    out = np.empty((chains, draws))
    out[:, 0] = rng.normal(size=chains)
    for i in range(1, draws):
        out[:, i] = rho * out[:, i - 1] + noise[:, i]
    return mean + out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_z_test_passes_on_the_exact_value_and_fails_a_few_mcse_off(seed):
    draws = ar1_chains(seed, rho=0.8)
    right = mcse_z_test(draws, 1.0)
    assert isinstance(right, ZTest) and right.passed and bool(right), right
    assert right.z == pytest.approx(mcse_z(draws, 1.0)[0]) and right.ess == pytest.approx(
        mcse_z(draws, 1.0)[1]
    )
    assert 500 < right.ess < 3000  # autocorrelated: well below 16 000 draws
    for shift in (-6.0, 6.0):
        wrong = mcse_z_test(draws, 1.0 + shift * right.mcse)
        assert not wrong.passed and not wrong, wrong
        assert wrong.z == pytest.approx(right.z - shift)
    assert not mcse_z_test(draws, 1.0, z_max=abs(right.z) * 0.99)  # the threshold is used


def test_z_test_fails_on_too_few_effective_draws_nan_and_frozen_chains():
    sticky = ar1_chains(0, rho=0.999, draws=500)
    verdict = mcse_z_test(sticky, float(np.mean(sticky)))  # z = 0, but ESS ≈ 2 per chain
    assert verdict.z == pytest.approx(0.0, abs=1e-9) and verdict.ess < 100 and not verdict
    assert mcse_z_test(sticky, float(np.mean(sticky)), min_ess=0)
    bad = ar1_chains(1, rho=0.5)
    bad[2, 100] = np.nan
    assert not mcse_z_test(bad, 1.0)
    assert not mcse_z_test(np.full((4, 100), 1.0), 1.0)


def test_z_test_with_an_engine_tells_the_exact_posterior_from_the_naive_one():
    """Exact ABC's draws of p for 8 Bernoulli records and a discrete Laplace count: the z-test
    passes at the enumerated E[p | s] and E[p² | s] and rejects the posterior that ignores the noise."""
    n, s, mech = 8, 2.0, dpjax.DiscreteLaplaceMechanism(epsilon=0.5)

    def model(release=None):
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        with numpyro.plate("people", n):
            x = numpyro.sample("x", dist.Bernoulli(p))
        dpjax.privatized("count", mech, lambda r: r["x"], {"x": x}, plate="people", obs=release)

    out = dpjax.infer.exact_abc(jax.random.key(0), model, jnp.array(s), num_samples=8000, progress_bar=False)
    p = np.asarray(out.samples["p"], float).reshape(4, -1)  # independent draws as four chains
    m1, m2 = beta_bernoulli_count_moments(n, s, mech)
    assert mcse_z_test(p, m1) and mcse_z_test(p**2, m2)
    naive = stats.beta(1 + s, 1 + n - s)  # the noise ignored
    assert not mcse_z_test(p, naive.mean()) and not mcse_z_test(p**2, naive.moment(2))
