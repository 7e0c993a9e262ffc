import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

import dpjax
from dpjax.mechanisms import DiscreteGaussian, DiscreteLaplace, analytic_gaussian_sigma
from dpjax.mechanisms.gaussian import _agm_delta

KEY = jax.random.key(0)

# (mechanism, scipy frozen noise law or None, discrete?)
TABLE = [
    (dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=2.0), stats.laplace(scale=4.0), False),
    (dpjax.LaplaceMechanism(scale=0.3), stats.laplace(scale=0.3), False),
    (dpjax.GaussianMechanism(sigma=1.7), stats.norm(scale=1.7), False),
    (dpjax.GaussianMechanism(rho=0.125, sensitivity=1.0), stats.norm(scale=2.0), False),
    (dpjax.DiscreteLaplaceMechanism(epsilon=0.7), stats.dlaplace(0.7), True),
    (dpjax.DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=3), stats.dlaplace(1 / 3), True),
    (dpjax.DiscreteGaussianMechanism(sigma=0.6), None, True),
    (dpjax.DiscreteGaussianMechanism(sigma=3.5), None, True),
]


def _dg_pmf(k, sigma):
    grid = np.arange(-2000, 2001)
    z = np.exp(-(grid**2) / (2 * sigma**2)).sum()
    return np.exp(-(np.asarray(k) ** 2) / (2 * sigma**2)) / z


@pytest.mark.parametrize("mech, ref, discrete", TABLE)
def test_log_density_matches_reference(mech, ref, discrete):
    loc = 5.0
    x = np.arange(-10, 21, dtype=float) if discrete else np.linspace(-10, 20, 31)
    got = np.asarray(mech.log_density(x, loc))
    want = ref.logpdf(x - loc) if (ref is not None and not discrete) else None
    if discrete:
        want = ref.logpmf(x - loc) if ref is not None else np.log(_dg_pmf(x - loc, mech.scale))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("mech, ref, discrete", TABLE)
def test_samples_goodness_of_fit(mech, ref, discrete):
    draws = np.asarray(mech.release(KEY, jnp.zeros(20000)))
    if not discrete:
        assert stats.kstest(draws, ref.cdf).pvalue > 1e-3
        return
    assert np.all(draws == np.round(draws))
    support = np.arange(-8 * np.ceil(mech.scale) - 4, 8 * np.ceil(mech.scale) + 5)
    pmf = ref.pmf(support) if ref is not None else _dg_pmf(support, mech.scale)
    observed = np.array([(draws == k).sum() for k in support])
    keep = pmf * len(draws) > 5
    expected = pmf[keep] / pmf[keep].sum() * observed[keep].sum()
    assert stats.chisquare(observed[keep], expected).pvalue > 1e-3


@pytest.mark.parametrize("mech, ref, discrete", TABLE)
def test_max_log_density_is_the_mode(mech, ref, discrete):
    grid = np.arange(-30, 31, dtype=float) if discrete else np.linspace(-30, 30, 6001)
    best = float(np.max(mech.log_density(grid, 0.0)))
    assert mech.max_log_density() == pytest.approx(best, rel=1e-5, abs=1e-5)
    assert mech.max_log_density((3,)) == pytest.approx(3 * best, rel=1e-5, abs=1e-5)


def test_discrete_pmfs_are_normalized():
    k = jnp.arange(-400, 401, dtype=jnp.float32)
    for d in [DiscreteLaplace(0.0, 2.5), DiscreteGaussian(0.0, 0.4), DiscreteGaussian(0.0, 30.0)]:
        assert float(jnp.exp(d.log_prob(k)).sum()) == pytest.approx(1.0, abs=1e-5)


def test_distribution_shapes_and_vector_release():
    mech = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    t = jnp.zeros((4, 3))
    d = mech(t)
    assert d.event_shape == (4, 3) and d.batch_shape == ()
    assert mech(t, event_dim=1).batch_shape == (4,)
    s = mech.release(KEY, t)
    assert s.shape == (4, 3) and len(np.unique(np.asarray(s))) == 12  # independent per entry
    assert d.log_prob(s).shape == ()
    batched = jax.vmap(lambda x: mech(x).log_prob(s))(jnp.zeros((5, 4, 3)))
    assert batched.shape == (5,)
    jitted = jax.jit(lambda x: dpjax.DiscreteGaussianMechanism(sigma=2.0)(x).log_prob(x))
    assert jnp.isfinite(jitted(jnp.ones(3)))


