"""Ju, Awan, Gong & Rao (2022), data-augmentation MCMC: the naive-Bayes log-linear model (§4: Table 1 and
Figure 1) and the clamped linear regression (§5: Figure 2; Appendix S-5: its coverage table and Figure S1).

Both run the seed's Algorithm 1 (exact conjugate θ-step, then the record sweep; no non-centred moves) as
one :func:`dpjax.studies.run_study` over ε × data: ``data = "fixed"`` releases the one confidential dataset
anew in every replicate (the posterior means and acceptance rates of Figures 1, 2 and S1), ``"fresh"``
draws a new confidential dataset and release per replicate (the coverage tables). The replicates of a cell
run as one compiled, vmapped computation and only summaries come back.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ._core import Report, compare, experiment, study_table

EPS = (0.1, 0.3, 1.0, 3.0, 10.0)  # the seed's privacy levels (§4 "Simulation setup")
NOMINAL = 0.9  # level of the seed's credible intervals
SEED_REPLICATES = 100  # "Coverage is based on 100 replicates"

N_LOGLINEAR = 100  # N records, I = 5 classes, K = 5 features, J = 3 levels (§4)
SEED_P = (0.097, 0.148, 0.145, 0.446, 0.163)  # true class probabilities, Table 1's top row
SEED_LOGLINEAR_COVERAGE = {  # Table 1: coverage of 90 % intervals for p_1..p_5
    0.1: (1, 1, 1, 0.36, 1),
    0.3: (0.97, 1, 1, 0.59, 1),
    1.0: (0.94, 0.99, 0.97, 0.83, 0.98),
    3.0: (0.95, 0.91, 0.97, 0.89, 0.93),
    10.0: (0.92, 0.88, 0.94, 0.92, 0.90),
}

N_REGRESSION = 100  # n subjects, p = 2 predictors (§5, Appendix S-5)
SEED_REGRESSION_COVERAGE = {  # Appendix S-5, its Table 1: coverage of 90 % intervals for β0, β1, β2
    0.1: (0.99, 0.60, 0.99),
    0.3: (1.0, 0.66, 0.94),
    1.0: (1.0, 0.84, 0.80),
    3.0: (1.0, 0.84, 0.75),
    10.0: (0.93, 0.87, 0.85),
}


def coverage_se(coverage: float, replicates: int) -> float:
    """Binomial standard error of an empirical coverage, from the "plus two" estimate (x + 2)/(r + 4), so
    that a coverage of 0 or 1 over few replicates does not claim zero error.

    >>> round(coverage_se(0.9, 100), 4), round(coverage_se(1.0, 100), 4)
    (0.0313, 0.0135)
    """
    p = (coverage * replicates + 2) / (replicates + 4)
    return math.sqrt(p * (1 - p) / (replicates + 4))


def _scale(quick: bool) -> dict:
    """The seed's setting (100 replicates, 10 000 iterations, 5 000 burn-in) or a few-second version."""
    if quick:
        return {"replicates": 4, "num_warmup": 100, "num_samples": 200}
    return {"replicates": 100, "num_warmup": 5000, "num_samples": 5000}


def _run(kernel, n, mechanism, statistic, simulate, truth, scale, rng_key, progress):
    """The study over ε × data: each replicate releases the confidential ``statistic`` anew with
    ``mechanism(ε)`` ("fixed" data) or draws a fresh dataset and release ``simulate(key, ε)`` ("fresh"), and
    runs one chain; per replicate come back the posterior mean and 90 % coverage of the parameter named in
    ``truth`` and the record acceptance (mean and minimum over the kept iterations)."""
    from dpjax.studies import mcmc_cell, posterior_summaries, run_study

    def release(key, epsilon, fresh):
        k_fixed, k_fresh = jax.random.split(key)
        fixed = mechanism(epsilon).release(k_fixed, statistic)
        return (n, epsilon, jnp.where(fresh > 0, simulate(k_fresh, epsilon), fixed))

    ((site, value),) = truth.items()
    cell = mcmc_cell(
        kernel,
        release,
        num_warmup=scale["num_warmup"],
        num_samples=scale["num_samples"],
        stats=("record_accept_rate",),
    )
    summaries = posterior_summaries(
        {site: ("mean", "coverage"), "record_accept_rate": ("mean", "min")},
        truth={site: np.asarray(value)},
        level=NOMINAL,
    )
    # "fresh" is a float, hence traced like ε: the whole study is one compilation (the DA kernel's
    # compilation dominates a quick run); a string would compile each kind of data apart.
    grid = {"epsilon": list(EPS), "fresh": [0.0, 1.0]}
    df = run_study(
        cell,
        grid,
        replicates=scale["replicates"],
        rng_key=rng_key,
        summaries=summaries,
        progress_bar=progress,
        out=study_table(site),
    )
    df.insert(1, "data", np.where(df["fresh"] > 0, "fresh", "fixed"))
    return df


