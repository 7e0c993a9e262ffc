"""The curator side of the integer mechanisms: exact host-side release (Canonne, Kamath & Steinke
2020) and the exact log pmfs it must agree with."""

import math
import random
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import dpjax
from dpjax.mechanisms import exact

KEY = jax.random.key(0)
N = 20000


def dl_log_pmf(k, scale):
    """log P(k) = log tanh(1/(2 scale)) - |k| / scale in float64."""
    return math.log(math.tanh(0.5 / scale)) - abs(k) / scale


def dg_log_z(sigma):
    """log Σ_k exp(-k² / 2σ²) by direct float64 summation (terms beyond 40σ + 40 are < 1e-300)."""
    ks = range(-int(40 * sigma) - 40, int(40 * sigma) + 41)
    return math.log(math.fsum(math.exp(-(k * k) / (2 * sigma**2)) for k in ks))


def dg_log_pmf(k, sigma, log_z):
    return -(k * k) / (2 * sigma**2) - log_z


def mechanisms(scale):
    """Both integer mechanisms at noise scale ``scale`` (b for discrete Laplace, σ for Gaussian)."""
    return [dpjax.DiscreteLaplaceMechanism(scale=scale), dpjax.DiscreteGaussianMechanism(sigma=scale)]


def log_pmf(mech):
    if isinstance(mech, dpjax.DiscreteLaplaceMechanism):
        return lambda k: dl_log_pmf(k, mech.scale)
    log_z = dg_log_z(mech.scale)
    return lambda k: dg_log_pmf(k, mech.scale, log_z)


# ---- the log pmf used for inference -------------------------------------------------------------


@pytest.mark.parametrize("scale", [0.3, 1.0, 2.5, 10.0, 200.0])
def test_log_density_exact_including_far_tails(scale):
    for mech in mechanisms(scale):
        ref = log_pmf(mech)
        # residuals from the mode to far tails (log p down to about -5e4)
        ks = np.unique(np.concatenate([np.arange(-20, 21), np.round(np.geomspace(1, 300 * scale, 40))]))
        ks = np.concatenate([-ks, ks]).astype(np.int64)
        got = np.asarray(mech.log_density(ks + 7, 7), dtype=float)
        want = np.array([ref(int(k)) for k in ks])
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
        # the traced path with int32 inputs (no overflow of the squared residual)
        traced = jax.jit(mech.log_density)(jnp.asarray(ks + 7, jnp.int32), jnp.int32(7))
        np.testing.assert_allclose(np.asarray(traced, dtype=float), want, rtol=2e-6, atol=2e-6)


def test_log_density_of_releases_at_large_magnitude_is_exact():
    mech = dpjax.DiscreteLaplaceMechanism(epsilon=0.5)
    for big in [123_456_789, 2**62, 2**70]:
        got = float(mech.log_density(big + 3, big))
        assert got == pytest.approx(dl_log_pmf(3, 2.0), rel=1e-6)
        np.testing.assert_allclose(
            np.asarray(mech.log_density(np.array([big - 5, big], dtype=object), big)),
            [dl_log_pmf(5, 2.0), dl_log_pmf(0, 2.0)],
            rtol=1e-6,
        )


# ---- goodness of fit of exact releases ----------------------------------------------------------


def chi_square_pvalue(draws, ref, halfwidth):
    """χ² of integer draws against a log pmf on bins {≤ -w-1}, -w..w, {≥ w+1} (tails included)."""
    k = np.arange(-halfwidth, halfwidth + 1)
    pmf = np.exp([ref(int(v)) for v in k])
    tail = (1.0 - pmf.sum()) / 2  # symmetric
    probs = np.concatenate([[tail], pmf, [tail]])
    counts = np.concatenate(
        [[np.sum(draws < -halfwidth)], [np.sum(draws == v) for v in k], [np.sum(draws > halfwidth)]]
    )
    keep = probs * len(draws) > 5
    merged_obs = np.append(counts[keep], counts[~keep].sum())
    merged_exp = np.append(probs[keep], probs[~keep].sum()) * len(draws)
    if merged_exp[-1] == 0:
        merged_obs, merged_exp = merged_obs[:-1], merged_exp[:-1]
    return stats.chisquare(merged_obs, merged_exp).pvalue


