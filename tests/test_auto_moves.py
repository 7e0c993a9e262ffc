"""``noncentred_moves="auto"``: the timed pilot keeps the moves only where they pay."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC

import dpjax
from dpjax.infer import DataAugmentationKernel
from dpjax.infer.auto_moves import SPEEDUP_TO_KEEP, pilot_length, pilot_moves


def count_model(n, s):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("people", n):
        x = numpyro.sample("x", dist.Bernoulli(p))
    dpjax.privatized(
        "count",
        dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0),
        lambda r: r["x"],
        {"x": x},
        plate="people",
        obs=s,
    )


def beta_update(key, records, params):
    x = records["x"]
    return {"p": jax.random.beta(key, 1.0 + x.sum(), 1.0 + x.shape[0] - x.sum())}


def weak_release_model(s):
    """μ ~ N(0, 2²), 100 records N(μ, 1), the sum released with sd 80: plain DA crawls."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
    with numpyro.plate("rows", 100):
        x = numpyro.sample("x", dist.Normal(mu, 1.0))
    dpjax.privatized(
        "s", dpjax.GaussianMechanism(sigma=80.0), lambda r: r["x"], {"x": x}, plate="rows", obs=s
    )


def mu_update(key, records, params):
    prec = 1 / 4 + 100
    return {"mu": records["x"].sum() / prec + jax.random.normal(key) / jnp.sqrt(prec)}


def run(kernel, *args, num_warmup=1000, seed=0):
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=100, num_chains=2, progress_bar=False)
    mcmc.run(jax.random.key(seed), *args)
    return mcmc.get_samples()


def test_pilot_sees_no_gain_where_the_moves_do_not_pay_and_auto_gives_the_chosen_draws():
    # a conjugate θ-step already gives near-independent draws: the moves add cost, no ESS per draw.
    # The ESS side is deterministic (fixed keys); the timing side is the machine's, so the choice is
    # checked through the draws: auto gives exactly those of the variant it chose.
    auto = DataAugmentationKernel(count_model, theta_update=beta_update)
    draws = run(auto, 200, jnp.array(61.3))
    pilot = auto.moves_pilot
    assert pilot is not None and pilot.gain_per_draw < 1.3 and min(pilot.ess_per_draw) > 0.5, pilot
    assert auto._num_moves == pilot.num_moves and (pilot.num_moves == 0) == (pilot.speedup < SPEEDUP_TO_KEEP)
    fixed = DataAugmentationKernel(count_model, theta_update=beta_update, noncentred_moves=pilot.num_moves)
    np.testing.assert_array_equal(draws["p"], run(fixed, 200, jnp.array(61.3))["p"])


def test_pilot_keeps_the_moves_where_they_pay():
    auto = DataAugmentationKernel(weak_release_model, theta_update=mu_update)
    run(auto, jnp.array(40.0))
    pilot = auto.moves_pilot
    assert pilot.num_moves == 5 and auto._num_moves == 5, pilot
    assert pilot.ess_per_draw[1] > 5 * pilot.ess_per_draw[0], pilot


def test_same_model_and_data_get_the_same_choice_and_draws():
    first = DataAugmentationKernel(weak_release_model, theta_update=mu_update)
    second = DataAugmentationKernel(weak_release_model, theta_update=mu_update)
    a, b = run(first, jnp.array(40.0), seed=3), run(second, jnp.array(40.0), seed=3)
    assert second.moves_pilot is first.moves_pilot
    np.testing.assert_array_equal(a["mu"], b["mu"])


def test_no_pilot_for_a_short_warmup_or_traced_arguments():
    assert pilot_length(999) == 0 and pilot_length(1000) == 33 and pilot_length(10_000) == 50
    short = DataAugmentationKernel(weak_release_model, theta_update=mu_update)
    short.init(jax.random.key(0), 999, None, (jnp.array(40.0),), {})
    assert short.moves_pilot is None and short._num_moves == 5
    traced = DataAugmentationKernel(weak_release_model, theta_update=mu_update)
    jax.jit(lambda s: traced.init(jax.random.key(0), 1000, None, (s,), {}).nc_step_size)(jnp.array(40.0))
    assert traced.moves_pilot is None and traced._num_moves == 5


def _ar1(key, states, rho, length):
    """A fake pilot stage: AR(1) draws of autocorrelation ``rho`` for 4 chains."""

    def step(x, k):
        x = rho * x + jnp.sqrt(1 - rho**2) * jax.random.normal(k, x.shape)
        return x, x[:, None]

    return jax.lax.scan(step, states, jax.random.split(key, length))


def test_pilot_moves_compares_ess_per_second():
    calls = itertools.count()

    def fake(rho_plain, rho_moves):
        @jax.jit
        def stage(states, use_moves, key):
            return _ar1(key, states, jnp.where(use_moves, rho_moves, rho_plain), 200)

        return lambda states, use_moves: stage(
            states, use_moves, jax.random.fold_in(jax.random.key(1), next(calls))
        )

    states = jnp.zeros(4)
    # equal cost: the ESS ratio decides. The measured times are the machine's (CI saw a 7× spread
    # between two identical stages while another worker compiled), so the ESS gain is asserted
    # sharply and the timed speed-up only on the side of the decision.
    slow_plain = pilot_moves(fake(0.95, 0.0), states, 5)
    assert slow_plain.num_moves == 5 and slow_plain.gain_per_draw > 10 and slow_plain.speedup > 1, slow_plain
    slow_moves = pilot_moves(fake(0.0, 0.95), states, 5)
    assert slow_moves.num_moves == 0 and slow_moves.gain_per_draw < 0.1 and slow_moves.speedup < 1, slow_moves
