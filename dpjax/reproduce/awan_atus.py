"""Awan, Barrientos & Ju's ATUS application (§6.2, Figure 1 and the supplement's Figures C2–C3): the
posterior of Dirichlet(α) time-use compositions under bounded DP (n known) and unbounded DP (n private),
each realisation judged against the semi-analytic posterior of :mod:`.atus_oracle`."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ._core import Report, atus_dir, compare, experiment, study_table
from .unknown_n import INF, eps_label

A_CLAMP = 0.0006  # the seed's oracle threshold a = min xᵢⱼ
ATUS_N = 6_656


#: every ATUS chain makes 5 non-centred moves per iteration (of α with n known, of (α, n) jointly
#: otherwise), the records held through their Dirichlet transport map: at ε_s = 1 the posterior of α
#: is a thin ridge along its scale (s pins the ratios, not the scale), where the DA θ-step crawls
#: (ESS of α₁ 11 per 2 000 draws, sd 1.18 against the oracle's 1.44) and dense random-walk moves
#: cross it (ESS 283 per 3 000, sd 1.47; `dpjax/infer/mh.py`)
MOVES = {"noncentred_moves": 5}
#: and at ε_n ≤ RIDGE_EPS_N ridge moves of (α, n) (ReversibleJumpKernel)
RIDGE_MOVES = {**MOVES, "ridge_moves": 3}
#: at ε_s = 10, ε_n = 0.1 the joint moves alone give ESS(n) 43 per 6 000 draws and too narrow a
#: posterior (sd of n 9.3 and of α₁ 0.49 against the oracle's 14.0 and 0.73); with ridge moves ESS(n)
#: 1 515, sd 14.1 and 0.72, in 1.6× the time (``benchmarks/atus_ridge.py --eps-n 0.1``)
RIDGE_EPS_N = 0.1


def atus_model(capacity, s_dp=None, n_dp=None, eps_s=1.0, eps_n=1.0):
    """The ATUS model (§6.2): α ~ Gamma(1, 0.1)³, n uniform on 1..``capacity``, Dirichlet(α) records,
    Laplace releases of Σ log max(x, A_CLAMP) at ``eps_s`` and of n at ``eps_n``."""
    import numpyro
    import numpyro.distributions as dist

    import dpjax

    alpha = numpyro.sample("alpha", dist.Gamma(1.0, 0.1).expand([3]).to_event(1))
    n = numpyro.sample("n", dist.DiscreteUniform(1, capacity))
    people = dpjax.records_plate("people", n, capacity)
    with people:
        x = numpyro.sample("x", dist.Dirichlet(alpha))
    log_clamped = lambda r: jnp.log(jnp.clip(r["x"], A_CLAMP, 1.0))
    composition = dpjax.LaplaceMechanism(scale=-3 * jnp.log(A_CLAMP) / eps_s * jnp.ones(3))
    dpjax.privatized("s", composition, log_clamped, {"x": x}, plate=people, obs=s_dp)
    size = dpjax.LaplaceMechanism(epsilon=eps_n, sensitivity=1.0)
    dpjax.privatized("n_dp", size, lambda r: jnp.ones(()), {"x": x}, plate=people, obs=n_dp)


def atus_compositions(rows: int) -> tuple[np.ndarray, int]:
    """The compositions (a random subsample of ``rows`` of them unless 0) and the number of rows in all."""
    from dpjax.compositional import load_atus

    folder = atus_dir()
    x = np.concatenate([load_atus(folder / "male.csv"), load_atus(folder / "female.csv")])
    total = len(x)
    if rows:
        x = x[np.random.default_rng(0).choice(len(x), rows, replace=False)]
    return x, total


@experiment(
    "awan-atus",
    source="Awan, Barrientos & Ju, §6.2, Figure 1 and Figures C2–C3 (Figures 3–4 of the supplement)",
    title="ATUS compositions under bounded and unbounded DP: posterior sd of α and posterior of n",
    full_cost=(
        "~3.5 h on 2 cores in float64 (6 656 rows, 2 ε_s × 4 ε_n × 10 n_dp, 3 000 iterations each; the four "
        "cells with ridge moves 29–58 min each)"
    ),
)
def awan_atus(quick: bool, progress: bool) -> Report:
    """Dirichlet(α) compositions, one release s per ε_s, realisations of n_dp per ε_n; bounded DP (n known)
    by DataAugmentationKernel, unbounded by ReversibleJumpKernel, α by the inner NUTS in both."""
    from numpyro import handlers

    from dpjax.compositional import dirichlet_mle
    from dpjax.infer import DataAugmentationKernel, ReversibleJumpKernel
    from dpjax.studies import mcmc_cell, posterior_summaries, run_study

    if quick:
        rows, eps_s, eps_n, realizations, warmup, samples = 400, (1.0,), (0.01, 10.0), 2, 100, 100
    elif not jax.config.jax_enable_x64:
        # measured: a chain at ε_s = 10 whose noisy n_dp starts α near 66 (6 863 records) makes ~1 000
        # NUTS steps per iteration in float32 and ~15 in float64, from the same state. Summed over
        # thousands of records, the Dirichlet log density's round-off (0.41 nats there) swamps NUTS's
        # energy error, and step-size adaptation shrinks the step to nothing. The kernels'
        # RoundOffWarning cannot see it here: the study's inits are traced.
        raise ValueError(
            "awan-atus needs 64-bit floats: in float32 the round-off of the Dirichlet log density summed "
            "over ~6 700 records stalls NUTS at its maximum tree depth. Run "
            "`JAX_ENABLE_X64=1 dpjax reproduce awan-atus`."
        )
    else:
        rows, eps_s, eps_n, realizations, warmup, samples = (
            0,
            (1.0, 10.0),
            (0.01, 0.1, 1.0, 10.0),
            10,
            1000,
            2000,
        )
    x, total_rows = atus_compositions(rows)
    n = len(x)
    t_true = jnp.asarray(np.log(np.clip(x, A_CLAMP, 1.0)).sum(0), jnp.float32)
    # one realisation of s per ε_s: the same standard Laplace draw, scaled by −3 log(a)/ε_s
    unit = jax.random.laplace(jax.random.key(2019), (3,))
    scale = -3 * float(np.log(A_CLAMP))

    def args_fn(key, eps_s, eps_n):
        return (t_true + unit * scale / eps_s, n + jax.random.laplace(key) / eps_n, eps_s, eps_n)

    def start(s_dp, n_dp, *_):  # α starts at the Dirichlet MLE of the release's mean log s / n_dp
        alpha = dirichlet_mle(s_dp / jnp.maximum(n_dp, 1.0)).alpha
        return {"alpha": jnp.where(jnp.isfinite(alpha), alpha, 1.0)}

    qs = (0.05, 0.25, 0.5, 0.75, 0.95)
    summaries = posterior_summaries(
        {
            "alpha": ("mean", "sd", "quantiles", "ess"),
            "n": ("mean", "sd", "quantiles", "ess"),
            "x_new": ("quantiles",),
            "n_dp": ("mean",),
        },
        quantiles=qs,
    )

    def collect(st, size, args):
        """θ and n; a new composition x ~ Dirichlet(α) per draw, the predictive (Figure C3); the
        realisation's n_dp, for the oracle."""
        x_new = jax.random.dirichlet(jax.random.fold_in(st.rng_key, 1), st.z["alpha"])[:2]
        dtype = st.z["alpha"].dtype
        return {"alpha": st.z["alpha"], "n": jnp.asarray(size, dtype), "x_new": x_new, "n_dp": args[1]}

    known = handlers.condition(partial(atus_model, n), data={"n": jnp.array(n)})
    known_args = lambda key, eps_s, eps_n: (t_true + unit * scale / eps_s, jnp.asarray(float(n)), eps_s, 1.0)
    cell = mcmc_cell(
        DataAugmentationKernel(known, **MOVES),
        known_args,
        num_warmup=warmup,
        num_samples=samples,
        collect=lambda st, args: collect(st, n, args),
        init_params=start,
    )
    study = dict(rng_key=jax.random.key(2019), summaries=summaries, progress_bar=progress)
    bounded = run_study(
        cell, {"eps_s": list(eps_s), "eps_n": [INF]}, replicates=2, out=study_table("bounded"), **study
    )
    capacity = int(n + 12 / min(eps_n) + 10)  # n_dp's noise beyond 12/ε_n has probability e^-12
    unbounded = []
    # at ε_n ≤ 0.1 the posterior of (α, n) is a long curved ridge (at 0.01 E α₁ runs from 5 to 30 along
    # it): the ridge moves follow it (ReversibleJumpKernel, `ridge_moves`); without them chains stay
    # near n_dp (0.01) or explore too little of it (0.1 at ε_s = 10).
    # Quick runs give every cell the ridge moves (exact at any ε_n): one compilation, not two.
    groups = [
        ("unbounded", [e for e in eps_n if e > RIDGE_EPS_N], MOVES),
        ("unbounded-ridge", [e for e in eps_n if e <= RIDGE_EPS_N], RIDGE_MOVES),
    ]
    if quick:
        groups = [("unbounded-ridge", list(eps_n), RIDGE_MOVES)]
    for label, cells, moves in groups:
        if not cells:
            continue
        cell = mcmc_cell(
            ReversibleJumpKernel(partial(atus_model, capacity), **moves),
            args_fn,
            num_warmup=warmup,
            num_samples=samples,
            collect=lambda st, args: collect(st, st.z["n"], args),
            init_params=start,
        )
        grid = {"eps_s": list(eps_s), "eps_n": cells}
        unbounded.append(run_study(cell, grid, replicates=realizations, out=study_table(label), **study))
    df = pd.concat([bounded, *unbounded], ignore_index=True)
    release = lambda es: np.asarray(t_true + unit * scale / es, float)
    df = _with_oracle(df, release, capacity, quick)
    sd_cols = [f"alpha[{j}]_sd" for j in range(3)]
    df["alpha_sd"] = df[sd_cols].mean(1)
    agg = df.groupby(["eps_s", "eps_n"])
    summary = agg.agg(
        realisations=("replicate", "size"),
        **{f"sd α{j + 1}": (c, "mean") for j, c in enumerate(sd_cols)},
        mean_n=("n_mean", "mean"),
        oracle_mean_n=("oracle_n_mean", "mean"),
        sd_n=("n_sd", "mean"),
        oracle_sd_n=("oracle_n_sd", "mean"),
    ).reset_index()
    summary["eps_n"] = summary["eps_n"].map(eps_label)
    rows_out = []
    for es in eps_s:
        b = df[(df.eps_s == es) & np.isinf(df.eps_n)]
        top = df[(df.eps_s == es) & (df.eps_n == max(eps_n))]
        ratio = top["alpha_sd"].mean() / b["alpha_sd"].mean()
        ratio_se = ratio * np.hypot(
            top["alpha_sd"].std(ddof=1) / top["alpha_sd"].mean() / np.sqrt(len(top)),
            b["alpha_sd"].std(ddof=1) / b["alpha_sd"].mean() / np.sqrt(len(b)),
        )
        # "the posterior standard deviation ... under unbounded DP decreases in ε_n, converging to those under
        # bounded DP" (Figure 1, first column: at ε_n = 10 the dashed lines meet the solid ones)
        rows_out.append(
            {
                "quantity": f"ε_s={eps_label(es)}: mean sd(α) unbounded at "
                f"ε_n={eps_label(max(eps_n))} / bounded",
                "dpjax": float(ratio),
                "dpjax_se": float(ratio_se),
                "seed": 1.0,
                "tol": 0.2,
            }
        )
        sd_n = [df[(df.eps_s == es) & (df.eps_n == e)]["n_sd"].mean() for e in eps_n]
        # "when ε_n increases, the uncertainty about n decreases" (Figure 1, second column)
        rows_out.append(
            {
                "quantity": f"ε_s={eps_label(es)}: posterior sd of n falls at each step up in ε_n (share "
                "of steps)",
                "dpjax": float(np.mean(np.diff(sd_n) < 0)),
                "seed": 1.0,
                "tol": 0,
            }
        )
        # the oracle is a large-n approximation: with the quick run's 400 rows at ε_s = 1 its normal
        # stand-in for the Laplace noise of s moves E α₁ by 15 % (6 656 rows: 1 %), so no verdicts there
        rows_out += _oracle_verdicts(df[df.eps_s == es], es, judged=not rows)
    rows_out.append(_predictive_verdict(df, eps_s))
    if len(eps_s) > 1:  # "as ε_s increases, the results become more accurate"
        b = df[np.isinf(df.eps_n)].groupby("eps_s")["alpha_sd"].mean()
        rows_out.append(
            {
                "quantity": "bounded sd(α) smaller at ε_s=10 than at 1",
                "dpjax": float(b[10.0] < b[1.0]),
                "seed": 1.0,
                "tol": 0,
            }
        )
    if rows:  # quick: keep one published figure in the table, the size of the seed's data
        rows_out.append(
            {
                "quantity": "rows of the ATUS data (all)",
                "dpjax": float(total_rows),
                "seed": float(ATUS_N),
                "tol": 0,
            }
        )
    return Report(
        title="Unknown n, ATUS application (Awan, Barrientos & Ju §6.2, Figure 1)",
        comparison=compare(rows_out),
        tables={"Posterior sd of α and posterior of n (means over realisations)": summary},
        figures={
            "fig1": _atus_figure(df, eps_s, eps_n, n),
            "figC2": _atus_c2(df, eps_s, eps_n, qs),
            "figC3": _atus_c3(df, eps_s, eps_n, qs),
        },
        settings={
            "rows": n,
            "a": A_CLAMP,
            "eps_s": list(eps_s),
            "eps_n": list(eps_n),
            "realisations": realizations,
            "warmup": warmup,
            "samples": samples,
            "capacity": capacity,
            "moves": MOVES,
            f"moves at ε_n ≤ {RIDGE_EPS_N:g}": RIDGE_MOVES,
        },
        notes=(
            f"{n} rows ({'a random subsample of ' if rows else ''}the ATUS 2019 compositions, male "
            "and female, "
            f"{ATUS_N} rows in the seed), α_j ~ Gamma(1, 0.1); s = Σ log clamp(xᵢ, a, 1) + Laplace(−3 "
            "log a/ε_s), "
            f"a = {A_CLAMP}, one realisation per ε_s; {realizations} realisations of n_dp = n + "
            "Laplace(1/ε_n) per "
            f"ε_n; {warmup} warmup + {samples} draws per chain, α by the inner NUTS, started at the "
            "Dirichlet MLE of s / n_dp (n held at n_dp for the first half of the warmup). Bounded DP: n "
            "known, "
            "DataAugmentationKernel (2 chains); unbounded: ReversibleJumpKernel, n uniform on 1..capacity = "
            f"{capacity}. Figure 1 is a plot without numbers: the verdicts are its text's statements. "
            "The seed's "
            "box plots of n pool the draws of all realisations; ours show each realisation's 5–95 % "
            "interval. "
            f"Every chain adds non-centred moves ({MOVES}: of α, or of (α, n) jointly), the records "
            "held through their Dirichlet transport map; "
            + ("every unbounded chain" if quick else f"at ε_n ≤ {RIDGE_EPS_N:g}")
            + f" also ridge moves of (α, n) ({RIDGE_MOVES}). "
            "Figures C2 and C3 show quantiles instead of densities (C3: of x_j for a new composition "
            "x ~ Dirichlet(α), one draw per posterior draw). The 'oracle' rows compare each realisation "
            "with the semi-analytic large-n posterior of (n, α) given its s and n_dp "
            "(`dpjax.reproduce.atus_oracle`: the sum of records as Normal given n and α, a grid over "
            "log α, a table of p(s | n)); the oracle_* columns are its means over realisations."
            + (" With 400 rows the oracle is too rough to judge by (no verdicts)." if rows else "")
        ),
    )


