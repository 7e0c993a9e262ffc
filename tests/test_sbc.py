"""dpjax.testing.sbc: simulation-based calibration passes on exact engines and fails, at the default
number of simulations, on broken ones (a sensitivity off by 2×, a posterior that ignores the mechanism,
an unknown-n sampler whose death does not reverse its birth); the rank ECDF test holds its level."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import dpjax
from dpjax.testing import rank_ecdf_test, sbc

N = 50


def count_model(sensitivity=1.0):
    def model(n, epsilon, s_dp=None):
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        with numpyro.plate("people", n):
            x = numpyro.sample("x", dist.Bernoulli(p))
        mech = dpjax.LaplaceMechanism(epsilon=epsilon, sensitivity=sensitivity)
        dpjax.privatized("count", mech, lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)

    return model


def beta_draw(key, records, params):
    k, n = records["x"].sum(), records["x"].shape[0]
    return {"p": dist.Beta(1.0 + k, 1.0 + n - k).sample(key)}


def naive(key, args, kwargs):
    """The posterior that takes the noisy count for the true one (ignores the mechanism)."""
    n, s = args[0], kwargs["s_dp"]
    k = jnp.clip(jnp.round(s), 0, n)
    return {"p": dist.Beta(1.0 + k, 1.0 + n - k).sample(key, (1, 400))}


def run(engine, seed=1, **kw):
    settings = dict(num_warmup=200, num_samples=400, num_ranks=49, rng_key=jax.random.key(seed))
    return sbc(
        count_model(), engine, release="s_dp", model_args=(N, 0.5), progress_bar=False, **settings | kw
    )


def test_exact_engine_passes_and_broken_engines_fail():
    model = count_model()
    exact = run(dpjax.infer.DataAugmentationKernel(model, theta_update=beta_draw))
    assert exact.passed, exact.verdicts
    assert exact.verdicts["simulations"].tolist() == [256] and exact.table["p_rank"].between(0, 49).all()
    wide = run(dpjax.infer.DataAugmentationKernel(count_model(sensitivity=2.0), theta_update=beta_draw))
    assert not wide.passed, wide.verdicts
    # too wide a posterior: ranks pile up in the middle, the ECDF difference dips below 0 then above
    ranks = wide.ranks("p")
    assert ((ranks > 12) & (ranks < 37)).mean() > 0.5 + 0.05
    narrow = run(naive)
    assert not narrow.passed, narrow.verdicts


def test_grid_of_settings_and_the_plot():
    import matplotlib

    matplotlib.use("Agg")
    abc = dpjax.infer.exact_abc_sampler(count_model(), num_samples=49, batch_size=1_000)
    result = sbc(
        count_model(), abc, release="s_dp", model_args=lambda epsilon: (20, epsilon),
        grid={"epsilon": [0.5, 2.0]}, num_simulations=64, num_ranks=49, rng_key=jax.random.key(0),
        progress_bar=False,
    )  # fmt: skip
    assert result.passed, result.verdicts
    assert result.verdicts["epsilon"].tolist() == [0.5, 2.0] and result.grid == ("epsilon",)
    assert (result.verdicts["median_ess"] == 49).all()  # exact ABC: independent draws
    assert len(result.ranks("p", epsilon=2.0)) == 64
    fig = result.plot()
    assert len(fig.axes) == 2


def test_rank_ecdf_test_holds_its_level_and_has_power():
    rng = np.random.default_rng(0)
    level = np.mean([rank_ecdf_test(rng.integers(0, 50, 256), 49).inside for _ in range(400)])
    assert 0.92 <= level <= 0.98  # 0.95 ± 2.8 binomial sd
    shifted = lambda: np.minimum(rng.integers(0, 50, 256) + rng.integers(0, 8, 256), 49)  # biased upward
    assert np.mean([rank_ecdf_test(shifted(), 49).inside for _ in range(50)]) < 0.2
    with pytest.raises(ValueError, match="ranks must lie in 0 .. num_ranks=49"):
        rank_ecdf_test(np.array([0, 50]), 49)


def test_clear_errors_before_any_draws():
    model = count_model()
    abc = dpjax.infer.exact_abc_sampler(model, num_samples=49, batch_size=100)
    kw = dict(model_args=(N, 0.5), rng_key=jax.random.key(0), progress_bar=False)
    with pytest.raises(ValueError, match=r"release: \['nope'\] are not sample sites"):
        sbc(model, abc, release={"s_dp": "nope"}, **kw)
    with pytest.raises(ValueError, match=r"params: \['q'\] are not θ sites"):
        sbc(model, abc, release="s_dp", params="q", **kw)
    with pytest.raises(ValueError, match="grid must be a non-empty dict"):
        sbc(model, abc, release="s_dp", grid={"epsilon": 0.5}, **kw)
    with pytest.raises(ValueError, match="grid must be a non-empty dict"):
        sbc(model, abc, release="s_dp", grid={"epsilon": []}, **kw)
    with pytest.raises(ValueError, match="engine must be an MCMC kernel"):
        sbc(model, 3, release="s_dp", **kw)
    with pytest.raises(ValueError, match="num_ranks=99 needs at least as many draws"):
        sbc(model, abc, release="s_dp", num_simulations=4, **kw)

    def observed(n, epsilon, s_dp=None, y=3.0):  # a public observation of θ that SBC would not simulate
        model(n, epsilon, s_dp)
        numpyro.sample("y", dist.Normal(numpyro.sample("mu", dist.Normal()), 1.0), obs=y)

    with pytest.raises(ValueError, match=r"observes \['y'\] with fixed values"):
        sbc(observed, abc, release="s_dp", **kw)


# ------------------------------------------------------------------------ unknown n (second tier)


def size_model(s_dp=None):
    p = numpyro.sample("p", dist.Beta(2.0, 2.0))
    n = numpyro.sample("n", dist.Poisson(15.0))
    people = dpjax.records_plate("people", n, 45)
    with people:
        x = numpyro.sample("x", dist.Bernoulli(p))
    mech = dpjax.GaussianMechanism(sigma=2.0)
    dpjax.privatized("count", mech, lambda r: r["x"], {"x": x}, plate=people, obs=s_dp)


def size_beta(key, records, params):
    active = jnp.arange(records["x"].shape[0]) < params["n"]
    ones = jnp.sum(jnp.where(active, records["x"], 0))
    return {"p": jax.random.beta(key, 2.0 + ones, 2.0 + params["n"] - ones)}


def test_unknown_n_exact_passes_and_a_death_that_does_not_reverse_its_birth_fails(monkeypatch):
    rj = lambda: dpjax.infer.ReversibleJumpKernel(size_model, theta_update=size_beta, noncentred_moves=0)
    kernel = rj()  # births and deaths move n (no noise-map moves)
    kw = dict(release="s_dp", num_warmup=300, num_samples=600, num_ranks=49, progress_bar=False)
    exact = sbc(size_model, kernel, rng_key=jax.random.key(1), **kw)
    assert exact.passed and set(exact.coordinates) == {"p", "n"}, exact.verdicts

    import dpjax.infer.size_step as size_step

    real = size_step.birth_death

    def broken(*args, **kwargs):
        # a death of a record chosen at random, scored as if it took the last one: an n*/n too many in
        # the ratio, so a death no longer reverses its birth (the target of n becomes ∝ n p(n | ...))
        *head, log_prior = args
        return real(*head, lambda n: log_prior(n) + jnp.log(jnp.maximum(n, 1.0)), **kwargs)

    monkeypatch.setattr(size_step, "birth_death", broken)
    wrong = sbc(size_model, rj(), rng_key=jax.random.key(1), **kw)
    assert not wrong.passed, wrong.verdicts
    assert not wrong.verdicts.set_index("coordinate").loc["n", "inside"]


def test_a_vector_site_is_ranked_per_entry():
    def model(n, s_dp=None):
        p = numpyro.sample("p", dist.Beta(1.0, 1.0).expand([2]).to_event(1))
        with numpyro.plate("people", n):
            x = numpyro.sample("x", dist.Bernoulli(p).to_event(1))
        mech = dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=2.0)
        dpjax.privatized("counts", mech, lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)

    abc = dpjax.infer.exact_abc_sampler(model, num_samples=9, batch_size=200)
    result = sbc(model, abc, release="s_dp", model_args=(5,), num_simulations=16, num_ranks=9,
                 rng_key=jax.random.key(0), progress_bar=False)  # fmt: skip
    assert result.coordinates == ("p[0]", "p[1]") and result.passed, result.verdicts
    assert {"p_rank[0]", "p_rank[1]", "p_ess[1]"} <= set(result.table.columns)
    assert result.ranks("p[1]").shape == (16,)


def test_a_simulation_with_nan_draws_ranks_no_site_and_warns():
    def engine(key, args, kwargs):  # half the simulations return NaN draws of p, n always finite
        k1, k2, k3 = jax.random.split(key, 3)
        p = jax.random.uniform(k1, (1, 19))
        n = jax.random.randint(k2, (1, 19), 0, 40)
        return {"p": jnp.where(jax.random.uniform(k3) < 0.5, jnp.nan, p), "n": n}

    with pytest.warns(UserWarning, match="returned no draws for p in"):
        result = sbc(size_model, engine, release="s_dp", num_simulations=32, num_ranks=19,
                     rng_key=jax.random.key(0), progress_bar=False)  # fmt: skip
    failed = result.table["p_rank"] < 0
    assert 0 < failed.sum() < 32 and ((result.table["n_rank"] < 0) == failed).all()
    assert result.verdicts.set_index("coordinate").loc["n", "simulations"] == 32 - failed.sum()
