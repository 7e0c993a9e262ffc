"""The mechanism contract beyond "noise added to T": a non-additive mechanism (here a Laplace
release truncated to the statistic's range) defines the release law given T, and every engine uses
η(s | T) itself; the additive ones keep the residual fast path."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer import MCMC
from scipy import stats

import dpjax
from dpjax.diagnostics import mcse_z
from dpjax.infer import DataAugmentationKernel, PseudoMarginalABC
from dpjax.mechanisms import Guarantee, Mechanism

N, SCALE, S = 20, 3.0, 2.4


class TruncatedLaplace(Mechanism):
    """T + Laplace(scale) noise, the release kept to [0, n] by rejection: η(s | T) ∝ Laplace(s; T)
    on [0, n], whose normaliser depends on T, so η is not a function of s − T."""

    additive = False

    def __init__(self, scale, high):
        self.scale, self.high = scale, high

    def noise(self, loc):
        return dist.TruncatedDistribution(dist.Laplace(loc, self.scale), low=0.0, high=self.high)

    def _max_log_density_per_entry(self):  # at T = 0 (or n): the peak over half the mass
        return -np.log(2 * self.scale) - np.log(0.5 * (1 - np.exp(-self.high / self.scale)))

    @property
    def guarantee(self):
        return Guarantee(epsilon=2.0 / self.scale)  # the normaliser doubles the Laplace bound


MECH = TruncatedLaplace(SCALE, float(N))


def model(s=None):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("people", N):
        x = numpyro.sample("x", dist.Bernoulli(p))
    dpjax.privatized("count", MECH, lambda r: r["x"], {"x": x}, plate="people", obs=s)


def exact_mean():
    """E[p | s]: T ~ BetaBinomial(N, 1, 1) = uniform on 0..N, p | T ~ Beta(1 + T, 1 + N − T)."""
    t = np.arange(N + 1.0)
    z = stats.laplace.cdf(N, t, SCALE) - stats.laplace.cdf(0, t, SCALE)
    w = stats.laplace.pdf(S, t, SCALE) / z
    return float(w @ ((1 + t) / (N + 2)) / w.sum())


def beta_update(key, records, params):
    x = records["x"]
    return {"p": jax.random.beta(key, 1.0 + x.sum(), 1.0 + N - x.sum())}


def test_non_additive_mechanism_has_its_own_density_and_no_residual_form():
    t, s = jnp.array(5.0), jnp.array(2.0)
    z = stats.laplace.cdf(N, 5, SCALE) - stats.laplace.cdf(0, 5, SCALE)
    np.testing.assert_allclose(
        MECH.log_density(s, t), stats.laplace.logpdf(2, 5, SCALE) - np.log(z), rtol=1e-5
    )
    with pytest.raises(ValueError, match="not additive"):
        MECH.log_noise_density(s - t)
    assert dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0).additive


@pytest.mark.parametrize("engine", ["DA", pytest.param("PM", marks=pytest.mark.slow)])
def test_engines_use_the_release_density_of_a_non_additive_mechanism(engine):
    kernel = (
        DataAugmentationKernel(model, theta_update=beta_update, noncentred_moves=0)
        if engine == "DA"
        else PseudoMarginalABC(model, num_simulations=16)
    )
    mcmc = MCMC(
        kernel, num_warmup=500, num_samples=3000, num_chains=2, chain_method="vectorized", progress_bar=False
    )
    mcmc.run(jax.random.key(1), jnp.array(S))
    z, ess = mcse_z(mcmc.get_samples(group_by_chain=True)["p"], exact_mean())
    # the residual form, T + Laplace without the normaliser, gives a posterior mean 4–5 sd away
    assert abs(z) < 4 and ess > 300, (z, ess, exact_mean())