def _with_oracle(df, release, capacity, quick=False):
    """``df`` with each realisation's semi-analytic posterior (:mod:`.atus_oracle`, from its s and n_dp,
    log p(s | n) tabulated at 600 values of n): columns ``oracle_n_mean``, ``oracle_n_sd``,
    ``oracle_alpha[0]_mean`` and ``oracle_alpha[0]_sd``. ``quick`` (unjudged rows): 40 values of n and
    a coarse grid over α with the exact noise (0.5 s rather than 9 s per ε_s)."""
    from . import atus_oracle

    points, coarse = (40, dict(K=15, width=6.0)) if quick else (600, {})
    out = []
    for (es, en), g in df.groupby(["eps_s", "eps_n"], sort=False):
        n_dp = g["n_dp_mean"].to_numpy()
        if np.isinf(en):  # n known: one n, so the exact Laplace noise is affordable
            ev = atus_oracle.evidence(release(es), es, np.unique(np.round(n_dp)), exact_noise=True, **coarse)
        else:
            ev = atus_oracle.evidence(release(es), es, atus_oracle.n_range(n_dp, en, capacity, points))
        post = [atus_oracle.posterior(ev, v, en) for v in n_dp]
        out.append(
            g.assign(
                oracle_n_mean=[p["mean_n"] for p in post],
                oracle_n_sd=[p["sd_n"] for p in post],
                **{"oracle_alpha[0]_mean": [p["mean_alpha"][0] for p in post]},
                **{"oracle_alpha[0]_sd": [p["sd_alpha"][0] for p in post]},
            )
        )
    return pd.concat(out).loc[df.index]


