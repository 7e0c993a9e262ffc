"""One unknown n per unit: a records_plate sized by a vector n (G,), every release per unit, and
ReversibleJumpKernel moving each unit's n — against exact posteriors by quadrature in p and enumeration
of each unit's (n, count) (tests/oracles.py), and exact ABC."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer import MCMC, Predictive
from oracles import exact_unit_sizes

import dpjax
from dpjax.infer import CapacityWarning, DataAugmentationKernel, ReversibleJumpKernel
from dpjax.testing import beta_bernoulli_unknown_n, mcse_z_test

LAPLACE = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
G, CAP = 3, 12
S_DP, N_DP = np.array([3.2, 1.1, 6.0]), np.array([6.5, 4.0, 9.2])


def blocks(s_dp=None, n_dp=None, prior_n=None, capacity=CAP):
    """p shared by G blocks, n_g persons in block g, a noisy count of the ones and a noisy n per block."""
    p = numpyro.sample("p", dist.Beta(2.0, 2.0))
    with numpyro.plate("blocks", G):
        n = numpyro.sample("n", prior_n or dist.DiscreteUniform(0, capacity))
    people = dpjax.records_plate("people", n, capacity)
    with people:
        x = numpyro.sample("x", dist.Bernoulli(p))
    dpjax.privatized("count", LAPLACE, lambda r: r["x"], {"x": x}, plate=people, obs=s_dp)
    if n_dp is not None or s_dp is None:
        dpjax.privatized("n_dp", LAPLACE, lambda r: jnp.ones(()), {"x": x}, plate=people, obs=n_dp)


def beta_update(key, records, params, sizes=None):
    """p | x, n: Beta(2 + ones among each block's first n_g records, 2 + zeros among them)."""
    n = params["n"] if sizes is None else sizes
    active = (jnp.arange(CAP)[None, :] < n[:, None]).reshape(-1)
    ones = jnp.sum(jnp.where(active, records["x"], 0))
    return {"p": jax.random.beta(key, 2.0 + ones, 2.0 + jnp.sum(n) - ones)}


def run(kernel, *args, num_samples=2500, seed=0, **kwargs):
    mcmc = MCMC(kernel, num_warmup=500, num_samples=num_samples, num_chains=4, chain_method="vectorized",
                progress_bar=False)  # fmt: skip
    mcmc.run(jax.random.key(seed), *args, **kwargs)
    return mcmc.get_samples(group_by_chain=True)


def assert_unit_sizes(draws, exact):
    m1, m2, n1, n2 = exact
    n = np.asarray(draws["n"], float)
    checks = [(draws["p"], m1), (np.asarray(draws["p"]) ** 2, m2)]
    checks += [(n[..., g], n1[g]) for g in range(G)] + [(n[..., g] ** 2, n2[g]) for g in range(G)]
    for values, value in checks:
        test = mcse_z_test(values, value)
        assert test, test
    sd = np.sqrt(n2[0] - n1[0] ** 2)
    assert not mcse_z_test(n[..., 0], n1[0] + sd / 4)  # the verdict fails a mean off by sd/4


def test_the_plate_holds_capacity_slots_per_unit_and_releases_per_unit():
    sims = Predictive(blocks, num_samples=3)(jax.random.key(0))
    assert sims["x"].shape == (3, G * CAP) and sims["n"].shape == sims["count"].shape == (3, G)
    people = dpjax.records_plate("people", jnp.array([2, 0, 5]), 6)
    assert people.size == 18 and people.num_units == 3
    assert people.units.tolist() == [0] * 6 + [1] * 6 + [2] * 6
    assert people.active.reshape(3, 6).sum(1).tolist() == [2, 0, 5]
    # a unit's total reads its own first n_g slots only
    tr = numpyro.handlers.trace(numpyro.handlers.seed(blocks, 1)).get_trace()
    x, n = tr["x"]["value"].reshape(G, CAP), tr["n"]["value"]
    total = [int(x[g, : n[g]].sum()) for g in range(G)]
    info = tr["count"]["infer"]["dpjax"]
    assert (
        info.total(info.statistic({"x": tr["x"]["value"]})[:, None] * info.active[:, None])[:, 0].tolist()
        == total
    )


def test_one_n_per_unit_matches_the_exact_posterior():
    """Shared p, an unknown n per block with its noisy count and noisy n (exact p | x, n)."""
    draws = run(ReversibleJumpKernel(blocks, theta_update=beta_update), S_DP, N_DP)
    assert_unit_sizes(draws, exact_unit_sizes(S_DP, N_DP, LAPLACE, LAPLACE, CAP))


def test_one_n_per_unit_without_noisy_sizes_and_with_nuts():
    """No release of n (its prior and the counts inform it); p by the default NUTS."""
    s_dp = np.array([2.4, 0.3, 4.1])
    draws = run(ReversibleJumpKernel(blocks), s_dp, seed=2)
    assert_unit_sizes(draws, exact_unit_sizes(s_dp, None, LAPLACE, None, CAP))


def per_block(s_dp=None, n_dp=None):
    """A rate per block, read by the records through the plate's `units`."""
    with numpyro.plate("blocks", G):
        p = numpyro.sample("p", dist.Beta(2.0, 2.0))
        n = numpyro.sample("n", dist.DiscreteUniform(0, CAP))
    people = dpjax.records_plate("people", n, CAP)
    with people:
        x = numpyro.sample("x", dist.Bernoulli(p[people.units]))
    dpjax.privatized("count", LAPLACE, lambda r: r["x"], {"x": x}, plate=people, obs=s_dp)
    dpjax.privatized("n_dp", LAPLACE, lambda r: jnp.ones(()), {"x": x}, plate=people, obs=n_dp)


def test_unit_parameters_match_each_units_exact_posterior():
    """p_g and n_g per block: independent blocks, each its own exact posterior (double enumeration)."""
    draws = run(ReversibleJumpKernel(per_block), S_DP, N_DP, seed=3, num_samples=2000)
    flat = lambda m: 0.0 if 0 <= m <= CAP else -np.inf
    for g in range(G):
        pmf, (m1, m2) = beta_bernoulli_unknown_n(S_DP[g], LAPLACE, N_DP[g], LAPLACE, flat, CAP, a=2.0, b=2.0)
        n = np.asarray(draws["n"][..., g], float)
        p = np.asarray(draws["p"][..., g])
        for values, value in [(p, m1), (p**2, m2), (n, pmf @ np.arange(CAP + 1))]:
            test = mcse_z_test(values, value)
            assert test, (g, test)


def test_known_sizes_per_unit_run_data_augmentation():
    """Blocks of known, unequal sizes padded to one capacity: the plain sweep with the padding masked."""
    sizes = jnp.array([4, 0, 9])
    model = numpyro.handlers.condition(blocks, data={"n": sizes})
    update = lambda key, records, params: beta_update(key, records, params, sizes)
    draws = run(DataAugmentationKernel(model, theta_update=update), S_DP, N_DP, seed=4, num_samples=2000)
    point = np.full((G, CAP + 1), -np.inf)
    point[np.arange(G), np.asarray(sizes)] = 0.0
    m1, m2, _, _ = exact_unit_sizes(S_DP, N_DP, LAPLACE, None, CAP, log_prior_n=point)
    assert mcse_z_test(draws["p"], m1) and mcse_z_test(np.asarray(draws["p"]) ** 2, m2)


def test_the_capacity_warns_only_where_the_prior_allows_more():
    """A Poisson prior of n_g reaches past the capacity (warned, blocked births counted); the uniform
    prior ends at it (nothing blocked, no warning)."""
    big = np.array([11.0, 1.0, 11.5])
    kernel = ReversibleJumpKernel(blocks, theta_update=beta_update)
    with pytest.warns(CapacityWarning):
        run(kernel, big, big, num_samples=200, prior_n=dist.Poisson(30.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CapacityWarning)
        run(kernel, big, big, num_samples=200)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"noncentred_moves": 5}, "noncentred_moves is not supported there yet"),
        ({"record_update": "soma"}, "record_update='soma' is not supported there yet"),
    ],
)
def test_what_one_n_per_unit_does_not_support_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        run(ReversibleJumpKernel(blocks, **kwargs), S_DP, N_DP, num_samples=10)


