"""Gong (2022), exact ABC and Monte Carlo EM for DP releases: the Poisson example (§5.1, Appendix E) and the
NSW / Lalonde example (§5.2, Appendix F)."""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from scipy import optimize, stats

from ._core import Report, compare, experiment

S_DP, EPS = 37.4, 0.2  # the seed's release and budget, s ~ Pois(θ), Laplace(1/ε) noise


def poisson_log_likelihood(theta):
    """Exact log p(s_dp | θ) = log Σ_k Pois(k; θ) Laplace(s_dp − k; 1/ε), by summation over k."""
    k = np.arange(0, 600)
    log_terms = stats.poisson.logpmf(k, theta) + stats.laplace.logpdf(S_DP - k, scale=1 / EPS)
    return np.logaddexp.reduce(log_terms)


def exact_poisson_mle():
    """θ̂ and the observed information −∂²/∂θ² log p(s_dp | θ) at θ̂, numerically."""
    theta = optimize.minimize_scalar(lambda t: -poisson_log_likelihood(t), bounds=(1, 100), method="bounded")
    t, h = theta.x, 1e-3
    info = (
        -(poisson_log_likelihood(t + h) - 2 * poisson_log_likelihood(t) + poisson_log_likelihood(t - h))
        / h**2
    )
    return float(t), float(info)


@experiment(
    "gong-mcem",
    source="Gong (2022) §5.1 and Appendix E",
    title="MLE of θ from s_dp = 37.4 by importance-sampling MCEM, with Louis's observed information",
    full_cost="~6 min (closed-form and optax M-steps)",
)
def gong_mcem(quick: bool, progress: bool) -> Report:
    from dpjax.infer import mcem
    from dpjax.models import poisson_count

    stages = (1_000, 10_000, 20_000) if quick else (1_000, 100_000, 10_000_000)
    mle, info = exact_poisson_mle()
    runs = []
    for name, kw in [
        ("closed-form M-step", {"m_step": lambda recs, w: {"theta": w @ recs["s"][:, 0]}}),
        ("optax M-step (adam)", {}),
    ]:
        t = time.perf_counter()
        out = mcem(
            jax.random.key(0),
            poisson_count,
            {"theta": 1.0},
            25.0,
            jnp.array(S_DP),
            num_particles=stages,
            tolerances=(1e-3, 1e-4, 1e-5),
            progress_bar=progress,
            **kw,
        )
        lo, hi = out.wald_interval(0.95)["theta"]
        runs.append(
            {
                "M-step": name,
                "θ̂": float(out.params["theta"]),
                "observed information": float(out.information[0, 0]),
                "s.e.": float(out.std_errors["theta"]),
                "95 % Wald interval": f"[{float(lo):.2f}, {float(hi):.2f}]",
                "iterations": int(out.ess.shape[0]),
                "final ESS": float(out.ess[-1]),
                "seconds": time.perf_counter() - t,
            }
        )
    best = runs[0]
    # The seed prints θ̂ to 3 decimals from 10⁷ particles; its MC error is ~0.01. Ours with a final
    # stage of N particles: the IS-MCEM fixed point moves by ~ s.e.(θ̂)/√ESS.
    tol_theta = 0.05 if not quick else 0.2
    comparison = compare(
        [
            {"quantity": "θ̂ (closed-form M-step)", "dpjax": best["θ̂"], "seed": 37.237, "tol": tol_theta},
            {"quantity": "θ̂ (optax M-step)", "dpjax": runs[1]["θ̂"], "seed": 37.237, "tol": tol_theta},
            {
                "quantity": "θ̂ against the exact MLE (numerical)",
                "dpjax": best["θ̂"],
                "seed": mle,
                "tol": tol_theta,
            },
            {
                "quantity": "observed information",
                "dpjax": best["observed information"],
                "seed": 1.582e-2,
                "tol": 0.03 * 1.582e-2,
            },
            {
                "quantity": "observed information against the exact one",
                "dpjax": best["observed information"],
                "seed": info,
                "tol": 0.03 * info,
            },
        ]
    )
    return Report(
        title="IS-MCEM, Poisson example (Gong §5.1)",
        comparison=comparison,
        tables={"Runs": pd.DataFrame(runs)},
        settings={"stages": stages, "tolerances": (1e-3, 1e-4, 1e-5), "s_dp": S_DP, "epsilon": EPS},
        notes=(
            f"s ~ Pois(θ), Laplace noise with ε = {EPS}, s_dp = {S_DP}; stages N = "
            f"{', '.join(f'{n:,}' for n in stages)} particles from θ⁽¹⁾ = 1. The naive answer (s_dp taken "
            "as exact) is θ̂ = 37.4 with information 2.674e-2. "
            f"Exact values by summation over the count: θ̂ = {mle:.3f}, information {info:.4e}. "
            'The rows "against the exact" put the numerical answer in the seed column.'
        ),
    )