def test_guarantees():
    assert dpjax.LaplaceMechanism(epsilon=0.3, sensitivity=2).guarantee.epsilon == pytest.approx(0.3)
    assert dpjax.LaplaceMechanism(scale=2.0).guarantee.epsilon is None
    g = dpjax.GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0).guarantee
    assert (g.epsilon, g.delta) == (1.0, 1e-5) and g.rho > 0
    assert dpjax.GaussianMechanism(rho=0.5, sensitivity=2.0).guarantee.rho == pytest.approx(0.5)
    assert dpjax.DiscreteGaussianMechanism(sigma=2.0).guarantee.rho == pytest.approx(1 / 8)
    assert dpjax.DiscreteLaplaceMechanism(epsilon=0.2).epsilon == pytest.approx(0.2)
    assert dpjax.GaussianMechanism(sigma=1.0).epsilon is None


@pytest.mark.parametrize("eps, delta, sens", [(1.0, 1e-5, 1.0), (0.2, 1e-6, 3.0), (5.0, 1e-3, 0.5)])
def test_analytic_gaussian_matches_hockey_stick_divergence(eps, delta, sens):
    sigma = analytic_gaussian_sigma(eps, delta, sens)
    # δ(ε) = ∫ max(0, p - e^ε q) for p = N(0, σ²), q = N(Δ, σ²), integrated independently
    f = lambda x: max(0.0, stats.norm.pdf(x, 0, sigma) - np.exp(eps) * stats.norm.pdf(x, sens, sigma))
    split = sens / 2 - eps * sigma**2 / sens  # where p = e^ε q
    got = integrate.quad(f, -np.inf, split, limit=200, epsabs=1e-14)[0]
    assert got == pytest.approx(delta, rel=1e-4)
    assert _agm_delta(0.99 * sigma, eps, sens) > delta  # minimal σ
    classical = np.sqrt(2 * np.log(1.25 / delta)) * sens / eps
    assert sigma < classical or eps >= 1


def test_clamp_and_normalize():
    x = jnp.array([-20.0, -10.0, 0.0, 5.0, 10.0, 30.0])
    np.testing.assert_allclose(dpjax.clamp(x, -10, 10), [-10, -10, 0, 5, 10, 10])
    np.testing.assert_allclose(dpjax.normalize(x, -10, 10), [-1, -1, 0, 0.5, 1, 1])


@pytest.mark.parametrize(
    "make",
    [
        lambda: dpjax.LaplaceMechanism(epsilon=0.0, sensitivity=1.0),
        lambda: dpjax.LaplaceMechanism(epsilon=-1.0, sensitivity=1.0),
        lambda: dpjax.LaplaceMechanism(epsilon=float("nan"), sensitivity=1.0),
        lambda: dpjax.LaplaceMechanism(epsilon=1.0),
        lambda: dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0, scale=1.0),
        lambda: dpjax.GaussianMechanism(),
        lambda: dpjax.GaussianMechanism(sigma=1.0, rho=1.0),
        lambda: dpjax.GaussianMechanism(epsilon=1.0, sensitivity=1.0),
        lambda: dpjax.GaussianMechanism(epsilon=1.0, delta=1.5, sensitivity=1.0),
        lambda: dpjax.GaussianMechanism(rho=0.5),
        lambda: dpjax.GaussianMechanism(sigma=-2.0),
        lambda: dpjax.DiscreteLaplaceMechanism(epsilon=0.0),
        lambda: dpjax.DiscreteGaussianMechanism(),
        lambda: dpjax.DiscreteGaussianMechanism(sigma=np.inf),
    ],
)
def test_bad_parameters_raise_value_error(make):
    with pytest.raises(ValueError):
        make()


FLOAT_MECHS = [dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0), dpjax.GaussianMechanism(sigma=1.0)]
INT_MECHS = [dpjax.DiscreteLaplaceMechanism(epsilon=1.0), dpjax.DiscreteGaussianMechanism(sigma=1.0)]


@pytest.mark.parametrize("mech", FLOAT_MECHS + INT_MECHS)
@pytest.mark.parametrize("bad", [0, 7, 1.5, "key", jnp.zeros(3), jax.random.split(KEY, 2)])
def test_release_rejects_a_non_key(mech, bad):
    with pytest.raises(ValueError, match="rng_key"):
        mech.release(bad, 3)


