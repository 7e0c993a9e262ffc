"""The SlowMixingWarning after warmup: R̂ and ESS over the kept draws (dpjax.infer.chains.mixing), checked
against ArviZ on chains whose answer is known, and fired by a sampler that mixes slowly, not by one that
mixes."""

import warnings

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer import MCMC

import dpjax
from dpjax.infer import DataAugmentationKernel, SlowMixingWarning
from dpjax.infer.chains import draw_moments, mixing


def ar1(rng, rho, chains, n, offsets=0.0):
    """``chains`` AR(1) chains of lag-1 autocorrelation ``rho`` and unit variance, plus ``offsets``."""
    x = np.zeros((chains, n))
    x[:, 0] = rng.normal(size=chains)
    for t in range(1, n):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * rng.normal(size=chains)
    return x + np.reshape(offsets, (-1, 1))


def moments(x, num_warmup=3):
    """draw_moments of the chains ``x`` (chains, draws) in float32, after ``num_warmup`` ignored ones."""
    chains = x.shape[0]
    zeros = jnp.zeros((chains, 1), jnp.float32)
    state = (jnp.zeros(chains, jnp.int32),) + (zeros,) * 5
    step = jax.vmap(lambda m, v, i: draw_moments(m, {"a": v}, i, num_warmup), in_axes=(0, 0, None))
    warm = np.full((num_warmup, chains, 1), 1e6)  # not counted
    draws = np.concatenate([warm, np.moveaxis(x, 1, 0)[..., None]]).astype(np.float32)
    state, _ = jax.lax.scan(lambda m, a: (step(m, a[0], a[1]), None), state, (draws, jnp.arange(len(draws))))
    return state


@pytest.mark.parametrize("rho", [0.0, 0.9, 0.99])
def test_ess_and_rhat_of_ar1_chains(rho):
    """4 AR(1) chains of 20 000 draws around 10³ (float32: the sums are kept less the first draw): the ESS
    is the exact 4·20000·(1 − ρ)/(1 + ρ) within 20 % and near ArviZ's; R̂ is ArviZ's classic one. The
    verdicts fail on an ESS of the draws as if independent, and on the split R̂ (ρ = 0.99)."""
    x = ar1(np.random.default_rng(1), rho, 4, 20_000, offsets=1e3)
    rhat, ess = mixing(*moments(x))
    exact = 80_000 * (1 - rho) / (1 + rho)
    assert abs(ess[0] / exact - 1) < 0.2, (ess, exact)
    assert abs(ess[0] / float(az.ess(x)) - 1) < 0.3, (ess, az.ess(x))
    assert abs(rhat[0] - float(az.rhat(x, method="identity"))) < 1e-4
    if rho > 0:
        assert abs(80_000 / exact - 1) > 0.2
    if rho == 0.99:
        assert abs(rhat[0] - float(az.rhat(x))) > 1e-4


def test_rhat_sees_a_chain_apart_and_constant_chains():
    """A chain offset by one sd: R̂ ≈ 1.1, ArviZ's classic R̂; a site constant within each chain
    but different across them: R̂ = ∞, ESS 0; constant and equal in all: mixed."""
    x = ar1(np.random.default_rng(2), 0.5, 4, 2000, offsets=[0.0, 0.0, 0.0, 1.0])
    rhat, _ = mixing(*moments(x))
    assert 1.05 < rhat[0] < 1.2 and abs(rhat[0] - float(az.rhat(x, method="identity"))) < 1e-4
    rhat, ess = mixing(*moments(np.repeat([[0.0], [1.0]], 200, axis=1)))
    assert rhat[0] == np.inf and ess[0] == 0
    rhat, ess = mixing(*moments(np.zeros((2, 200))))
    assert rhat[0] == 1 and ess[0] == 400


NB_N, NB_RELEASE = 30, 290.4


def nb_strong(s=None):
    """Negative-binomial records whose sum ε = 1 pins to ±1: plain DA holds the dispersion r still."""
    m = numpyro.sample("m", dist.Gamma(4.0, 0.4))
    r = numpyro.sample("r", dist.Gamma(2.0, 1.0))
    with numpyro.plate("people", NB_N):
        x = numpyro.sample("x", dist.NegativeBinomial2(m, r))
    noise = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    dpjax.privatized("total", noise, lambda q: q["x"], {"x": x}, plate="people", obs=s)