LALONDE_PARAMS = ("tau", "mu", "sigma_t2", "sigma_c2")
LEVELS = (1, 25, 50, 75, 99)


def _quantiles(samples):
    draws = {
        "tau": samples["tau"],
        "mu": samples["mu"],
        "sigma_t2": samples["sigma_t"] ** 2,
        "sigma_c2": samples["sigma_c"] ** 2,
    }
    return {k: np.percentile(np.asarray(v, float), LEVELS) for k, v in draws.items()}


def _boxplots(rows):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(rows), 4, figsize=(13, 2.7 * len(rows)), sharex="col", squeeze=False)
    for i, (label, fits) in enumerate(rows.items()):
        for j, p in enumerate(LALONDE_PARAMS):
            stats_ = [
                dict(zip(("whislo", "q1", "med", "q3", "whishi"), q[p]), label=str(r + 1))
                for r, q in enumerate(fits)
            ]
            ax = axes[i, j]
            ax.bxp(stats_, orientation="horizontal", showfliers=False)
            if p == "tau":
                ax.axvline(0, color="grey", lw=0.8)
            ax.set_title(f"{label}: {p.replace('sigma_', 'σ_').replace('2', '²')}", fontsize=9)
    fig.suptitle("Lalonde (NSW), posterior quantiles (1, 25, 50, 75, 99) %, one box per fit")
    fig.tight_layout()
    return fig


