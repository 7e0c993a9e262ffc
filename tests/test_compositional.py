"""Compositional seed (Guo, Barrientos & Peña): censored statistic, DPss, MLE, DPBoots, diagnostics."""

import functools
import itertools
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.special import digamma
from scipy import stats

from dpjax.compositional import (
    SCORE_SENSITIVITY,
    censored_mean_log,
    dirichlet_fisher_information,
    dirichlet_mle,
    dpss,
    geometric_quantile,
    in_range,
    load_atus,
    mean_log,
    release_score,
    score,
    select_threshold,
    sensitivity,
)
from dpjax.compositional.diagnostics import censored_moments, censoring_diagnostics, plot_censoring
from dpjax.compositional.dpboots import dpboots, truncated_laplace_statistic

ALPHA = np.array([2.2, 3.3, 4.4])
THRESHOLDS = [0.1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6]  # the seed's candidates (§4.1)
ATUS_MALE = "/work/shared/data/atus/male.csv"


def expected_log(alpha):
    alpha = jnp.asarray(alpha, dtype=jnp.float32)
    return digamma(alpha) - digamma(alpha.sum())


# --- Dirichlet MLE -------------------------------------------------------------------------------


def test_mle_recovers_alpha_at_large_n_within_its_asymptotic_sd():
    """n = 20000 rows: the MLE's error must be of the size of its asymptotic sd, sqrt(diag(I⁻¹)/n)
    (≈ 0.03–0.06 here), judged by the Mahalanobis distance (χ²₃ under the asymptotics; the bound
    is its 0.9999 quantile) and per part (|z| < 4)."""
    n = 20_000
    x = np.random.default_rng(0).dirichlet(ALPHA, size=n).astype(np.float32)
    fit = dirichlet_mle(mean_log(x))
    assert bool(fit.converged)
    err = np.asarray(fit.alpha, float) - ALPHA
    info = np.asarray(dirichlet_fisher_information(ALPHA), float)
    sd = np.sqrt(np.diag(np.linalg.inv(info)) / n)
    assert np.all(np.abs(err / sd) < 4), err / sd
    assert n * err @ info @ err < stats.chi2(3).ppf(0.9999)
    assert np.all(sd < 0.07)  # the tolerance above is tight: an error of 0.1 in any part would fail


@pytest.mark.parametrize(
    "alpha", [(0.5, 0.5, 0.5), (2.2, 3.3, 4.4), (2.0, 20.0, 2.0), (2.2, 3.3, 4.4, 5.5, 6.6), (0.05, 0.1)]
)
def test_mle_solves_the_likelihood_equations(alpha):
    """At s = E[log x] = ψ(α) − ψ(α₀) the unique root of the score equations is α itself."""
    fit = dirichlet_mle(expected_log(alpha))
    assert bool(fit.converged) and float(fit.grad_norm) < 1e-5
    np.testing.assert_allclose(np.asarray(fit.alpha), alpha, rtol=2e-4)


def test_mle_batched_jitted_and_outside_range():
    s = jnp.stack([expected_log(ALPHA), expected_log((1.0, 2.0, 3.0))])
    fit = jax.jit(dirichlet_mle)(s)
    np.testing.assert_allclose(np.asarray(fit.alpha), [ALPHA, (1.0, 2.0, 3.0)], rtol=2e-4)
    outside = jnp.array([-0.5, -0.5, -3.0])  # Σ exp(s) = 1.26
    with pytest.raises(ValueError, match=r"outside the interior of Range\(S₀\).*1\.26"):
        dirichlet_mle(outside)
    with pytest.raises(ValueError, match="finite"):
        dirichlet_mle(jnp.array([-1.0, jnp.nan]))
    traced = jax.jit(dirichlet_mle)(outside)  # no host check under jit: NaN, not a wrong number
    assert np.all(np.isnan(np.asarray(traced.alpha))) and not bool(traced.converged)


# --- sensitivities, by brute force over neighbouring data sets -----------------------------------


def _candidate_rows(d, rng):
    """Rows to swap in: vertices (zeros: censored), centroids of every face (the extremal rows of
    S₀'s sensitivity), and random points, some near the boundary."""
    rows = []
    for k in range(1, d + 1):
        for face in itertools.combinations(range(d), k):
            r = np.zeros(d)
            r[list(face)] = 1.0 / k
            rows.append(r)
    rows += list(rng.dirichlet(np.full(d, 0.2), size=20)) + list(rng.dirichlet(np.full(d, 2.0), size=10))
    return np.asarray(rows)


