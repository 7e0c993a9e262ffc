"""Monte Carlo EM (importance E-step): MLE and Louis's observed information against direct
maximisation of the exact marginal likelihood and a finite-difference Hessian."""

import warnings
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from scipy import optimize, stats

import dpjax
from dpjax.infer import MCEMResult, is_mcem, mcem
from dpjax.models import poisson_count

S_DP, EPS = 37.4, 0.2


def poisson_marginal_loglik(theta):
    k = np.arange(0, 400)
    return np.log(np.sum(stats.poisson.pmf(k, theta) * stats.laplace.pdf(S_DP - k, scale=1 / EPS)))


def exact_mle_and_information(loglik, bracket):
    mle = optimize.minimize_scalar(lambda t: -loglik(t), bracket=bracket, tol=1e-10).x
    h = 1e-3 * max(1.0, abs(mle))
    info = -(loglik(mle + h) - 2 * loglik(mle) + loglik(mle - h)) / h**2
    return mle, info


def test_poisson_mle_and_observed_information_closed_form_m_step():
    out = mcem(
        jax.random.key(0),
        poisson_count,
        {"theta": 1.0},
        25.0,
        jnp.array(S_DP),
        m_step=lambda recs, w: {"theta": w @ recs["s"][:, 0]},
        num_particles=(1_000, 30_000, 300_000),
        tolerances=(1e-2, 1e-3, 1e-4),
    )
    mle, info = exact_mle_and_information(poisson_marginal_loglik, (30, 45))
    assert mle == pytest.approx(37.237, abs=0.01) and info == pytest.approx(
        1.582e-2, rel=0.01
    )  # the seed's values
    # Monte Carlo error of the EM fixed point: se of the weighted mean / fraction of information observed
    se = np.sqrt(1 / out.ess[-1]) * np.sqrt(out.params["theta"]) / (info * float(out.params["theta"]))
    assert abs(float(out.params["theta"]) - mle) < 5 * se, (out.params, mle, se)
    assert float(out.information[0, 0]) == pytest.approx(info, rel=0.05)
    assert float(out.std_errors["theta"]) == pytest.approx(1 / np.sqrt(info), rel=0.05)
    assert abs(float(out.score[0])) < 5 * info * se  # score ≈ information x (θ̂ - fixed point)
    assert int(out.num_particles[-1]) == 300_000
    iterations = out.ess.shape[0]
    assert out.history["theta"].shape == out.num_particles.shape == (iterations,)
    assert float(out.history["theta"][-1]) == float(out.params["theta"])
    lo, hi = out.wald_interval(0.95)["theta"]
    half = 1.959964 * float(out.std_errors["theta"])
    assert float(lo) == pytest.approx(float(out.params["theta"]) - half)
    assert float(hi) - float(lo) == pytest.approx(2 * half)
    with pytest.raises(ValueError, match="level"):
        out.wald_interval(1.5)


N, SIGMA, TAU = 20, 1.5, 4.0


def normal_model(release=None):
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    with numpyro.plate("rows", N):
        x = numpyro.sample("x", dist.Normal(mu, SIGMA))
    dpjax.privatized(
        "total", dpjax.GaussianMechanism(sigma=TAU), lambda r: r["x"], {"x": x}, plate="rows", obs=release
    )


def test_normal_mean_mle_and_information_with_optax_m_step():
    """s | μ ~ N(nμ, nσ² + τ²): MLE s/n, observed information n² / (nσ² + τ²)."""
    s = 31.0
    out = mcem(
        jax.random.key(1),
        normal_model,
        {"mu": 0.0},
        jnp.array(s),
        num_particles=(2_000, 50_000),
        tolerances=(1e-2, 1e-3),
    )
    info = N**2 / (N * SIGMA**2 + TAU**2)
    se = 1 / np.sqrt(info)
    assert abs(float(out.params["mu"]) - s / N) < 0.05 * se
    assert float(out.information[0, 0]) == pytest.approx(info, rel=0.05)


def test_bad_inputs():
    run = partial(mcem, jax.random.key(0), poisson_count, {"theta": 1.0}, 25.0, jnp.array(S_DP))
    with pytest.raises(ValueError, match="equal length"):
        run(num_particles=(10,), tolerances=())
    with pytest.raises(ValueError, match="positive"):
        run(num_particles=(0,), tolerances=(1e-3,))


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"max_iterations": 0}, "max_iterations"),
        ({"max_iterations": -3}, "max_iterations"),
        ({"max_iterations": 2.5}, "max_iterations"),
        ({"num_m_steps": 0}, "num_m_steps"),
        ({"num_m_steps": 1.5}, "num_m_steps"),
        ({"num_particles": (100.5,), "tolerances": (1e-3,)}, "num_particles"),
        ({"num_particles": (10,), "tolerances": (float("nan"),)}, "tolerances"),
    ],
)
def test_iteration_counts_and_stages_are_validated(kwargs, name):
    """max_iterations=0 used to return the starting value as the 'MLE', with standard errors."""
    with pytest.raises(ValueError, match=f"`{name}` must be"):
        mcem(jax.random.key(0), poisson_count, {"theta": 1.0}, 25.0, jnp.array(S_DP), **kwargs)