@experiment(
    "gong-lalonde",
    source="Gong (2022) §5.2, Figure 2 and Appendix F",
    title="NSW job-training data: confidential, naive and exact-ABC posteriors from ten Laplace releases",
    full_cost="~3 min",
    needs=("causaldata",),
)
def gong_lalonde(quick: bool, progress: bool) -> Report:
    """Ten confidential NUTS fits to s = (ȳ_t, ȳ_c, s_t², s_c²), ten naive NUTS fits that take each of ten
    Laplace releases s_dp as if it were s, and ten exact rejection-ABC fits (Algorithm 1) to the same
    releases; the seed's Figure 2 rows."""
    from numpyro import handlers
    from numpyro.infer import MCMC, NUTS

    from dpjax.infer import exact_abc
    from dpjax.models import LALONDE_MECHANISM, lalonde_summaries, nsw_summaries

    fits, num_samples, num_warmup = (2, 100, 100) if quick else (10, 4000, 1000)
    names = ("ybar_t", "ybar_c", "s2_t", "s2_c")

    def as_exact(summaries, release):  # the model with the summaries observed (naive when they are s_dp)
        data = {k: summaries[i][None] for i, k in enumerate(names)}
        handlers.condition(lalonde_summaries, data=data)(release)

    s, n_t, n_c = nsw_summaries()
    releases = [LALONDE_MECHANISM.release(jax.random.key(1000 + r), jnp.asarray(s)) for r in range(fits)]
    mcmc = MCMC(
        NUTS(as_exact),
        num_warmup=num_warmup,
        num_samples=num_samples,
        progress_bar=progress,
        jit_model_args=True,
    )
    rows = {"confidential": [], "naive": [], "exact ABC": []}
    abc = []
    for r, release in enumerate(releases):
        mcmc.run(jax.random.key(r), jnp.asarray(s), release)
        rows["confidential"].append(_quantiles(mcmc.get_samples()))
        mcmc.run(jax.random.key(r), release, release)
        rows["naive"].append(_quantiles(mcmc.get_samples()))
        t = time.perf_counter()
        out = exact_abc(
            jax.random.key(r), lalonde_summaries, release, num_samples=num_samples, progress_bar=progress
        )
        abc.append(
            {
                "acceptance rate": out.acceptance_rate,
                "proposals": out.num_proposals,
                "seconds": time.perf_counter() - t,
            }
        )
        rows["exact ABC"].append(_quantiles(out.samples))
    summary = []
    for label, qs in rows.items():
        for p in LALONDE_PARAMS:
            q = np.array([f[p] for f in qs])
            summary.append(
                {
                    "fit": label,
                    "parameter": p,
                    "lowest median": q[:, 2].min(),
                    "highest median": q[:, 2].max(),
                    "mean 50 % width": np.mean(q[:, 3] - q[:, 1]),
                    "mean 98 % width": np.mean(q[:, 4] - q[:, 0]),
                }
            )
    positive = {k: float(np.mean([f["tau"][0] > 0 for f in v])) for k, v in rows.items()}
    excludes_zero = {
        k: float(np.mean([f["tau"][0] > 0 or f["tau"][4] < 0 for f in v])) for k, v in rows.items()
    }
    width = {k: np.array([f["tau"][4] - f["tau"][0] for f in v]) for k, v in rows.items()}
    ratio = width["exact ABC"].mean() / width["confidential"].mean()
    ratio_se = ratio * width["exact ABC"].std(ddof=1) / width["exact ABC"].mean() / np.sqrt(fits)
    comparison = compare(
        [
            {"quantity": "treated units n_t", "dpjax": n_t, "seed": 185, "tol": 0},
            {"quantity": "control units n_c", "dpjax": n_c, "seed": 260, "tol": 0},
            # "the posterior mass of τ is overwhelmingly positive" in every confidential fit (Fig. 2, top)
            {
                "quantity": "confidential fits with 1 % quantile of τ > 0",
                "dpjax": positive["confidential"],
                "seed": 1.0,
                "tol": 0,
            },
            # "we can no longer conclude that the treatment effect is significant in either direction"
            {
                "quantity": "exact-ABC fits whose 98 % interval of τ excludes 0",
                "dpjax": excludes_zero["exact ABC"],
                "seed": 0.0,
                "tol": 0,
            },
            # no seed figure: how much wider the exact posterior of τ is (Figure 2, "substantially inflated")
            {"quantity": "98 % width of τ, exact ABC / confidential", "dpjax": ratio, "dpjax_se": ratio_se},
        ]
    )
    return Report(
        title="Lalonde / NSW example (Gong §5.2, Figure 2)",
        comparison=comparison,
        tables={"Posterior quantiles over the fits": pd.DataFrame(summary), "Exact ABC": pd.DataFrame(abc)},
        figures={"fig2": _boxplots(rows)},
        settings={
            "fits": fits,
            "num_samples": num_samples,
            "num_warmup": num_warmup,
            "summaries": np.asarray(s).tolist(),
            "n_t": n_t,
            "n_c": n_c,
        },
        notes=" ".join(
            [
                "Data: causaldata `nsw_mixtape`, s = (ȳ_t, ȳ_c, s_t², s_c²) =",
                f"({', '.join(f'{v:.3f}' for v in s)}) in $1k.",
                "Laplace scales (3, 3, 6, 6) (ε = 1/3 per mean, 1/6 per variance, clamped to [0, 100]).",
                "Priors τ ~ N(0, 5), μ ~ N(4, 5), σ_t, σ_c ~ Gamma(2, rate 0.2).",
                f"{fits} releases; each fit {num_samples} draws (NUTS after {num_warmup} warmup, or i.i.d.",
                "exact ABC). The seed's Figure 2 is a plot: its verdicts are the statements of its text",
                "(cited in the source). Naive fits are tight and displaced, as in the seed (quantile table).",
            ]
        ),
    )


ABC_TABLE1 = {
    2: (0.09, 0.02),
    5: (0.21, 0.06),
    25: (16.24, 0.35),
    50: (19.83, 0.31),
    75: (0.64, 0.07),
}  # %, s.e. (Gong 2022, Table 1)


def _count_posterior(alpha):
    """Prior predictive weights of the count k (NegBin(α, 1/2)) and the Laplace density ratio
    η(s_dp | k) / max η, the acceptance probability of a proposal with count k."""
    from scipy.special import gammaln

    k = np.arange(0, 600)
    log_prior = gammaln(alpha + k) - gammaln(alpha) - gammaln(k + 1) - (alpha + k) * np.log(2)
    return k, np.exp(log_prior), np.exp(-EPS * np.abs(S_DP - k))


