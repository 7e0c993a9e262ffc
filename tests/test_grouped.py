"""A release per unit (`privatized(..., groups=)`): each unit's records feed only that unit's noisy total.
Exact answers by enumeration per unit (the units are independent given θ)."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer import MCMC, Predictive
from scipy import stats

import dpjax
from dpjax.infer import DataAugmentationKernel
from dpjax.testing import grid_moments, mcse_z_test

SIZES = (4, 7, 5)  # records per unit: 16 in all
UNITS = np.repeat(np.arange(len(SIZES)), SIZES)
LAPLACE = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
RELEASE = np.array([3.4, 1.2, 4.6])  # one noisy count per unit


def unit_counts(n, units, s=None, num_groups=None):
    p = numpyro.sample("p", dist.Beta(2.0, 2.0))
    with numpyro.plate("people", n):
        x = numpyro.sample("x", dist.Bernoulli(p))
    release = dict(plate="people", obs=s, groups=units, num_groups=num_groups)
    dpjax.privatized("counts", LAPLACE, lambda r: r["x"], {"x": x}, **release)


def log_likelihood(p, release):
    """log p(s | p) = Σ_g log Σ_k Bin(k; n_g, p) η(s_g | k): the units are independent given p."""
    out = 0.0
    for n_g, s_g in zip(SIZES, release):
        k = np.arange(n_g + 1)
        out = out + np.log(stats.binom(n_g, p[:, None]).pmf(k) @ stats.laplace(scale=1.0).pdf(s_g - k))
    return out


def exact_moments(release, grid=4001):
    """E[p], E[p²] given one Laplace count per unit, by quadrature of the Beta(2, 2) prior times the
    per-unit enumerations."""
    p = np.linspace(0.0, 1.0, grid)[1:-1]
    return grid_moments(p, stats.beta(2, 2).logpdf(p) + log_likelihood(p, release), orders=(1, 2))


def beta_update(key, records, params):
    k = jnp.sum(records["x"])
    return {"p": dist.Beta(2.0 + k, 2.0 + records["x"].shape[0] - k).sample(key)}


def test_the_release_is_one_total_per_unit():
    x = jnp.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 1, 1, 0, 0], jnp.float32)[: len(UNITS)]
    conditioned = numpyro.handlers.seed(numpyro.handlers.condition(unit_counts, {"x": x}), 0)
    tr = numpyro.handlers.trace(conditioned).get_trace(len(UNITS), jnp.asarray(UNITS), jnp.asarray(RELEASE))
    info = tr["counts"]["infer"]["dpjax"]
    np.testing.assert_allclose(tr["counts"]["fn"].base_dist.loc, np.bincount(UNITS, weights=np.asarray(x)))
    assert info.num_groups == 3
    sims = Predictive(unit_counts, num_samples=7)(jax.random.key(0), len(UNITS), jnp.asarray(UNITS), None, 3)
    assert sims["counts"].shape == (7, 3)


@pytest.mark.parametrize("release", [RELEASE])
def test_data_augmentation_matches_the_exact_posterior_per_unit(release):
    mcmc = MCMC(
        DataAugmentationKernel(unit_counts, theta_update=beta_update),
        num_warmup=300,
        num_samples=2000,
        num_chains=4,
        chain_method="vectorized",
        progress_bar=False,
    )
    mcmc.run(jax.random.key(1), len(UNITS), jnp.asarray(UNITS), jnp.asarray(release))
    draws = np.asarray(mcmc.get_samples(group_by_chain=True)["p"])
    m1, m2 = exact_moments(release)
    for values, exact in ((draws, m1), (draws**2, m2)):
        test = mcse_z_test(values, exact)
        assert test.passed, test
    assert not mcse_z_test(draws, m1 + 0.02).passed  # the verdict can fail (posterior sd ≈ 0.1)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"groups": np.zeros(3, int)}, r"`groups` must be an int array of shape \(16,\)"),
        ({"groups": UNITS + 5, "num_groups": 3}, r"`groups` must lie in 0 \.\. 2"),
        ({"groups": UNITS.astype(float)}, "int array"),
        ({"num_groups": 3}, "`num_groups` without `groups`"),
    ],
)
def test_groups_are_checked(kwargs, message):
    def model(s=None):
        p = numpyro.sample("p", dist.Beta(2.0, 2.0))
        with numpyro.plate("people", len(UNITS)):
            x = numpyro.sample("x", dist.Bernoulli(p))
        dpjax.privatized("counts", LAPLACE, lambda r: r["x"], {"x": x}, plate="people", obs=s, **kwargs)

    with pytest.raises(ValueError, match=message):
        numpyro.handlers.seed(model, 0)(jnp.asarray(RELEASE))


def test_exact_abc_matches_the_exact_posterior_per_unit():
    """Exact ABC weighs each prior simulation by η(s | T) of every unit's release (T per unit)."""
    from dpjax.infer import exact_abc

    args = (len(UNITS), jnp.asarray(UNITS), jnp.asarray(RELEASE))
    out = exact_abc(jax.random.key(2), unit_counts, *args, num_samples=3000, progress_bar=False)
    draws = np.asarray(out.samples["p"])[None]  # i.i.d.: one chain
    m1, m2 = exact_moments(RELEASE)
    assert mcse_z_test(draws, m1).passed and mcse_z_test(draws**2, m2).passed
    assert not mcse_z_test(draws, m1 + 0.02).passed