def _oracle_verdicts(df, eps_s, judged=True):
    """The chains against the oracle, realisation by realisation, at one ε_s: E n at every ε_n, the
    posterior sd of n where it is a record or more, at the smallest ε_n (the ridge) also E α₁; E α₁
    and its sd with n known (the oracle with the exact Laplace noise there). A mean over realisations
    has the larger of two standard errors: the Monte Carlo one (from the ESS) and, with 5 or more
    realisations, the one from their spread, which holds however sticky the chains are. Without
    ``judged`` the rows carry no comparison figure (a verdict of "—")."""

    def row(quantity, values, seed=0.0, mcse=None):
        values = np.asarray(values, float)
        se = values.std(ddof=1) / np.sqrt(len(values)) if len(values) >= 5 else 0.0
        if mcse is not None:
            se = max(se, float(np.sqrt(np.sum(np.asarray(mcse) ** 2))) / len(values))
        return {
            "quantity": quantity,
            "dpjax": float(values.mean()),
            "dpjax_se": se or None,
            "seed": seed if judged else None,
        }

    alpha = lambda g: {
        "values": g["alpha[0]_mean"] - g["oracle_alpha[0]_mean"],
        "mcse": g["alpha[0]_sd"] / np.sqrt(g["alpha[0]_ess"]),
    }
    eps_n = sorted(e for e in df.eps_n.unique() if np.isfinite(e))
    rows = []
    for e in eps_n:
        g, label = df[df.eps_n == e], f"ε_s={eps_label(eps_s)}, ε_n={eps_label(e)}"
        rows.append(
            row(f"{label}: E n − oracle E n (mean over realisations)", g["n_mean"] - g["oracle_n_mean"])
        )
        # along the (α, n) ridge a chain that does not cross it has too small an sd of n (and, at the
        # smallest ε_n, the E α₁ of where it started); a sample sd from an ESS of m has a relative
        # standard error of about 1/√(2m)
        ratio = g["n_sd"] / g["oracle_n_sd"]
        if g["oracle_n_sd"].mean() >= 1:  # below, n rarely leaves one value: its sd is a few rare moves
            mcse = ratio / np.sqrt(2 * g["n_ess"])
            rows.append(row(f"{label}: posterior sd of n / oracle sd", ratio, 1.0, mcse=mcse))
        if e == eps_n[0]:
            rows.append(row(f"{label}: E α₁ − oracle E α₁", **alpha(g)))
    g = df[np.isinf(df.eps_n)]
    rows.append(row(f"ε_s={eps_label(eps_s)}, n known: E α₁ − oracle E α₁", **alpha(g)))
    # a sample sd from an ESS of m has a relative standard error of about 1/√(2m)
    ratio = g["alpha[0]_sd"] / g["oracle_alpha[0]_sd"]
    mcse = ratio / np.sqrt(2 * g["alpha[0]_ess"])
    rows.append(
        row(f"ε_s={eps_label(eps_s)}, n known: posterior sd of α₁ / oracle sd", ratio, seed=1.0, mcse=mcse)
    )
    return rows