def poisson_count_posterior(alpha):
    """``(k, w)``: the exact posterior of the confidential count given s_dp, so that θ | s_dp is the
    mixture Σ_k w_k Gamma(α + k, rate 2)."""
    k, prior, accept = _count_posterior(alpha)
    return k, prior * accept / (prior @ accept)


# The rows against the exact rate pool calls of exact_abc of CHUNK accepted draws each (one compilation):
# EXACT_RATE_CHUNKS[α] calls at α. 20 repetitions of 1 000 draws (Table 1) leave the rate a relative s.e.
# of ~0.6 %; 10 calls at α = 75 (1.6·10⁸ proposals) cut it to 0.1 %, 20 calls at α = 25 and 50 (~10⁷
# proposals) to 0.06 %; at α = 2 and 5 one call (10⁸ and 5·10⁷ proposals) gives 0.3 %.
CHUNK = 100_000
EXACT_RATE_CHUNKS = {2: 1, 5: 1, 25: 20, 50: 20, 75: 10}
FIGURE3_ALPHAS = (2, 5, 50, 75)  # Appendix E, Figure 3 (a)–(d)


def pooled_rate(accepted, proposals):
    """``(rate %, s.e. %)`` of ``accepted`` out of ``proposals``, the s.e. √(p(1 − p)/N) at p = accepted / N.

    Binomial and negative-binomial sampling (a run that stops at a number of acceptances, as
    exact_abc does at a whole batch) have the same likelihood p^a (1 − p)^(N − a), so this s.e. holds for
    both; it is the sampling law's, never the spread of a few replicates.

    >>> rate, se = pooled_rate(1_000, 100_000)
    >>> round(rate, 6), round(se, 5)
    (1.0, 0.03146)
    """
    if proposals <= 0 or not 0 <= accepted <= proposals:
        raise ValueError(f"pooled_rate: {accepted} accepted of {proposals} proposals")
    p = accepted / proposals
    return 100 * p, 100 * float(np.sqrt(p * (1 - p) / proposals))


def exact_rate(alpha):
    """The exact acceptance rate (%) of Algorithm 1: Σ_k p(k) η(s_dp | k) / max η."""
    _, prior, accept = _count_posterior(alpha)
    return 100 * float(prior @ accept)


def exact_rate_row(alpha, accepted, proposals):
    """The comparison row of a pooled run's acceptance rate against the exact rate, judged with the
    binomial s.e. of that run (:func:`pooled_rate`)."""
    rate, se = pooled_rate(accepted, proposals)
    quantity = f"acceptance %, α = {alpha}, against the exact rate"
    return {"quantity": quantity, "dpjax": rate, "dpjax_se": se, "seed": exact_rate(alpha)}


def posterior_moments(alpha):
    """Mean and sd of the exact posterior of θ given s_dp: the mixture Σ_k w_k Gamma(α + k, rate 2)."""
    k, w = poisson_count_posterior(alpha)
    mean = float(w @ (alpha + k) / 2)
    return mean, float(np.sqrt(w @ ((alpha + k) / 4 + ((alpha + k) / 2) ** 2) - mean**2))


def exact_posterior_pdf(alpha, grid):
    """The exact posterior density of θ given s_dp on ``grid``."""
    k, w = poisson_count_posterior(alpha)
    keep = w > 1e-14
    return stats.gamma.pdf(np.asarray(grid)[:, None], a=alpha + k[keep], scale=0.5) @ w[keep]


def posterior_mean_row(label, alpha, theta):
    """The posterior mean of exact-ABC draws (i.i.d.: MCSE sd / √n) against the exact one."""
    theta = np.asarray(theta, float)
    return {
        "quantity": f"{label}: posterior mean of θ (α = {alpha}), against the exact one",
        "dpjax": float(theta.mean()),
        "dpjax_se": float(theta.std(ddof=1) / np.sqrt(theta.size)),
        "seed": posterior_moments(alpha)[0],
    }


