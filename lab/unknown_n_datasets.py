"""Where does E β of Awan, Barrientos & Ju's Table 1 sit, at the seed's chain length? An earlier reduced
run (2 000-iteration chains, `results/unknown_n_regression.md`) put E β₀ above the seed's in every cell.
Part 1: the ε_s = 1, ε_n = ∞ cell (n public, the DA kernel with the exact θ-step) for several datasets
drawn from the seed's model: per dataset the mean over replicates of the posterior mean of β, and the
dataset's own OLS estimate (5 min). Part 2, with ``--every-eps-n`` (15 min more): dataset 2025
(`dpjax reproduce awan-table1`'s) at every ε_n, ε_s = 1 (the reversible-jump kernel for a noisy n), next
to the seed's Table 1. ``--datasets`` and ``--replicates`` change part 1's datasets and the number of
releases per cell; a run with other than the defaults writes ``unknown_n_datasets_<R>x<datasets>``.

    python lab/unknown_n_datasets.py [--every-eps-n] [--datasets 2025 1] [--replicates 8]
"""

import argparse

import jax
import numpy as np
from _common import table, write_results

from dpjax.reproduce.unknown_n import (
    CAPACITY,
    EPS_N,
    SEED_TABLE1,
    N,
    confidential_regression_data,
    regression_cells,
)
from dpjax.studies import posterior_summaries, run_study

DATASETS, REPLICATES, ITERATIONS = (2025, 1, 2, 3), 8, 10_000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--every-eps-n", action="store_true", help="also part 2 (every ε_n, dataset 2025)")
    parser.add_argument("--datasets", type=int, nargs="+", default=list(DATASETS))
    parser.add_argument("--replicates", type=int, default=REPLICATES, help="releases per cell")
    args = parser.parse_args()
    every, datasets, reps = args.every_eps_n, tuple(args.datasets), args.replicates
    rows = []
    for seed in datasets:
        x, y, T = confidential_regression_data(N, seed=seed)
        design = np.column_stack([np.ones(N), np.asarray(x)])
        ols = np.linalg.lstsq(design, np.asarray(y), rcond=None)[0]
        cell = regression_cells(N, T, None, ITERATIONS // 2, ITERATIONS // 2)
        df = run_study(
            cell, {"eps_s": [1.0], "eps_n": [float("inf")]}, replicates=reps, rng_key=jax.random.key(7),
            summaries=posterior_summaries({"beta": ("mean",)}), progress_bar=False,
        )  # fmt: skip
        row = {"dataset seed": seed, **{f"OLS β{j}": float(ols[j]) for j in range(3)}}
        for j in range(3):
            v = df[f"beta[{j}]_mean"]
            row[f"E β{j}"] = f"{v.mean():.3f} ± {v.std(ddof=1) / np.sqrt(len(v)):.3f}"
        rows.append(row)
        print(row)
    names = ["dataset seed", "OLS β0", "OLS β1", "OLS β2", "E β0", "E β1", "E β2"]
    fmt = lambda v: f"{v:.3f}" if isinstance(v, float) else str(v)
    md = (
        "# Table 1's posterior means across confidential datasets (ε_s = 1, ε_n = ∞)\n\n"
        f"Per dataset (n = {N:,}, drawn from the seed's model with β = (0, −1, 1)): {reps} releases, one "
        f"chain each of {ITERATIONS:,} iterations (half burn-in); E βⱼ is the mean over releases of the "
        f"posterior mean ± its standard error. Every dataset gets the same {reps} releases' noise (one key): "
        "a paired comparison of datasets. Dataset 2025 is the one of `dpjax reproduce awan-table1`. "
        "The seed's (its own dataset): E β = (−0.127, −0.956, 0.867).\n\n"
        + "\n".join(table(rows, [(c, lambda r, c=c: fmt(r[c])) for c in names]))
    )
    cells = []
    if every:
        _, _, T = confidential_regression_data(N)
        for en in EPS_N:
            capacity = None if np.isinf(en) else CAPACITY[en]
            cell = regression_cells(N, T, capacity, ITERATIONS // 2, ITERATIONS // 2)
            df = run_study(
                cell, {"eps_s": [1.0], "eps_n": [en]}, replicates=reps, rng_key=jax.random.key(8),
                summaries=posterior_summaries({"beta": ("mean",)}), progress_bar=False,
            )  # fmt: skip
            row = {"ε_n": f"{en:g}"}
            for j in range(3):
                v = df[f"beta[{j}]_mean"]
                seed = SEED_TABLE1[(1.0, en)][2 * j]
                row[f"E β{j}"] = f"{v.mean():.3f} ± {v.std(ddof=1) / np.sqrt(len(v)):.3f} (seed {seed:.3f})"
            cells.append(row)
            print(row)
        md += (
            "\n\n## Dataset 2025 at every ε_n (ε_s = 1)\n\n"
            f"{reps} releases per ε_n, chains of {ITERATIONS:,} iterations (half burn-in); the seed's "
            "Table 1 in brackets (its MCSE, Table 3: 0.025–0.032).\n\n"
            + "\n".join(table(cells, [(c, lambda r, c=c: r[c]) for c in ["ε_n", "E β0", "E β1", "E β2"]]))
        )
    payload = {"rows": rows, "eps_n_rows": cells, "replicates": reps, "iterations": ITERATIONS}
    default = datasets == DATASETS and reps == REPLICATES
    name = "unknown_n_datasets" if default else f"unknown_n_datasets_{reps}x{'-'.join(map(str, datasets))}"
    write_results(name, payload, md)


if __name__ == "__main__":
    main()