@pytest.mark.parametrize("scale", [0.5, 1.0, 10.0])
def test_release_goodness_of_fit_with_tail_bins(scale):
    for i, mech in enumerate(mechanisms(scale)):
        draws = mech.release(jax.random.key(11 + i), np.zeros(N, dtype=np.int64))
        assert draws.dtype == np.int64 and draws.shape == (N,)
        ref = log_pmf(mech)
        # the outer bins hold a few percent of the mass: the tails are tested too
        halfwidth = int(2 * scale) + 1 if i == 0 else int(1.5 * scale) + 1
        assert chi_square_pvalue(draws, ref, halfwidth) > 1e-3
        assert chi_square_pvalue(draws, ref, int(6 * scale) + 4) > 1e-3


def test_release_moments_at_fractional_epsilon():
    # scale = Fraction(3) / Fraction(0.7) with a 2^52-sized denominator
    mech = dpjax.DiscreteLaplaceMechanism(epsilon=0.7, sensitivity=3)
    draws = mech.release(KEY, np.zeros(N, dtype=np.int64))
    p = math.exp(-1 / mech.scale)
    var = 2 * p / (1 - p) ** 2
    assert abs(draws.mean()) < 5 * math.sqrt(var / N)
    assert draws.var() == pytest.approx(var, rel=0.05)


# ---- exact at any magnitude; noise independent of T ---------------------------------------------


@pytest.mark.parametrize("big", [123_456_789, 2**62])
def test_release_is_exact_at_large_magnitude(big):
    for i, mech in enumerate(mechanisms(1.0)):
        out = mech.release(jax.random.key(3 + i), np.full(N, big, dtype=np.int64))
        assert out.dtype == np.int64
        noise = out - big
        # the noise survives: not always 0 (or 8, float32's spacing at 1.2e8)
        assert np.mean(noise == 0) < 0.5 and len(np.unique(noise)) > 5
        assert chi_square_pvalue(noise, log_pmf(mech), 3) > 1e-3
        # a scalar Python int gives a 0-d int64 array
        one = mech.release(KEY, big)
        assert one.shape == () and one.dtype == np.int64


def test_release_beyond_int64_is_exact():
    mech = dpjax.DiscreteLaplaceMechanism(epsilon=1.0)
    out = mech.release(KEY, [2**70, -(2**70)])
    assert out.dtype == object
    assert all(isinstance(v, int) for v in out.tolist())
    assert abs(out[0] - 2**70) < 100 and abs(out[1] + 2**70) < 100
    # 1e20 as a float is an exact integer beyond int64
    assert mech.release(KEY, 1e20) - 10**20 == mech.release(KEY, 0)


@pytest.mark.parametrize("mech", mechanisms(2.0))
@pytest.mark.parametrize("base", [0, -17, 123_456_789, 2**62 - 2])
def test_release_is_shift_invariant(mech, base):
    t = base + np.arange(-500, 500, dtype=np.int64)
    for key in [jax.random.key(5), jax.random.PRNGKey(6)]:
        diff = mech.release(key, t + 1) - mech.release(key, t)
        np.testing.assert_array_equal(diff, 1)


def test_same_key_same_release_different_key_different():
    for mech in mechanisms(3.0):
        t = np.arange(200)
        a, b = mech.release(jax.random.key(1), t), mech.release(jax.random.key(1), t)
        np.testing.assert_array_equal(a, b)
        c = mech.release(jax.random.key(2), t)
        assert np.mean(a != c) > 0.5
        # legacy and typed keys with the same seed give the same stream
        np.testing.assert_array_equal(a, mech.release(jax.random.PRNGKey(1), t))


def test_release_with_system_csprng():
    for mech in mechanisms(3.0):
        a, b = mech.release(None, np.zeros(500, np.int64)), mech.release(None, np.zeros(500, np.int64))
        assert a.dtype == np.int64 and a.shape == (500,)
        assert np.any(a != b)
        assert 1.0 < a.std() < 10.0


