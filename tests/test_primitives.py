import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer import Predictive
from numpyro.infer.util import log_density

import dpjax
from dpjax.primitives import INFER_KEY

MECH = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=2.0)


def model(n=20, s=None, statistic=lambda r: jnp.stack([r["x"], r["x"] ** 2]), plate="rows"):
    mu = numpyro.sample("mu", dist.Normal(0, 1))
    with numpyro.plate("rows", n):
        x = numpyro.sample("x", dist.Normal(mu, 1))
    return dpjax.privatized("s", MECH, statistic, {"x": x}, plate=plate, obs=s)


def test_simulates_a_release_with_predictive():
    out = Predictive(model, num_samples=7)(jax.random.key(0))
    assert out["s"].shape == (7, 2)
    tr = numpyro.handlers.trace(numpyro.handlers.seed(model, 0)).get_trace()
    site = tr["s"]
    assert not site["is_observed"] and site["infer"][INFER_KEY].record_sites == ("x",)
    assert site["fn"].event_shape == (2,)


def test_observed_site_log_density_is_the_mechanism():
    tr = numpyro.handlers.trace(numpyro.handlers.seed(model, 1)).get_trace(s=jnp.array([1.0, 30.0]))
    x = tr["x"]["value"]
    t = jnp.array([x.sum(), (x**2).sum()])
    want = MECH.log_density(jnp.array([1.0, 30.0]), t).sum()
    lp, _ = log_density(model, (), {"s": jnp.array([1.0, 30.0])}, {"mu": tr["mu"]["value"], "x": x})
    mu = tr["mu"]["value"]
    lp_prior = dist.Normal(0, 1).log_prob(mu) + dist.Normal(mu, 1).log_prob(x).sum()
    assert float(lp) == pytest.approx(float(lp_prior + want), rel=1e-5)


def test_several_privatized_sites():
    def two(s1=None, s2=None):
        p = numpyro.sample("p", dist.Beta(2, 2))
        with numpyro.plate("rows", 30):
            x = numpyro.sample("x", dist.Bernoulli(p))
        dpjax.privatized("a", MECH, lambda r: r["x"], {"x": x}, plate="rows", obs=s1)
        dpjax.privatized(
            "b",
            dpjax.DiscreteLaplaceMechanism(epsilon=1.0),
            lambda r: 1 - r["x"],
            {"x": x},
            plate="rows",
            obs=s2,
        )

    out = Predictive(two, num_samples=3)(jax.random.key(0))
    assert out["a"].shape == (3,) and out["b"].shape == (3,)
    assert np.all(np.asarray(out["b"]) == np.round(np.asarray(out["b"])))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"s": jnp.array([1.0, 2.0, 3.0])}, "has shape"),
        ({"s": jnp.array([1.0, jnp.nan])}, "NaN"),
        ({"statistic": lambda r: {"a": r["x"]}}, "must return one array"),
        ({"plate": 3}, "plate"),
    ],
)
def test_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        numpyro.handlers.seed(model, 0)(**kwargs)


def test_bad_mechanism_and_records():
    with pytest.raises(ValueError, match="Mechanism"):
        dpjax.privatized("s", "laplace", lambda r: r, {"x": jnp.ones(3)}, plate="rows")
    with pytest.raises(ValueError, match="leading"):
        dpjax.privatized("s", MECH, lambda r: r["x"], {"x": jnp.ones(3), "y": jnp.ones(4)}, plate="rows")
    with pytest.raises(ValueError, match="non-empty"):
        dpjax.privatized("s", MECH, lambda r: r, {}, plate="rows")


# ------------------------------------------------------------------ property-based validation
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from dpjax.primitives import site_roles  # noqa: E402


def _count_trace(mech, obs, n=5, transform=None, statistic=lambda r: r["x"]):
    def m():
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        with numpyro.plate("rows", n):
            x = numpyro.sample("x", dist.Bernoulli(p))
        dpjax.privatized(
            "s", mech, statistic, {"x": x if transform is None else transform(x)}, plate="rows", obs=obs
        )

    tr = numpyro.handlers.trace(numpyro.handlers.seed(m, 0)).get_trace()
    return site_roles(tr)


INTEGER_MECHS = [dpjax.DiscreteLaplaceMechanism(epsilon=1.0), dpjax.DiscreteGaussianMechanism(sigma=2.0)]


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(INTEGER_MECHS), st.integers(-(2**23), 2**23), st.floats(0.01, 0.99))
def test_integer_mechanisms_accept_integers_and_refuse_fractions(mech, k, frac):
    _count_trace(mech, float(k))
    with pytest.raises(ValueError, match="non-integer"):
        _count_trace(mech, k + frac)


@settings(max_examples=25, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e4, max_value=1e4))
def test_continuous_releases_of_moderate_size_are_accepted(s):
    roles = _count_trace(MECH, s)
    assert roles.latent_records == ("x",) and roles.theta == ("p",)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([float("nan"), float("inf"), -float("inf")]), st.integers(1, 3))
def test_non_finite_releases_are_refused_at_any_shape(bad, dim):
    mech = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    obs = np.full(dim, 1.0)
    obs[-1] = bad
    with pytest.raises(ValueError, match="NaN or inf"):
        _count_trace(mech, obs, statistic=lambda r: jnp.stack([r["x"]] * dim))


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4))
def test_mechanism_parameter_shape_must_fit_the_statistic(k_mech, k_stat):
    """One ε for the whole release or one per entry: ε of shape (1,) over a 3-vector would release
    three entries under a guarantee that reports one (accepted until 840f5ad)."""
    mech = dpjax.LaplaceMechanism(epsilon=np.ones(k_mech), sensitivity=1.0)
    stat = lambda r: jnp.stack([r["x"]] * k_stat)
    obs = np.zeros(k_stat)
    _count_trace(dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0), obs, statistic=stat)
    if k_mech == k_stat:
        _count_trace(mech, obs, statistic=stat)
        assert mech.guarantee.epsilon == k_stat
    else:
        with pytest.raises(ValueError, match="parameters have shape"):
            _count_trace(mech, obs, statistic=stat)
        exact = dpjax.DiscreteLaplaceMechanism(epsilon=np.ones(k_mech))
        with pytest.raises(ValueError, match="parameters have shape"):
            exact.release(None, np.zeros(k_stat, int))


@settings(max_examples=15, deadline=None)
@given(st.sampled_from([lambda x: 2 * x, lambda x: x + 0.0, lambda x: jnp.clip(x, 0, 1), lambda x: x[::-1]]))
def test_any_transformed_record_value_is_refused(transform):
    with pytest.raises(ValueError, match="put the transformation in `statistic`"):
        _count_trace(MECH, 1.0, transform=transform)
