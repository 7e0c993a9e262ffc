"""The Lazzarini experiments' verdicts can fail: the privacy rows (Tables 1–6) compare the seed's δ̃ with
the mean over simulated datasets and its standard error, the utility rows carry the releases' Monte
Carlo error; δ̃ for data with values seen once (σ = 0)."""

import numpy as np
import pandas as pd
import pytest

from dpjax.reproduce import compare
from dpjax.reproduce.lazzarini import (
    MS,
    TABLES,
    Z_SEED,
    bnp_against_best,
    privacy_rows,
    py_dataset,
    seed_l2_advantage,
)

D, N = 10, 10_000  # the full run's datasets per table and draws per δ̃

# cells of the committed full run (benchmarks/results/lazzarini-privacy.json, 2026-11-23, singletons
# doubled): (table, ε, m) -> (mean, s.e. of mean, min, max) of δ̃ over its 10 datasets
COMMITTED = {
    (3, 1.0, 125): (0.48161, 0.029577, 0.3508, 0.6148),  # 2.0× the seed's 0.2383; passed at z = 2.48
    (3, 1.0, 50): (0.15188, 0.015947, 0.0862, 0.2359),
    (2, 2.0, 50): (0.56124, 0.020781, 0.4252, 0.6411),
    (2, 4.0, 250): (0.48185, 0.092831, 0.0173, 0.8050),  # 200× the seed's 0.0024; passed at z = 1.56
}


def spread_like(cell, centre):
    """D values of δ̃ spread as the committed cell's (its min–max shape, its s.d. = s.e. × √D), centred
    at ``centre``: shape (D, 1, 1), as ``privacy_rows`` takes them for one m and one ε."""
    _, se, lo, hi = COMMITTED[cell]
    v = np.linspace(lo, hi, D)
    v = (v - v.mean()) / v.std(ddof=1) * se * np.sqrt(D) + centre
    assert v.min() >= 0 and v.max() <= 1
    return v[:, None, None]


def verdict(cell, est, judged=True):
    table, eps, m = cell
    cells = {eps: TABLES[table][3][eps]}
    return compare(privacy_rows(table, est, cells, (m,), N, "singletons doubled", judged)).iloc[0]


@pytest.mark.parametrize("cell", [(3, 1.0, 125), (3, 1.0, 50), (2, 2.0, 50)])
def test_privacy_verdict_passes_the_seeds_value_and_fails_twice_it(cell):
    table, eps, m = cell
    seed = TABLES[table][3][eps][MS.index(m)][0]
    assert verdict(cell, spread_like(cell, seed)).verdict == "pass"
    twice = verdict(cell, spread_like(cell, 2 * seed))
    assert twice.verdict == "fail" and twice.z > 3.29


@pytest.mark.parametrize("cell", [(3, 1.0, 125), (2, 4.0, 250)])
def test_committed_cells_that_passed_under_the_between_dataset_spread_now_fail(cell):
    table, eps, m = cell
    mean, se, *_ = COMMITTED[cell]
    seed, pm = TABLES[table][3][eps][MS.index(m)]
    est = spread_like(cell, mean)
    row = verdict(cell, est)
    assert row.dpjax == pytest.approx(mean) and row.dpjax_se == pytest.approx(se, rel=1e-6)
    assert row.verdict == "fail"
    # the former error, the spread of one dataset's δ̃: s.d. × √(1 + 1/D) passed them
    old_se = est.std(ddof=1) * np.sqrt(1 + 1 / D)
    old = compare([{"quantity": "", "dpjax": mean, "dpjax_se": old_se, "seed": seed, "seed_se": pm / Z_SEED}])
    assert old.verdict[0] == "pass"


def test_privacy_rows_of_equal_datasets_keep_a_binomial_error():
    """Ten datasets with δ̃ = 0 give s.d. 0; the error of their mean is still that of D·N draws."""
    zeros = np.zeros((D, 1, 1))
    row = verdict((3, 3.0, 50), zeros)  # the seed: 0 ± 0
    assert row.verdict == "pass" and 0 < row.dpjax_se < 2 / (D * N)
    assert verdict((3, 1.8, 125), zeros).verdict == "fail"  # the seed: 0.0038 ± 0.00271


def test_quick_privacy_rows_carry_no_error_and_get_no_verdict():
    two = spread_like((3, 1.0, 125), 0.5)[:2]
    row = verdict((3, 1.0, 125), two, judged=False)
    assert row.verdict == "—" and row.seed == pytest.approx(0.2383) and pd.isna(row.dpjax_se)


def test_py_dataset_as_drawn_keeps_the_values_seen_once():
    drawn = py_dataset(300, 0.0, 2.0, double_singletons=False)
    doubled = py_dataset(300, 0.0, 2.0)
    assert drawn.counts.sum() == 500 and np.sum(drawn.counts == 1) > 0
    np.testing.assert_array_equal(doubled.counts, np.where(drawn.counts == 1, 2, drawn.counts))
    np.testing.assert_array_equal(doubled.values, drawn.values)


def test_utility_verdict_is_one_sided_and_carries_the_releases_error():
    rng = np.random.default_rng(0)
    base = {k: 0.06 + 0.012 * rng.standard_normal(10) for k in ("Perturbed Hist", "Dir-Multinomial")}
    base["Smoothed Hist"] = 0.36 + 0.02 * rng.standard_normal(10)
    bnp = 0.012 * rng.standard_normal(10)
    for shift, expected in ((0.06, "pass"), (0.03, "pass"), (0.10, "fail")):  # a tie, better, worse
        row, summary = bnp_against_best("chem97", {**base, "BNP": shift + bnp}, "KDE L²", "Invalsi")
        assert compare([row]).verdict[0] == expected, (shift, summary)
        assert summary["best other"] in ("Perturbed Hist", "Dir-Multinomial")
        assert summary["s.e."] == pytest.approx(
            np.std(bnp - base[summary["best other"]], ddof=1) / np.sqrt(10)
        )
    one = {k: v[:1] for k, v in {**base, "BNP": 0.10 + bnp}.items()}
    assert compare([bnp_against_best("chem97", one, "KDE L²")[0]]).verdict[0] == "—"  # one release


def test_seed_l2_advantage_from_tables_7_and_8():
    assert seed_l2_advantage("chem97") == pytest.approx(0.036688 - 0.037517)
    assert seed_l2_advantage("cps1988") == pytest.approx(0.032337 - 0.049465)
