"""Pitman–Yor synthetic data (Lazzarini): sampler, density, privacy accounting, inference, baselines."""

import itertools
from fractions import Fraction
from math import comb, factorial

import jax
import numpy as np
import numpyro.distributions as dist
import pytest
from scipy import stats

from dpjax.synthetic import (
    Partition,
    admissible_theta,
    delta_tilde,
    density_ratios,
    dirichlet_multinomial,
    discovery_probability,
    empirical_bayes_theta,
    log_eppf,
    log_factorial_coefficients,
    log_predictive_density,
    max_release_size,
    negative_sigma_epsilon,
    new_values_law,
    partition,
    perturbed_histogram,
    posterior_predictive,
    predictive_release,
    predictive_urn,
    sample_pitman_yor,
    smoothed_histogram,
    summary,
    wasserstein1,
)

DATA = Partition(np.array([0.1, 0.4, 0.7]), np.array([2, 3, 5]))


def draws(fn, num=20_000, seed=0):
    return jax.jit(jax.vmap(fn))(jax.random.split(jax.random.key(seed), num))


@pytest.mark.parametrize("sigma, theta", [(0.0, 1.5), (0.5, 2.0), (-1.0, 5.0)])
def test_one_step_predictive_chi_square(sigma, theta):
    labels = np.asarray(draws(lambda k: predictive_urn(k, DATA, 1, sigma, theta).labels[0]))
    n, k = 10, 3
    expected = np.append((DATA.counts - sigma) / (theta + n), (theta + sigma * k) / (theta + n))
    observed = np.bincount(labels, minlength=4)[:4]
    assert observed.sum() == labels.size
    assert stats.chisquare(observed, expected * labels.size).pvalue > 1e-3


def chain_law(n, j, m, sigma, theta):
    """P[K_m = k | K_n = j] by the urn's Markov chain: a new value w.p. (θ + σ·values)/(θ + records)."""
    law = np.zeros(m + 1)
    law[0] = 1.0
    for t in range(m):
        p_new = (theta + sigma * (j + np.arange(m + 1))) / (theta + n + t)
        law = law * (1 - p_new) + np.concatenate([[0.0], (law * p_new)[:-1]])
    return law


@pytest.mark.parametrize("sigma, theta", [(0.0, 2.0), (0.5, 3.0)])
def test_number_of_new_values_exact_law(sigma, theta):
    m = 6
    k_new = np.asarray(draws(lambda k: predictive_urn(k, DATA, m, sigma, theta).num_new))
    law = chain_law(10, 3, m, sigma, theta)
    observed = np.bincount(k_new, minlength=m + 1)
    keep = law * k_new.size > 5
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(law[keep], law[~keep].sum()) * k_new.size
    assert stats.chisquare(obs[exp > 0], exp[exp > 0]).pvalue > 1e-3
    if sigma > 0:  # the closed form with generalized factorial coefficients (Lijoi et al.)
        np.testing.assert_allclose(new_values_law(10, 3, m, sigma, theta), law, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(
            new_values_law(500, 40, 250, sigma, theta),
            chain_law(500, 40, 250, sigma, theta),
            rtol=1e-7,
            atol=1e-14,
        )


def sequential_probability(z, values, counts, sigma, theta):
    """Π of one-step predictive probabilities along z (new values: density 1 under Uniform(0, 1))."""
    table = dict(zip(values.tolist(), counts.tolist()))
    prob = Fraction(1)
    for v in z:
        n, k = sum(table.values()), len(table)
        if v in table:
            prob *= (Fraction(table[v]) - sigma) / (theta + n)
            table[v] += 1
        else:
            prob *= (theta + sigma * k) / (theta + n)
            table[v] = 1
    return prob


def test_log_predictive_density_brute_force():
    sigma, theta = Fraction(1, 3), Fraction(3, 2)
    z = [0.1, 0.9, 0.9, 0.4, 0.25, 0.9]
    exact = sequential_probability(z, DATA.values, DATA.counts, sigma, theta)
    got = float(log_predictive_density(z, DATA, float(sigma), float(theta)))
    assert got == pytest.approx(np.log(float(exact)), rel=1e-5)
    # over all label patterns of m = 3 draws, the probabilities sum to one
    total, fresh = 0.0, [0.91, 0.92, 0.93]
    for pattern in itertools.product(range(6), repeat=3):
        z, new = [], 0
        for c in pattern:
            if c < 3:
                z.append(DATA.values[c])
            elif c - 3 < new:
                z.append(fresh[c - 3])
            elif c - 3 == new:
                z.append(fresh[new])
                new += 1
            else:
                break
        else:
            total += float(np.exp(log_predictive_density(z, DATA, 0.25, 2.0)))
    assert total == pytest.approx(1.0, rel=1e-5)


def test_neighbour_density_ratios_match_theorem_4_1_proof():
    """log q(z|x̃) − log q(z|x) for the proof's three neighbour types, x₁ = x*_l replaced."""
    sigma, theta = 0.3, 2.0
    x = np.array([0.1] * 3 + [0.4] * 4 + [0.7] * 5)
    z = np.array([0.1, 0.1, 0.4, 0.95, 0.95, 0.95, 0.2])  # s = (2, 1, 0), new values 0.95 (×3), 0.2
    n, s, j, k = np.array([3, 4, 5]), np.array([2, 1, 0]), 3, 2
    log_q = float(log_predictive_density(z, x, sigma, theta))
    shrink = (n[0] - 1 - sigma) / (n[0] + s[0] - 1 - sigma)  # x₁ = 0.1 (l = 1) is replaced
    case1 = x.copy()
    case1[0] = 0.95  # a value that is new in z
    expected1 = np.log((3 - sigma) / (theta + j * sigma) * shrink)
    case2 = x.copy()
    case2[0] = 0.55  # a value in neither
    expected2 = np.log((theta + (j + k) * sigma) / (theta + j * sigma) * shrink)
    case3 = x.copy()
    case3[0] = 0.4  # another observed value, t = 1
    expected3 = np.log((n[1] + s[1] - sigma) / (n[1] - sigma) * shrink)
    for y, expected in ((case1, expected1), (case2, expected2), (case3, expected3)):
        assert float(log_predictive_density(z, y, sigma, theta)) - log_q == pytest.approx(expected, abs=1e-5)


def theorem_event(n, s_old, s_new, sigma, theta, eps):
    """Theorem 4.1's event, written out from the seed for one draw (C₁ = C₂ = 1)."""
    j, k = len(n), len(s_new)
    ratio = [(n[i] - 1 - sigma) / (n[i] + s_old[i] - 1 - sigma) for i in range(j)]
    e = np.exp(eps)
    ok = all(s_old[i] <= (e - 1) * (n[i] - 1 - sigma) for i in range(j))
    ok &= all((theta + (j + k) * sigma) / (theta + j * sigma) * r <= e for r in ratio)
    ok &= all((theta + (j + k) * sigma) / (theta + j * sigma) * r >= 1 / e for r in ratio)
    ok &= all((sh - sigma) / (theta + j * sigma) * max(ratio) <= e for sh in s_new)
    ok &= all((sh - sigma) / (theta + j * sigma) * min(ratio) >= 1 / e for sh in s_new)
    return ok


def exact_delta(n, m, sigma, theta, eps):
    """1 − P[event] by enumerating every label sequence of the m-step urn."""
    j, holds = len(n), 0.0

    def walk(t, counts, prob):
        nonlocal holds
        if t == m:
            s_old = [counts[i] - n[i] for i in range(j)]
            holds += prob * theorem_event(n, s_old, counts[j:], sigma, theta, eps)
            return
        total, k = sum(counts), len(counts)
        for c in range(k):
            walk(
                t + 1,
                counts[:c] + [counts[c] + 1] + counts[c + 1 :],
                prob * (counts[c] - sigma) / (theta + total),
            )
        walk(t + 1, counts + [1], prob * (theta + sigma * k) / (theta + total))

    walk(0, list(n), 1.0)
    return 1 - holds


@pytest.mark.parametrize("sigma, theta, eps", [(0.0, 1.0, 0.7), (0.4, 1.5, 1.2)])
def test_delta_tilde_against_enumeration(sigma, theta, eps):
    n, m = [2, 3, 4], 4
    data = Partition(np.array([0.2, 0.5, 0.8]), np.array(n))
    exact = exact_delta(n, m, sigma, theta, eps)
    est = delta_tilde(jax.random.key(3), data, m, sigma, theta, eps, num_draws=20_000)
    sd = np.sqrt(exact * (1 - exact) / 20_000)
    assert 0.02 < exact < 0.98 and abs(est.delta[0] - exact) < 4 * sd, (est.delta, exact)


def seed_dataset(seed, sigma, theta, n=500):
    """n records from PY(σ, θ, U[0,1]) with values seen once doubled (the seed's §7.2 fix for nᵢ > 1)."""
    p = partition(np.asarray(sample_pitman_yor(jax.random.key(seed), n, sigma, theta)))
    return p._replace(counts=np.where(p.counts == 1, 2, p.counts))


@pytest.mark.parametrize("sigma, theta, eps", [(0.2, 3.0, 5.0), (0.0, 2.0, 3.0)])
def test_delta_tilde_reproduces_zero_cells_of_tables_2_and_3(sigma, theta, eps):
    """Table 2 (σ = 1/5, θ = 3) at ε = 5 and Table 3 (σ = 0, θ = 2) at ε = 3: 0 ± 0 for m = 50, 125;
    one ε below, δ̃ is clearly positive, so the estimate can tell the cells apart."""
    data = seed_dataset(1, sigma, theta)
    for m in (50, 125):
        est = delta_tilde(jax.random.key(m), data, m, sigma, theta, [1.0, eps], num_draws=10_000)
        assert est.delta[1] == 0.0 and est.error[1] == 0.0
        assert est.delta[0] > 0.05


def test_histogram_release_and_expected_size():
    sigma, theta, m = 0.3, 2.0, 40
    out = draws(lambda k: predictive_release(k, DATA, m, sigma, theta), num=5000)
    urn = draws(lambda k: predictive_urn(k, DATA, m, sigma, theta), num=5000)  # the same draws, same keys
    released = np.asarray(out.released)
    np.testing.assert_array_equal(np.asarray(out.values), np.asarray(urn.values))
    np.testing.assert_array_equal(released, np.asarray(urn.labels) < 3)
    size = released.sum(1)
    expected = m * (10 - 3 * sigma) / (theta + 10)  # E[m − L_m] (Lijoi et al., 2008)
    assert abs(size.mean() - expected) / (size.std() / np.sqrt(size.size)) < 4
    vals, observed = np.asarray(out.values), DATA.values.astype(np.float32)
    assert np.all(np.isin(vals[released], observed)) and not np.any(np.isin(vals[~released], observed))


def test_generalized_factorial_coefficients_in_log_space():
    def exact(a, b, c, g):
        rising = lambda x, q: np.prod([x + i for i in range(q)], dtype=object) if q else Fraction(1)
        return sum((-1) ** j * comb(b, j) * rising(-c * j - g, a) for j in range(b + 1)) / factorial(b)

    c, g = Fraction(2, 5), Fraction(-9, 2)
    got = log_factorial_coefficients(8, float(c), float(g))
    for b in range(1, 9):
        assert got[b] == pytest.approx(np.log(float(exact(8, b, c, g))), rel=1e-9)
    big = log_factorial_coefficients(2000, 0.5)  # overflows float64 naively
    assert np.all(np.isfinite(big[1:])) and big[1000] > 700


def test_discovery_probability_against_direct_sum():
    sigma, theta, n, m = 0.4, 1.5, 12, 7
    law_kn = chain_law(0, 0, n, sigma, theta)  # K_n from the empty urn
    for k in range(0, 5):
        w = np.array([law_kn[j] * chain_law(n, j, m, sigma, theta)[k] for j in range(1, n + 1)])
        direct = np.sum(w * (theta + (np.arange(1, n + 1) + k) * sigma)) / w.sum() / (theta + n + m)
        assert discovery_probability(n, m, k, sigma, theta) == pytest.approx(direct, rel=1e-8)
    # n large enough that K_n's law is truncated (kmax < n) and only a window of j is summed
    n, m, k = 1500, 40, 3
    law_kn = chain_law(0, 0, n, sigma, theta)
    w = np.array([law_kn[j] * chain_law(n, j, m, sigma, theta)[k] for j in range(1, n + 1)])
    direct = np.sum(w * (theta + (np.arange(1, n + 1) + k) * sigma)) / w.sum() / (theta + n + m)
    assert discovery_probability(n, m, k, sigma, theta) == pytest.approx(direct, rel=1e-8)


def test_empirical_bayes_theta_and_eppf():
    counts = np.array([40, 25, 10, 4, 3, 2, 2, 1, 1])
    x = np.repeat(np.arange(counts.size) / 10, counts)
    grid = np.exp(np.linspace(np.log(0.01), np.log(100), 200_001))
    direct = grid[np.argmax([log_eppf(counts, 0.0, t) for t in grid[::100]]) * 100]
    assert empirical_bayes_theta(x) == pytest.approx(direct, rel=1e-3)
    # Ewens: the EPPF of σ = 0 is θ^k Π (nᵢ − 1)! / (θ)_n
    theta = 2.5
    ewens = counts.size * np.log(theta) + sum(np.log(float(factorial(c - 1))) for c in counts)
    ewens -= np.sum(np.log(theta + np.arange(counts.sum())))
    assert log_eppf(counts, 0.0, theta) == pytest.approx(ewens)


def test_baselines_calibration():
    x = np.linspace(0, 1, 39_374)
    assert smoothed_histogram(jax.random.key(0), x, 5000, 4.2).parameter == pytest.approx(0.2321, abs=1e-4)
    assert perturbed_histogram(jax.random.key(0), x, 5000, 4.2).parameter == pytest.approx(0.4535, abs=1e-4)
    y = np.repeat([0.1, 0.5, 0.9], [3, 300, 30])
    out = dirichlet_multinomial(jax.random.key(0), y, 200, 1.0)
    assert np.all(out.parameter + np.array([3, 300, 30]) >= 200 / np.expm1(1.0) - 1e-9)
    assert set(np.unique(out.values)) <= {0.1, 0.5, 0.9} and out.values.size == 200
    for mech in (smoothed_histogram, perturbed_histogram):
        a, b = mech(jax.random.key(1), y, 500, 1.0), mech(jax.random.key(1), y, 500, 1.0)
        np.testing.assert_array_equal(a.values, b.values)
        assert a.values.min() >= 0 and a.values.max() <= 1


def test_negative_sigma_and_bad_inputs():
    x = np.repeat([0.1, 0.7], [30, 40])
    assert negative_sigma_epsilon(x, 10, -1.0) == pytest.approx(np.log1p(10 / 30))
    with pytest.raises(ValueError, match="sigma"):
        predictive_release(jax.random.key(0), x, 5, 1.0, 1.0)
    with pytest.raises(ValueError, match="theta"):
        predictive_release(jax.random.key(0), x, 5, 0.5, -0.5)
    with pytest.raises(ValueError, match="integer z"):
        predictive_release(jax.random.key(0), x, 5, -0.5, 1.2)
    with pytest.raises(ValueError, match="`m`"):
        predictive_release(jax.random.key(0), x, 0, 0.5, 1.0)
    with pytest.raises(ValueError, match="at least twice"):
        delta_tilde(jax.random.key(0), [0.1, 0.1, 0.3], 5, 0.5, 1.0, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        delta_tilde(jax.random.key(0), x, 5, 0.0, 1.0, 0.0)


def test_same_key_same_release_and_vmap():
    a = predictive_release(jax.random.key(7), DATA, 30, 0.5, 2.0).values
    b = predictive_release(jax.random.key(7), DATA, 30, 0.5, 2.0).values
    np.testing.assert_array_equal(a, b)
    batch = draws(lambda k: predictive_release(k, DATA, 30, 0.5, 2.0).values, num=100)
    assert batch.shape == (100, 30)


def test_calibration_helpers():
    x = np.repeat([0.1, 0.3, 0.5, 0.7], [40, 30, 20, 10])
    # σ < 0: Proposition 4.1 in closed form, m < (e^ε − 1)(|σ| + min nᵢ − 1)
    m = max_release_size(jax.random.key(0), x, -1.0, 4.0, 1.0, 0.0)
    assert m < np.expm1(1.0) * 10 <= m + 1 and negative_sigma_epsilon(x, m, -1.0) < 1.0
    # σ = 0: the returned m passes the δ̃ bound and m + 1 does not
    key, eps, delta = jax.random.key(1), 1.2, 0.05  # m = 4: six sizes compiled (1.5 gives m = 22: ten)
    m = max_release_size(key, x, 0.0, 3.0, eps, delta, m_max=256, num_draws=2000)
    upper = lambda mm: delta_tilde(key, x, mm, 0.0, 3.0, eps, num_draws=2000).upper[0]
    assert 1 <= m < 256 and upper(m) <= delta < upper(m + 1)
    ok, uppers = admissible_theta(key, x, 10, 0.0, 1.0, delta, [0.5, 1.0, 3.0], num_draws=2000)
    assert list(ok) == [0.5, 1.0] and uppers[2] > delta


KEY = jax.random.key(0)
X = np.repeat([0.1, 0.3, 0.5, 0.7], [40, 30, 20, 10])  # 4 values, each at least twice
SIGMA_MSG = r"`sigma` must be a finite number in \(-inf, 1\)"


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: predictive_release(KEY, X, 50, 0.0, np.inf), "`theta` must be a finite number"),
        (lambda: predictive_release(KEY, X, 50, 0.5, np.inf), "`theta` must be a finite number"),
        (lambda: predictive_release(KEY, X, 50, -1.0, np.inf), "`theta` must be a finite number"),
        (lambda: predictive_release(KEY, X, 50, 0.0, np.nan), "`theta`"),
        (lambda: predictive_release(KEY, X, 50, np.nan, 1.0), SIGMA_MSG),
        (lambda: predictive_release(KEY, X, 50, -np.inf, 1.0), SIGMA_MSG),
        (lambda: predictive_release(KEY, X, 50, "0.5", 1.0), "`sigma`"),
        (lambda: predictive_release(KEY, X, 50, -1e-300, 1e10), "integer z"),  # z = θ/|σ| = inf
        (lambda: sample_pitman_yor(KEY, 10, 0.0, np.inf), "`theta` must be a finite number"),
        (lambda: sample_pitman_yor(KEY, 10, np.nan, 1.0), SIGMA_MSG),
        (lambda: log_predictive_density([0.1], X, 0.0, np.inf), "`theta` must be a finite number"),
        (lambda: delta_tilde(KEY, X, 5, 0.0, np.inf, 1.0), "`theta` must be a finite number"),
        (lambda: delta_tilde(KEY, X, 5, np.nan, 1.0, 1.0), SIGMA_MSG),
        (lambda: max_release_size(KEY, X, np.nan, 1.0, 1.0, 0.1), SIGMA_MSG),
        (lambda: max_release_size(KEY, X, -1.0, np.inf, 1.0, 0.1), "`theta` must be a finite number"),
        (lambda: admissible_theta(KEY, X, 5, 0.0, 1.0, 0.1, [1.0, np.inf]), "`theta` must be a finite"),
        (lambda: density_ratios(KEY, X, 5, 0.0, np.inf), "`theta` must be a finite number"),
        (lambda: posterior_predictive(KEY, X, 5, 0.0, np.inf), "`theta` must be a finite number"),
        (lambda: negative_sigma_epsilon(X, 5, -np.inf), "finite `sigma`"),
        (lambda: log_eppf([2, 1], np.nan, 1.0), SIGMA_MSG),
        (lambda: log_eppf([2, 1], 0.0, np.inf), "`theta` must be a finite number"),
        (lambda: new_values_law(10, 3, 5, 0.5, np.inf), "`theta` must be a finite number"),
        (lambda: discovery_probability(100, 10, 2, 0.5, np.inf), "`theta` must be a finite number"),
        (lambda: empirical_bayes_theta(X, np.nan), "`sigma`"),
    ],
    ids=[
        "predictive_release-0",
        "predictive_release-1",
        "predictive_release-2",
        "predictive_release-3",
        "predictive_release-4",
        "predictive_release-5",
        "predictive_release-6",
        "predictive_release-7",
        "sample_pitman_yor-8",
        "sample_pitman_yor-9",
        "log_predictive_density-10",
        "delta_tilde-11",
        "delta_tilde-12",
        "max_release_size-13",
        "max_release_size-14",
        "admissible_theta-15",
        "density_ratios-16",
        "posterior_predictive-17",
        "negative_sigma_epsilon-18",
        "log_eppf-19",
        "log_eppf-20",
        "new_values_law-21",
        "discovery_probability-22",
        "empirical_bayes_theta-23",
    ],
)
def test_non_finite_sigma_or_theta_is_a_value_error(call, match):
    # θ → ∞ would make every record a fresh draw from H; before, θ = inf with σ = 0 released only
    # old values, σ = −1 with θ = inf raised OverflowError, σ = NaN a message about σ < 0 and z = nan
    with pytest.raises(ValueError, match=match):
        call()


BAD_RECORDS = [np.append(X, np.nan), np.append(X, np.inf), np.append(X, -np.inf)]


@pytest.mark.parametrize("bad", BAD_RECORDS, ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize(
    "call",
    [
        lambda x: predictive_release(KEY, x, 5, 0.0, 1.0),
        lambda x: predictive_release(
            KEY, Partition(np.unique(x), np.full(np.unique(x).size, 2)), 5, 0.0, 1.0
        ),
        lambda x: partition(x),
        lambda x: delta_tilde(KEY, np.repeat(x, 2), 5, 0.0, 1.0, 1.0),
        lambda x: log_predictive_density([0.1], x, 0.0, 1.0),
        lambda x: log_predictive_density(x, X, 0.0, 1.0),
        lambda x: empirical_bayes_theta(x),
        lambda x: negative_sigma_epsilon(np.repeat(x, 2), 5, -1.0),
        lambda x: max_release_size(KEY, np.repeat(x, 2), -1.0, 5.0, 1.0, 0.1),
        lambda x: density_ratios(KEY, x, 5, 0.0, 1.0, num_synthetic=2, num_neighbours=2),
        lambda x: posterior_predictive(KEY, x, 5, 0.0, 1.0),
        lambda x: perturbed_histogram(KEY, x, 5, 1.0),
        lambda x: smoothed_histogram(KEY, x, 5, 1.0),
        lambda x: dirichlet_multinomial(KEY, x, 5, 1.0),
        lambda x: wasserstein1(x, X),
        lambda x: summary(x),
    ],
    ids=[
        "predictive_release",
        "Partition",
        "partition",
        "delta_tilde",
        "log_predictive_density-data",
        "log_predictive_density-z",
        "empirical_bayes_theta",
        "negative_sigma_epsilon",
        "max_release_size",
        "density_ratios",
        "posterior_predictive",
        "perturbed_histogram",
        "smoothed_histogram",
        "dirichlet_multinomial",
        "wasserstein1",
        "summary",
    ],
)
def test_non_finite_records_are_a_value_error(call, bad):
    # before, a NaN record became a value of the partition and was released
    with pytest.raises(ValueError, match="finite records"):
        call(bad)


def test_non_numeric_records_are_a_value_error():
    with pytest.raises(ValueError, match="`data` must be a 1-d array of real numbers"):
        predictive_release(KEY, np.array(["a", "b", "a"]), 5, 0.0, 1.0)
    with pytest.raises(ValueError, match="`x` must be a 1-d array of real numbers"):
        perturbed_histogram(KEY, np.array(["0.1", "0.2"]), 5, 1.0)


def test_records_that_merge_in_float32_are_a_value_error():
    x = np.array([0.1, 0.1 + 1e-12, 0.1, 0.4, 0.4])  # 3 distinct values in float64, 2 in float32
    with jax.enable_x64(False):
        for call in (
            lambda: partition(x),
            lambda: predictive_release(KEY, x, 5, 0.0, 1.0),
            lambda: predictive_release(KEY, Partition(np.unique(x), np.full(3, 2)), 5, 0.0, 1.0),
            lambda: delta_tilde(KEY, np.repeat(x, 2), 5, 0.0, 1.0, 1.0),
        ):
            with pytest.raises(ValueError, match=r"distinct values as float64 that merge as float32.*x64"):
                call()
        with pytest.raises(ValueError, match="too large for float32"):
            partition(np.array([1e300, 1.0]))
        with pytest.raises(ValueError, match="outside the range of int32"):
            partition(np.array([2**40, 1], dtype=np.int64))
        assert partition(np.round(x, 6)).counts.tolist() == [3, 2]  # the suggested fix
    with jax.enable_x64(True):
        assert partition(x).counts.tolist() == [2, 1, 2]


def test_max_release_size_and_delta_tilde_validate_theta_and_epsilon():
    with pytest.raises(ValueError, match="integer z"):  # θ = 0.7 is not z·|σ| for σ = −0.5
        max_release_size(KEY, X, -0.5, 0.7, 1.0, 0.0)
    with pytest.raises(ValueError, match="below the 4 observed values"):
        max_release_size(KEY, X, -1.0, 2.0, 1.0, 0.0)
    for eps in (np.nan, 0.0, -1.0, "1"):
        with pytest.raises(ValueError, match="`epsilon`"):
            max_release_size(KEY, X, -1.0, 4.0, eps, 0.0)
    with pytest.raises(ValueError, match="`delta`"):
        max_release_size(KEY, X, -1.0, 4.0, 1.0, np.nan)
    assert max_release_size(KEY, X, -1.0, 4.0, np.inf, 0.0, m_max=77) == 77  # ε = ∞: any m, capped
    for eps in (np.nan, [1.0, np.nan], [[1.0]], []):
        with pytest.raises(ValueError, match="`epsilon`"):
            delta_tilde(KEY, X, 5, 0.0, 1.0, eps)
    assert delta_tilde(KEY, X, 5, 0.0, 1.0, [1.0, np.inf], num_draws=100).delta[1] == 0.0


@pytest.mark.parametrize("n", [0, -3, 1.5, True, np.nan, "3"])
def test_sample_pitman_yor_needs_a_positive_int_n(n):
    with pytest.raises(ValueError, match="`n` must be a positive integer"):
        sample_pitman_yor(KEY, n, 0.5, 1.0)


def test_sample_pitman_yor_takes_a_whole_float_n_as_that_int():
    assert np.array_equal(
        sample_pitman_yor(KEY, np.float64(5.0), 0.5, 1.0), sample_pitman_yor(KEY, 5, 0.5, 1.0)
    )


def test_base_must_be_a_scalar_numpyro_distribution():
    for call in (
        lambda base: predictive_release(KEY, X, 5, 0.0, 1.0, base=base),
        lambda base: sample_pitman_yor(KEY, 5, 0.0, 1.0, base=base),
        lambda base: log_predictive_density([0.2], X, 0.0, 1.0, base=base),
        lambda base: density_ratios(KEY, X, 5, 0.0, 1.0, base=base),
    ):
        with pytest.raises(ValueError, match="`base` must be a numpyro Distribution"):
            call("uniform")
        with pytest.raises(ValueError, match="scalar records"):
            call(dist.Normal(np.zeros(2), 1.0))
    out = predictive_urn(KEY, X, 50, 0.0, 1e30, base=dist.Normal(0.0, 1.0))
    assert int(out.num_new) == 50  # large finite θ: every record new, drawn from H


def test_baselines_document_that_they_are_simulation_only():
    import dpjax.synthetic.baselines as baselines

    assert "Mironov" in baselines.__doc__ and "not for publishing" in baselines.__doc__.lower().replace(
        "\n", " "
    )
    for mech in (perturbed_histogram, smoothed_histogram, dirichlet_multinomial):
        doc = " ".join(mech.__doc__.split())
        assert "Simulation-only" in doc and "not for publishing" in doc, mech.__name__


def test_delta_tilde_at_sigma_0_takes_values_seen_once():
    """Corollary 4.1 extends to values seen once: at ε = 30 every other condition holds, so δ̃ is the
    chance that the Pólya urn redraws one of them in m steps."""
    from dpjax.synthetic import delta_tilde, partition

    eps = [0.5, 1.0, 30.0]
    x = np.repeat(np.linspace(0.05, 0.95, 8), [2, 3, 5, 8, 10, 12, 20, 40])
    key = jax.random.key(3)
    # three values seen once: at ε = 30 every other condition holds, so δ̃ is the chance that the
    # Pólya urn redraws one of them in m steps, 1 − Π_{i<m} (1 − k₁/(θ + n + i)) at σ = 0
    p = partition(np.concatenate([x, [0.11, 0.22, 0.33]]))
    n, k1, m, theta, draws = p.counts.sum(), 3, 30, 2.0, 4000
    exact = 1 - np.prod(1 - k1 / (theta + n + np.arange(m)))
    for hist in (False, True):
        got = delta_tilde(key, p, m, 0.0, theta, eps, num_draws=draws, histogram=hist).delta
        assert abs(got[-1] - exact) < 4 * np.sqrt(exact * (1 - exact) / draws), (hist, got, exact)
        assert np.all(np.diff(got) <= 0)  # δ̃ falls with ε
