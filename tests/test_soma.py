"""record_update="soma": one proposal scored against every record (dpjax.infer.soma), exact for the
same target as the plain sweep."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_data_augmentation import (
    TWO_SITES,
    assert_moments,
    bernoulli_model,
    beta_update,
    exact_bernoulli_moments,
    run,
)

import dpjax
from dpjax.infer import DataAugmentationKernel
from dpjax.infer.record_sweep import record_sweep
from dpjax.infer.soma import place_records, soma_sweep

STRONG = [dpjax.LaplaceMechanism(epsilon=3.0, sensitivity=1.0)]


@pytest.mark.parametrize(
    "n, mechs, releases",
    # n = 3 with a strong release: the weights w_j differ a lot, so a wrong acceptance ratio shows
    # (always accepting the chosen slot gives z ≈ −6.6 here); the two-site case checks several sites
    [(3, STRONG, [2.6]), (30, TWO_SITES, [13.2, 8.0])],
    ids=["strong-n3", "two-sites"],
)
def test_beta_bernoulli_exact_posterior(n, mechs, releases):
    model = lambda: bernoulli_model(n, [jnp.array(s) for s in releases], mechs)
    kernel = DataAugmentationKernel(model, theta_update=beta_update, record_update="soma", noncentred_moves=0)
    draws = run(kernel, num_samples=4000).get_samples(group_by_chain=True)["p"]
    assert_moments(draws, *exact_bernoulli_moments(n, releases, mechs))


def _sweep_inputs(n=50, eps=0.2, seed=0):
    k1, k2 = jax.random.split(jax.random.key(seed))
    x_old = jax.random.bernoulli(k1, 0.3, (n,)).astype(float)
    x_new = jax.random.bernoulli(k2, 0.5, (n,)).astype(float)
    mech = dpjax.LaplaceMechanism(epsilon=eps, sensitivity=1.0)
    s = jnp.array(0.4 * n)
    return x_old, x_new, (s - x_old.sum(),), [mech.log_noise_density], s


def test_sweep_state_is_consistent():
    x_old, x_new, res, log_noise, s = _sweep_inputs()
    active = jnp.arange(50) < 40
    out = soma_sweep(jax.random.key(1), (x_old,), (x_new,), res, log_noise, active)
    placed = place_records(out.source, {"x": x_new}, {"x": x_old})["x"]
    assert np.all(np.asarray(out.source)[40:] == -1)  # inactive slots never change
    assert np.all(np.asarray(out.source) < 40)  # offers beyond the active count are not made
    np.testing.assert_allclose(out.residuals[0], s - jnp.sum(jnp.where(active, placed, x_old)), atol=1e-4)
    np.testing.assert_allclose(out.log_density, log_noise[0](out.residuals[0]), rtol=1e-5)
    assert 0.0 <= float(out.accept_rate) <= 1.0
    again = soma_sweep(jax.random.key(1), (x_old,), (x_new,), res, log_noise, active)
    assert np.array_equal(out.source, again.source)


def test_accepts_more_than_the_plain_sweep_on_a_weak_release():
    rates = []
    for seed in range(5):
        x_old, x_new, res, log_noise, _ = _sweep_inputs(n=200, eps=0.05, seed=seed)
        soma = soma_sweep(jax.random.key(seed), (x_old,), (x_new,), res, log_noise).accept_rate
        plain = record_sweep(jax.random.key(seed), (x_old,), (x_new,), res, log_noise).accept_rate
        rates.append((float(soma), float(plain)))
    soma, plain = np.mean(rates, axis=0)
    assert soma > plain, rates


def test_move_rate_bounds_the_acceptance_and_leaves_repeats_out():
    """Continuous offers change every slot they take: the move rate is a lower bound on the acceptance
    within a factor 2 (mean over sweeps). Offers equal to every record are repeats: accepted, but no
    move (move rate 1: no offer could move), while one real move is counted."""
    rates = []
    for seed in range(10):
        k1, k2, k3 = jax.random.split(jax.random.key(seed), 3)
        x_old, x_new = jax.random.normal(k1, (40,)), jax.random.normal(k2, (40,))
        res = (jnp.array(1.5) - x_old.sum(),)
        out = soma_sweep(k3, (x_old,), (x_new,), res, [dpjax.LaplaceMechanism(0.5, 1.0).log_noise_density])
        rates.append((float(out.accept_rate), float(out.move_rate)))
    accept, move = np.mean(rates, axis=0)
    assert move <= accept <= 2 * move, rates
    ones = jnp.ones(40)
    log_noise = [dpjax.LaplaceMechanism(30.0, 1.0).log_noise_density]
    repeats = soma_sweep(jax.random.key(0), (ones,), (ones,), (jnp.array(0.0),), log_noise)
    assert float(repeats.accept_rate) == 1.0 and float(repeats.move_rate) == 1.0
    frozen = soma_sweep(jax.random.key(0), (ones,), (ones.at[:20].set(0.0),), (jnp.array(0.0),), log_noise)
    assert float(frozen.accept_rate) > 0.4 and float(frozen.move_rate) < 1e-6


def test_errors():
    with pytest.raises(ValueError, match="record_update"):
        DataAugmentationKernel(lambda: None, record_update="all-at-once")