def _predictive_verdict(df, eps_s):
    """ "the predictive distributions are quite robust to the specifications of ε_s and ε_n" (Figure C3):
    the largest shift of a predictive quartile of x₁ or x₂ (mean over realisations) from the bounded
    one at ε_s = 10, in units of that predictive interquartile range."""
    ref = df[(df.eps_s == max(eps_s)) & np.isinf(df.eps_n)]
    shifts = []
    for j in range(2):
        iqr = ref[f"x_new[{j}]_q0.75"].mean() - ref[f"x_new[{j}]_q0.25"].mean()
        for q in (0.25, 0.5, 0.75):
            col = f"x_new[{j}]_q{q:g}"
            shifts.append(np.max(np.abs(df.groupby(["eps_s", "eps_n"])[col].mean() - ref[col].mean())) / iqr)
    return {
        "quantity": "largest shift of a predictive quartile of x1 or x2 over all (ε_s, ε_n) cells, in "
        "predictive IQRs of the bounded cell at the largest ε_s (Figure C3: robust)",
        "dpjax": float(np.max(shifts)),
        "seed": 0.0,
        "tol": 0.1,
    }


def _atus_figure(df, eps_s, eps_n, n):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(eps_s), 2, figsize=(10, 3.4 * len(eps_s)), squeeze=False)
    for i, es in enumerate(eps_s):
        ax = axes[i, 0]
        b = df[(df.eps_s == es) & np.isinf(df.eps_n)]
        for j in range(3):
            ax.axhline(b[f"alpha[{j}]_sd"].mean(), color=f"C{j}", label=f"α{j + 1} bounded")
            u = df[(df.eps_s == es) & np.isfinite(df.eps_n)].pivot(
                index="replicate", columns="eps_n", values=f"alpha[{j}]_sd"
            )
            for _, line in u.iterrows():
                ax.plot(list(eps_n), line[list(eps_n)].to_numpy(), "--", color=f"C{j}", alpha=0.5)
        ax.set(xscale="log", xlabel="ε_n", ylabel=f"posterior sd of α (ε_s = {eps_label(es)})")
        ax.legend(fontsize=7)
        ax = axes[i, 1]
        for k, e in enumerate(eps_n):
            g = df[(df.eps_s == es) & (df.eps_n == e)]
            xs = k + np.linspace(-0.3, 0.3, len(g))
            ax.errorbar(
                xs, g["n_q0.5"], yerr=[g["n_q0.5"] - g["n_q0.05"], g["n_q0.95"] - g["n_q0.5"]], fmt="o", ms=3
            )
        ax.axhline(n, color="k")
        ax.set_xticks(range(len(eps_n)), [eps_label(e) for e in eps_n])
        ax.set(xlabel="ε_n", ylabel="posterior of n (median, 5–95 %)")
    fig.tight_layout()
    return fig