@pytest.mark.parametrize("mech", FLOAT_MECHS + INT_MECHS)
def test_release_accepts_typed_and_legacy_keys(mech):
    for key in [jax.random.key(0), jax.random.PRNGKey(0)]:
        assert np.shape(mech.release(key, np.array([1, 2]))) == (2,)
    with pytest.raises(ValueError, match="rng_key"):
        FLOAT_MECHS[0].release(None, 1.0)  # float releases are simulations: they need a key


def test_float_release_is_documented_as_simulation_only():
    for cls in [dpjax.Mechanism, dpjax.LaplaceMechanism, dpjax.GaussianMechanism]:
        doc = cls.release.__doc__
        assert "SIMULATE" in doc and "Not for publishing" in doc and "Mironov" in doc
    for cls in [dpjax.LaplaceMechanism, dpjax.GaussianMechanism]:
        assert "release(None, T)" in cls.__doc__
    for dist_cls in [DiscreteLaplace, DiscreteGaussian]:
        assert "Simulation-grade" in dist_cls.sample.__doc__
    assert "rng_key=None" in DiscreteLaplace.sample.__doc__
    assert "CSPRNG" in dpjax.DiscreteLaplaceMechanism.release.__doc__


@pytest.mark.parametrize(
    "make",
    [
        lambda s: dpjax.DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=s),
        lambda s: dpjax.DiscreteGaussianMechanism(rho=0.5, sensitivity=s),
        lambda s: dpjax.DiscreteGaussianMechanism(sigma=2.0, sensitivity=s),
    ],
)
def test_integer_mechanisms_need_integer_sensitivity(make):
    for bad in [0.5, 1.5, [1.0, 2.5]]:
        with pytest.raises(ValueError, match="sensitivity"):
            make(bad)
    assert make(2).sensitivity == 2


def test_vector_budgets_report_per_entry_and_total():
    g = dpjax.LaplaceMechanism(epsilon=[1, 2], sensitivity=1).guarantee
    assert g.epsilon == pytest.approx(3.0) and g.epsilon_per_entry == (1.0, 2.0)
    assert "ε=3" in str(g) and "[1, 2]" in str(g)
    assert dpjax.LaplaceMechanism(epsilon=[1, 2], sensitivity=1).epsilon == pytest.approx(3.0)
    g = dpjax.LaplaceMechanism(sensitivity=[1.0, 100.0], scale=[2.0, 50.0]).guarantee
    assert g.epsilon == pytest.approx(2.5) and g.epsilon_per_entry == (0.5, 2.0)
    g = dpjax.DiscreteLaplaceMechanism(epsilon=[[0.5], [1.5]]).guarantee
    assert g.epsilon == pytest.approx(2.0) and np.shape(g.epsilon_per_entry) == (2, 1)
    g = dpjax.GaussianMechanism(rho=[0.1, 0.4], sensitivity=1.0).guarantee
    assert g.rho == pytest.approx(0.5) and np.allclose(g.rho_per_entry, [0.1, 0.4])
    assert "ρ=0.5" in str(g) and "per entry" in str(g)
    g = dpjax.GaussianMechanism(sigma=[1.0, 2.0], sensitivity=[1.0, 2.0]).guarantee
    assert g.rho == pytest.approx(1.0) and g.rho_per_entry == (0.5, 0.5)
    # scalar parameters: one budget for the whole release, no per-entry field
    g = dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=2.0).guarantee
    assert g == dpjax.mechanisms.Guarantee(epsilon=0.5) and str(g) == "ε=0.5"


@pytest.mark.parametrize(
    "make, arg",
    [
        (lambda x: dpjax.LaplaceMechanism(epsilon=x, sensitivity=1.0), "epsilon"),
        (lambda x: dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=x), "sensitivity"),
        (lambda x: dpjax.LaplaceMechanism(scale=x), "scale"),
        (lambda x: dpjax.GaussianMechanism(sigma=x), "sigma"),
        (lambda x: dpjax.GaussianMechanism(rho=x, sensitivity=1.0), "rho"),
        (lambda x: dpjax.DiscreteLaplaceMechanism(epsilon=x), "epsilon"),
        (lambda x: dpjax.DiscreteGaussianMechanism(sigma=x), "sigma"),
    ],
)
def test_traced_privacy_parameter_is_accepted(make, arg):
    # mechanisms are pytrees: a traced parameter is used unchecked (see tests/test_traced_mechanisms.py)
    want = np.asarray(make(1.0).scale)
    for transform, x in [(jax.jit, jnp.ones(())), (jax.vmap, jnp.ones(2))]:
        got = transform(lambda x: jnp.asarray(make(x).scale))(x)
        np.testing.assert_allclose(np.asarray(got), np.broadcast_to(want, x.shape), rtol=1e-6)


