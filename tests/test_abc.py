"""Exact ABC against exact posteriors by numerical summation."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from oracles import S_DP, bernoulli_model, exact_bernoulli, exact_poisson, exact_unknown_n

import dpjax
from dpjax.infer import abc_importance, exact_abc
from dpjax.models import poisson_count

MECH = dpjax.DiscreteLaplaceMechanism(epsilon=0.5)
# exact_abc(key(5), poisson_count, 25.0, S_DP, num_samples=5, batch_size=500) with one key per proposal:
# the simulations as drawn before the vectorised path was added; the accept step's uniforms since they
# come from dpjax.infer.samplers.uniform (with jax.random.uniform: 25.23, 22.08, 27.98, 22.44, 27.26)
PER_KEY_DRAWS = np.array([25.233759, 27.813227, 33.356594, 29.294516, 23.578634], dtype=np.float32)


def z_iid(draws, exact):
    draws = np.asarray(draws, dtype=float)
    return (draws.mean() - exact) / (draws.std() / np.sqrt(draws.size))


@pytest.mark.parametrize("alpha", [25.0, 5.0])
def test_poisson_gamma_laplace_exact_posterior(alpha):
    out = exact_abc(jax.random.key(1), poisson_count, alpha, jnp.array(S_DP), num_samples=4000)
    theta = out.samples["theta"]
    mean, second = exact_poisson(alpha)
    assert abs(z_iid(theta, mean)) < 4 and abs(z_iid(theta**2, second)) < 4
    naive_mean = (alpha + S_DP) / 2  # Gamma(α + s, 2): the noise ignored
    assert abs(z_iid(theta, naive_mean)) > 4  # the test can tell the naive answer apart
    assert 0 < out.acceptance_rate < 1 and out.num_proposals >= 4000


def test_beta_bernoulli_discrete_laplace_exact_posterior():
    out = exact_abc(jax.random.key(2), bernoulli_model, jnp.array(11.0), num_samples=4000, batch_size=20000)
    mean, second = exact_bernoulli(11.0)
    p = out.samples["p"]
    assert abs(z_iid(p, mean)) < 4 and abs(z_iid(p**2, second)) < 4


def test_importance_sampling_form():
    proposal = {"theta": dist.Gamma(3.0, 1.0)}  # under this prior-data conflict the posterior hugs the prior
    out = abc_importance(
        jax.random.key(3), poisson_count, proposal, 2.0, jnp.array(S_DP), num_samples=200_000
    )
    mean, second = exact_poisson(2.0)
    theta = np.asarray(out.samples["theta"], dtype=float)
    w = np.asarray(out.weights, dtype=float)
    est = w @ theta
    se = np.sqrt(w @ (theta - est) ** 2 / out.ess)
    assert abs(est - mean) / se < 4 and out.ess > 1000


def test_cap_reached_reports_acceptance_rate():
    with pytest.raises(RuntimeError, match="acceptance rate"):
        exact_abc(
            jax.random.key(0),
            poisson_count,
            2.0,
            jnp.array(S_DP),
            num_samples=5000,
            batch_size=10_000,
            max_proposals=50_000,
        )


def test_time_cap_reports_acceptance_rate():
    with pytest.raises(RuntimeError, match=r"max_seconds=0.5 after [\d,]+ proposals .*acceptance rate"):
        exact_abc(jax.random.key(0), poisson_count, 2.0, jnp.array(S_DP), num_samples=10**6, max_seconds=0.5)
    with pytest.raises(ValueError, match="max_seconds"):
        exact_abc(jax.random.key(0), poisson_count, 2.0, jnp.array(S_DP), num_samples=10, max_seconds=0)


def test_same_key_same_draws_and_bad_inputs():
    a = exact_abc(jax.random.key(5), poisson_count, 25.0, jnp.array(S_DP), num_samples=100, batch_size=5000)
    b = exact_abc(jax.random.key(5), poisson_count, 25.0, jnp.array(S_DP), num_samples=100, batch_size=5000)
    np.testing.assert_array_equal(a.samples["theta"], b.samples["theta"])
    assert a.to_arviz().posterior["theta"].shape == (1, 100)
    with pytest.raises(ValueError, match="num_samples"):
        exact_abc(jax.random.key(0), poisson_count, 25.0, jnp.array(S_DP), num_samples=0)

    def improper(release=None):
        mu = numpyro.sample("mu", dist.ImproperUniform(dist.constraints.real, (), ()))
        with numpyro.plate("rows", 3):
            x = numpyro.sample("x", dist.Normal(mu, 1.0))
        dpjax.privatized(
            "s", dpjax.GaussianMechanism(sigma=1.0), lambda r: r["x"], {"x": x}, plate="rows", obs=release
        )

    with pytest.raises(ValueError, match="proper prior"):
        exact_abc(jax.random.key(0), improper, jnp.array(1.0), num_samples=10)
    with pytest.raises(ValueError, match="proposal"):
        abc_importance(
            jax.random.key(0), poisson_count, {"mu": dist.Normal()}, 2.0, jnp.array(S_DP), num_samples=10
        )


def test_direct_simulator_of_the_statistic():
    """n Bernoulli records summarised by a Binomial draw of T: same exact posterior."""

    def simulator(key, params):
        return {"count": dist.Binomial(30, params["p"]).sample(key)}

    out = exact_abc(
        jax.random.key(4),
        bernoulli_model,
        jnp.array(11.0),
        num_samples=4000,
        batch_size=20000,
        simulator=simulator,
    )
    mean, second = exact_bernoulli(11.0)
    assert abs(z_iid(out.samples["p"], mean)) < 4 and abs(z_iid(out.samples["p"] ** 2, second)) < 4
    with pytest.raises(ValueError, match="simulator"):
        exact_abc(
            jax.random.key(4),
            bernoulli_model,
            jnp.array(11.0),
            num_samples=10,
            simulator=lambda key, params: {"wrong": params["p"]},
        )


@pytest.mark.parametrize("bad", [0, -5, float("inf"), float("nan"), 1.5, True, "10"])
def test_max_proposals_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="`max_proposals` must be a positive integer"):
        exact_abc(jax.random.key(0), poisson_count, 25.0, jnp.array(S_DP), num_samples=10, max_proposals=bad)


def test_huge_max_proposals_do_not_overflow():
    out = exact_abc(
        jax.random.key(0), poisson_count, 25.0, jnp.array(S_DP), num_samples=50, batch_size=1000,
        max_proposals=10**30, progress_bar=False,
    )  # fmt: skip
    assert out.samples["theta"].shape == (50,)
    from dpjax._validate import positive_int

    assert positive_int(1.5e9, "max_proposals") == 1_500_000_000 and positive_int(np.int64(7), "x") == 7


def test_param_sites_and_models_without_theta_are_refused():
    def with_param(release=None):
        p = numpyro.param("p", 0.3, constraint=dist.constraints.unit_interval)
        with numpyro.plate("people", 30):
            x = numpyro.sample("x", dist.Bernoulli(p))
        dpjax.privatized("count", MECH, lambda r: r["x"], {"x": x}, plate="people", obs=release)

    def no_theta(release=None):
        with numpyro.plate("people", 30):
            x = numpyro.sample("x", dist.Bernoulli(0.3))
        dpjax.privatized("count", MECH, lambda r: r["x"], {"x": x}, plate="people", obs=release)

    with pytest.raises(
        ValueError, match=r"exact_abc needs a prior over every parameter.*\['p'\].*numpyro.param"
    ):
        exact_abc(jax.random.key(0), with_param, jnp.array(11.0), num_samples=10)
    with pytest.raises(ValueError, match=r"abc_importance needs a prior over every parameter.*\['p'\]"):
        abc_importance(jax.random.key(0), with_param, {}, jnp.array(11.0), num_samples=10)
    with pytest.raises(
        ValueError, match="exact_abc needs a prior over every parameter: the model has no latent"
    ):
        exact_abc(jax.random.key(0), no_theta, jnp.array(11.0), num_samples=10)


def test_long_run_without_max_seconds_warns_and_the_cap_quoted_is_the_users(monkeypatch):
    """The probe's default run (max_proposals = 10⁹, no max_seconds) would take ~45 min before failing;
    with the threshold lowered, the same projection fires on a short run. The RuntimeError quotes the
    cap the user set, not the whole batches it was rounded up to."""
    from dpjax.infer import abc

    monkeypatch.setattr(abc, "SLOW_RUN_SECONDS", 1e-3)
    monkeypatch.setattr(abc, "RATE_WINDOW_SECONDS", 0.0)
    with (
        pytest.warns(abc.SlowABCWarning, match=r"projects to run .* Pass `max_seconds`"),
        pytest.raises(RuntimeError, match=r"max_proposals=195,000 after 200,000 proposals \(made in batches"),
    ):
        exact_abc(
            jax.random.key(0), poisson_count, 2.0, jnp.array(S_DP), num_samples=1000, batch_size=10_000,
            max_proposals=195_000, progress_bar=False,
        )  # fmt: skip


def test_importance_weights_all_zero_is_an_error():
    """A proposal outside the prior's support: every weight is zero (or NaN), which used to come
    back as NaN weights and a NaN ESS."""
    proposal = {"p": dist.Uniform(1.5, 2.0)}
    with pytest.raises(ValueError, match="abc_importance: every importance weight is zero or NaN"):
        abc_importance(jax.random.key(0), bernoulli_model, proposal, jnp.array(11.0), num_samples=100)


# --- vectorised simulation (a batch under one key, through a leading plate) and its per-key fallback ---


@pytest.mark.parametrize("case", ["poisson", "bernoulli", "bernoulli_simulator"])
def test_vectorized_path_gives_the_exact_posterior(case):
    if case == "poisson":
        run = lambda **kw: exact_abc(
            jax.random.key(11), poisson_count, 5.0, jnp.array(S_DP), num_samples=3000, **kw
        )
        site, (mean, second) = "theta", exact_poisson(5.0)
    else:
        sim = {"simulator": lambda key, params: {"count": dist.Binomial(30, params["p"]).sample(key)}}
        extra = sim if case == "bernoulli_simulator" else {}
        run = lambda **kw: exact_abc(
            jax.random.key(12), bernoulli_model, jnp.array(11.0), num_samples=3000, batch_size=20000,
            **extra, **kw,
        )  # fmt: skip
        site, (mean, second) = "p", exact_bernoulli(11.0)
    out = run(vectorize=True, progress_bar=False)
    assert out.vectorized
    x = out.samples[site]
    assert abs(z_iid(x, mean)) < 4 and abs(z_iid(x**2, second)) < 4
    auto = run(progress_bar=False)  # chosen automatically for these models; same key, same draws
    assert auto.vectorized
    np.testing.assert_array_equal(auto.samples[site], x)


def test_per_key_path_still_gives_the_exact_posterior():
    out = exact_abc(
        jax.random.key(13), poisson_count, 25.0, jnp.array(S_DP), num_samples=3000, vectorize=False,
        progress_bar=False,
    )  # fmt: skip
    assert not out.vectorized
    mean, second = exact_poisson(25.0)
    assert abs(z_iid(out.samples["theta"], mean)) < 4 and abs(z_iid(out.samples["theta"] ** 2, second)) < 4


def summed_model(release=None):
    """Not plate-correct: ``jnp.sum`` over all dims mixes the proposals of a batch (right shapes,
    wrong values under a batch plate)."""
    theta = numpyro.sample("theta", dist.Gamma(25.0, 1.0))
    with numpyro.plate("count", 1):
        s = numpyro.sample("s", dist.Poisson(jnp.sum(theta)))
    mech = dpjax.LaplaceMechanism(epsilon=0.2, sensitivity=1.0)
    dpjax.privatized("s_dp", mech, lambda r: r["s"], {"s": s}, plate="count", obs=release)


def dependent_records_model(release=None):
    """A record site whose law depends on another record site."""
    p = numpyro.sample("p", dist.Beta(2.0, 2.0))
    with numpyro.plate("people", 30):
        x = numpyro.sample("x", dist.Bernoulli(p))
        y = numpyro.sample("y", dist.Bernoulli(jnp.where(x > 0, 0.9, 0.1)))
    dpjax.privatized("count", MECH, lambda r: r["y"], {"y": y}, plate="people", obs=release)


def matmul_model(release=None):
    """θ used through a matrix product that does not broadcast over a leading batch dim."""
    beta = numpyro.sample("beta", dist.Normal(0.0, 1.0).expand([2]).to_event(1))
    X = jnp.ones((4, 2))
    with numpyro.plate("rows", 4):
        y = numpyro.sample("y", dist.Normal(X @ beta, 1.0))
    dpjax.privatized(
        "s", dpjax.GaussianMechanism(sigma=1.0), lambda r: r["y"], {"y": y}, plate="rows", obs=release
    )


NOT_VECTORIZABLE = [
    (summed_model, jnp.array(S_DP), "site 's'.*differ"),
    (dependent_records_model, jnp.array(11.0), "depends on other record sites"),
    (matmul_model, jnp.array(1.0), "dot_general"),
]


@pytest.mark.parametrize("model, release, why", NOT_VECTORIZABLE)
def test_fallback_is_automatic_and_matches_the_per_key_path(model, release, why):
    run = lambda v: exact_abc(
        jax.random.key(6), model, release, num_samples=200, batch_size=2000, vectorize=v, progress_bar=False
    )
    auto, per_key = run(None), run(False)
    assert not auto.vectorized and not per_key.vectorized
    jax.tree.map(np.testing.assert_array_equal, auto.samples, per_key.samples)
    assert auto[1:] == per_key[1:]
    with pytest.raises(ValueError, match=rf"vectorize=True.*cannot be simulated a batch at a time.*{why}"):
        run(True)


def test_per_key_path_draws_are_unchanged():
    """The fallback's draws are bitwise those of the per-key sampler before the vectorised path existed
    (recorded with the code of that time)."""
    out = exact_abc(
        jax.random.key(5), poisson_count, 25.0, jnp.array(S_DP), num_samples=5, batch_size=500,
        vectorize=False, progress_bar=False,
    )  # fmt: skip
    np.testing.assert_array_equal(out.samples["theta"], PER_KEY_DRAWS)


def test_vectorized_same_key_same_draws_and_bad_vectorize():
    run = lambda k: exact_abc(
        jax.random.key(k), poisson_count, 25.0, jnp.array(S_DP), num_samples=100, batch_size=5000,
        vectorize=True, progress_bar=False,
    )  # fmt: skip
    a, b, c = run(5), run(5), run(6)
    assert a.vectorized
    jax.tree.map(np.testing.assert_array_equal, a.samples, b.samples)
    assert a[1:] == b[1:]
    assert not np.array_equal(a.samples["theta"], c.samples["theta"])
    with pytest.raises(ValueError, match="`vectorize` must be None"):
        exact_abc(jax.random.key(0), poisson_count, 25.0, jnp.array(S_DP), num_samples=10, vectorize="yes")


def test_an_unknown_n_comes_back_with_its_posterior_draws():
    """exact_abc on an unknown-n model returned θ only at 840f5ad; the accepted simulations' n are
    draws of n's posterior (against double enumeration)."""
    lap_s, lap_n, cap = dpjax.LaplaceMechanism(scale=3.0), dpjax.LaplaceMechanism(scale=5.0), 80

    def model(s_dp=None, n_dp=None):
        p = numpyro.sample("p", dist.Beta(2.0, 2.0))
        n = numpyro.sample("n", dist.DiscreteUniform(1, cap))
        people = dpjax.records_plate("people", n, cap)
        with people:
            x = numpyro.sample("x", dist.Bernoulli(p))
        dpjax.privatized("count", lap_s, lambda r: r["x"], {"x": x}, plate=people, obs=s_dp)
        dpjax.privatized("n_dp", lap_n, lambda r: jnp.ones(()), {"x": x}, plate=people, obs=n_dp)

    out = exact_abc(jax.random.key(0), model, 15.0, 40.0, num_samples=2000, progress_bar=False)
    flat = lambda m: 0.0 if 1 <= m <= cap else -np.inf
    pmf, mean_p, _ = exact_unknown_n(15.0, 40.0, lap_s, lap_n, flat, cap)
    n = np.asarray(out.samples["n"], float)
    for got, exact in ((n, pmf @ np.arange(cap + 1)), (np.asarray(out.samples["p"]), mean_p)):
        assert abs(got.mean() - exact) < 4 * got.std() / np.sqrt(got.size), (got.mean(), exact)


def test_exact_abc_compiles_its_loop_once(caplog):
    """The loop's counters start strongly typed, as the loop returns them: a run of several calls
    compiles once (weakly typed zeros made the second call recompile, ~20 s, and skewed the speed
    estimate behind SlowABCWarning)."""
    import logging

    from dpjax.models import poisson_count

    with jax.log_compiles(True), caplog.at_level(logging.WARNING, logger="jax"):
        out = exact_abc(  # 0.64 % acceptance: several calls of growing chunks
            jax.random.key(0), poisson_count, jnp.asarray(75.0), jnp.array(37.4), num_samples=3000,
            batch_size=100_000, progress_bar=False,
        )  # fmt: skip
    assert out.samples["theta"].shape == (3000,)
    assert sum("Compiling jit(run)" in r.getMessage() for r in caplog.records) == 1


def test_exact_abc_warns_nothing_about_its_counters_in_float32():
    """Its loop counters are the canonical int: under 32-bit JAX a request for int64 warned "Explicitly
    requested dtype int64 … will be truncated" on every call."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        key, release = jax.random.key(0), jnp.array(11.0)
        out = exact_abc(key, bernoulli_model, release, num_samples=5, progress_bar=False)
    assert out.samples["p"].shape == (5,)