def _posterior_panel(ax, alpha, theta, hist_draws):
    """One panel of Figures 1 and 3: exact-ABC histogram, exact, naive and prior densities, s_dp."""
    naive, prior = stats.gamma(alpha + S_DP, scale=0.5), stats.gamma(float(alpha))
    lo = min(prior.ppf(5e-4), naive.ppf(5e-4), np.quantile(theta, 5e-4), S_DP - 2)
    hi = max(prior.ppf(1 - 5e-4), naive.ppf(1 - 5e-4), np.quantile(theta, 1 - 5e-4), S_DP + 2)
    grid = np.linspace(max(lo, 1e-3), hi, 500)
    shown = theta[:hist_draws]
    ax.hist(shown, bins=60, range=(grid[0], grid[-1]), density=True, color="k", alpha=0.35,
            label=f"exact ABC ({shown.size:,} draws)")  # fmt: skip
    ax.plot(grid, exact_posterior_pdf(alpha, grid), "g-", label="exact posterior (summation over the count)")
    ax.plot(grid, naive.pdf(grid), "r:", label="naive posterior")
    ax.plot(grid, prior.pdf(grid), "b--", label=f"prior Gamma({alpha}, 1)")
    ax.plot([S_DP], [0], "kd", clip_on=False)
    ax.set(xlabel="θ", xlim=(grid[0], grid[-1]))


