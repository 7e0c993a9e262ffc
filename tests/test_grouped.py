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


def exact_moments(release, grid=4001):
    """E[p], E[p²] given one Laplace count per unit: log p(s | p) = Σ_g log Σ_k Bin(k; n_g, p) η(s_g | k)."""
    p = np.linspace(0.0, 1.0, grid)[1:-1]
    log_lik = 0.0
    for n_g, s_g in zip(SIZES, release):
        k = np.arange(n_g + 1)
        eta = stats.laplace(scale=1.0).pdf(s_g - k)
        log_lik = log_lik + np.log(stats.binom(n_g, p[:, None]).pmf(k) @ eta)
    return grid_moments(p, stats.beta(2, 2).logpdf(p) + log_lik, orders=(1, 2))


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


@pytest.mark.parametrize("release", [RELEASE, np.array([0.2, 6.5, -0.8])])
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