def _neighbour_pairs(d, n, num_sets, rng):
    """(D, D') pairs differing in one row (the seed's bounded-DP neighbours, §2.1)."""
    cands = _candidate_rows(d, rng)
    base, nbr = [], []
    for m in range(num_sets):  # the first two sets hold the vertices and faces, and random rows
        data = cands[:n] if m == 0 else cands[-n:] if m == 1 else cands[rng.integers(len(cands), size=n)]
        for i in range(n):
            for row in cands:
                other = data.copy()
                other[i] = row
                base.append(data)
                nbr.append(other)
    return np.asarray(base, np.float32), np.asarray(nbr, np.float32)


@pytest.mark.parametrize("d", [2, 3, 4])
def test_statistic_sensitivity_is_bounded_and_nearly_attained(d):
    n, a = 5, 1e-4
    rng = np.random.default_rng(d)
    base, nbr = _neighbour_pairs(d, n, num_sets=4, rng=rng)
    stat = jax.vmap(lambda x: censored_mean_log(x, a))
    change = np.abs(np.asarray(stat(base), float) - np.asarray(stat(nbr), float)).sum(-1).max()
    bound = sensitivity(a, d, n)
    assert bound == pytest.approx(-d * np.log(a) / n)
    assert change <= bound * (1 + 1e-5)
    k = d // 2  # rows spread over complementary halves of the parts: the largest change we know
    attained = (-d * np.log(a) - k * np.log(k) - (d - k) * np.log(d - k)) / n
    assert change >= attained * (1 - 1e-5)
    assert attained / bound > 0.9  # so the stated sensitivity is not loose (the seed's 2x bound is)


def test_score_sensitivity_is_two_and_attained():
    rng = np.random.default_rng(7)
    thresholds = [0.2, 0.05, 0.01, 1e-3]
    base, nbr = _neighbour_pairs(3, 6, num_sets=4, rng=rng)
    sc = jax.vmap(lambda x: score(x, thresholds))
    change = np.abs(np.asarray(sc(base)) - np.asarray(sc(nbr))).sum(-1)
    assert change.max() == SCORE_SENSITIVITY == 2
    s = np.asarray(sc(base))
    assert np.all(s >= 0) and np.all(s.sum(-1) <= 6)


def test_score_counts_rows_uncensored_per_threshold():
    x = np.array(
        [[0.5, 0.3, 0.2], [0.05, 0.5, 0.45], [0.02, 0.0, 0.98], [0.001, 0.5, 0.499], [0.3, 0.3, 0.4]]
    )
    # row minima 0.2, 0.05, 0.0, 0.001, 0.3 → u = (2, 3, 3, 4) for a = (0.1, 0.01, 0.005, 0.001)
    assert score(x, [0.1, 0.01, 0.005, 0.001]).tolist() == [2, 1, 0, 1]


# --- threshold selection (Algorithm 1) -----------------------------------------------------------


# 2 000 and 7.5·10⁹ (the seed's ε = 10¹⁰ split 0.75ε): t = exp(−ε₂/2) underflows to 0 there
@pytest.mark.parametrize("epsilon2", [0.1, 0.375, 1.0, 3.0, 10.0, 2000.0, 7.5e9])
def test_geometric_quantile_is_the_two_sided_geometric_2_5_percent_point(epsilon2):
    k = geometric_quantile(epsilon2)
    law = stats.dlaplace(epsilon2 / 2)  # TwoSidedGeometric(exp(−ε₂/2))
    with np.errstate(over="ignore"):  # scipy's exp(a) overflows at large a; its cdf stays right
        assert law.cdf(-k) <= 0.025 < law.cdf(-k + 1)
    assert int(jax.jit(geometric_quantile)(epsilon2)) == k


def test_select_threshold_follows_the_printed_rule():
    thr, n, eps2 = [0.1, 0.01, 0.001, 1e-4], 1000, 2.0
    k = geometric_quantile(eps2)  # 4 for ε₂ = 2
    assert k == 4
    pick = functools.partial(select_threshold, thresholds=thr, n=n, epsilon2=eps2)
    assert int(pick(jnp.array([990 - k, 5, 3, 2]))) == 0  # s_G,1 + k ≥ 0.99n → a₁
    assert int(pick(jnp.array([989 - k, 5, 3, 2]))) == 3  # no sₘ plausibly ≥ 0.01n → a_M
    assert int(pick(jnp.array([500, 2, 10 - k, 300]))) == 2  # largest aₘ (m ≥ 2) in 𝒜
    assert int(pick(jnp.array([500, 200, 300, 0]))) == 1
    batched = pick(jnp.array([[990, 0, 0, 0], [500, 0, 0, 400]]))
    assert batched.tolist() == [0, 3]


