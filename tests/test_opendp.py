"""dpjax.mechanisms.from_opendp: OpenDP measurements map to the dpjax mechanism of the same noise."""

import math
import sys

import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

dp = pytest.importorskip("opendp.prelude")

import dpjax  # noqa: E402
from dpjax.mechanisms import from_opendp  # noqa: E402

dp.enable_features("contrib", "honest-but-curious")

INT = dp.atom_domain(T=int), dp.absolute_distance(T=int)
FLOAT = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
VEC_INT = dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int)
VEC_FLOAT = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)

# (measurement builder, dpjax class, scale, sensitivity)
CASES = {
    "laplace-int": (lambda: dp.m.make_laplace(*INT, scale=2.0), dpjax.DiscreteLaplaceMechanism, 2.0, 3),
    "laplace-float": (lambda: dp.m.make_laplace(*FLOAT, scale=0.7), dpjax.LaplaceMechanism, 0.7, 0.25),
    "gaussian-int": (lambda: dp.m.make_gaussian(*INT, scale=3.0), dpjax.DiscreteGaussianMechanism, 3.0, 2),
    "gaussian-float": (lambda: dp.m.make_gaussian(*FLOAT, scale=1.3), dpjax.GaussianMechanism, 1.3, 1.5),
    "laplace-vec-int": (
        lambda: dp.m.make_laplace(*VEC_INT, scale=2.5),
        dpjax.DiscreteLaplaceMechanism,
        2.5,
        4,
    ),
    "gaussian-vec-float": (
        lambda: dp.m.make_gaussian(*VEC_FLOAT, scale=2.0),
        dpjax.GaussianMechanism,
        2.0,
        1.0,
    ),
    "geometric": (lambda: dp.m.make_geometric(*INT, scale=1.5), dpjax.DiscreteLaplaceMechanism, 1.5, 1),
    "then-laplace": (lambda: FLOAT >> dp.m.then_laplace(scale=4.0), dpjax.LaplaceMechanism, 4.0, 1.0),
}
if hasattr(dp.m, "make_noise"):  # OpenDP ≥ 0.14
    zcdp = dp.zero_concentrated_divergence()
    CASES["noise-zcdp"] = (
        lambda: dp.m.make_noise(*INT, zcdp, scale=2.0),
        dpjax.DiscreteGaussianMechanism,
        2.0,
        1,
    )


@pytest.mark.parametrize("name", CASES)
def test_class_scale_and_guarantee_match_opendp(name):
    build, cls, scale, sensitivity = CASES[name]
    meas = build()
    mech = from_opendp(meas, sensitivity)
    assert type(mech) is cls and mech.scale == scale
    g = mech.guarantee
    laplace = cls in (dpjax.LaplaceMechanism, dpjax.DiscreteLaplaceMechanism)
    ours, other = (g.epsilon, g.rho) if laplace else (g.rho, g.epsilon)
    assert other is None and g.delta is None
    assert ours == pytest.approx(meas.map(sensitivity), rel=1e-12)
    assert ours == pytest.approx(
        sensitivity / scale if laplace else (sensitivity / scale) ** 2 / 2, rel=1e-12
    )


def test_chain_and_context_query_map_the_noise_of_the_statistic():
    count = dp.t.make_count(dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance())
    mech = from_opendp(count >> dp.m.then_laplace(scale=2.0))
    assert type(mech) is dpjax.DiscreteLaplaceMechanism and mech.scale == 2.0 and mech.epsilon == 0.5
    ctx = dp.Context.compositor(
        data=[1, 2, 3, 4],
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(epsilon=0.5),
        split_evenly_over=1,
    )
    mech = from_opendp(ctx.query().count().laplace())
    assert type(mech) is dpjax.DiscreteLaplaceMechanism and mech.epsilon == pytest.approx(0.5)


def test_a_chain_reports_the_epsilon_of_openDPs_own_map_of_the_whole_chain():
    """The noise of ``sum >> laplace`` is added to a sum of values clamped to [0, 10]: one record moves it
    by 10, so the release is 0.5-DP at scale 20, as OpenDP's map says (840f5ad reported 0.05: it read the
    noise measurement alone, at sensitivity 1). A context query takes its privacy unit from the context."""
    bounded = dp.vector_domain(dp.atom_domain(bounds=(0, 10)))
    chain = dp.t.make_sum(bounded, dp.symmetric_distance()) >> dp.m.then_laplace(scale=20.0)
    mech = from_opendp(chain)
    assert mech.epsilon == pytest.approx(chain.map(1)) and chain.map(1) == pytest.approx(0.5)
    assert mech.sensitivity == 10 and mech.scale == 20.0
    assert from_opendp(chain, 2).epsilon == pytest.approx(chain.map(2)) == pytest.approx(1.0)
    for contributions in (1, 3):
        ctx = dp.Context.compositor(
            data=[1, 2, 3],
            privacy_unit=dp.unit_of(contributions=contributions),
            privacy_loss=dp.loss_of(epsilon=5.0),
            split_evenly_over=1,
            domain=bounded,
        )
        query = ctx.query().sum().laplace(scale=20.0)
        assert from_opendp(query).epsilon == pytest.approx(query.resolve().map(contributions))