def test_accepted_statistic_types():
    mech = dpjax.DiscreteGaussianMechanism(sigma=1.0)
    for t in [5, np.int32(5), jnp.int32(5), 5.0, jnp.float32(5.0), np.uint64(5), True + 4]:
        assert mech.release(KEY, t) == mech.release(KEY, 5)
    mat = mech.release(KEY, jnp.arange(6.0).reshape(2, 3))
    assert mat.shape == (2, 3) and mat.dtype == np.int64
    two = dpjax.DiscreteLaplaceMechanism(epsilon=[1.0, 2.0])
    assert two.release(KEY, np.zeros(2, np.int64)).shape == two.release(KEY, 0).shape == (2,)
    with pytest.raises(ValueError, match=r"parameters have shape \(2,\)"):  # 6 entries under ε = 3
        two.release(KEY, np.zeros((3, 1), np.int64))


@pytest.mark.parametrize("bad", [2.6, [1, 2.5], float("nan"), [0.0, float("inf")], -np.inf, "a", 1 + 2j])
def test_non_integer_statistic_raises(bad):
    for mech in mechanisms(1.0):
        with pytest.raises(ValueError, match="statistic"):
            mech.release(KEY, bad)


def test_release_is_not_traceable_but_the_distribution_is():
    mech = dpjax.DiscreteLaplaceMechanism(epsilon=1.0)
    with pytest.raises(ValueError, match=r"sample\(key\)"):
        jax.jit(lambda t: mech.release(KEY, t))(jnp.zeros(3))
    with pytest.raises(ValueError, match=r"sample\(key\)"):
        jax.vmap(lambda k: mech.release(k, 0))(jax.random.split(KEY, 2))
    sim = jax.jit(lambda k: mech(jnp.zeros(3)).sample(k))(KEY)
    assert sim.shape == (3,)


def test_exact_noise_parameters_are_the_given_floats():
    dl = dpjax.DiscreteLaplaceMechanism(epsilon=0.7, sensitivity=3)
    assert dl._exact_params == Fraction(3) / Fraction(0.7)
    assert dpjax.DiscreteGaussianMechanism(sigma=1.3)._exact_params == Fraction(1.3) ** 2
    dg = dpjax.DiscreteGaussianMechanism(rho=0.3, sensitivity=2)
    assert dg._exact_params == Fraction(2) ** 2 / (2 * Fraction(0.3))


# ---- building blocks ----------------------------------------------------------------------------


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2), Fraction(7)])
def test_bernoulli_exp_frequencies(gamma):
    rng = random.Random(int(gamma * 1000))
    n = 40000
    freq = sum(exact.bernoulli_exp(gamma, rng) for _ in range(n)) / n
    p = math.exp(-gamma)
    assert abs(freq - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-12


def test_bernoulli_and_argument_checks():
    rng = random.Random(0)
    assert sum(exact.bernoulli(Fraction(1, 4), rng) for _ in range(8000)) == pytest.approx(2000, abs=200)
    assert exact.bernoulli(1, rng) == 1 and exact.bernoulli(0, rng) == 0
    for call in [
        lambda: exact.bernoulli(Fraction(3, 2), rng),
        lambda: exact.bernoulli_exp(-1, rng),
        lambda: exact.discrete_laplace(0, rng),
        lambda: exact.discrete_gaussian(0, rng),
    ]:
        with pytest.raises(ValueError):
            call()


class _Branch(Exception):
    pass


class _Replay:
    """A deterministic mock ``rng``: replays a fixed prefix of outcomes, then stops the sampler at
    the first new random call so that the call's outcomes can be enumerated. Besides
    ``randrange`` it offers ``coin(p)``, used below to stand in for an already-verified block."""

    def __init__(self, prefix):
        self.prefix, self.i, self.weights = prefix, 0, None

    def _branch(self, weights):
        if self.i < len(self.prefix):
            self.i += 1
            return self.prefix[self.i - 1]
        self.weights = weights
        raise _Branch

    def randrange(self, m):
        return self._branch([Fraction(1, m)] * m)

    def coin(self, p):
        return self._branch([1 - p, p])


def enumerate_law(sampler, cutoff):
    """The implemented law of ``sampler(rng)`` by enumerating every outcome of every random call
    on every execution path, up to paths of probability < ``cutoff``: ``(pmf, unexplored mass)``."""
    pmf, lost, stack = {}, 0, [((), 1)]
    while stack:
        prefix, prob = stack.pop()
        rng = _Replay(prefix)
        try:
            out = sampler(rng)
        except _Branch:
            if prob < cutoff:
                lost += prob
            else:
                stack.extend((prefix + (v,), prob * w) for v, w in enumerate(rng.weights))
            continue
        pmf[out] = pmf.get(out, 0) + prob
    return pmf, lost


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 2), Fraction(1), Fraction(3, 2), Fraction(7, 3)])
def test_bernoulli_exp_law_by_enumeration(gamma):
    """Exact: every uniform outcome of the real code, probabilities as fractions."""
    pmf, lost = enumerate_law(lambda rng: exact.bernoulli_exp(gamma, rng), cutoff=Fraction(1, 10**9))
    assert lost < 1e-6
    assert set(pmf) <= {0, 1}
    assert 0 <= math.exp(-gamma) - float(pmf.get(1, 0)) <= float(lost) + 1e-15
    assert 0 <= 1 - math.exp(-gamma) - float(pmf.get(0, 0)) <= float(lost) + 1e-15