# --- DPss (Algorithm 1) --------------------------------------------------------------------------


def _data(n=400, alpha=ALPHA, seed=3):
    return jnp.asarray(np.random.default_rng(seed).dirichlet(alpha, size=n), jnp.float32)


def test_dpss_release_fields_and_same_key_same_result():
    x = _data()
    key = jax.random.key(11)
    rel = dpss(key, x, THRESHOLDS, 0.5, 1.5)
    again = dpss(key, x, THRESHOLDS, 0.5, 1.5)
    for u, v in zip(rel, again):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
    assert rel.statistic.shape == (3,) and rel.sizes == (400,) and rel.epsilon == 2.0
    a = float(rel.threshold)
    assert a == pytest.approx(THRESHOLDS[int(rel.threshold_index)], rel=1e-6)
    assert float(rel.laplace_scale) == pytest.approx(-3 * np.log(a) / (400 * 0.5), rel=1e-5)
    assert rel.score.dtype == jnp.int32 and rel.score.shape == (6,)
    other = dpss(jax.random.key(12), x, THRESHOLDS, 0.5, 1.5)
    assert not np.array_equal(np.asarray(other.statistic), np.asarray(rel.statistic))

    split = dpss(key, x, THRESHOLDS, 0.5, 1.5, n1=100)
    assert split.statistic.shape == (2, 3) and split.sizes == (100, 300)
    a = float(split.threshold)
    np.testing.assert_allclose(
        np.asarray(split.laplace_scale), -3 * np.log(a) / (np.array([100, 300]) * 0.5), rtol=1e-5
    )

    jitted = jax.jit(dpss, static_argnames=("thresholds", "n1", "exact_score"))(
        key, x, tuple(THRESHOLDS), 0.5, 1.5
    )
    np.testing.assert_allclose(np.asarray(jitted.statistic), np.asarray(rel.statistic), rtol=1e-5)

    exact = dpss(key, x, THRESHOLDS, 0.5, 1.5, exact_score=True)
    exact2 = dpss(key, x, THRESHOLDS, 0.5, 1.5, exact_score=True)
    np.testing.assert_array_equal(np.asarray(exact.score), np.asarray(exact2.score))


def test_dpss_noise_scale_per_part_and_threshold_choice():
    """Over many keys the released statistic minus S₀(D_l, a) has mean absolute value equal to the
    Laplace scale −d log(a)/(n_l ε₁) of each part (z-test; sd of |L| equals the scale)."""
    x = _data(n=400)
    thr = [0.01]  # one candidate: a = 0.01 whatever the score
    keys = jax.random.split(jax.random.key(5), 4000)
    rel = jax.vmap(lambda k: dpss(k, x, thr, 1.0, 2.0, n1=100))(keys)
    a = thr[0]
    assert np.allclose(np.asarray(rel.threshold), a)
    # the split is random, but n₁ S₀(D₁, a) + n₂ S₀(D₂, a) = n S₀(D, a): check the noise through it
    total = 100 * rel.statistic[:, 0] + 300 * rel.statistic[:, 1]
    noise = np.asarray(total - 400 * censored_mean_log(x, a), float)  # = 100 L₁ + 300 L₂
    b = -3 * np.log(a) / (np.array([100, 300]) * 1.0)  # each part's own n_l (with n = 400 for both,
    var = 2 * (100 * b[0]) ** 2 + 2 * (300 * b[1]) ** 2  # as Algorithm 1 prints, var would be 3.2x smaller)
    assert noise.var() == pytest.approx(var, rel=0.15)  # 4000 draws: sd of the sample variance ≈ 3%
    assert abs(noise.mean()) < 4 * np.sqrt(var / 4000)


