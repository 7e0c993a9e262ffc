"""Pseudo-marginal ABC-MCMC against the exact posteriors by numerical summation (as exact ABC)."""

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer import MCMC
from scipy import stats
from test_abc import S_DP, bernoulli_model, exact_bernoulli, exact_poisson

from dpjax.diagnostics import mcse_z
from dpjax.infer import PseudoMarginalABC
from dpjax.models import poisson_count


def run(model, *args, num_simulations=32, seed=0, num_samples=3000):
    mcmc = MCMC(
        PseudoMarginalABC(model, num_simulations=num_simulations),
        num_warmup=1000,
        num_samples=num_samples,
        num_chains=4,
        chain_method="vectorized",
        progress_bar=False,
    )
    mcmc.run(jax.random.key(seed), *args)
    return mcmc


@pytest.mark.parametrize("alpha", [2.0, 25.0])
def test_poisson_exact_posterior_including_prior_data_conflict(alpha):
    """α = 2 is where rejection ABC accepts 0.09 % of proposals; the chain does not care."""
    mcmc = run(poisson_count, alpha, jnp.array(S_DP))
    theta = np.asarray(mcmc.get_samples(group_by_chain=True)["theta"], dtype=float)
    mean, second = exact_poisson(alpha)
    for draws, exact in ((theta, mean), (theta**2, second)):
        z, ess = mcse_z(draws, exact)
        assert abs(z) < 4 and ess > 400, (z, ess)
    naive = (alpha + S_DP) / 2
    assert abs(mcse_z(theta, naive)[0]) > 4  # power: the naive posterior is rejected
    assert 0.05 < float(mcmc.get_extra_fields()["accept_prob"].mean()) < 0.6


def test_beta_bernoulli_discrete_laplace():
    mcmc = run(bernoulli_model, jnp.array(11.0), seed=1)
    p = np.asarray(mcmc.get_samples(group_by_chain=True)["p"], dtype=float)
    mean, second = exact_bernoulli(11.0)
    for draws, exact in ((p, mean), (p**2, second)):
        z, ess = mcse_z(draws, exact)
        assert abs(z) < 4 and ess > 400, (z, ess)


def test_same_key_same_draws_init_params_and_errors():
    a = run(poisson_count, 25.0, jnp.array(S_DP), num_samples=50).get_samples()["theta"]
    b = run(poisson_count, 25.0, jnp.array(S_DP), num_samples=50).get_samples()["theta"]
    np.testing.assert_array_equal(a, b)
    mcmc = MCMC(PseudoMarginalABC(poisson_count), num_warmup=10, num_samples=10, progress_bar=False)
    mcmc.run(jax.random.key(0), 25.0, jnp.array(S_DP), init_params={"theta": jnp.array(30.0)})
    assert mcmc.get_samples()["theta"].shape == (10,)
    idata = az.from_numpyro(mcmc)  # the records and the release are hidden from ArviZ
    assert idata.posterior["theta"].shape == (1, 10) and "acceptance_rate" in idata.sample_stats
    with pytest.raises(ValueError, match="num_simulations"):
        PseudoMarginalABC(poisson_count, num_simulations=0)
    with pytest.raises(ValueError, match="init_params"):
        mcmc.run(jax.random.key(0), 25.0, jnp.array(S_DP), init_params={"lam": jnp.array(30.0)})


def test_public_data_that_depend_on_the_records():
    """Latent xᵢ ~ Bernoulli(p), public yᵢ ~ N(xᵢ, 0.3²), discrete-Laplace count of x: the exact
    posterior sums over the 2⁶ databases. Each simulation must weigh its own records by p(y | x);
    treating y and the release as informed by different databases gives a clearly wrong mean."""
    import itertools

    import numpyro
    import numpyro.distributions as dist
    from scipy.special import betaln

    import dpjax

    y = jnp.array([1.1, 0.9, 1.0, 0.8, 0.1, -0.2])
    mech = dpjax.DiscreteLaplaceMechanism(epsilon=0.7)

    def model(release=None):
        p = numpyro.sample("p", dist.Beta(2.0, 2.0))
        with numpyro.plate("people", 6):
            x = numpyro.sample("x", dist.Bernoulli(p))
            numpyro.sample("y", dist.Normal(x, 0.3), obs=y)
        dpjax.privatized("count", mech, lambda r: r["x"], {"x": x}, plate="people", obs=release)

    release = 2.0
    weights, means = [], []
    for x in itertools.product([0, 1], repeat=6):
        k = sum(x)
        log_w = betaln(2 + k, 8 - k) + stats.norm.logpdf(np.asarray(y) - np.array(x), scale=0.3).sum()
        weights.append(log_w + float(mech.log_density(release, float(k))))
        means.append((2 + k) / 10)
    w = np.exp(np.array(weights) - max(weights))
    exact = float(w @ np.array(means) / w.sum())
    p = np.asarray(run(model, jnp.array(release), seed=4).get_samples(group_by_chain=True)["p"], float)
    z, ess = mcse_z(p, exact)
    assert abs(z) < 4 and ess > 400, (z, ess)