K = np.arange(-200, 201)


def _pmf(mech):
    """The dpjax noise pmf on K (integer mechanisms)."""
    return np.exp(np.asarray(mech.noise(jnp.zeros(())).log_prob(jnp.asarray(K, float)), dtype=float))


def _fit_pvalue(residuals, mech):
    """Goodness of fit of the residuals to the dpjax noise law: chi-square (integer) or KS (float)."""
    if isinstance(mech, (dpjax.LaplaceMechanism, dpjax.GaussianMechanism)):
        law = stats.laplace(scale=mech.scale) if isinstance(mech, dpjax.LaplaceMechanism) else None
        law = law or stats.norm(scale=mech.scale)
        return stats.kstest(residuals, law.cdf).pvalue
    n, k, p = len(residuals), K, _pmf(mech)
    keep = n * p >= 5
    observed = [np.sum(residuals == j) for j in k[keep]]
    expected = list(n * p[keep])
    observed.append(n - sum(observed))
    expected.append(n - sum(expected))
    return stats.chisquare(observed, expected).pvalue


@pytest.mark.parametrize("name", ["laplace-int", "laplace-float", "gaussian-int", "gaussian-float"])
def test_opendp_releases_follow_the_dpjax_noise(name):
    build, cls, scale, _ = CASES[name]
    meas, mech = build(), from_opendp(build())
    t = 7 if "int" in name else 7.0
    residuals = np.array([meas(t) for _ in range(4000)], dtype=float) - t
    var = float(mech.noise(jnp.zeros(())).variance) if "float" in name else np.sum(K**2 * _pmf(mech))
    z_mean = residuals.mean() / math.sqrt(var / len(residuals))
    z_var = (residuals.var() - var) / math.sqrt((np.mean(residuals**4) - var**2) / len(residuals))
    assert abs(z_mean) < 5 and abs(z_var) < 5
    assert _fit_pvalue(residuals, mech) > 1e-6
    # the fit test has power: a scale off by √2 (standard deviation vs Laplace scale) is rejected
    for factor in (math.sqrt(2), 1 / math.sqrt(2)):
        wrong = cls(scale=scale * factor) if "laplace" in name else cls(sigma=scale * factor)
        assert _fit_pvalue(residuals, wrong) < 1e-6


def test_vector_release_follows_the_dpjax_noise():
    meas = dp.m.make_laplace(*VEC_INT, scale=2.0)
    residuals = np.array(meas([3] * 4000), dtype=float) - 3
    assert _fit_pvalue(residuals, from_opendp(meas)) > 1e-6


LAP = lambda: dp.m.make_laplace(*INT, scale=2.0)  # noqa: E731
COMPOSE = getattr(dp.c, "make_composition", None) or dp.c.make_basic_composition  # renamed in OpenDP 0.14
REFUSED = {
    "pure-to-zcdp": (lambda: dp.c.make_pureDP_to_zCDP(LAP()), "make_pureDP_to_zCDP.*converts the privacy"),
    "approx-dp": (
        lambda: dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(*INT, scale=2.0)),
        "SmoothedMaxDivergence: it converts the privacy measure",
    ),
    "fix-delta": (
        lambda: dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(*INT, scale=2.0)), 1e-6),
        r"make_fix_delta.*Approximate\(MaxDivergence\)",
    ),
    "approximate": (lambda: dp.c.make_approximate(LAP()), "make_approximate"),
    "composition": (lambda: COMPOSE([LAP(), LAP()]), "composes several releases"),
    "postprocessed": (lambda: LAP() >> (lambda x: x), "post-processes"),
    "bounded-geometric": (lambda: dp.m.make_geometric(*INT, scale=2.0, bounds=(0, 10)), "censors"),
    "coarse-lattice": (lambda: dp.m.make_laplace(*FLOAT, scale=2.0, k=-2), r"lattice of spacing 2\*\*-2"),
    "map-mismatch": (lambda: dp.m.make_laplace(*FLOAT, scale=1e4, k=0), "privacy map gives ε=0.0002"),
    "randomized-response": (lambda: dp.m.make_randomized_response_bool(0.7), "make_randomized_response_bool"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_unsupported_measurements_raise_naming_the_problem(name):
    build, match = REFUSED[name]
    with pytest.raises(ValueError, match=match):
        from_opendp(build())


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="needs an OpenDP Measurement"):
        from_opendp(dpjax.LaplaceMechanism(scale=1.0))
    with pytest.raises(ValueError, match="integer"):
        from_opendp(LAP(), sensitivity=1.5)
    with pytest.raises(ValueError, match="scalar"):
        from_opendp(LAP(), sensitivity=[1, 2])


def test_missing_opendp_raises_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "opendp.context", None)
    with pytest.raises(ImportError, match=r'pip install "dpjax\[opendp\]"'):
        from_opendp(LAP())
