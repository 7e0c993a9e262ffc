"""wald_coverage: the coverage of Wald intervals at a fixed θ, and its verdict's power."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import dpjax
from dpjax.testing import coverage_test, wald_coverage

N, SIGMA = 50, 5.0  # a Gaussian sum of N(μ, 1) records: μ̂ = s/N exactly, s.e. = √(N + σ²)/N


def normal_sum(s_dp=None):
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    with numpyro.plate("people", N):
        x = numpyro.sample("x", dist.Normal(mu, 1.0))
    dpjax.privatized(
        "sum", dpjax.GaussianMechanism(sigma=SIGMA), lambda r: r["x"], {"x": x}, plate="people", obs=s_dp
    )


def exact_mle(key, args, kwargs, se_factor=1.0, shift=0.0):
    se = (N + SIGMA**2) ** 0.5 / N
    return {"mu": kwargs["s_dp"] / N + shift * se}, {"mu": se_factor * se}


@pytest.fixture(scope="module")
def exact():
    return wald_coverage(
        normal_sum, exact_mle, {"mu": 1.0}, release="s_dp", rng_key=jax.random.key(1), num_simulations=400,
        progress_bar=False,
    )  # fmt: skip


def test_exact_intervals_cover_and_their_z_scores_are_standard_normal(exact):
    v = exact.verdicts.iloc[0]
    assert exact.passed and v["simulations"] == 400
    assert abs(v["mean_z"]) < 3 / 20 and abs(v["sd_z"] - 1) < 0.12  # 3 s.e. of a mean and an sd of 400


@pytest.mark.parametrize("se_factor, shift", [(0.5, 0.0), (0.7, 0.0), (1.0, 1.0), (2.0, 0.0)])
def test_the_verdict_fails_on_wrong_standard_errors_or_a_bias(exact, se_factor, shift):
    table = exact.table
    se = table["mu_se"] * se_factor
    assert not coverage_test(table["mu"] + shift * table["mu_se"], se, 1.0)["inside"]


def test_level_of_the_binomial_verdict():
    """At the nominal coverage the verdict rejects about 1 − prob of the time."""
    rng = np.random.default_rng(0)
    rejects = [not coverage_test(rng.normal(0, 1, 200), np.ones(200), 0.0)["inside"] for _ in range(400)]
    assert 0.02 <= np.mean(rejects) <= 0.09


def test_vector_sites_are_reported_per_coordinate():
    def model(s_dp=None):
        mu = numpyro.sample("mu", dist.Normal(jnp.zeros(2), 10.0).to_event(1))
        with numpyro.plate("people", N):
            x = numpyro.sample("x", dist.Normal(mu, 1.0).to_event(1))
        dpjax.privatized(
            "sums", dpjax.GaussianMechanism(sigma=SIGMA), lambda r: r["x"], {"x": x}, plate="people", obs=s_dp
        )

    se = (N + SIGMA**2) ** 0.5 / N
    mle = lambda k, a, kw: ({"mu": kw["s_dp"] / N}, {"mu": jnp.full(2, se)})
    out = wald_coverage(
        model, mle, {"mu": jnp.array([1.0, -1.0])}, release="s_dp", rng_key=jax.random.key(0),
        num_simulations=100, progress_bar=False,
    )  # fmt: skip
    assert list(out.verdicts["coordinate"]) == ["mu[0]", "mu[1]"] and list(out.verdicts["truth"]) == [
        1.0,
        -1.0,
    ]
    assert {"mu[0]", "mu_se[1]"} <= set(out.table.columns)
    assert out.plot() is not None


def test_estimator_warnings_and_lost_simulations_are_reported():
    def flaky(key, args, kwargs):
        params, se = exact_mle(key, args, kwargs)
        if kwargs["s_dp"] > N * 1.0:  # about half the simulations
            import warnings

            warnings.warn("did not converge", stacklevel=2)
            return {"mu": jnp.nan}, se
        return params, se

    with pytest.warns(UserWarning, match=r"warned in \d+ of 40 .*did not converge"):
        with pytest.warns(UserWarning, match=r"\d+ of 40 simulations gave a non-finite estimate"):
            wald_coverage(
                normal_sum, flaky, {"mu": 1.0}, release="s_dp", rng_key=jax.random.key(0), num_simulations=40,
                progress_bar=False,
            )  # fmt: skip


def test_the_mcem_wald_interval_covers_a_noisy_count():
    """MCEM (importance E-step) with Louis's standard errors: Bernoulli records with a Laplace count."""

    def model(s_dp=None):
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        with numpyro.plate("people", 200):
            x = numpyro.sample("x", dist.Bernoulli(p))
        dpjax.privatized(
            "count",
            dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=1.0),
            lambda r: r["x"],
            {"x": x},
            plate="people",
            obs=s_dp,
        )

    def mle(key, args, kwargs):
        return dpjax.infer.mcem(
            key, model, {"p": 0.5}, **kwargs, m_step=lambda recs, w: {"p": w @ recs["x"].mean(1)},
            num_particles=(1_000,), tolerances=(1e-3,), progress_bar=False,
        )  # fmt: skip

    key = jax.random.key(0)
    out = wald_coverage(
        model, mle, {"p": 0.3}, release="s_dp", rng_key=key, num_simulations=150, progress_bar=False
    )
    assert out.passed, out.verdicts
    assert not coverage_test(out.table["p"], out.table["p_se"] / 2, 0.3)["inside"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"estimator": 3}, "estimator must be a function"),
        ({"truth": {}}, "truth must be a non-empty dict"),
        ({"truth": {"sigma": 1.0}}, r"missing \['mu'\], unknown \['sigma'\]"),
        ({"truth": {"mu": 1.0, "x": 0.0}}, r"unknown \['x'\]"),  # a record site is not θ
        ({"release": {"s_dp": "nope"}}, "not privatized sites"),
        ({"level": 1.5}, "level must be a float in"),
        ({"num_simulations": 0}, "num_simulations"),
        ({"model_args": [1]}, "model_args must be a tuple"),
    ],
)
def test_bad_arguments_are_refused_before_any_simulation(kwargs, match):
    args = {"estimator": exact_mle, "truth": {"mu": 1.0}, "release": "s_dp", **kwargs}
    est, truth, release = args.pop("estimator"), args.pop("truth"), args.pop("release")
    with pytest.raises(ValueError, match=match):
        wald_coverage(
            normal_sum, est, truth, release=release, rng_key=jax.random.key(0), progress_bar=False, **args
        )


@pytest.mark.parametrize(
    "estimate, match", [({"tau": 1.0}, r"returned sites \['tau'\]"), ({}, "returned sites none")]
)
def test_an_estimate_of_a_site_truth_does_not_fix_is_refused(estimate, match):
    with pytest.raises(ValueError, match=match):
        wald_coverage(
            normal_sum, lambda k, a, kw: (estimate, estimate), {"mu": 1.0}, release="s_dp",
            rng_key=jax.random.key(0), num_simulations=2, progress_bar=False,
        )  # fmt: skip
