"""Property-based checks of the mechanisms (hypothesis): validation, the residual form of the
density, symmetry, normalization, guarantees and the exact integer release."""

import math

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpjax

FAST = settings(max_examples=25, deadline=None)

bad_numbers = st.one_of(
    st.floats(max_value=0.0, allow_nan=False),
    st.sampled_from([math.nan, math.inf, -math.inf]),
)
scales = st.floats(0.2, 40.0)
small_ints = st.integers(-10_000, 10_000)

CONSTRUCTORS = {
    "LaplaceMechanism(epsilon)": (lambda x: dpjax.LaplaceMechanism(epsilon=x, sensitivity=1.0), "epsilon"),
    "LaplaceMechanism(sensitivity)": (
        lambda x: dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=x),
        "sensitivity",
    ),
    "LaplaceMechanism(scale)": (lambda x: dpjax.LaplaceMechanism(scale=x), "scale"),
    "GaussianMechanism(sigma)": (lambda x: dpjax.GaussianMechanism(sigma=x), "sigma"),
    "GaussianMechanism(rho)": (lambda x: dpjax.GaussianMechanism(rho=x, sensitivity=1.0), "rho"),
    "GaussianMechanism(epsilon)": (
        lambda x: dpjax.GaussianMechanism(epsilon=x, delta=1e-5, sensitivity=1.0),
        "epsilon",
    ),
    "GaussianMechanism(delta)": (
        lambda x: dpjax.GaussianMechanism(epsilon=1.0, delta=x, sensitivity=1.0),
        "delta",
    ),
    "DiscreteLaplaceMechanism(epsilon)": (lambda x: dpjax.DiscreteLaplaceMechanism(epsilon=x), "epsilon"),
    "DiscreteLaplaceMechanism(sensitivity)": (
        lambda x: dpjax.DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=x),
        "sensitivity",
    ),
    "DiscreteLaplaceMechanism(scale)": (lambda x: dpjax.DiscreteLaplaceMechanism(scale=x), "scale"),
    "DiscreteGaussianMechanism(sigma)": (lambda x: dpjax.DiscreteGaussianMechanism(sigma=x), "sigma"),
    "DiscreteGaussianMechanism(rho)": (lambda x: dpjax.DiscreteGaussianMechanism(rho=x), "rho"),
    "DiscreteGaussianMechanism(sensitivity)": (
        lambda x: dpjax.DiscreteGaussianMechanism(rho=0.5, sensitivity=x),
        "sensitivity",
    ),
}


@pytest.mark.parametrize("name", CONSTRUCTORS)
@settings(max_examples=15, deadline=None)
@given(bad=bad_numbers)
def test_constructors_reject_bad_parameters_naming_them(name, bad):
    make, arg = CONSTRUCTORS[name]
    with pytest.raises(ValueError, match=f"`{arg}`"):
        make(bad)


@FAST
@given(sens=st.floats(0.01, 100).filter(lambda s: s != round(s)))
def test_integer_mechanisms_reject_non_integer_sensitivity(sens):
    for make in [
        lambda: dpjax.DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=sens),
        lambda: dpjax.DiscreteGaussianMechanism(rho=1.0, sensitivity=sens),
    ]:
        with pytest.raises(ValueError, match="`sensitivity`"):
            make()


def mechanism(kind, scale):
    return {
        "laplace": lambda: dpjax.LaplaceMechanism(scale=scale),
        "gaussian": lambda: dpjax.GaussianMechanism(sigma=scale),
        "dlaplace": lambda: dpjax.DiscreteLaplaceMechanism(scale=scale),
        "dgaussian": lambda: dpjax.DiscreteGaussianMechanism(sigma=scale),
    }[kind]()


KINDS = ["laplace", "gaussian", "dlaplace", "dgaussian"]


@FAST
@given(kind=st.sampled_from(KINDS), scale=scales, t=small_ints, k=st.integers(-200, 200), c=small_ints)
def test_log_density_depends_on_the_residual_only_and_is_symmetric(kind, scale, t, k, c):
    mech = mechanism(kind, scale)
    releases = np.array([t + k, t - k, t + c + k], dtype=float)
    stats_ = np.array([t, t, t + c], dtype=float)
    got = np.asarray(mech.log_density(releases, stats_))
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, got[0], rtol=1e-6, atol=1e-6)
    # and it is the density of the noise at that residual
    np.testing.assert_allclose(got[0], float(mech.log_noise_density(np.float32(k))), rtol=1e-6, atol=1e-6)


@FAST
@given(kind=st.sampled_from(["dlaplace", "dgaussian"]), scale=st.floats(0.05, 60.0))
def test_discrete_pmfs_sum_to_one_over_a_wide_window(kind, scale):
    mech = mechanism(kind, scale)
    k = np.arange(-4000, 4001)  # one fixed grid (no recompilation): beyond 60 scales + 60 for all
    log_p = np.asarray(mech.log_density(k, 0), dtype=np.float64)
    assert math.fsum(np.exp(log_p)) == pytest.approx(1.0, abs=2e-5)
    assert mech.max_log_density() == pytest.approx(log_p.max(), abs=1e-5)


@FAST
@given(
    eps=st.floats(1e-3, 50.0),
    sens=st.integers(1, 1000),
    discrete=st.booleans(),
)
def test_laplace_guarantee_is_sensitivity_over_scale(eps, sens, discrete):
    cls = dpjax.DiscreteLaplaceMechanism if discrete else dpjax.LaplaceMechanism
    mech = cls(epsilon=eps, sensitivity=sens)
    assert mech.scale == pytest.approx(sens / eps, rel=1e-12)
    assert mech.guarantee.epsilon == pytest.approx(eps, rel=1e-12)
    assert mech.epsilon == pytest.approx(eps, rel=1e-12)
    assert cls(scale=mech.scale).guarantee.epsilon is None


@FAST
@given(eps=st.lists(st.floats(1e-2, 10.0), min_size=2, max_size=5), sens=st.floats(0.1, 10.0))
def test_vector_epsilon_composes_by_sum(eps, sens):
    g = dpjax.LaplaceMechanism(epsilon=eps, sensitivity=sens).guarantee
    np.testing.assert_allclose(g.epsilon_per_entry, eps, rtol=1e-12)
    assert g.epsilon == pytest.approx(sum(eps), rel=1e-12)


@FAST
@given(
    kind=st.sampled_from(["dlaplace", "dgaussian"]),
    scale=st.floats(0.05, 1e6),
    seed=st.integers(0, 2**32 - 1),
    t=st.one_of(small_ints, st.integers(-(2**62), 2**62), st.integers(-(2**80), 2**80)),
    c=st.integers(-(2**40), 2**40),
)
def test_exact_release_is_integer_and_shift_invariant(kind, scale, seed, t, c):
    mech = mechanism(kind, scale)
    key = jax.random.key(seed)
    statistic = np.array([t, t + 1, t - 7], dtype=object)
    a, b = mech.release(key, statistic), mech.release(key, statistic + c)
    assert a.shape == (3,) and a.dtype in (np.int64, object)
    assert all(isinstance(v, int) for v in a.tolist())
    assert [y - x for x, y in zip(a.tolist(), b.tolist())] == [c, c, c]