def normal_mean(s=None):
    mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
    with numpyro.plate("rows", 30):
        x = numpyro.sample("x", dist.Normal(mu, 1.0))
    noise = dpjax.GaussianMechanism(sigma=3.0)
    dpjax.privatized("total", noise, lambda r: r["x"], {"x": x}, plate="rows", obs=s)


def slow_warnings(model, s, num_warmup, num_samples):
    kernel = DataAugmentationKernel(model, noncentred_moves=0)
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples, num_chains=4,
                chain_method="vectorized", progress_bar=False)  # fmt: skip
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        mcmc.run(jax.random.key(0), jnp.array(s))
    messages = [str(w.message) for w in seen if issubclass(w.category, SlowMixingWarning)]
    return [m for m in messages if m.startswith("After")], mcmc


def test_the_kept_draws_of_a_slow_sampler_name_its_site():
    """Plain DA on the pinned negative binomial: after the kept draws (num_samples = num_warmup, so at the
    end of the run) a SlowMixingWarning names r, with its R̂ and ESS; none before the first checkpoint. A
    Normal mean that mixes stays silent at its end (ESS ≈ 200 of 4 × 200 draws, R̂ 1.02)."""
    slow, mcmc = slow_warnings(nb_strong, NB_RELEASE, 100, 100)
    assert len(slow) == 1 and "['r']" in slow[0], slow
    assert "After 100 kept draws in each of 4 chains" in slow[0]
    assert float(az.ess(np.asarray(mcmc.get_samples(group_by_chain=True)["r"]))) < 100
    assert slow_warnings(nb_strong, NB_RELEASE, 100, 99)[0] == []  # the run ends before the checkpoint
    assert slow_warnings(normal_mean, 20.0, 200, 200)[0] == []


def test_the_warning_says_which_measure_is_poor():
    """Chains that agree (R̂ ≈ 1) but hold ~60 independent draws: the warning names the site and the ESS
    only; the same chains 20× as long stay silent."""
    from dpjax.infer.chains import _report_poor

    for n, expected in ((1000, 1), (20_000, 0)):
        x = ar1(np.random.default_rng(3), 0.97, 4, n)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            _report_poor(["a"], *moments(x))
        assert len(seen) == expected
        if expected:
            message = str(seen[0].message)
            assert "['a']" in message and "ESS down to" in message and "R̂ up to" not in message, message


def test_coordinates_are_named_in_the_order_they_are_flattened():
    """θ's dict may come in another order than the model's sites (a θ-step's own): flat_theta sorts the
    sites and the warning's names follow the same order."""
    from dpjax.infer.chains import _coordinate_names, flat_theta

    theta = {"b": jnp.array([1.0, 2.0]), "a": jnp.array(3.0)}
    assert flat_theta(theta, jnp.zeros(3)).tolist() == [3.0, 1.0, 2.0]
    z = {"a": jnp.zeros(4), "b": jnp.zeros((4, 2))}  # 4 chains
    assert _coordinate_names(["b", "a"], z, 4) == ["a", "b", "b"]


def test_pseudo_marginal_chains_warn_too():
    """PseudoMarginalABC keeps the same sums: its random walk on the Normal mean (4 chains × 100 kept
    draws) holds few independent draws, and the warning names mu."""
    from dpjax.infer import PseudoMarginalABC

    mcmc = MCMC(PseudoMarginalABC(normal_mean, 16), num_warmup=100, num_samples=100, num_chains=4,
                chain_method="vectorized", progress_bar=False)  # fmt: skip
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        mcmc.run(jax.random.key(0), jnp.array(20.0))
    slow = [str(w.message) for w in seen if issubclass(w.category, SlowMixingWarning)]
    assert len(slow) == 1 and "['mu']" in slow[0] and "After 100 kept draws" in slow[0], slow
    ess = float(az.ess(np.asarray(mcmc.get_samples(group_by_chain=True)["mu"])))
    assert ess < 100 or "R̂" in slow[0], ess
