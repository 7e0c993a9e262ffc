"""A release of a known function of additive totals (`privatized(..., transform=)`): a noisy proportion
T₁/T₀ with T = Σ (xᵢ, 1), against the exact posterior by enumeration over the count."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer import MCMC
from scipy import stats

import dpjax
from dpjax.infer import DataAugmentationKernel
from dpjax.testing import grid_moments, mcse_z_test

N = 20
MEAN = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0 / N)  # one record moves a mean of N by ≤ 1/N


def proportion(n, s=None):
    p = numpyro.sample("p", dist.Beta(2.0, 2.0))
    with numpyro.plate("people", n):
        x = numpyro.sample("x", dist.Bernoulli(p))
    dpjax.privatized("share", MEAN, lambda r: jnp.stack([r["x"], jnp.ones(())]), {"x": x}, plate="people",
                     obs=s, transform=lambda T: T[0] / T[1])  # fmt: skip


def exact_moments(release, grid=4001):
    p = np.linspace(0.0, 1.0, grid)[1:-1]
    k = np.arange(N + 1)
    lik = stats.binom(N, p[:, None]).pmf(k) @ stats.laplace(scale=MEAN.scale).pdf(release - k / N)
    return grid_moments(p, stats.beta(2, 2).logpdf(p) + np.log(lik), orders=(1, 2))


def beta_update(key, records, params):
    k = jnp.sum(records["x"])
    return {"p": dist.Beta(2.0 + k, 2.0 + records["x"].shape[0] - k).sample(key)}


@pytest.mark.parametrize("release", [0.33, 0.9])
def test_a_released_proportion_matches_the_exact_posterior(release):
    kernel = DataAugmentationKernel(proportion, theta_update=beta_update)
    mcmc = MCMC(kernel, num_warmup=300, num_samples=2000, num_chains=4, chain_method="vectorized",
                progress_bar=False)  # fmt: skip
    mcmc.run(jax.random.key(0), N, jnp.array(release))
    draws = np.asarray(mcmc.get_samples(group_by_chain=True)["p"])
    m1, m2 = exact_moments(release)
    assert mcse_z_test(draws, m1).passed and mcse_z_test(draws**2, m2).passed
    assert not mcse_z_test(draws, m1 + 0.02).passed


def test_the_site_releases_the_transformed_total():
    x = jnp.array([1.0, 0.0, 1.0, 1.0] + [0.0] * (N - 4))
    model = numpyro.handlers.seed(numpyro.handlers.condition(proportion, {"x": x}), 0)
    tr = numpyro.handlers.trace(model).get_trace(N, jnp.array(0.3))
    assert float(tr["share"]["fn"].loc) == pytest.approx(3 / N)
    with pytest.raises(ValueError, match="`transform` must be a callable"):
        dpjax.privatized("s", MEAN, lambda r: r["x"], {"x": x}, plate="people", transform=3.0)
