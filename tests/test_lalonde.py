"""Lalonde / NSW example (Gong §5.2): the data summaries, and two exact engines that must agree."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer import MCMC

from dpjax.diagnostics import mcse
from dpjax.infer import PseudoMarginalABC, exact_abc
from dpjax.models import LALONDE_MECHANISM, lalonde_summaries, nsw_summaries

RELEASE = jnp.array([6.5, 4.37, 55.09, 31.48])  # one Laplace release of the NSW summaries


def test_nsw_summaries_and_mechanism():
    s, n_t, n_c = nsw_summaries()
    assert (n_t, n_c) == (185, 260)
    np.testing.assert_allclose(s, [6.3491, 4.5548, 61.896, 30.072], rtol=1e-4)
    np.testing.assert_allclose(LALONDE_MECHANISM.scale, [3, 3, 6, 6])  # the seed's h⁻¹ = (1/3, 1/3, 1/6, 1/6)


@pytest.mark.slow
def test_exact_abc_and_pseudo_marginal_agree():
    """Two exact samplers of the same posterior: i.i.d. rejection ABC vs the pseudo-marginal chain."""
    abc = exact_abc(jax.random.key(0), lalonde_summaries, RELEASE, num_samples=1500, progress_bar=False)
    mcmc = MCMC(
        PseudoMarginalABC(lalonde_summaries, num_simulations=16),
        num_warmup=1500,
        num_samples=2000,
        num_chains=4,
        chain_method="vectorized",
        progress_bar=False,
    )
    mcmc.run(jax.random.key(1), RELEASE)
    chain = mcmc.get_samples(group_by_chain=True)
    for site in ("tau", "mu", "sigma_t", "sigma_c"):
        a, b = np.asarray(abc.samples[site], float), np.asarray(chain[site], float)
        se_b, ess = mcse(b)
        z = (a.mean() - b.mean()) / np.hypot(a.std() / np.sqrt(a.size), se_b)
        assert abs(z) < 4 and ess > 200, (site, z, ess)
    # the posterior of τ is wide: the confidential fit's sd is about 0.7, the private one over 3
    assert np.std(np.asarray(abc.samples["tau"])) > 2.0


def test_naive_fit_is_not_the_exact_posterior():
    """Conditioning the summaries on the release (the naive fit) gives a far narrower τ posterior."""
    from numpyro import handlers
    from numpyro.infer import NUTS

    data = {k: RELEASE[i][None] for i, k in enumerate(("ybar_t", "ybar_c", "s2_t", "s2_c"))}
    kernel = NUTS(handlers.condition(lalonde_summaries, data))
    mcmc = MCMC(kernel, num_warmup=500, num_samples=1000, progress_bar=False)
    mcmc.run(jax.random.key(0), RELEASE)
    assert float(np.std(mcmc.get_samples()["tau"])) == pytest.approx(0.7, rel=0.3)