def _coverage(df, site, labels, true_values, seed_table):
    """Comparison rows (coverage of each parameter at each ε next to the seed's) and the table against
    the nominal 90 %, from the ``fresh`` replicates."""
    rows, nominal = [], []
    for eps in EPS:
        fresh = df[(df["epsilon"] == eps) & (df["data"] == "fresh")]
        r = len(fresh)
        for j, (label, true, seed) in enumerate(zip(labels, true_values, seed_table[eps])):
            c = float(fresh[f"{site}[{j}]_covered"].mean())
            se, seed_se = coverage_se(c, r), coverage_se(seed, SEED_REPLICATES)
            rows.append(
                {
                    "quantity": f"coverage of {label} = {true:g}, ε = {eps:g}",
                    "dpjax": c,
                    "dpjax_se": se,
                    "seed": float(seed),
                    "seed_se": seed_se,
                }
            )
            nominal.append(
                {
                    "ε": eps,
                    "parameter": f"{label} = {true:g}",
                    "dpjax": c,
                    "s.e.": se,
                    "z vs 90 %": (c - NOMINAL) / se,
                    "seed": float(seed),
                    "seed s.e.": seed_se,
                    "seed z vs 90 %": (seed - NOMINAL) / seed_se,
                }
            )
    return rows, pd.DataFrame(nominal)


def _acceptance(df):
    """Record acceptance of the ``fixed`` chains against the seed's bound e^{-ε} (Proposition 3.1): a
    comparison row per ε (the shortfall of the smallest per-iteration rate below the bound, which the seed
    finds to be 0 in Figures 1b and S1) and the table of the means and minima."""
    rows, table = [], []
    for eps in EPS:
        fixed = df[(df["epsilon"] == eps) & (df["data"] == "fixed")]
        means, lowest, bound = (
            fixed["record_accept_rate_mean"],
            float(fixed["record_accept_rate_min"].min()),
            math.exp(-eps),
        )
        rows.append(
            {
                "quantity": f"record acceptance: shortfall of the minimum below e^(-ε), ε = {eps:g}",
                "dpjax": max(0.0, bound - lowest),
                "seed": 0.0,
                "tol": 0.0,
            }
        )
        table.append(
            {
                "ε": eps,
                "mean acceptance": float(means.mean()),
                "s.e. (over releases)": float(means.std(ddof=1) / math.sqrt(len(means))),
                "minimum": lowest,
                "e^(-ε)": bound,
                "seconds (compilation included)": float(
                    df[df["epsilon"] == eps]
                    .groupby("data")[["seconds", "compile_seconds"]]
                    .first()
                    .to_numpy()
                    .sum()
                ),
            }
        )
    return rows, pd.DataFrame(table)


def _posterior_means(df, site, labels, confidential):
    """Mean and s.d. over the releases of one confidential dataset of each chain's posterior mean."""
    table = []
    for eps in EPS:
        fixed = df[(df["epsilon"] == eps) & (df["data"] == "fixed")]
        row = {"ε": eps}
        for j, label in enumerate(labels):
            m = fixed[f"{site}[{j}]_mean"]
            row[f"{label} mean"], row[f"{label} s.d."] = float(m.mean()), float(m.std(ddof=1))
        table.append(row)
    table.append({"ε": math.inf, **{f"{lab} mean": float(v) for lab, v in zip(labels, confidential)}})
    return pd.DataFrame(table)