def test_a_plate_sized_per_unit_brings_its_units():
    def model(groups, s_dp=None):
        p = numpyro.sample("p", dist.Beta(2.0, 2.0))
        people = dpjax.records_plate("people", jnp.array([2, 3]), 4)
        with people:
            x = numpyro.sample("x", dist.Bernoulli(p))
        dpjax.privatized("count", LAPLACE, lambda r: r["x"], {"x": x}, plate=people, obs=s_dp, groups=groups)

    with pytest.raises(ValueError, match="drop `groups` and `num_groups`"):
        numpyro.handlers.seed(model, 0)(jnp.zeros(8, int), jnp.zeros(2))
    tr = numpyro.handlers.trace(numpyro.handlers.seed(model, 0)).get_trace(None)
    assert tr["count"]["value"].shape == (2,)


def test_sizes_must_be_a_plate_of_independent_sizes():
    def model(s_dp=None):
        p = numpyro.sample("p", dist.Beta(2.0, 2.0))
        n = numpyro.sample("n", dist.DiscreteUniform(0, CAP).expand([G]).to_event(1))
        people = dpjax.records_plate("people", n, CAP)
        with people:
            x = numpyro.sample("x", dist.Bernoulli(p))
        dpjax.privatized("count", LAPLACE, lambda r: r["x"], {"x": x}, plate=people, obs=s_dp)

    with pytest.raises(ValueError, match="one size per unit in a plate of units"):
        run(ReversibleJumpKernel(model), S_DP, num_samples=10)