@experiment(
    "gong-abc",
    source="Gong (2022) §5.1, Table 1, Figure 1 and Appendix E Figure 3",
    title="Exact rejection ABC for the Poisson count: acceptance rates (Table 1), posteriors (Figures 1, 3)",
    full_cost="~1.5 min",
    quick_verdicts=True,
)
def gong_abc(quick: bool, progress: bool) -> Report:
    """Table 1 as the seed ran it (20 repetitions of 1 000 accepted draws per α), the acceptance rate
    against the exact one from a pooled run of CHUNK-draw calls per α, and the posteriors of Figure 1
    (α = 25) and Figure 3 (α = 2, 5, 50, 75) from that run's draws. Every standard error comes from the
    sampling law (binomial counts, i.i.d. draws), so the quick run's verdicts are sound too."""
    import matplotlib.pyplot as plt

    from dpjax.infer import exact_abc
    from dpjax.models import poisson_count

    # quick: every call draws 1 000 (one compilation); full: 1 000 (Table 1) and CHUNK (two)
    reps, draws, chunk = (2, 1000, 1000) if quick else (20, 1000, CHUNK)
    chunks = {a: 1 for a in ABC_TABLE1} if quick else EXACT_RATE_CHUNKS
    hist_draws = 1000 if quick else 10_000  # the seed's histograms: 10⁴ draws

    def run(key, alpha, num_samples):
        out = exact_abc(
            key, poisson_count, jnp.asarray(float(alpha)), jnp.array(S_DP), num_samples=num_samples,
            batch_size=100_000, max_proposals=10**10, progress_bar=progress,
        )  # fmt: skip
        return out, round(out.acceptance_rate * out.num_proposals)

    table1, runs, draws_at, comparison = [], [], {}, []
    for alpha, (seed, seed_se) in ABC_TABLE1.items():
        # Table 1: the mean rate over `reps` runs; its s.e. from each run's binomial counts (the
        # spread of 2 quick rates has one degree of freedom, and a z-test at 3.29 on it fails a right
        # answer ~19 % of the time)
        outs = [run(jax.random.key(100 * alpha + r), alpha, draws)[0] for r in range(reps)]
        mean = 100 * float(np.mean([o.acceptance_rate for o in outs]))
        se = 100 * float(np.sqrt(np.sum([o.acceptance_se**2 for o in outs]))) / reps
        # against the exact rate: `chunks[alpha]` calls of `chunk` draws pooled, binomial s.e.
        t, accepted, proposals, theta = time.perf_counter(), 0, 0, []
        for c in range(chunks[alpha]):
            out, a = run(jax.random.key(1_000_000 + 1000 * alpha + c), alpha, chunk)
            accepted, proposals = accepted + a, proposals + out.num_proposals
            theta.append(np.asarray(out.samples["theta"], float))
        draws_at[alpha] = np.concatenate(theta)
        row = exact_rate_row(alpha, accepted, proposals)
        table1.append(
            {"α": alpha, "dpjax %": mean, "s.e.": se, "seed %": seed, "seed s.e.": seed_se,
             "pooled run %": row["dpjax"], "pooled s.e.": row["dpjax_se"], "exact %": row["seed"]}
        )  # fmt: skip
        runs.append(
            {"α": alpha, "calls": chunks[alpha], "accepted": accepted, "proposals": proposals,
             "z against the exact rate": (row["dpjax"] - row["seed"]) / row["dpjax_se"],
             "seconds": time.perf_counter() - t}
        )  # fmt: skip
        comparison += [
            {"quantity": f"acceptance %, α = {alpha}", "dpjax": mean, "dpjax_se": se, "seed": seed,
             "seed_se": seed_se},
            row,
        ]  # fmt: skip
    # Figures 1 and 3: the pooled runs' draws against the exact posterior (a Gamma mixture over the count)
    comparison.append(posterior_mean_row("Figure 1", 25, draws_at[25]))
    comparison += [posterior_mean_row("Figure 3", a, draws_at[a]) for a in FIGURE3_ALPHAS]
    posteriors = []
    for alpha in (25, *FIGURE3_ALPHAS):
        theta = draws_at[alpha]
        mean, sd = posterior_moments(alpha)
        posteriors.append(
            {"α": alpha, "prior mean": float(alpha), "naive mean": (alpha + S_DP) / 2, "exact mean": mean,
             "exact sd": sd, "ABC mean": theta.mean(), "ABC sd": theta.std(ddof=1), "ABC draws": theta.size}
        )  # fmt: skip
    # Appendix E: under prior–data conflict (α = 2, 5) "the correct posterior [is] in close alignment
    # with the prior", far from the naive one
    conflict = [
        abs(draws_at[a].mean() - a) < abs(draws_at[a].mean() - (a + S_DP) / 2) for a in FIGURE3_ALPHAS[:2]
    ]
    comparison.append(
        {"quantity": "Figure 3 (a), (b): ABC posterior mean nearer the prior mean than the naive one "
         "(share of α = 2, 5)", "dpjax": float(np.mean(conflict)), "seed": 1.0, "tol": 0}
    )  # fmt: skip

    fig1, ax = plt.subplots(figsize=(6.5, 4))
    _posterior_panel(ax, 25, draws_at[25], hist_draws)
    ax.set(title=f"Poisson count, Laplace release ε = {EPS}, s_dp = {S_DP}")
    ax.legend(fontsize=8)
    fig1.tight_layout()
    fig3, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    for ax, alpha, letter in zip(axes.ravel(), FIGURE3_ALPHAS, "abcd"):
        _posterior_panel(ax, alpha, draws_at[alpha], hist_draws)
        ax.set_title(f"({letter}) prior Gamma({alpha}, 1)", fontsize=10)
        ax.legend(fontsize=7)
    fig3.suptitle(f"Figure 3 (Appendix E): exact and naive posteriors, ε = {EPS}, s_dp = {S_DP} (◆)")
    fig3.tight_layout()
    pooled = ", ".join(f"α = {a}: {c} × {chunk:,}" for a, c in chunks.items())
    return Report(
        title="Exact ABC, Poisson example (Gong §5.1 and Appendix E, Table 1 and Figures 1, 3)",
        comparison=compare(comparison),
        tables={
            "Table 1: acceptance rate (%)": pd.DataFrame(table1),
            "Pooled runs against the exact rate": pd.DataFrame(runs),
            "Figures 1 and 3: posterior of θ": pd.DataFrame(posteriors),
        },
        figures={"fig1": fig1, "fig3": fig3},
        settings={
            "repetitions": reps,
            "draws": draws,
            "chunk": chunk,
            "chunks": chunks,
            "s_dp": S_DP,
            "epsilon": EPS,
        },
        notes=(
            f"s ~ Pois(θ), θ ~ Gamma(α, 1), Laplace noise with ε = {EPS}, s_dp = {S_DP}. Table 1: acceptance "
            f"rate of exact rejection ABC (Algorithm 1), mean over {reps} repetitions of {draws:,} accepted "
            "draws as in the seed, s.e. from each repetition's binomial counts (not from the spread of the "
            "repetitions). The rows against the exact rate Σ_k p(k) η(s_dp | k) / max η (NegBin(α, 1/2) "
            f"prior predictive of the count) pool larger runs (calls × accepted draws: {pooled}), with the "
            "binomial s.e. of the pooled counts. Figures 1 (α = 25) and 3 (α = 2, 5, 50, 75, Appendix E): "
            f"the pooled runs' draws (histograms of the first {hist_draws:,}, as the seed's 10⁴) against the "
            "exact posterior Σ_k w_k Gamma(α + k, rate 2); the posterior-mean rows use all the draws, "
            "MCSE sd/√n (the draws are i.i.d.). Proposals per second: `python benchmarks/poisson_abc.py`."
        ),
    )