def _figure(df, site, labels, confidential, prior_mean, titles):
    """(a) the posterior means over the releases, per ε and parameter, with the confidential-data posterior
    means (lines) and the prior mean (dashed); (b) each chain's mean and minimum record acceptance with
    the bound e^{-ε}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    k = len(labels)
    for i, eps in enumerate(EPS):
        fixed = df[(df["epsilon"] == eps) & (df["data"] == "fixed")]
        for j in range(k):
            means = fixed[f"{site}[{j}]_mean"].to_numpy()
            x = np.full(len(means), i + (j - (k - 1) / 2) * 0.6 / k)
            axes[0].scatter(x, means, s=3, color=f"C{j}", alpha=0.5)
        acc = fixed["record_accept_rate_mean"].to_numpy()
        axes[1].scatter(np.full(len(acc), i - 0.1), acc, s=3, color="C0")
        axes[1].scatter(np.full(len(acc), i + 0.1), fixed["record_accept_rate_min"], s=3, color="C1")
    for j, label in enumerate(labels):
        axes[0].axhline(confidential[j], color=f"C{j}", lw=1, label=label)
    axes[0].axhline(prior_mean, color="k", ls="--", lw=1)
    axes[1].plot(range(len(EPS)), np.exp(-np.array(EPS)), "k-", label="e^{-ε}")
    ticks = {"xticks": range(len(EPS)), "xticklabels": [f"{e:g}" for e in EPS], "xlabel": "ε"}
    axes[0].set(ylabel="posterior mean", title=titles[0], **ticks)
    axes[1].set(ylabel="record acceptance", title=titles[1], **ticks)
    axes[0].legend(fontsize=7)
    axes[1].legend()
    fig.tight_layout()
    return fig


@experiment(
    "ju-loglinear",
    source="Ju, Awan, Gong & Rao (2022) §4, Table 1 and Figure 1",
    title="Naive-Bayes log-linear model: coverage of 90 % intervals for p_i, posterior means and record "
    "acceptance against e^{-ε}",
    full_cost="~13 min",
)
def ju_loglinear(quick: bool, progress: bool) -> Report:
    from numpyro.infer import Predictive

    import dpjax
    import dpjax.models as m

    scale = _scale(quick)
    k_data, k_study = jax.random.split(jax.random.key(2022))
    # The seed's p sum to .999; the feature conditionals q are one fixed draw from the prior (the seed does
    # not report its own).
    p = jnp.asarray(np.array(SEED_P) / sum(SEED_P), jnp.float32)
    sim = lambda q: Predictive(
        m.naive_bayes, posterior_samples={"p": p[None], "q": q[None]}, return_sites=["x", "y", "counts"]
    )

    # q_{k,i,·} ~ Dir(2), the model's prior, drawn by NumPy: a JAX gamma sampler costs seconds to compile
    q = jnp.asarray(np.random.default_rng(2022).dirichlet(np.full(3, 2.0), size=(5, 5)), jnp.float32)

    @jax.jit  # one compilation instead of one per operation
    def confidential_counts():
        data = sim(q)(k_data, N_LOGLINEAR, 1.0)
        return jax.vmap(m.naive_bayes_counts(5, 3))({"y": data["y"][0], "x": data["x"][0]}).sum(0)

    counts = confidential_counts()
    confidential = np.asarray((2 + counts[0].sum(-1)) / (10 + N_LOGLINEAR))  # Dirichlet(2) posterior mean
    kernel = dpjax.infer.DataAugmentationKernel(
        m.naive_bayes, theta_update=m.naive_bayes_update(), noncentred_moves=0
    )
    df = _run(
        kernel,
        N_LOGLINEAR,
        lambda eps: dpjax.LaplaceMechanism(eps, m.naive_bayes_sensitivity(5)),
        counts,
        lambda key, eps: sim(q)(key, N_LOGLINEAR, eps)["counts"][0],
        {"p": p},
        scale,
        k_study,
        progress,
    )
    labels = [f"p{i + 1}" for i in range(5)]
    cov_rows, nominal = _coverage(df, "p", labels, SEED_P, SEED_LOGLINEAR_COVERAGE)
    acc_rows, acceptance = _acceptance(df)
    fig = _figure(
        df,
        "p",
        labels,
        confidential,
        0.2,
        (
            "(a) posterior means of p_i (lines: confidential; dashed: prior)",
            "(b) mean (blue) and minimum (orange) acceptance",
        ),
    )
    return Report(
        title="Naive-Bayes log-linear model (Ju et al. §4, Table 1 and Figure 1)",
        comparison=compare(cov_rows + acc_rows),
        tables={
            "Coverage against the nominal 90 % (ours and the seed's)": nominal,
            "Record acceptance (Figure 1b), chains on releases of one dataset": acceptance,
            "Posterior means of p over the releases (Figure 1a; ε = inf: confidential-data posterior)": (
                _posterior_means(df, "p", labels, confidential)
            ),
        },
        figures={"": fig},
        settings={
            **scale,
            "N": N_LOGLINEAR,
            "epsilon": EPS,
            "true_p": np.asarray(p),
            "algorithm": "Algorithm 1",
        },
        notes=(
            f"N = {N_LOGLINEAR}, I = 5 classes, K = 5 features, J = 3 levels, Laplace(2K/ε) noise on "
            f"every count, Dirichlet(2) priors; {scale['replicates']} replicates per ε, "
            f"{scale['num_warmup']} burn-in + {scale['num_samples']} kept iterations. True p: Table 1's top "
            "row rescaled to sum to 1; the feature conditionals are one fixed draw from the prior (the seed "
            "does not report its own). Coverage s.e.: binomial (plus-two estimate) over our replicates and "
            "the seed's 100. The seed itself reports coverage far from 90 % for p4 at small ε (the "
            "posterior is then near the prior, centred at 0.2); the nominal table shows whether ours departs "
            "in the same cells. Acceptance rows pass when no iteration of any chain accepted a smaller "
            "fraction of the records than the bound e^(-ε)."
        ),
    )


@experiment(
    "ju-regression",
    source="Ju, Awan, Gong & Rao (2022) §5 Figure 2 and Appendix S-5 (coverage table, Figure S1)",
    title="Clamped linear regression: posterior means of β over 100 releases, coverage of 90 % intervals, "
    "record acceptance",
    full_cost="~1.5 min",
)
def ju_regression(quick: bool, progress: bool) -> Report:
    from numpyro.infer import Predictive

    import dpjax
    import dpjax.models as m

    scale = _scale(quick)
    k_data, k_study = jax.random.split(jax.random.key(2023))
    beta = jnp.array(m.regression.SEED_BETA)
    sim = Predictive(
        m.clamped_regression, posterior_samples={"beta": beta[None]}, return_sites=["x", "y", "summary"]
    )
    data = jax.jit(lambda: sim(k_data, N_REGRESSION, 1.0))()
    x, y = data["x"][0], data["y"][0]
    xx = np.c_[np.ones(N_REGRESSION), x]
    # conjugate posterior mean on the unclamped data: σ² = 2, β ~ N(0, 2² I)
    confidential = np.linalg.solve(xx.T @ xx / 2 + np.eye(3) / 4, xx.T @ np.asarray(y) / 2)
    kernel = dpjax.infer.DataAugmentationKernel(
        m.clamped_regression, theta_update=m.regression_update(), noncentred_moves=0
    )
    df = _run(
        kernel,
        N_REGRESSION,
        lambda eps: dpjax.LaplaceMechanism(eps, m.regression_sensitivity(2)),
        jax.vmap(m.regression_statistic())({"x": x, "y": y}).sum(0),
        lambda key, eps: sim(key, N_REGRESSION, eps)["summary"][0],
        {"beta": beta},
        scale,
        k_study,
        progress,
    )
    labels = [f"β{j}" for j in range(3)]
    cov_rows, nominal = _coverage(df, "beta", labels, m.regression.SEED_BETA, SEED_REGRESSION_COVERAGE)
    acc_rows, acceptance = _acceptance(df)
    fig = _figure(
        df,
        "beta",
        labels,
        confidential,
        0.0,
        (
            "(Figure 2) posterior means of β (lines: confidential; dashed: 0)",
            "(Figure S1) mean (blue) and minimum (orange) acceptance",
        ),
    )
    return Report(
        title="Clamped linear regression (Ju et al. §5 Figure 2, Appendix S-5)",
        comparison=compare(cov_rows + acc_rows),
        tables={
            "Coverage against the nominal 90 % (ours and the seed's)": nominal,
            "Record acceptance (Figure S1), chains on releases of one dataset": acceptance,
            "Posterior means of β over the releases (Figure 2; ε = inf: confidential-data posterior)": (
                _posterior_means(df, "beta", labels, confidential)
            ),
        },
        figures={"": fig},
        settings={
            **scale,
            "n": N_REGRESSION,
            "epsilon": EPS,
            "beta_true": m.regression.SEED_BETA,
            "sensitivity": m.regression_sensitivity(2),
            "algorithm": "Algorithm 1 with the exact conjugate β-step",
        },
        notes=(
            f"n = {N_REGRESSION}, p = 2, x ~ N((0.9, -1.17), I), σ² = 2, β ~ N(0, 2² I), values clamped to "
            f"[-10, 10]; data generated with the seed's β = {m.regression.SEED_BETA} (Appendix S-5). Laplace "
            f"noise with the proven bounded-DP sensitivity p² + 4p + 3 = {m.regression_sensitivity(2)} (the "
            f"seed used 13); {scale['replicates']} replicates per ε, {scale['num_warmup']} burn-in + "
            f"{scale['num_samples']} kept iterations. The seed shows the posterior means only as a scatter "
            "plot (Figure 2): they shrink to the prior mean 0 as ε → 0 and approach, without reaching "
            "(clamping), the confidential posterior as ε grows. Coverage s.e.: binomial (plus-two estimate) "
            "over our replicates and the seed's 100; the seed reports β1 (furthest from the prior mean) "
            "under-covered. Acceptance rows pass when no iteration of any chain accepted a smaller fraction "
            "of the records than the bound e^(-ε)."
        ),
    )