def test_a_release_per_unit_with_one_n_for_all_units_is_refused_with_the_way_out():
    def model(s_dp=None):
        p = numpyro.sample("p", dist.Beta(2.0, 2.0))
        n = numpyro.sample("n", dist.DiscreteUniform(1, 10))
        people = dpjax.records_plate("people", n, 10)
        with people:
            x = numpyro.sample("x", dist.Bernoulli(p))
        dpjax.privatized("count", LAPLACE, lambda r: r["x"], {"x": x}, plate=people, obs=s_dp,
                         groups=jnp.arange(10) % 2)  # fmt: skip

    with pytest.raises(ValueError, match="one size per unit"):
        numpyro.handlers.seed(model, 0)(jnp.zeros(2))


def test_exact_abc_matches_the_exact_posterior_per_unit():
    """Exact ABC simulates the blocks' sizes and records from the model (two blocks, weak releases)."""
    weak = dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=1.0)

    def model(s_dp=None, n_dp=None):
        p = numpyro.sample("p", dist.Beta(2.0, 2.0))
        with numpyro.plate("blocks", 2):
            n = numpyro.sample("n", dist.DiscreteUniform(0, CAP))
        people = dpjax.records_plate("people", n, CAP)
        with people:
            x = numpyro.sample("x", dist.Bernoulli(p))
        dpjax.privatized("count", weak, lambda r: r["x"], {"x": x}, plate=people, obs=s_dp)
        dpjax.privatized("n_dp", weak, lambda r: jnp.ones(()), {"x": x}, plate=people, obs=n_dp)

    s_dp, n_dp = np.array([3.2, 1.1]), np.array([6.5, 4.0])
    result = dpjax.infer.exact_abc(
        jax.random.key(0), model, num_samples=4000, progress_bar=False, s_dp=s_dp, n_dp=n_dp
    )
    m1, _, n1, _ = exact_unit_sizes(s_dp, n_dp, weak, weak, CAP)
    assert abs(float(result.samples["p"].mean()) - m1) < 4 * float(result.samples["p"].std()) / np.sqrt(4000)
    n = np.asarray(result.samples["n"], float)
    for g in range(2):
        assert abs(n[:, g].mean() - n1[g]) < 4 * n[:, g].std() / np.sqrt(4000)


def test_mcem_finds_the_exact_mle_with_one_n_per_unit():
    """mcem(e_step="mcmc") imputes each unit's n with its records (the reversible-jump chain); the MLE
    of p by the exact log-likelihood on a fine grid (the prior of n is part of the model)."""
    from scipy import special, stats
    from test_mcem_mcmc import assert_mle

    p = np.linspace(1e-4, 1 - 1e-4, 20_001)
    n = k = np.arange(CAP + 1)
    log_binom = stats.binom.logpmf(k[None, :, None], n[:, None, None], p[None, None, :])
    loglik = 0.0
    for s, m in zip(S_DP, N_DP):
        log_k = np.asarray(LAPLACE.log_density(s, k.astype(float)), float)[None, :, None]
        log_n = np.asarray(LAPLACE.log_density(m, n.astype(float)), float)[:, None]
        loglik = loglik + special.logsumexp(special.logsumexp(log_binom + log_k, axis=1) + log_n, axis=0)
    mle = float(p[np.argmax(loglik)])

    def m_step(recs, w):  # p = the weighted share of ones among the active records
        active = (jnp.arange(CAP)[None, None, :] < recs["n"][..., None]).reshape(recs["n"].shape[0], -1)
        ones = jnp.sum(jnp.where(active, recs["x"], 0), 1)
        return {"p": (w @ ones) / (w @ jnp.sum(recs["n"], 1))}

    out = dpjax.infer.mcem(
        jax.random.key(0), blocks, {"p": 0.5}, S_DP, N_DP, e_step="mcmc", m_step=m_step,
        num_particles=(2_000,), tolerances=(0.01,), progress_bar=False,
    )  # fmt: skip
    assert_mle(out, {"p": mle})
    assert abs(mle - 0.5) > 0.03  # not its start


def test_pseudo_marginal_abc_matches_the_exact_posterior_with_one_n_per_unit():
    """PseudoMarginalABC simulates each unit's n and records from the model at each proposed p."""
    kernel = dpjax.infer.PseudoMarginalABC(blocks, num_simulations=200)
    draws = run(kernel, S_DP, N_DP, num_samples=2000, seed=5)
    m1, m2, _, _ = exact_unit_sizes(S_DP, N_DP, LAPLACE, LAPLACE, CAP)
    assert mcse_z_test(draws["p"], m1) and mcse_z_test(np.asarray(draws["p"]) ** 2, m2)
