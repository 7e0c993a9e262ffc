"""``record_sweeps``: k record steps per iteration at one θ, exact for the same target (known and unknown
n, the plain sweep and SOMA), and what it is for: records that a strong release lets move rarely."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from oracles import exact_unknown_n
from test_data_augmentation import (
    assert_moments,
    exact_normal,
    normal_model,
    normal_update,
    run,
)
from test_unknown_n import CAP, LAPLACE, NOISY_N, assert_matches, beta_update, flat, size_model

import dpjax
from dpjax.diagnostics import mcse_z
from dpjax.infer import DataAugmentationKernel, ReversibleJumpKernel, SlowMixingWarning


@pytest.mark.parametrize("record_update", ["sweep", "soma"])
def test_several_record_sweeps_keep_the_exact_posterior(record_update):
    """A sum of Normal records released with noise sd 0.5 (a strong release: a proposal is accepted
    ~ 15 % of the time), 8 record steps per iteration; the verdict fails on a mean off by one sd/4."""
    n, s, tau = 10, 4.0, 0.5
    kernel = DataAugmentationKernel(
        normal_model, theta_update=normal_update, record_update=record_update, record_sweeps=8
    )
    mcmc = run(kernel, n, jnp.array(s), tau, num_samples=1500)
    mean, var = exact_normal(n, s, tau)
    draws = mcmc.get_samples(group_by_chain=True)["mu"]
    assert_moments(draws, mean, var + mean**2)
    assert abs(mcse_z(draws, mean + np.sqrt(var) / 4)[0]) > 4


def test_several_record_sweeps_are_exact_with_an_unknown_n():
    """The size step reads the last pass's proposals and statistics: (p, n) stay exact."""
    s_dp, n_dp = 13.4, 31.7
    model = lambda: size_model(CAP, s_dp, n_dp, LAPLACE, NOISY_N, dist.DiscreteUniform(1, CAP))
    kernel = ReversibleJumpKernel(model, theta_update=beta_update, noncentred_moves=0, record_sweeps=3)
    assert_matches(run(kernel), *exact_unknown_n(s_dp, n_dp, LAPLACE, NOISY_N, flat, CAP))


def two_statistics(n, s, sigma):
    """μ ~ N(0, 2²) in 2-D, records xᵢ ~ N(μ, I); Σxᵢ released with Gaussian noise of sd ``sigma`` (2,)."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 2.0).expand([2]).to_event(1))
    with numpyro.plate("rows", n):
        x = numpyro.sample("x", dist.Normal(mu, 1.0).to_event(1))
    mechanism = dpjax.GaussianMechanism(sigma=jnp.asarray(sigma))
    dpjax.privatized("total", mechanism, lambda r: r["x"], {"x": x}, plate="rows", obs=s)


def two_statistics_update(key, records, params):
    n = records["x"].shape[0]
    prec = 1 / 4 + n
    return {"mu": records["x"].sum(0) / prec + jax.random.normal(key, (2,)) / jnp.sqrt(prec)}


def test_record_sweeps_mix_records_that_a_strong_release_pins():
    """One record, two statistics: the first released with noise sd 0.02 (a proposal is accepted ~ 2 %
    of the time), the second with sd 3, weaker than the record's own spread, so that μ₂ follows x₂. One
    record step per iteration moves x₂ only when the first coordinate happens to fit; 30 give μ₂ many
    times the ESS, with the exact posterior either way, and the acceptance reported is the passes' mean."""
    s, sigma = jnp.array([1.0, 2.0]), (0.02, 3.0)
    mean, var = exact_normal(1, 2.0, 3.0)
    ess, rate, slow = {}, {}, {}
    for k in (1, 30):
        kernel = DataAugmentationKernel(two_statistics, theta_update=two_statistics_update, record_sweeps=k)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mcmc = run(kernel, 1, s, sigma, num_samples=1000, extra_fields=("record_accept_rate",))
        slow[k] = [w for w in caught if issubclass(w.category, SlowMixingWarning)]
        draws = mcmc.get_samples(group_by_chain=True)["mu"][..., 1]
        ess[k] = mcse_z(draws, mean)[1]
        rate[k] = float(np.mean(mcmc.get_extra_fields()["record_accept_rate"]))
    assert abs(mcse_z(draws, mean)[0]) < 4 and abs(mcse_z(draws**2, var + mean**2)[0]) < 4
    assert ess[30] > 5 * ess[1], ess  # 7 against 316 (4 chains × 1 000)
    assert slow[1] and "record_sweeps" in str(slow[1][0].message) and not slow[30]
    assert rate[1] < 0.1 and abs(rate[30] - rate[1]) < 0.03, rate


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_error_record_sweeps(bad):
    with pytest.raises(ValueError, match="record_sweeps"):
        DataAugmentationKernel(normal_model, record_sweeps=bad)
    with pytest.raises(ValueError, match="record_sweeps"):
        ReversibleJumpKernel(normal_model, record_sweeps=bad)
