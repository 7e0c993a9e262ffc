import itertools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
from numpyro.infer import MCMC, NUTS, Predictive

import dpjax.models as m
from dpjax.diagnostics import mcse, mcse_z
from dpjax.infer import DataAugmentationKernel


def test_naive_bayes_statistic_uses_the_right_cell():
    t = m.naive_bayes_counts(5, 3)({"y": jnp.array(2), "x": jnp.array([0, 1, 2, 0, 1])})
    assert t.shape == (5, 5, 3) and float(t.sum()) == 5
    for k, j in enumerate([0, 1, 2, 0, 1]):
        assert float(t[k, 2, j]) == 1.0  # table k, class y = 2, level x_k
    # bounded DP: replacing one record changes the tables by at most 2K in L1
    other = m.naive_bayes_counts(5, 3)({"y": jnp.array(4), "x": jnp.array([2, 2, 0, 1, 0])})
    assert float(jnp.abs(t - other).sum()) == m.naive_bayes_sensitivity(5) == 10


def _chains(model, update, args, seed=0, num_samples=1500):
    mcmc = MCMC(
        DataAugmentationKernel(model, theta_update=update),
        num_warmup=300,
        num_samples=num_samples,
        num_chains=4,
        chain_method="vectorized",
        progress_bar=False,
    )
    mcmc.run(jax.random.key(seed), *args)
    return mcmc


@pytest.mark.slow
def test_naive_bayes_large_epsilon_recovers_confidential_posterior():
    sim = Predictive(m.naive_bayes, num_samples=1)(jax.random.key(5), 100, 1e4)
    data = {"y": sim["y"][0], "x": sim["x"][0]}
    counts = jax.vmap(m.naive_bayes_counts(5, 3))(data).sum(0)
    mcmc = _chains(m.naive_bayes, m.naive_bayes_update(), (100, 1e4, sim["counts"][0]))
    post = mcmc.get_samples(group_by_chain=True)
    exact_p = (2 + counts[0].sum(-1)) / (2 * 5 + 100)
    exact_q = (2 + counts) / (2 * 3 + counts.sum(-1, keepdims=True))
    for i in range(5):
        z, _ = mcse_z(post["p"][..., i], float(exact_p[i]))
        assert abs(z) < 4, (i, z)
    for k, i, j in [(0, 0, 0), (2, 3, 1), (4, 4, 2)]:
        z, _ = mcse_z(post["q"][..., k, i, j], float(exact_q[k, i, j]))
        assert abs(z) < 4, (k, i, j, z)


def test_regression_sensitivity_bound_and_attained_value():
    for p in (1, 2, 3):
        stat = m.regression_statistic(-1.0, 1.0)
        t = lambda r, p=p, stat=stat: np.asarray(stat({"x": jnp.asarray(r[:p]), "y": jnp.asarray(r[p])}))
        grid = np.linspace(-1, 1, 5)
        pts = [np.array(r) for r in itertools.product(grid, repeat=p + 1)]
        rng = np.random.default_rng(p)
        pts += list(rng.uniform(-1, 1, (400, p + 1)))
        T = np.array([t(r) for r in pts])
        worst = max(np.abs(T[i] - T).sum(1).max() for i in range(len(T)))
        assert worst <= m.regression_sensitivity(p)
        attained = np.abs(t(-np.ones(p + 1)) - t(np.full(p + 1, 1 / (p + 2)))).sum()
        closed = (p + 1) * (p + 4) / 2 + (p + 1) / (2 * (p + 2))
        assert attained == pytest.approx(closed, rel=1e-5) and worst <= closed + 1e-5
    assert T.shape[1] == (3 + 1) * (3 + 2) // 2 + (3 + 1)  # the seed's d at p = 3


@pytest.mark.slow
def test_regression_da_matches_joint_nuts():
    """Two exact samplers of the same posterior agree (two-sample MCSE z-test)."""
    n = 20
    model = lambda release=None: m.clamped_regression(n, 3.0, release)
    sim = Predictive(model, num_samples=1)(jax.random.key(2))
    da = _chains(model, m.regression_update(), (sim["summary"][0],), num_samples=3000)
    joint = MCMC(
        NUTS(model),
        num_warmup=500,
        num_samples=1000,
        num_chains=4,
        chain_method="vectorized",
        progress_bar=False,
    )
    joint.run(jax.random.key(1), sim["summary"][0])
    a = np.asarray(da.get_samples(group_by_chain=True)["beta"])
    b = np.asarray(joint.get_samples(group_by_chain=True)["beta"])
    for j in range(3):
        se_a, ess_a = mcse(a[..., j])
        se_b, ess_b = mcse(b[..., j])
        assert min(ess_a, ess_b) > 100, (j, ess_a, ess_b)  # enough power to detect a wrong posterior
        se = np.hypot(se_a, se_b)
        assert abs(a[..., j].mean() - b[..., j].mean()) / se < 4, (j, ess_a, ess_b)


def test_regression_update_is_the_conjugate_posterior():
    key = jax.random.key(0)
    x = jax.random.normal(key, (50, 2))
    y = x @ jnp.array([1.0, -2.0]) + 0.5
    draws = jax.vmap(lambda k: m.regression_update()(k, {"x": x, "y": y}, None)["beta"])(
        jax.random.split(key, 20000)
    )
    xx = np.c_[np.ones(50), x]
    cov = np.linalg.inv(xx.T @ xx / 2 + np.eye(3) / 4)
    np.testing.assert_allclose(np.mean(draws, 0), cov @ xx.T @ np.asarray(y) / 2, atol=0.01)
    np.testing.assert_allclose(np.cov(np.asarray(draws).T), cov, atol=0.003)


def test_models_trace_with_numpyro():
    tr = numpyro.handlers.trace(numpyro.handlers.seed(m.clamped_regression, 0)).get_trace(10, 1.0)
    assert tr["summary"]["fn"].event_shape == (9,)