# ------------------------------------------------------------------ local DP: one release per record
RR = dpjax.RandomizedResponseMechanism(epsilon=1.0, num_categories=2)


def local_count(n, s=None):
    p = numpyro.sample("p", dist.Beta(2.0, 2.0))
    with numpyro.plate("people", n):
        x = numpyro.sample("x", dist.Bernoulli(p))
    dpjax.privatized("answers", RR, lambda r: r["x"], {"x": x}, plate="people", obs=s, groups=jnp.arange(n))


def test_a_locally_private_count_matches_the_exact_posterior():
    """Each person's yes/no released by randomized response (ε = 1), one release per record:
    p(s | p) = Πᵢ [p η(sᵢ | 1) + (1−p) η(sᵢ | 0)]."""
    answers = np.array([1, 0, 0, 1, 1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1])
    keep = np.e / (np.e + 1)
    grid = np.linspace(0.0, 1.0, 4001)[1:-1]
    yes = np.where(answers == 1, keep, 1 - keep)  # η(sᵢ | xᵢ = 1)
    log_lik = np.log(grid[:, None] * yes + (1 - grid[:, None]) * (1 - yes)).sum(1)
    m1, m2 = grid_moments(grid, stats.beta(2, 2).logpdf(grid) + log_lik, orders=(1, 2))
    mcmc = MCMC(
        DataAugmentationKernel(local_count, theta_update=beta_update),
        num_warmup=300, num_samples=2000, num_chains=4, chain_method="vectorized", progress_bar=False,
    )  # fmt: skip
    mcmc.run(jax.random.key(3), len(answers), jnp.asarray(answers))
    draws = np.asarray(mcmc.get_samples(group_by_chain=True)["p"])
    assert mcse_z_test(draws, m1).passed and mcse_z_test(draws**2, m2).passed
    assert not mcse_z_test(draws, m1 + 0.02).passed


def test_randomized_response_releases_and_densities():

    rr = dpjax.RandomizedResponseMechanism(epsilon=0.7, num_categories=4)
    keep = np.exp(0.7) / (np.exp(0.7) + 3)
    assert float(rr.keep_probability) == pytest.approx(keep)
    # the exact release's frequencies (seeded host randomness) against its law
    released = rr.release(jax.random.key(0), np.full(20_000, 2))
    freq = np.bincount(released, minlength=4) / 20_000
    np.testing.assert_allclose(freq, [(1 - keep) / 3] * 2 + [keep] + [(1 - keep) / 3], atol=0.012)
    assert rr.release(None, [0, 3]).dtype == np.int64  # the operating system's randomness
    # the NumPyro distribution and the residual density agree on every (release, T)
    s, t = np.meshgrid(np.arange(4), np.arange(4))
    np.testing.assert_allclose(
        rr(jnp.asarray(t, jnp.float32), event_dim=0).log_prob(s), rr.log_density(s, t), rtol=1e-6
    )
    np.testing.assert_allclose(np.exp(rr.log_density(np.arange(4), 1)).sum(), 1.0, rtol=1e-6)
    assert rr.guarantee.epsilon == 0.7
    for bad in ({"epsilon": 0.0, "num_categories": 2}, {"epsilon": 1.0, "num_categories": 1}):
        with pytest.raises(ValueError):
            dpjax.RandomizedResponseMechanism(**bad)


def test_pseudo_marginal_and_mcem_take_a_release_per_unit():
    """PseudoMarginalABC against the exact posterior mean; MCEM against the MLE on a grid."""
    from dpjax.infer import PseudoMarginalABC, mcem

    args = (len(UNITS), jnp.asarray(UNITS), jnp.asarray(RELEASE))
    mcmc = MCMC(PseudoMarginalABC(unit_counts, 64), num_warmup=500, num_samples=3000, num_chains=4,
                chain_method="vectorized", progress_bar=False)  # fmt: skip
    mcmc.run(jax.random.key(0), *args)
    draws = np.asarray(mcmc.get_samples(group_by_chain=True)["p"])
    m1, _ = exact_moments(RELEASE)
    assert mcse_z_test(draws, m1).passed and not mcse_z_test(draws, m1 + 0.03).passed
    grid = np.linspace(0.001, 0.999, 9999)
    log_lik = sum(
        np.log(
            stats.binom(n_g, grid[:, None]).pmf(np.arange(n_g + 1))
            @ stats.laplace().pdf(s_g - np.arange(n_g + 1))
        )
        for n_g, s_g in zip(SIZES, RELEASE)
    )
    mle = grid[np.argmax(log_lik)]
    fit = mcem(jax.random.key(0), unit_counts, {"p": 0.5}, *args)
    assert abs(float(fit.params["p"]) - mle) < 0.005, (fit.params, mle)
