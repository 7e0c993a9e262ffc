"""The seed's tolerance DPABC against exact ABC (the Laplace mechanism as the ABC kernel) and DPMCMC.

Guo, Barrientos & Peña's DPABC (§3.3.3) keeps the proposals α̃ whose simulated release
S_L(D̃, a) = S₀(D̃, a) + Laplace lies within δ of s_L, δ set so that a fixed fraction of the proposals is
kept (the seed: 10 %). It targets π(α | ‖S_L(D̃) − s_L‖₂ < δ), which tends to π(α | s_L) only as δ → 0,
that is as the kept fraction, and so the cost per kept draw, goes to 0 and ∞. Exact ABC
(:func:`dpjax.compositional.dp_abc_exact`) accepts α̃ with probability η(s_L | S₀(D̃, a)) / max η: its
draws are i.i.d. from π(α | s_L) with no tolerance, the target of DPMCMC. One release, one prior; per
method the posterior means and s.d.s of α, and against exact ABC: the mean shift of each αⱼ in
posterior s.d.s (with its two-sample z), the s.d. ratio, and a Hotelling T² test of the means.

    python lab/guo_abc_tolerance.py [--n 30] [--eps1 1.0] [--draws 4000] [--rates 0.1 0.01 0.001]

Other settings than n = 30, ε₁ = 1 name the files (``--n 200``: ``guo_abc_tolerance_n_200``).
"""

import argparse
import time

import jax
import matplotlib
import numpy as np
import numpyro.distributions as dist
from _common import RESULTS, table, write_results
from scipy import stats

import dpjax
from dpjax.compositional import censored_mean_log, dp_abc, dp_abc_exact, dp_mcmc
from dpjax.diagnostics import mcse

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

A = 0.01
TRUTH = np.array([2.2, 3.3, 4.4])


