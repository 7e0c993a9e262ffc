"""Lazzarini Tables 1–6: Monte Carlo δ̃(ε) (N = 10 000) for n = 500 confidential records drawn from
PY(σ, θ, Uniform[0, 1]), m ∈ {50, 125, 250}. Tables 1–4: the full release (Theorem 4.1 /
Corollary 4.1); Tables 5–6: the histogram perturbation (Algorithm 3, Proposition 4.2).

δ̃ depends on the confidential dataset (its number of values and their counts) and the seed does
not give its datasets, so each cell is reported over several simulated datasets (median and
range), next to the seed's value. Values seen once are doubled, as the seed does in §7.2, since
the theorem needs nᵢ > 1.
"""

import argparse
import time

import jax
import numpy as np
from _common import write_results

from dpjax.synthetic import delta_tilde, partition, sample_pitman_yor

MS = (50, 125, 250)
TABLES = {  # table: (sigma, theta, histogram, {epsilon: seed values for m = 50, 125, 250})
    1: (
        0.5,
        3.0,
        False,
        {1: (0.6973, 0.9154, 0.9768), 2: (0.6529, 0.8714, 0.9577), 4: (0.0817, 0.3943, 0.4459), 5: (0, 0, 0)},
    ),
    2: (
        0.2,
        3.0,
        False,
        {
            1: (0.5969, 0.6672, 0.8807),
            2: (0.4009, 0.6967, 0.9133),
            4: (0.00009, 0.0004, 0.0024),
            5: (0, 0, 0),
        },
    ),
    3: (
        0.0,
        2.0,
        False,
        {1: (0.1561, 0.2383, 0.7834), 1.8: (0, 0.0038, 0.0558), 2.2: (0, 0.00009, 0.0024), 3: (0, 0, 0)},
    ),
    4: (
        0.0,
        5.0,
        False,
        {1: (0.3367, 0.6776, 0.9985), 2: (0.0004, 0.0759, 0.0017), 2.8: (0, 0, 0.0003), 3: (0, 0, 0)},
    ),
    5: (0.0, 3.0, True, {0.5: (0.0005, 0.0128, 0.0450), 1.0: (0, 0, 0)}),
    6: (0.5, 5.0, True, {0.5: (0.8183, 0.9915, 0.999), 0.9: (0.00009, 0.0147, 0.1793), 1.5: (0, 0, 0)}),
}


def dataset(seed, sigma, theta, n=500):
    p = partition(np.asarray(sample_pitman_yor(jax.random.key(seed), n, sigma, theta)))
    return p._replace(counts=np.where(p.counts == 1, 2, p.counts))


def main(num_datasets, num_draws):
    results, md = {}, ["# δ̃(ε) of the Pitman–Yor release (Lazzarini Tables 1–6)", ""]
    md += [
        f"n = 500 records from PY(σ, θ, U[0, 1]) (values seen once doubled), N = {num_draws:,} Monte Carlo draws, "
        f"{num_datasets} simulated confidential datasets per table. Cells: dpjax median [min – max over datasets] "
        "| seed. The first dataset's estimate with its α = 10⁻⁶ error bar is in the JSON.",
        "",
    ]
    for t, (sigma, theta, hist, seed_rows) in TABLES.items():
        eps = list(seed_rows)
        data = [dataset(100 * t + d, sigma, theta) for d in range(num_datasets)]
        tic = time.perf_counter()
        runs = [
            [
                delta_tilde(jax.random.key(m), p, m, sigma, theta, eps, num_draws=num_draws, histogram=hist)
                for m in MS
            ]
            for p in data
        ]
        est = np.array([[r.delta for r in row] for row in runs])  # (datasets, m, eps)
        first = runs[0]
        results[t] = {
            "sigma": sigma, "theta": theta, "histogram": hist, "epsilon": eps,
            "num_values": [len(p.counts) for p in data], "delta": est.tolist(),
            "first_dataset": [{"delta": f.delta.tolist(), "error": f.error.tolist()} for f in first],
        }  # fmt: skip
        kind = "histogram release (Prop. 4.2)" if hist else "full release (Thm 4.1)"
        md += [
            f"## Table {t}: σ = {sigma:g}, θ = {theta:g}, {kind}; K_n over datasets "
            f"{min(results[t]['num_values'])}–{max(results[t]['num_values'])} ({time.perf_counter() - tic:.0f} s)",
            "",
            "| ε | " + " | ".join(f"m = {m}: dpjax | seed" for m in MS) + " |",
            "|---|" + "---|---|" * len(MS),
        ]
        for i, e in enumerate(eps):
            cells = [
                f"{np.median(est[:, a, i]):.4f} [{est[:, a, i].min():.4f} – {est[:, a, i].max():.4f}] | {seed_rows[e][a]}"
                for a in range(len(MS))
            ]
            md.append(f"| {e:g} | " + " | ".join(cells) + " |")
        md.append("")
        print(md[-len(eps) - 5 :], flush=True)
    write_results("py_privacy_tables", results, "\n".join(md))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--datasets", type=int, default=10)
    ap.add_argument("--draws", type=int, default=10_000)
    a = ap.parse_args()
    main(a.datasets, a.draws)
