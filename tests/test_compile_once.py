"""The inference engines compile once per model structure: a new release value reuses the compilation."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer import MCMC

import dpjax
from dpjax.infer import DataAugmentationKernel, PseudoMarginalABC, abc_importance, exact_abc, mcem


def counting_model():
    """A Poisson count model whose body counts its Python-side executions."""
    calls = {"n": 0}

    def model(release=None, alpha=25.0):
        calls["n"] += 1
        theta = numpyro.sample("theta", dist.Gamma(alpha, 1.0))
        with numpyro.plate("count", 1):
            s = numpyro.sample("s", dist.Poisson(theta))
        mechanism = dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=1.0)
        dpjax.privatized("s_dp", mechanism, lambda r: r["s"], {"s": s}, plate="count", obs=release)

    return model, calls


def executions(run, releases):
    """Model-body executions of each call of ``run(release)``."""
    model, calls = counting_model()
    counts = []
    for release in releases:
        before = calls["n"]
        run(model, release)
        counts.append(calls["n"] - before)
    return counts


RELEASES = [jnp.array(25.3), jnp.array(28.1), jnp.array(22.6)]


def test_exact_abc_does_not_retrace_for_a_new_release():
    run = lambda m, r: exact_abc(jax.random.key(0), m, r, num_samples=20, batch_size=500, progress_bar=False)
    first, second, third = executions(run, RELEASES)
    assert second < first  # the compiled loop is reused: only the eager prototype traces run again
    assert second == third


def test_a_numpy_float_release_is_traced_not_static():
    """A release read from a numpy array (np.float32 scalars) reuses the compilation, as a jax array does
    (it was static: every value recompiled, ~3 s per MCEM fit in wald_coverage)."""
    run = lambda m, r: exact_abc(jax.random.key(0), m, r, num_samples=20, batch_size=500, progress_bar=False)
    first, second, third = executions(run, [np.float32(25.3), np.float32(28.1), np.float32(22.6)])
    assert second < first
    assert second == third


def test_exact_abc_with_simulator_does_not_retrace():
    simulator = lambda key, params: {"s_dp": jax.random.poisson(key, params["theta"], (1,))}
    run = lambda m, r: exact_abc(
        jax.random.key(0), m, r, num_samples=20, batch_size=500, simulator=simulator, progress_bar=False
    )
    first, second, third = executions(run, RELEASES)
    assert second < first
    assert second == third


def test_abc_importance_does_not_retrace_for_a_new_release_or_proposal():
    def run(m, r):
        proposal = {"theta": dist.Gamma(float(r), 1.0)}  # a new proposal value too
        abc_importance(jax.random.key(0), m, proposal, r, num_samples=200)

    first, second, third = executions(run, RELEASES)
    assert second < first
    assert second == third


def test_mcem_does_not_retrace_for_a_new_release():
    def run(m, r):
        mcem(
            jax.random.key(0), m, {"theta": 20.0}, r, num_particles=(100,), tolerances=(1e-2,),
            max_iterations=3, num_m_steps=5, progress_bar=False,
        )  # fmt: skip

    with pytest.warns(dpjax.infer.ConvergenceWarning):
        first, second, third = executions(run, RELEASES)
    assert second < first
    assert second == third


def pm_mcmc(model):
    kernel = PseudoMarginalABC(model, num_simulations=8)
    return MCMC(
        kernel, num_warmup=20, num_samples=20, num_chains=2, chain_method="vectorized", progress_bar=False,
        jit_model_args=True,  # NumPyro then passes the release to its compiled loop as an argument
    )  # fmt: skip


def test_pseudo_marginal_abc_does_not_retrace_for_a_new_release_under_mcmc():
    """A second ``mcmc.run`` with a new release of the same shape re-executes the model body only in
    the kernel's eager ``init`` (its prototype trace and checks; the chains' start is compiled once),
    not in the sampling loop, and the reused compilation samples from the new release (the draws of a
    fresh MCMC)."""
    model, calls = counting_model()
    mcmc = pm_mcmc(model)
    counts = []
    for release in RELEASES:
        before = calls["n"]
        mcmc.run(jax.random.key(0), release)
        counts.append(calls["n"] - before)
    before = calls["n"]
    keys = jax.random.split(jax.random.key(0), 2)
    mcmc.sampler.init(keys, 20, None, (RELEASES[0],), {})
    eager = calls["n"] - before  # what `init` alone executes, its start compiled already
    first, second, third = counts
    assert second < first and second == third == eager, (counts, eager)
    fresh = pm_mcmc(counting_model()[0])
    fresh.run(jax.random.key(0), RELEASES[2])
    jax.tree.map(np.testing.assert_array_equal, mcmc.get_samples(), fresh.get_samples())


def test_a_static_argument_change_recompiles():
    """Non-array arguments are static: a new value compiles anew (and is honoured)."""
    model, calls = counting_model()
    run = lambda alpha: exact_abc(
        jax.random.key(0), model, jnp.array(alpha), alpha=alpha, num_samples=20, batch_size=500,
        max_seconds=30, progress_bar=False,
    )  # fmt: skip
    run(25.0)
    before = calls["n"]
    run(25.0)
    cached = calls["n"] - before
    before = calls["n"]
    out = run(400.0)
    assert calls["n"] - before > cached
    assert float(jnp.mean(out.samples["theta"])) > 200  # the new prior is used, not a stale one


def test_cached_calls_give_the_same_results():
    model, _ = counting_model()
    abc = lambda r: exact_abc(jax.random.key(3), model, r, num_samples=50, batch_size=500, progress_bar=False)
    a, _, b = abc(RELEASES[0]), abc(RELEASES[1]), abc(RELEASES[0])
    jax.tree.map(np.testing.assert_array_equal, a.samples, b.samples)
    assert a[1:] == b[1:]
    proposal = {"theta": dist.Gamma(25.0, 1.0)}
    imp = lambda r: abc_importance(jax.random.key(4), model, proposal, r, num_samples=300)
    a, _, b = imp(RELEASES[0]), imp(RELEASES[1]), imp(RELEASES[0])
    jax.tree.map(np.testing.assert_array_equal, (a.samples, a.weights), (b.samples, b.weights))
    em = lambda r: mcem(
        jax.random.key(5), model, {"theta": 20.0}, r, num_particles=(200,), tolerances=(10.0,),
        max_iterations=5, num_m_steps=20, progress_bar=False,
    )  # fmt: skip
    a, _, b = em(RELEASES[0]), em(RELEASES[1]), em(RELEASES[0])
    jax.tree.map(np.testing.assert_array_equal, (a.params, a.history), (b.params, b.history))
    np.testing.assert_array_equal(a.information, b.information)


def test_the_cache_is_bounded(monkeypatch):
    from dpjax.infer import _compile

    monkeypatch.setattr(_compile, "CACHE_SIZE", 1)
    for _ in range(2):
        model, _ = counting_model()  # a new model each time: a new key
        exact_abc(
            jax.random.key(0),
            model,
            RELEASES[0],
            num_samples=2,
            batch_size=50,
            vectorize=False,
            progress_bar=False,
        )
        assert len(_compile.CACHE) == 1


def test_a_model_that_needs_a_concrete_array_argument_falls_back_to_closing_over_it():
    """A model reading an array argument as a Python number cannot take it traced: the engine then
    compiles per call over the concrete value, with the same draws as a model given the number."""

    def model(rate_array, release=None):
        rate = float(rate_array)  # needs a concrete value
        theta = numpyro.sample("theta", dist.Gamma(rate, 1.0))
        with numpyro.plate("count", 1):
            s = numpyro.sample("s", dist.Poisson(theta))
        mechanism = dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=1.0)
        dpjax.privatized("s_dp", mechanism, lambda r: r["s"], {"s": s}, plate="count", obs=release)

    def plain(rate, release=None):
        return model(np.asarray(rate), release)

    kw = dict(num_samples=20, batch_size=500, progress_bar=False)
    for release in RELEASES[:2]:  # the second call takes the cached fallback marker
        got = exact_abc(jax.random.key(0), model, np.asarray(25.0), release, **kw).samples["theta"]
        want = exact_abc(jax.random.key(0), plain, 25.0, release, **kw).samples["theta"]
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_data_augmentation_does_not_retrace_for_a_new_release_under_mcmc():
    """The recompilation guard of the DA kernel: with ``jit_model_args=True`` a second ``mcmc.run``
    on a new release of the same shape executes the model body only in the eager ``init``, and the
    reused compilation gives the draws of a fresh MCMC on that release."""

    def da_mcmc(model):
        kernel = dpjax.infer.DataAugmentationKernel(model, noncentred_moves=0)
        return numpyro.infer.MCMC(
            kernel, num_warmup=20, num_samples=20, num_chains=2, chain_method="vectorized",
            jit_model_args=True, progress_bar=False,
        )  # fmt: skip

    model, calls = counting_model()
    mcmc = da_mcmc(model)
    counts = []
    for release in RELEASES:
        before = calls["n"]
        mcmc.run(jax.random.key(0), release)
        counts.append(calls["n"] - before)
    first, second, third = counts
    assert second < first and second == third, counts
    fresh = da_mcmc(counting_model()[0])
    fresh.run(jax.random.key(0), RELEASES[2])
    jax.tree.map(np.testing.assert_array_equal, mcmc.get_samples(), fresh.get_samples())


def quickstart_model(n, release=None):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("respondents", n):
        yes = numpyro.sample("yes", dist.Bernoulli(p))
    mechanism = dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=1.0)
    dpjax.privatized("count", mechanism, lambda r: r["yes"], {"yes": yes}, plate="respondents", obs=release)


def test_a_new_release_compiles_nothing_with_jit_model_args_and_a_python_plate_size():
    """NumPyro's ``jit_model_args=True`` passes every argument traced, the plate size n too: the kernel
    keeps n at the value its ``init`` saw, so a second run on a new release compiles nothing (the
    chains' start, the checks and the sampling loop are reused) and gives a fresh MCMC's draws; a new
    n is refused, since the compiled step would keep the old one."""
    compiles = []
    listener = lambda event, seconds, **kw: (
        compiles.append(kw.get("fun_name")) if "backend_compile" in event else None
    )
    mcmc = lambda: MCMC(
        DataAugmentationKernel(quickstart_model), num_warmup=40, num_samples=40, jit_model_args=True
    )
    reused = mcmc()
    # NumPyro turns its progress bar off under CI and pytest-xdist; without it NumPyro rebuilds its own
    # loop on every run (a new jit wrapper of its body is a static argument of the loop)
    reused.progress_bar = True
    reused.run(jax.random.key(0), 60, jnp.array(17.4))
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        reused.run(jax.random.key(1), 60, jnp.array(30.2))
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert compiles == []
    fresh = mcmc()
    fresh.run(jax.random.key(1), 60, jnp.array(30.2))
    np.testing.assert_array_equal(reused.get_samples()["p"], fresh.get_samples()["p"])
    with pytest.raises(ValueError, match="jit_model_args=True.*changed"):
        reused.run(jax.random.key(1), 61, jnp.array(30.2))


def test_a_support_set_by_an_array_argument_is_closed_over_and_its_change_refused_under_jit_model_args():
    """θ ~ Uniform(0, upper) with ``upper`` an array argument: NumPyro's HMC keeps θ's support transform
    from ``init``, so a start traced over ``upper`` would leak it; the kernel then closes over the
    arguments instead, and samples. Under ``jit_model_args=True`` a new ``upper`` would leave the
    compiled step on the old support: refused."""

    def model(upper, release=None):
        rate = numpyro.sample("rate", dist.Uniform(0.0, upper))
        with numpyro.plate("count", 3):
            s = numpyro.sample("s", dist.Poisson(rate))
        mechanism = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
        dpjax.privatized("s_dp", mechanism, lambda r: r["s"], {"s": s}, plate="count", obs=release)

    mcmc = MCMC(
        DataAugmentationKernel(model), num_warmup=40, num_samples=40, jit_model_args=True, progress_bar=False
    )
    mcmc.run(jax.random.key(0), jnp.array(10.0), jnp.array(12.0))
    rate = np.asarray(mcmc.get_samples()["rate"])
    assert np.all((rate > 0) & (rate < 10.0)) and rate.std() > 0
    mcmc.run(jax.random.key(0), jnp.array(10.0), jnp.array(15.0))  # a new release: fine
    with pytest.raises(ValueError, match="jit_model_args=True.*changed"):
        mcmc.run(jax.random.key(0), jnp.array(20.0), jnp.array(15.0))