def test_traced_analytic_gaussian_calibration_raises_a_clear_error():
    for transform in [jax.jit, jax.vmap]:
        with pytest.raises(ValueError, match="analytic Gaussian calibration .* needs concrete"):
            transform(lambda e: dpjax.GaussianMechanism(epsilon=e, delta=1e-5, sensitivity=1.0).scale)(
                jnp.ones(2)
            )
        with pytest.raises(ValueError, match="analytic Gaussian calibration .* needs concrete"):
            transform(lambda e: dpjax.mechanisms.analytic_gaussian_sigma(e, 1e-5, 1.0))(jnp.ones(2))


def test_max_log_density_shape_mismatch_names_the_shapes():
    mech = dpjax.LaplaceMechanism(epsilon=[1.0, 2.0], sensitivity=1.0)
    with pytest.raises(ValueError, match=r"parameters have shape \(2,\).*release shape \(3,\)"):
        mech.max_log_density((3,))
    assert mech.max_log_density((4, 2)) == pytest.approx(4 * (np.log(1 / 2) + np.log(1 / 1)))


# ------------------------------------------------------------ accuracy: the interval that holds the noise
@pytest.mark.parametrize("scale", [0.3, 1.0, 7.5, 120.0, 2e4])
@pytest.mark.parametrize("alpha", [0.5, 0.05, 1e-6])
def test_accuracy_is_the_smallest_interval_that_holds_the_noise_and_matches_opendp(scale, alpha):
    """Coverage computed directly from each noise law (CDFs, or the pmf summed), the smallest a for
    integer noise (a − 1 falls short), and OpenDP's *_scale_to_accuracy (an open interval: a′ = a for
    continuous noise, a = ⌈a′⌉ − 1 for integer noise)."""
    import math

    oa = pytest.importorskip("opendp.accuracy")
    from dpjax.mechanisms.gaussian import _log_normalizer

    def dg_cover(a):  # P(|K| ≤ a) of the discrete Gaussian, summed over the pmf
        k = np.arange(-a, a + 1, dtype=float)
        return float(np.sum(np.exp(-(k**2) / (2 * scale**2) - _log_normalizer(scale))))

    laplace, gauss = dpjax.LaplaceMechanism(scale=scale), dpjax.GaussianMechanism(sigma=scale)
    dlaplace = dpjax.DiscreteLaplaceMechanism(scale=scale)
    dgauss = dpjax.DiscreteGaussianMechanism(sigma=scale)
    a = laplace.accuracy(alpha)
    assert stats.laplace(scale=scale).cdf(a) - stats.laplace(scale=scale).cdf(-a) == pytest.approx(1 - alpha)
    assert a == pytest.approx(oa.laplacian_scale_to_accuracy(scale, alpha), rel=1e-12)
    a = gauss.accuracy(alpha)
    assert stats.norm(scale=scale).cdf(a) - stats.norm(scale=scale).cdf(-a) == pytest.approx(1 - alpha)
    assert a == pytest.approx(oa.gaussian_scale_to_accuracy(scale, alpha), rel=1e-9)
    a = int(dlaplace.accuracy(alpha))
    dl = stats.dlaplace(1 / scale)
    assert dl.cdf(a) - dl.cdf(-a - 1) >= 1 - alpha and (a == 0 or dl.cdf(a - 1) - dl.cdf(-a) < 1 - alpha)
    assert a == math.ceil(oa.discrete_laplacian_scale_to_accuracy(scale, alpha)) - 1
    a = int(dgauss.accuracy(alpha))
    if scale < 1e3:
        assert dg_cover(a) >= 1 - alpha and (a == 0 or dg_cover(a - 1) < 1 - alpha)
    assert a == math.ceil(oa.discrete_gaussian_scale_to_accuracy(scale, alpha)) - 1


def test_accuracy_is_per_entry_and_validates_alpha():
    m = dpjax.LaplaceMechanism(epsilon=[1.0, 2.0], sensitivity=1.0)
    np.testing.assert_allclose(m.accuracy(0.05), [np.log(20), np.log(20) / 2])
    for bad in (0, 1, -0.1, "0.05", float("nan")):
        with pytest.raises(ValueError, match="`alpha` must be a probability"):
            m.accuracy(bad)