def _coins(monkeypatch):
    """Replace the Bernoulli(exp(-n/d)) block (verified above) by one weighted mock coin."""
    coin = lambda n, d, rng: rng.coin(math.exp(-n / d))
    monkeypatch.setattr(exact, "_bernoulli_exp", coin)
    monkeypatch.setattr(exact, "_bernoulli_exp_le1", coin)


@pytest.mark.parametrize("t, s", [(1, 1), (1, 2), (3, 2), (5, 1), (2, 7)])
def test_discrete_laplace_round_law_by_enumeration(monkeypatch, t, s):
    """Algorithm 2's logic: one round's accepted outcomes, normalized, are the discrete Laplace pmf."""
    _coins(monkeypatch)
    pmf, lost = enumerate_law(lambda rng: exact._discrete_laplace_attempt(t, s, rng), cutoff=1e-15)
    accepted = {k: p for k, p in pmf.items() if k is not None}
    total = sum(accepted.values())
    assert lost < 1e-12
    for k in set(accepted) | set(range(-5, 6)):
        want = math.exp(dl_log_pmf(k, t / s))
        assert accepted.get(k, 0) / total == pytest.approx(want, rel=1e-9, abs=1e-13)


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(1, 2), Fraction(9, 4), Fraction(10)])
def test_discrete_gaussian_round_law_by_enumeration(monkeypatch, sigma2):
    """Algorithm 3's logic (incl. the integer form of the acceptance exponent): a discrete Laplace
    proposal (its exact pmf as mock weights) times the acceptance is the discrete Gaussian pmf."""
    a, b = sigma2.numerator, sigma2.denominator
    t = math.isqrt(a // b) + 1
    window = np.arange(-60 * t, 60 * t + 1)
    weights = np.exp([dl_log_pmf(int(k), t) for k in window])
    monkeypatch.setattr(exact, "_discrete_laplace", lambda t_, s_, rng: int(window[rng._branch(weights)]))
    monkeypatch.setattr(exact, "_bernoulli_exp", lambda n, d, rng: rng.coin(math.exp(-n / d)))
    pmf, lost = enumerate_law(lambda rng: exact._discrete_gaussian_attempt(a, b, t, rng), cutoff=0)
    assert lost == 0
    accepted = {k: p for k, p in pmf.items() if k is not None}
    total = sum(accepted.values())
    sigma = math.sqrt(sigma2)
    log_z = dg_log_z(sigma)
    for k in range(-8 * t, 8 * t + 1):
        want = math.exp(dg_log_pmf(k, sigma, log_z))
        assert accepted.get(k, 0) / total == pytest.approx(want, rel=1e-9, abs=1e-15)