def test_release_score_is_exact_integer_noise():
    x = _data(n=200)
    counts = np.asarray(score(x, THRESHOLDS))
    draws = np.stack([release_score(jax.random.key(i), x, THRESHOLDS, 1.0) for i in range(300)])
    assert draws.dtype == np.int64
    noise = (draws - counts).ravel()
    t = np.exp(-0.5)
    assert noise.var() == pytest.approx(2 * t / (1 - t) ** 2, rel=0.2)  # 1800 draws: sd of var ≈ 6%
    assert release_score(None, x, THRESHOLDS, 1.0).shape == (6,)  # CSPRNG path


# --- the truncated-Laplace step and DPBoots (Algorithm 2) ----------------------------------------


_many_truncated = jax.jit(jax.vmap(truncated_laplace_statistic, in_axes=(0, None, None)))


@pytest.mark.parametrize(
    "s_L,scale",
    [([-1.2, -1.0, -0.8], 0.3), ([0.2, -1.0, -0.5], 0.5), ([-0.3, -0.3, -0.3], 0.5), ([0.5, 0.5, 0.5], 2.0)],
)
def test_truncated_laplace_never_leaves_range(s_L, scale):
    keys = jax.random.split(jax.random.key(1), 5000)
    draw = _many_truncated(keys, jnp.asarray(s_L), scale)
    assert bool(jnp.all(draw.accepted))
    v = np.asarray(draw.value, float)
    assert np.all(v < 0) and np.all(np.exp(v).sum(-1) < 1)  # in float64
    assert bool(jnp.all(in_range(draw.value)))


@pytest.mark.parametrize(
    "s_L,b",
    # the second: a release of the §4.1 study (α₄, n₁ = 250, ε₁ = 0.0625) that plain rejection accepted
    # once in 900 candidates, so 10 of DPBoots' 1 000 draws gave up after 4 096
    [([0.1, -1.0, -0.7], 0.5), ([0.69, 2.22, -0.62], 0.8842)],
)
def test_truncated_laplace_has_the_truncated_law(s_L, b):
    """Against a plain NumPy rejection sampler of S_L − Laplace(0, b)ᵈ restricted to Range(S₀)."""
    s_L, rng, ref = np.array(s_L), np.random.default_rng(0), []
    while sum(map(len, ref)) < 4000:
        cand = s_L - rng.laplace(0, b, size=(1_000_000, 3))
        ref.append(cand[np.all(cand < 0, 1) & (np.exp(cand).sum(1) < 1)])
    ref = np.concatenate(ref)[:4000]
    keys = jax.random.split(jax.random.key(2), 4000)
    draw = _many_truncated(keys, jnp.asarray(s_L), b)
    assert bool(jnp.all(draw.accepted)) and int(jnp.max(draw.tries)) < 4096
    ours = np.asarray(draw.value)
    for j in range(3):
        assert stats.ks_2samp(ours[:, j], ref[:, j]).pvalue > 1e-3


def test_truncated_laplace_gives_up_with_nan_not_an_out_of_range_value():
    far = jnp.array([3.0, 3.0, 3.0])
    draw = truncated_laplace_statistic(jax.random.key(0), far, 0.01, max_tries=256)
    assert not bool(draw.accepted) and np.all(np.isnan(np.asarray(draw.value))) and int(draw.tries) == 256
    with pytest.raises(ValueError, match="too far outside the range"):  # same shapes as below: no recompile
        dpboots(jax.random.key(0), far, 1e-3, 500, 1e4, num_boot=256)


@pytest.mark.parametrize("n", [1, 2])
def test_dpboots_at_a_tiny_n_refuses_an_interval_of_failed_draws(n):
    """n = 1 or 2 rows: most bootstrap data sets have no MLE. 840f5ad returned lower = upper = inf
    (n = 1, 144 of 150 draw entries NaN) or an interval of the draws left (n = 2), without a word."""
    with pytest.raises(ValueError, match=f"bootstrap draws failed .* n = {n}.*gives none"):
        dpboots(jax.random.key(0), jnp.array([-1.3, -1.1, -0.95]), 0.01, n, 0.5, num_boot=50)


def test_dpboots_draws_interval_and_reproducibility():
    n, a, eps1 = 500, 1e-3, 1.0
    x = _data(n=n, seed=9)
    s_L = censored_mean_log(x, a) + jax.random.laplace(jax.random.key(1), (3,)) * (
        -3 * np.log(a) / (n * eps1)
    )
    res = dpboots(jax.random.key(4), s_L, a, n, eps1, num_boot=256)
    again = dpboots(jax.random.key(4), s_L, a, n, eps1, num_boot=256)
    np.testing.assert_array_equal(np.asarray(res.draws), np.asarray(again.draws))
    assert res.draws.shape == (256, 3) and bool(jnp.all(res.converged)) and bool(jnp.all(res.accepted))
    assert bool(jnp.all(in_range(res.statistic_draws)))
    lo, hi = np.asarray(res.lower), np.asarray(res.upper)
    assert np.all(lo < ALPHA) and np.all(ALPHA < hi)
    np.testing.assert_allclose(lo, np.quantile(np.asarray(res.draws), 0.025, axis=0), rtol=1e-5)
    # with (almost) no noise, DPBoots is the plain parametric bootstrap: the draws spread like the
    # MLE from n rows, sqrt(diag(I⁻¹)/n) (≈ 0.6–1.3 here; 20% allows for B = 256 and α* ≠ α)
    quiet = dpboots(jax.random.key(5), censored_mean_log(x, a), a, n, 1e6, num_boot=256)
    sd = np.sqrt(np.diag(np.linalg.inv(np.asarray(dirichlet_fisher_information(ALPHA), float))) / n)
    np.testing.assert_allclose(np.asarray(quiet.draws).std(0), sd, rtol=0.2)
    assert np.all(np.asarray(res.draws).std(0) > 1.5 * sd)  # the Laplace noise widens them


def test_nonprivate_bootstrap_is_finite_where_parts_underflow():
    """At α = 0.02 a float32 Dirichlet part is often exactly 0 (P(X < 10⁻³⁸) ≈ 0.4 per Gamma draw): the
    study's Boots works on the log scale, so every draw stays finite and near α (log 0 made them NaN)."""
    from dpjax.reproduce.compositional import bootstrap

    alpha = jnp.full(3, 0.02)
    s0 = digamma(alpha) - digamma(alpha.sum())
    draws = np.asarray(bootstrap(jax.random.key(0), s0, 200, 20)).reshape(-1, 3)
    assert np.all(np.isfinite(draws)) and np.all(np.abs(np.median(draws, 0) - 0.02) < 0.005), draws


def test_study_warns_where_float32_cannot_resolve_the_release_noise():
    """At ε = 10¹⁰ the Laplace scale (5.5·10⁻¹² at n = 1 000, a = 0.01) is far below float32's spacing
    at S_L (1.2·10⁻⁷): dp_mcmc raises there, and the study's traced chains must at least warn. At the
    study's other ε, and in float64, it stays silent."""
    import warnings

    from dpjax.reproduce.compositional import NO_PRIVACY, _warn_if_round_off_decides

    s_l = np.float32([-1.8, -1.8, -1.8])
    a = np.array([0.01, 0.001])
    with pytest.warns(UserWarning, match="round-off decides"):
        _warn_if_round_off_decides(s_l, a, 1000, 0.25 * NO_PRIVACY)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _warn_if_round_off_decides(s_l, a, 5000, 0.25 * 1.5)
        _warn_if_round_off_decides(s_l.astype(np.float64), a, 1000, 0.25 * NO_PRIVACY)