def compare(draws, exact):
    """Shift of the means in exact-posterior s.d.s, their z, the s.d. ratio and Hotelling's T².
    ``draws``: i.i.d. ``(m, d)``, or MCMC chains ``(chains, m, d)`` (s.e.s from their ESS)."""
    d = draws.reshape(-1, draws.shape[-1])
    sd = exact.std(0, ddof=1)
    if draws.ndim == 2:
        se_draws, ess = d.std(0, ddof=1) / np.sqrt(len(d)), len(d)
    else:  # each part's s.e. from its ESS, the covariance scaled by the smallest ESS
        se_draws, ess = np.array([mcse(draws[..., j]) for j in range(d.shape[-1])]).T
        ess = ess.min()
    se = np.hypot(se_draws, sd / np.sqrt(len(exact)))
    cov = np.cov(d, rowvar=False) / ess
    diff = d.mean(0) - exact.mean(0)
    t2 = float(diff @ np.linalg.solve(cov + np.cov(exact, rowvar=False) / len(exact), diff))
    return {
        "mean": d.mean(0),
        "sd": d.std(0, ddof=1),
        "shift / sd": diff / sd,
        "z": diff / se,
        "sd ratio": d.std(0, ddof=1) / sd,
        "T2": t2,
        "p": float(stats.chi2(d.shape[-1]).sf(t2)),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--eps1", type=float, default=1.0, help="ε₁ of the Laplace release of S₀")
    parser.add_argument("--draws", type=int, default=4000, help="kept draws per method")
    parser.add_argument("--rates", type=float, nargs="+", default=[0.1, 0.01, 0.001])
    args = parser.parse_args()
    d = len(TRUTH)
    prior = dist.Gamma(4.0, 1.0).expand([d]).to_event(1)
    x = np.random.default_rng(0).dirichlet(TRUTH, size=args.n)
    mech = dpjax.LaplaceMechanism(epsilon=args.eps1, sensitivity=-d * np.log(A) / args.n)
    s_l = mech(censored_mean_log(x, A)).sample(jax.random.key(1))
    common = dict(n=args.n, a=A, epsilon1=args.eps1, prior=prior)

    t = time.perf_counter()
    exact = dp_abc_exact(jax.random.key(2), s_l, num_samples=args.draws, progress_bar=False, **common)
    ref = np.asarray(exact.samples["alpha"], float)
    runs = [("exact ABC", time.perf_counter() - t, ref, f"acceptance {exact.acceptance_rate:.4f}")]

    t = time.perf_counter()
    chains = args.draws // 1000
    post = dp_mcmc(jax.random.key(0), s_l, num_warmup=500, num_samples=1000, num_chains=chains, **common)
    grouped = np.asarray(post.get_samples(group_by_chain=True)["alpha"], float)
    runs.append(("DPMCMC", time.perf_counter() - t, grouped, f"{chains} chains × (500 + 1000)"))

    for rate in args.rates:
        proposals = int(round(args.draws / rate))
        t = time.perf_counter()
        tol = dp_abc(
            jax.random.key(3), s_l, num_proposals=proposals, acceptance_rate=rate,
            batch_size=min(proposals, 10_000), **common,
        )  # fmt: skip
        draws = np.asarray(jax.block_until_ready(tol.samples["alpha"]), float)
        runs.append((f"tolerance ABC, {rate:g} kept", time.perf_counter() - t, draws,
                     f"{proposals} proposals, δ = {float(tol.delta):.3g}"))  # fmt: skip

    rows = []
    for name, seconds, draws, setting in runs:
        row = {"method": name, "setting": setting, "seconds": seconds} | compare(draws, ref)
        rows.append(row)
        print(name, {k: np.round(v, 3) for k, v in row.items() if k not in ("method", "setting")}, flush=True)

    vec = lambda k, f="{:.3f}": lambda r: ", ".join(f.format(v) for v in r[k])
    cols = [
        ("method", lambda r: r["method"]),
        ("setting", lambda r: r["setting"]),
        ("posterior mean of α", vec("mean", "{:.2f}")),
        ("posterior s.d.", vec("sd")),
        ("mean shift / exact s.d.", vec("shift / sd", "{:+.2f}")),
        ("z", vec("z", "{:+.1f}")),
        ("s.d. / exact s.d.", vec("sd ratio", "{:.2f}")),
        ("Hotelling T², p", lambda r: f"{r['T2']:.1f}, {r['p']:.2g}" if r["method"] != "exact ABC" else "–"),
        ("seconds", lambda r: f"{r['seconds']:.1f}"),
    ]
    scale = float(mech.scale)
    md = [
        "# Guo et al.'s tolerance DPABC against exact ABC and DPMCMC",
        "",
        f"One release s_L = S₀(D, a) + Laplace of n = {args.n} records x ~ Dirichlet({', '.join(f'{v:g}' for v in TRUTH)}), a = {A}, "
        f"ε₁ = {args.eps1:g} (Laplace scale {scale:.3g}); prior Gamma(4, 1) per part; {args.draws} kept draws "
        "per method. Exact ABC (the Laplace mechanism as the ABC kernel) draws i.i.d. from π(α | s_L) and is "
        "the reference; DPMCMC targets the same posterior; the seed's tolerance ABC keeps the given fraction "
        "of proposals nearest s_L (the seed: 0.1) and targets π(α | ‖S_L(D̃) − s_L‖₂ < δ). *z*: the mean "
        "shift over its two-sample s.e. (DPMCMC's from its ESS); *Hotelling T²*: the three means jointly "
        "(χ²₃ under equal means). Seconds include compilation.",
        "",
        *table(rows, cols),
    ]
    fig, axes = plt.subplots(1, d, figsize=(4 * d, 3.2))
    shown = runs[:3] + runs[3:][-1:]  # exact ABC, DPMCMC, the first and the last tolerance
    for j, ax in enumerate(axes):
        lo, hi = np.quantile(ref[:, j], [0.001, 0.995])
        bins = np.linspace(lo, hi * 1.3, 50)
        for name, _, draws, _ in shown:
            ax.hist(draws.reshape(-1, d)[:, j], bins, density=True, histtype="step", label=name)
        ax.axvline(TRUTH[j], color="k", ls=":", lw=1)
        ax.set_xlabel(f"α{j + 1}")
    axes[0].legend(fontsize=7)
    fig.suptitle("posterior of α given one release: exact ABC, DPMCMC and the seed's tolerance ABC")
    fig.tight_layout()
    name = "guo_abc_tolerance" + "".join(  # the settings that differ from the defaults
        f"_{k}_{getattr(args, k):g}" for k in ("n", "eps1") if getattr(args, k) != parser.get_default(k)
    )
    png = f"{name}.png"
    fig.savefig(RESULTS / png, dpi=110)
    md += ["", f"![marginal posteriors]({png})"]
    write_results(name, {"settings": vars(args), "release": s_l, "rows": rows}, "\n".join(md))


if __name__ == "__main__":
    main()
