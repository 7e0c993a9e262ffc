"""dpjax.infer.samplers: the whole-array-round samplers have exactly the Gamma, Dirichlet, Beta and
Poisson laws (KS and χ² tests against scipy, moment z-tests), including the redraw rounds and the
fallback to jax.random.poisson; the uniform and normal draws come from jax's own threefry words; the
handler swaps sites without changing their log densities."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro import handlers
from scipy import special, stats

from dpjax.infer import samplers

N = 200_000
P_MIN = 1e-4  # the KS/χ² p-value below which a law is rejected (several tests, fixed seeds)


@pytest.mark.parametrize("a", [0.05, 0.5, 1.0, 2.5, 40.0])
def test_gamma_law(a):
    # on the log scale (a float32 Gamma(0.05) draw underflows to 0 with probability 1 %)
    lx = np.asarray(samplers.log_gamma(jax.random.key(1), a, (N,)), np.float64)
    assert stats.kstest(lx, lambda y: stats.gamma(a).cdf(np.exp(y))).pvalue > P_MIN
    x = np.asarray(samplers.gamma(jax.random.key(1), a, (N,)), np.float64)
    np.testing.assert_allclose(x, np.exp(lx), rtol=1e-5, atol=1e-37)
    z = (x.mean() - a) / np.sqrt(a / N)
    assert abs(z) < 4


def test_gamma_broadcasts_concentrations_and_scales():
    a = jnp.array([0.3, 3.0, 30.0])
    x = np.asarray(samplers.gamma(jax.random.key(2), a, (N // 4, 3)), np.float64)
    for j, aj in enumerate(np.asarray(a)):
        assert stats.kstest(x[:, j], stats.gamma(float(aj)).cdf).pvalue > P_MIN


def test_log_gamma_tiny_concentration_has_the_exact_log_mean():
    # E log X = ψ(a), Var log X = ψ'(a); X itself underflows float32 at a = 0.01
    a = 0.01
    lx = np.asarray(samplers.log_gamma(jax.random.key(3), a, (N,)), np.float64)
    assert np.all(np.isfinite(lx))
    z = (lx.mean() - special.digamma(a)) / np.sqrt(special.polygamma(1, a) / N)
    assert abs(z) < 4


def test_redraw_rounds_keep_the_first_accepted_candidate():
    # a draw that accepts 30 %: round 0 leaves ~70 % (more than the buffer), so several gathered rounds
    # run; accepted values u / 0.3 of u < 0.3 are uniform on [0, 1)
    def draw(key, idx, tries):
        size = (1000,) if idx is None else (tries, idx.size)
        u = jax.random.uniform(key, size)
        return u < 0.3, u / 0.3

    ok, v = draw(jax.random.key(4), None, 1)
    out = np.asarray(samplers._redraw(jax.random.key(5), ok, v, draw))
    assert stats.kstest(out, "uniform").pvalue > P_MIN
    assert out.min() >= 0 and out.max() < 1


def poisson_chi2_pvalue(k, rate):
    """χ² goodness of fit of counts ``k`` to Poisson(rate), cells with < 5 expected pooled."""
    support = np.arange(int(rate + 8 * np.sqrt(rate) + 10))
    pmf = stats.poisson(rate).pmf(support)
    keep = pmf * k.size > 5
    observed = np.bincount(k, minlength=support.size)[: support.size][keep]
    observed = np.r_[observed, k.size - observed.sum()]
    expected = np.r_[pmf[keep], 1 - pmf[keep].sum()] * k.size
    return stats.chisquare(observed, expected).pvalue


@pytest.mark.parametrize("rate", [0.05, 2.0, 9.9, 10.0, 60.0])
def test_poisson_law(rate):
    k = np.asarray(samplers.poisson(jax.random.key(6), rate, (N,)))
    assert k.dtype == np.int32 and k.min() >= 0
    assert poisson_chi2_pvalue(k, rate) > P_MIN


def test_poisson_mixed_rates_use_both_paths():
    # rates below and above 10 in one array (inversion and the gathered jax.random.poisson), and 0
    rate = jnp.tile(jnp.array([0.0, 1.5, 25.0, 400.0]), N // 8)
    k = np.asarray(samplers.poisson(jax.random.key(7), rate)).reshape(-1, 4)
    assert np.all(k[:, 0] == 0)
    for j, r in enumerate([1.5, 25.0, 400.0], start=1):
        assert poisson_chi2_pvalue(k[:, j], r) > P_MIN, r


def test_poisson_matches_gamma_poisson_mixture():
    # the exact-ABC example: s ~ Pois(θ), θ ~ Gamma(2, 1) is negative binomial (r = 2, p = 1/2)
    key = jax.random.key(8)
    theta = samplers.gamma(jax.random.fold_in(key, 0), 2.0, (N,))
    s = np.asarray(samplers.poisson(jax.random.fold_in(key, 1), theta))
    # the tail pooled from 17 on, where each bin's expected count falls below 5 (the chi-square
    # approximation: a bin expecting 0.08 draws makes 2 of them a p-value of 6·10⁻⁶)
    support = np.arange(17)
    pmf = stats.nbinom(2, 0.5).pmf(support)
    observed = np.r_[np.bincount(s, minlength=17)[:17], (s >= 17).sum()]
    expected = np.r_[pmf, 1 - pmf.sum()] * N
    assert stats.chisquare(observed, expected).pvalue > P_MIN


def test_dirichlet_and_beta_moments():
    alpha = np.array([0.2, 1.0, 4.0])
    x = np.asarray(samplers.dirichlet(jax.random.key(9), jnp.asarray(alpha), (N,)), np.float64)
    assert x.shape == (N, 3) and np.allclose(x.sum(1), 1, atol=1e-5)
    a0 = alpha.sum()
    mean, var = alpha / a0, alpha * (a0 - alpha) / (a0**2 * (a0 + 1))
    z = (x.mean(0) - mean) / np.sqrt(var / N)
    assert np.all(np.abs(z) < 4), z
    b = np.asarray(samplers._Beta(2.0, 5.0).sample(jax.random.key(10), (N,)), np.float64)
    assert stats.kstest(b, stats.beta(2, 5).cdf).pvalue > P_MIN


def test_same_key_same_draws_and_shapes():
    key = jax.random.key(11)
    a = samplers.gamma(key, jnp.array([1.0, 2.0]), (5, 2))
    assert a.shape == (5, 2)
    assert np.array_equal(a, samplers.gamma(key, jnp.array([1.0, 2.0]), (5, 2)))
    assert samplers.poisson(key, 3.0, (0,)).shape == (0,)
    assert samplers.gamma(key, 1.0, ()).shape == ()


def test_vmapped_draws_are_each_keys_draws():
    keys = jax.random.split(jax.random.key(12), 3)
    batched = jax.vmap(lambda k: samplers.poisson(k, samplers.gamma(k, 2.0, (50,))))(keys)
    for i in range(3):
        one = samplers.poisson(keys[i], samplers.gamma(keys[i], 2.0, (50,)))
        assert np.array_equal(batched[i], one)


def test_fast_sampling_swaps_sites_and_keeps_log_densities():
    def model():
        a = numpyro.sample("a", dist.Gamma(2.0, 3.0))
        with numpyro.plate("rows", 4):
            numpyro.sample("x", dist.Dirichlet(jnp.ones(3) * a))
            numpyro.sample("b", dist.Beta(a, 2.0))
            numpyro.sample("k", dist.Poisson(a))
        numpyro.sample("y", dist.Normal(0.0, 1.0))

    tr = handlers.trace(handlers.seed(samplers.fast_sampling(model), 0)).get_trace()
    values = {k: tr[k]["value"] for k in ["a", "x", "b", "k", "y"]}
    plain = handlers.trace(handlers.condition(model, data=values)).get_trace()
    names = {k: type(s["fn"]).__name__ for k, s in tr.items()}
    assert names["a"] == "_Gamma" and names["y"] == "_Normal"
    for k in ["x", "b", "k", "y"]:
        base = tr[k]["fn"].base_dist if isinstance(tr[k]["fn"], dist.ExpandedDistribution) else tr[k]["fn"]
        assert type(base).__name__.startswith("_"), (k, type(base))
    for k, v in values.items():
        np.testing.assert_allclose(tr[k]["fn"].log_prob(v), plain[k]["fn"].log_prob(v), rtol=1e-6)


def test_invalid_rates_give_jax_randoms_value_not_a_plausible_count():
    # a NaN or negative rate must not come back as a count (the inversion path once returned 0 for
    # both): invalid rates go to jax.random.poisson, which gives -1 for them
    rates = jnp.array([jnp.nan, -1.0, 2.0, 50.0])
    k = np.asarray(samplers.poisson(jax.random.key(13), rates))
    assert list(k[:2]) == list(np.asarray(jax.random.poisson(jax.random.key(0), rates[:2]))) == [-1, -1]
    assert k[2] >= 0 and k[3] >= 0


def test_invalid_concentrations_give_nan_without_hanging():
    # a NaN or infinite concentration accepts no Marsaglia–Tsang candidate: such elements are done at
    # once as NaN (the redraw loop once spun forever on them), the valid ones are drawn as usual
    a = jnp.array([jnp.nan, jnp.inf, 0.0, -1.0, 2.0, 0.3])
    x = np.asarray(samplers.log_gamma(jax.random.key(14), a))
    assert np.isnan(x[:4]).all() and np.isfinite(x[4:]).all()
    d = np.asarray(samplers.dirichlet(jax.random.key(15), jnp.array([[1.0, jnp.nan], [1.0, 2.0]])))
    assert np.isnan(d[0]).all() and np.allclose(d[1].sum(), 1.0)


# --- random bits: threefry with the rounds unrolled -----------------------------------------------


@pytest.mark.parametrize("n", [2, 10, 4096])
def test_threefry_words_are_jaxs_threefry(n):
    from jax.extend.random import threefry_2x32

    data = jax.random.key_data(jax.random.key(11))
    expected = threefry_2x32(data, jnp.arange(n, dtype=jnp.uint32))
    np.testing.assert_array_equal(samplers._threefry_words(data, n), expected)


def test_uniform_draws_words_in_multiples_of_four():
    # a count 2 mod 4 draws the first words of the next multiple of 4 (an odd half is slow on XLA's CPU)
    key = jax.random.key(5)
    for n in (6, 2250):
        np.testing.assert_array_equal(samplers.uniform(key, (n,)), samplers.uniform(key, (n + 2,))[:n])


def test_uniform_and_normal_laws_and_ranges():
    u = np.asarray(samplers.uniform(jax.random.key(12), (N,)))
    assert u.dtype == np.float32 and u.min() >= 0 and u.max() < 1
    assert stats.kstest(u, "uniform").pvalue > P_MIN
    z = np.asarray(samplers.normal(jax.random.key(13), (N,)), np.float64)
    assert np.all(np.isfinite(z)) and stats.kstest(z, "norm").pvalue > P_MIN
    # odd sizes and several dimensions: the words are cut, not reused
    w = np.asarray(samplers.uniform(jax.random.key(14), (3, 5, 7)))
    assert w.shape == (3, 5, 7) and np.unique(w).size == w.size


def test_uniform_keys_raw_typed_vmapped_and_other_impls():
    typed, raw = jax.random.key(15), jax.random.PRNGKey(15)
    np.testing.assert_array_equal(samplers.uniform(typed, (9,)), samplers.uniform(raw, (9,)))
    np.testing.assert_array_equal(samplers.uniform(typed, (9,)), samplers.uniform(typed, (9,)))
    keys = jax.random.split(typed, 3)
    batched = jax.vmap(lambda k: samplers.normal(k, (4,)))(keys)
    for k, row in zip(keys, batched):
        np.testing.assert_array_equal(row, samplers.normal(k, (4,)))
    # an rbg key and float16 go to jax.random (same draws as it)
    rbg = jax.random.key(15, impl="rbg")
    np.testing.assert_array_equal(samplers.uniform(rbg, (5,)), jax.random.uniform(rbg, (5,)))
    np.testing.assert_array_equal(
        samplers.normal(typed, (5,), jnp.float16), jax.random.normal(typed, (5,), jnp.float16)
    )


@pytest.mark.parametrize("size", [20, 1001, 1024])
@pytest.mark.parametrize("fraction_left", [0.0, 0.03, 0.5, 1.0])
def test_unfinished_finds_distinct_unfinished_elements(size, fraction_left):
    # distinct elements not ok, all of them when they fit, then the filler `size` (a size not a
    # multiple of 32 has its last elements in a word of their own)
    ok = jax.random.uniform(jax.random.key(16), (size,)) >= fraction_left
    left = set(np.flatnonzero(~np.asarray(ok)))
    for m in (1, 62, size):
        idx = np.asarray(samplers._unfinished(ok, m))
        found = idx[idx < size]
        assert idx.shape == (m,) and np.all(idx[found.size :] == size)
        assert len(set(found)) == found.size == min(m, len(left)) and set(found) <= left
    np.testing.assert_array_equal(samplers.count_true(ok), jnp.cumsum(ok))


def test_float32_draws_stay_float32_under_x64():
    # the float32 fast path must not widen to the default float (float64 under x64)
    key, a = jax.random.key(18), jnp.ones(4, jnp.float32)
    assert samplers.normal(key, (4,), jnp.float32).dtype == jnp.float32
    assert samplers.uniform(key, (4,), jnp.float32).dtype == jnp.float32
    assert samplers.log_gamma(key, a).dtype == jnp.float32
    assert samplers.dirichlet(key, a).dtype == jnp.float32
    assert samplers.normal(key, (4,)).dtype == jnp.result_type(float)


def test_fast_normal_site_law():
    fn = samplers.fast_distribution(dist.Normal(jnp.array([1.0, -2.0]), jnp.array([0.5, 3.0])))
    assert type(fn).__name__ == "_Normal"
    x = np.asarray(fn.sample(jax.random.key(17), (N // 2,)), np.float64)
    assert x.shape == (N // 2, 2)
    assert stats.kstest(x[:, 0], stats.norm(1.0, 0.5).cdf).pvalue > P_MIN
    assert stats.kstest(x[:, 1], stats.norm(-2.0, 3.0).cdf).pvalue > P_MIN