@pytest.mark.slow
def test_dpboots_percentile_intervals_cover_near_nominal():
    """R = 200 simulated releases (n = 500, ε₁ = 1, a = 1e-3, α = (2.2, 3.3, 4.4)); coverage of the
    95% percentile interval per part must be within 3 binomial sds (0.015 each) of 0.95."""
    n, a, eps1, reps = 500, 1e-3, 1.0, 200
    scale = -3 * np.log(a) / (n * eps1)

    def one(key):
        k1, k2, k3 = jax.random.split(key, 3)
        x = jax.random.dirichlet(k1, jnp.asarray(ALPHA, jnp.float32), (n,))
        s_L = censored_mean_log(x, a) + scale * jax.random.laplace(k2, (3,))
        res = dpboots(k3, s_L, a, n, eps1, num_boot=300, batch_size=100)
        return res.lower, res.upper

    run = jax.jit(jax.vmap(one))
    out = [run(jax.random.split(jax.random.key(100 + c), 20)) for c in range(reps // 20)]
    lo = np.concatenate([np.asarray(o[0]) for o in out])
    hi = np.concatenate([np.asarray(o[1]) for o in out])
    coverage = ((lo < ALPHA) & (ALPHA < hi)).mean(0)
    assert np.all(np.abs(coverage - 0.95) <= 3 * np.sqrt(0.95 * 0.05 / reps)), coverage


# --- censoring diagnostics (§3.1.1) --------------------------------------------------------------


def _bias_integrand(t, a, p, q):
    return (np.log(a) - np.log(t)) * stats.beta.pdf(t, p, q)


@pytest.mark.parametrize("alpha", [(0.5, 0.5, 0.5), (2.2, 3.3, 4.4), (2.0, 20.0, 2.0)])
def test_censoring_diagnostics_match_quadrature_and_simulation(alpha):
    from scipy import integrate

    al = np.asarray(alpha)
    beta = al.sum() - al
    a_grid = np.array([1e-4, 1e-2, 0.1])
    diag = censoring_diagnostics(alpha, a_grid)
    for i, a in enumerate(a_grid):
        for j in range(3):
            integrand = functools.partial(_bias_integrand, a=a, p=al[j], q=beta[j])
            ref = integrate.quad(integrand, 0, a)[0]
            assert float(diag.bias[i, j]) == pytest.approx(ref, rel=1e-4, abs=1e-30)
            assert float(diag.censored_prob[i, j]) == pytest.approx(
                stats.beta.cdf(a, al[j], beta[j]), rel=1e-4
            )
    np.testing.assert_allclose(np.asarray(diag.expected_log[0]), np.asarray(expected_log(alpha)), rtol=1e-6)
    # Monte Carlo: E[S₀(D, a)] at a = 0.1
    x = np.random.default_rng(1).dirichlet(al, size=200_000)
    logs = np.log(np.maximum(x, 0.1))
    z = (logs.mean(0) - np.asarray(diag.expected_censored_log[2])) / (logs.std(0) / np.sqrt(len(x)))
    assert np.all(np.abs(z) < 4), z
    frac = (x < 0.1).mean()
    assert abs(frac - float(diag.censored_fraction[2])) < 4 * np.sqrt(0.25 / x.size) + 1e-12


@pytest.mark.parametrize(
    "alpha, a",
    [((0.5, 0.5, 0.5), 0.01), ((2.0, 20.0, 2.0), 0.01), ((0.3, 0.8), 0.2), ((0.4, 0.6, 0.9, 1.5, 3.0), 0.05)],
)
def test_censored_moments_match_simulation(alpha, a):
    """Mean and covariance of log max(x, a) under Dirichlet(α) against 400 000 draws: every entry
    within 4 Monte Carlo s.e. (the mean's and each covariance entry's own), where censoring is heavy
    (α = (0.5, 0.5, 0.5), a = 0.01: 10 % of each part; the uncensored law is 0.20 off in each mean) and
    with d = 2 (no two parts can be below a) and d = 5. Differentiable in α, and n divides the
    covariance."""
    mean, cov = (np.asarray(v, float) for v in censored_moments(alpha, a))
    x = np.random.default_rng(3).dirichlet(alpha, size=400_000)
    logs = np.log(np.maximum(x, a))
    centred = logs - logs.mean(0)
    z = (logs.mean(0) - mean) / (logs.std(0) / np.sqrt(len(x)))
    assert np.all(np.abs(z) < 4), z
    products = centred[:, :, None] * centred[:, None, :]
    z_cov = (products.mean(0) - cov) / (products.std(0) / np.sqrt(len(x)))
    assert np.all(np.abs(z_cov) < 4), z_cov
    np.testing.assert_allclose(np.asarray(censored_moments(alpha, a, n=50)[1]), cov / 50, rtol=1e-6)
    grad = jax.grad(lambda al: jnp.sum(censored_moments(al, a)[1]) + jnp.sum(censored_moments(al, a)[0]))
    assert np.all(np.isfinite(np.asarray(grad(jnp.asarray(alpha, jnp.float32)))))


def test_plot_censoring_returns_a_figure():
    from matplotlib.figure import Figure

    fig = plot_censoring(alphas=[(0.5, 0.5, 0.5), (2.2, 3.3, 4.4)], a_grid=np.logspace(-5, -1, 10))
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert all(len(ax.lines) == 2 for ax in fig.axes)
    fractions = fig.axes[0].lines[0].get_ydata()
    assert np.all(np.diff(fractions) > 0)  # increasing in a


# --- input validation ----------------------------------------------------------------------------

X3 = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: censored_mean_log(X3, 0.0), r"`a` must satisfy 0 < a < 1/d"),
        (lambda: censored_mean_log(X3, -0.1), r"`a` must satisfy 0 < a < 1/d"),
        (lambda: censored_mean_log(X3, 1 / 3), r"`a` must satisfy 0 < a < 1/d = 0.333333 for d = 3"),
        (lambda: censored_mean_log(X3, float("nan")), r"`a` must satisfy"),
        (
            lambda: censored_mean_log(X3 * 1.1, 0.01),
            r"rows must sum to one \(compositions; tolerance 1e-05\); some rows do not",
        ),
        (lambda: censored_mean_log(-X3, 0.01), r"entries must be ≥ 0"),
        (lambda: censored_mean_log(np.ones((4, 1)), 0.01), r"d ≥ 2 parts.*d = 1"),
        (lambda: censored_mean_log(np.ones(3) / 3, 0.01), r"\(n, d\) array"),
        (lambda: mean_log(np.array([[0.0, 1.0]])), r"entries must be > 0"),
        (lambda: sensitivity(0.5, 3, 10), r"0 < a < 1/d"),
        (lambda: sensitivity(0.01, 3, 0), r"`n` must be a positive integer, got 0"),
        (lambda: dpss(jax.random.key(0), X3, [0.1, 0.01], 0.0, 1.0), r"`epsilon1` must be positive"),
        (lambda: dpss(jax.random.key(0), X3, [0.1, 0.01], 1.0, -1.0), r"`epsilon2` must be positive"),
        (lambda: dpss(jax.random.key(0), X3, [0.01, 0.1], 1.0, 1.0), r"strictly decreasing"),
        (lambda: dpss(jax.random.key(0), X3, [0.4, 0.1], 1.0, 1.0), r"thresholds\[0\]"),
        (
            lambda: dpss(jax.random.key(0), X3, [0.1], 1.0, 1.0, n1=2),
            r"`n1` must be an int with 0 ≤ n1 < n = 2",
        ),
        (lambda: dpss(0, X3, [0.1], 1.0, 1.0), r"`rng_key` must be a JAX PRNG key"),
        (lambda: release_score(None, X3, [0.1], 0.0), r"`epsilon` must be positive"),
        (lambda: dpboots(jax.random.key(0), jnp.array([-1.0, -1.0]), 0.01, 100, 0.0), r"`epsilon1` must be"),
        (lambda: dpboots(jax.random.key(0), jnp.array([-1.0, -1.0]), 0.6, 100, 1.0), r"0 < a < 1/d"),
        (lambda: dpboots(jax.random.key(0), jnp.array([-1.0, -1.0]), 0.01, 100, 1.0, level=1.0), r"`level`"),
        (lambda: censoring_diagnostics([1.0], 0.01), r"`alpha` must be .* d ≥ 2"),
        (lambda: censoring_diagnostics([1.0, -1.0], 0.01), r"`alpha` must be"),
        (lambda: censoring_diagnostics([1.0, 1.0], 1.0), r"0 < a < 1"),
        (lambda: censored_moments([1.0, 1.0, 1.0], 0.4), r"0 < a < 1/d"),
        (lambda: censored_moments([1.0, 0.0], 0.1), r"`alpha` must be"),
    ],
)
def test_bad_inputs_raise_clear_value_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- ATUS loader ---------------------------------------------------------------------------------


@pytest.mark.skipif(not os.path.exists(ATUS_MALE), reason="ATUS data not available")
def test_load_atus_reads_compositions():
    x = load_atus(ATUS_MALE)
    assert x.shape == (3128, 3) and x.dtype == np.float64
    np.testing.assert_allclose(x.sum(1), 1.0, atol=1e-9)
    assert x.min() >= 1 / 1440 - 1e-12
    fit = dirichlet_mle(mean_log(x))  # the data are in Range(S₀): the MLE exists
    assert bool(fit.converged) and np.all(np.asarray(fit.alpha) > 0)


def test_load_atus_rejects_malformed_files(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text('"PERSONAL.CARE","EATING.AND.DRINKING","OTHER"\n1,0.5,0.2,0.2\n')
    with pytest.raises(ValueError, match="sum to one"):
        load_atus(bad)
    short = tmp_path / "short.csv"
    short.write_text("a,b,c\n1,0.5,0.5\n")
    with pytest.raises(ValueError, match="line 2: expected 4 fields"):
        load_atus(short)