def _atus_c2(df, eps_s, eps_n, qs):
    """Posterior quantiles of α, one realisation per cell as in the seed."""
    return _quantile_curves(
        df, eps_s, eps_n, qs, "alpha", 3, "α{}", "posterior CDF", lambda column: column.iloc[0]
    )


def _atus_c3(df, eps_s, eps_n, qs):
    """Predictive quantiles of x₁ and x₂ for a new composition, means over realisations."""
    return _quantile_curves(
        df,
        eps_s,
        eps_n,
        qs,
        "x_new",
        2,
        "x{} of a new composition",
        "predictive CDF",
        lambda column: column.mean(),
    )


def _quantile_curves(df, eps_s, eps_n, qs, site, parts, xlabel, ylabel, reduce):
    """CDF curves through the quantiles ``qs`` of ``site[j]``: one panel per (ε_s, j), one curve per ε_n
    (bounded solid), each quantile reduced over the cell's realisations by ``reduce``."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(eps_s), parts, figsize=(4.1 * parts, 3.2 * len(eps_s)), squeeze=False)
    for i, es in enumerate(eps_s):
        for j in range(parts):
            ax = axes[i, j]
            for k, e in enumerate((INF, *eps_n)):
                g = df[(df.eps_s == es) & (df.eps_n == e)]
                ax.plot(
                    [reduce(g[f"{site}[{j}]_q{q:g}"]) for q in qs],
                    qs,
                    "-" if np.isinf(e) else "--",
                    marker=".",
                    color="k" if np.isinf(e) else f"C{k}",
                    label="bounded" if np.isinf(e) else f"ε_n={eps_label(e)}",
                )
            ax.set(xlabel=xlabel.format(j + 1), ylabel=f"{ylabel} (ε_s = {eps_label(es)})")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig
