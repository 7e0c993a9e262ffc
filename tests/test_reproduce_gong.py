"""`dpjax reproduce gong-abc`: the verdicts against the exact acceptance rate and the exact posterior
(Gong 2022, Table 1 and Figures 1, 3) are judged with the sampling law's standard errors."""

import numpy as np
import pytest
from scipy import integrate, stats

from dpjax.reproduce import REGISTRY, compare
from dpjax.reproduce.gong import (
    ABC_TABLE1,
    EPS,
    EXACT_RATE_CHUNKS,
    S_DP,
    exact_posterior_pdf,
    exact_rate,
    exact_rate_row,
    pooled_rate,
    posterior_mean_row,
    posterior_moments,
)


def test_pooled_rate_is_the_binomial_rate_and_se():
    rate, se = pooled_rate(644, 100_000)
    assert rate == pytest.approx(0.644)
    assert se == pytest.approx(100 * np.sqrt(0.00644 * (1 - 0.00644) / 100_000))
    for bad in [(1, 0), (-1, 10), (11, 10)]:
        with pytest.raises(ValueError):
            pooled_rate(*bad)


def test_exact_rate_verdict_fails_a_rate_10_percent_off_and_passes_the_exact_one():
    proposals = 155_000_000  # the full run's pooled proposals at α = 75
    exact = exact_rate(75) / 100
    verdict = lambda accepted: compare([exact_rate_row(75, accepted, proposals)])["verdict"][0]
    assert verdict(round(exact * proposals)) == "pass"
    assert verdict(round(1.1 * exact * proposals)) == "fail"
    assert verdict(round(0.9 * exact * proposals)) == "fail"
    # with this run's s.e. (0.1 % relative) even the committed 20 × 1 000 draws' −1.4 % is decisive
    assert verdict(round(0.986 * exact * proposals)) == "fail"


def test_exact_rate_verdict_passes_binomial_draws_of_the_exact_rate():
    """Its z over 100 runs drawn from the exact rate is standard normal: the s.e. is the sampling law's."""
    rng = np.random.default_rng(0)
    proposals, z = 10_000_000, []
    for alpha in ABC_TABLE1:
        accepted = rng.binomial(proposals, exact_rate(alpha) / 100, size=20)
        z += [compare([exact_rate_row(alpha, a, proposals)])["z"][0] for a in accepted]
    assert abs(np.mean(z)) < 0.4 and 0.85 < np.std(z) < 1.2 and np.sum(np.abs(z) > 3.29) <= 2


def test_exact_rates_match_table_1_and_a_float64_simulation():
    """The exact rate by summation against a float64 NumPy simulation of Algorithm 1 (and the seed)."""
    rng = np.random.default_rng(1)
    for alpha, (seed, seed_se) in ABC_TABLE1.items():
        assert abs(exact_rate(alpha) - seed) < 3.29 * seed_se
        n = 2_000_000
        k = rng.poisson(rng.gamma(alpha, 1.0, n))
        p = np.mean(np.exp(-EPS * np.abs(S_DP - k)))  # the acceptance probability, averaged (Rao–Blackwell)
        se = np.exp(-EPS * np.abs(S_DP - k)).std() / np.sqrt(n)
        assert abs(100 * p - exact_rate(alpha)) < 3.29 * 100 * se


@pytest.mark.parametrize("alpha", [2, 25, 75])
def test_posterior_moments_and_density_agree(alpha):
    mean, sd = posterior_moments(alpha)
    pdf = lambda t: exact_posterior_pdf(alpha, [t])[0]
    moment = lambda j: integrate.quad(lambda t: t**j * pdf(t), 0, 300, limit=200)[0]
    m1, m2 = moment(1), moment(2)
    assert moment(0) == pytest.approx(1)
    assert m1 == pytest.approx(mean, rel=1e-6) and np.sqrt(m2 - m1**2) == pytest.approx(sd, rel=1e-5)


def test_exact_posterior_by_rejection_has_the_exact_mean():
    """Exact ABC in float64 NumPy (θ, k from the prior; accept with η(s_dp | k) / max η) against
    the summation, and the posterior-mean verdict on those draws, on the naive posterior's."""
    rng = np.random.default_rng(2)
    alpha = 50
    theta = rng.gamma(alpha, 1.0, 500_000)
    k = rng.poisson(theta)
    keep = rng.uniform(size=theta.size) < np.exp(-EPS * np.abs(S_DP - k))
    row = posterior_mean_row("Figure 3", alpha, theta[keep])
    assert row["quantity"] == "Figure 3: posterior mean of θ (α = 50), against the exact one"
    assert compare([row])["verdict"][0] == "pass"
    naive = stats.gamma(alpha + S_DP, scale=0.5).rvs(size=keep.sum(), random_state=rng)
    assert compare([posterior_mean_row("Figure 3", alpha, naive)])["verdict"][0] == "fail"


def test_gong_abc_judges_its_quick_run_and_pools_every_table_1_alpha():
    assert REGISTRY["gong-abc"].quick_verdicts
    assert set(EXACT_RATE_CHUNKS) == set(ABC_TABLE1)