def beta_bernoulli(release=None):
    p = numpyro.sample("p", dist.Beta(2.0, 2.0))
    with numpyro.plate("people", 30):
        x = numpyro.sample("x", dist.Bernoulli(p))
    dpjax.privatized(
        "count", dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0), lambda r: r["x"], {"x": x},
        plate="people", obs=release,
    )  # fmt: skip


@pytest.mark.parametrize("bad", [1.5, -0.2, float("nan")])
def test_init_params_outside_the_support_name_the_site(bad):
    with pytest.raises(ValueError, match=r"`init_params\['p'\]` = .* outside the support of site 'p'"):
        mcem(jax.random.key(0), beta_bernoulli, {"p": bad}, jnp.array(11.0), progress_bar=False)


def test_progress_bar_and_warning_when_a_stage_stops_at_max_iterations(capsys):
    m_step = lambda recs, w: {"theta": w @ recs["s"][:, 0]}
    run = partial(
        mcem, jax.random.key(0), poisson_count, {"theta": 1.0}, 25.0, jnp.array(S_DP), m_step=m_step
    )
    with pytest.warns(dpjax.infer.ConvergenceWarning, match="final stage .* not converged") as rec:
        out = run(num_particles=(500,), tolerances=(1e-9,), max_iterations=2)
    assert out.history["theta"].shape == (2,) and len(rec) == 1
    err = capsys.readouterr().err
    assert "MCEM stage 1/1, 500 particles" in err and "change" in err, err
    with warnings.catch_warnings():  # converged: silent, and no bar when asked
        warnings.simplefilter("error", dpjax.infer.ConvergenceWarning)
        # from θ = 30 (near the MLE 37.2; from θ = 1, EM moves by ~0.2 an iteration, below a tolerance of 1,
        # far from the MLE: the EM-rate warning)
        mcem(
            jax.random.key(0), poisson_count, {"theta": 30.0}, 25.0, jnp.array(S_DP), m_step=m_step,
            num_particles=(500,), tolerances=(1.0,), max_iterations=50, progress_bar=False,
        )  # fmt: skip
    assert capsys.readouterr().err == ""


def test_e_step_is_validated_and_is_mcem_is_a_deprecated_alias_with_the_same_draws():
    m_step = lambda recs, w: {"theta": w @ recs["s"][:, 0]}
    run = partial(
        mcem, jax.random.key(2), poisson_count, {"theta": 30.0}, 25.0, jnp.array(S_DP), m_step=m_step,
        num_particles=(300,), tolerances=(1e-2,), progress_bar=False,
    )  # fmt: skip
    for bad in ("MCMC", "IS", None):
        with pytest.raises(ValueError, match=r"`e_step` must be one of \['importance', 'mcmc'\], got"):
            run(e_step=bad)
    new = run(e_step="importance")
    with pytest.warns(DeprecationWarning, match="`is_mcem` is deprecated.*mcem"):
        old = is_mcem(
            jax.random.key(2), poisson_count, {"theta": 30.0}, 25.0, jnp.array(S_DP), m_step=m_step,
            num_particles=(300,), tolerances=(1e-2,), progress_bar=False,
        )  # fmt: skip
    assert isinstance(old, MCEMResult)
    jax.tree.map(np.testing.assert_array_equal, old, new)


def test_the_result_is_an_array_pytree_that_a_study_can_stack():
    # N = 300 as in the test above: the compiled E-step is reused
    m_step = lambda recs, w: {"theta": w @ recs["s"][:, 0]}
    run = lambda seed: mcem(
        jax.random.key(seed), poisson_count, {"theta": 30.0}, 25.0, jnp.array(S_DP), m_step=m_step,
        num_particles=(300, 300), tolerances=(10.0, 10.0), progress_bar=False,
    )  # fmt: skip
    runs = [run(seed) for seed in range(3)]
    for out in runs:  # each stage stops after its first iteration
        assert all(hasattr(leaf, "shape") for leaf in jax.tree.leaves(out))
        np.testing.assert_array_equal(out.num_particles, [300, 300])
        assert out.ess.shape == (2,) and bool(jnp.all((out.ess >= 1) & (out.ess <= 300)))
    study = jax.tree.map(lambda *xs: jnp.stack(xs), *runs)
    assert isinstance(study, MCEMResult)
    assert study.history["theta"].shape == (3, 2) and study.information.shape == (3, 1, 1)
    np.testing.assert_array_equal(study.history["theta"][:, -1], study.params["theta"])
    lo, hi = runs[1].wald_interval(0.9)["theta"]
    assert float(lo) < float(runs[1].params["theta"]) < float(hi)


def test_init_params_with_unknown_or_missing_sites():
    with pytest.raises(ValueError, match=r"unknown sites \['q'\].*\['p'\]"):
        mcem(jax.random.key(0), beta_bernoulli, {"p": 0.5, "q": 0.1}, jnp.array(11.0), progress_bar=False)
    with pytest.raises(ValueError, match=r"must give exactly the sites \['p'\]"):
        mcem(jax.random.key(0), beta_bernoulli, {}, jnp.array(11.0), progress_bar=False)
