"""Where does E β of Awan, Barrientos & Ju's Table 1 sit, at the seed's chain length? An earlier reduced
run (2 000-iteration chains, `results/unknown_n_regression.md`) put E β₀ above the seed's in every cell.
Part 1: the ε_s = 1, ε_n = ∞ cell (n public, the DA kernel with the exact θ-step) for several datasets
drawn from the seed's model: per dataset the mean over replicates of the posterior mean of β, and the
dataset's own OLS estimate. Part 2: dataset 2025 (`dpjax reproduce awan-table1`'s) at every ε_n, ε_s = 1
(the reversible-jump kernel for a noisy n), next to the seed's Table 1.

    python benchmarks/unknown_n_datasets.py
"""

import jax
import numpy as np
from _common import table, write_results

from dpjax.reproduce.unknown_n import (
    CAPACITY,
    EPS_N,
    N,
    SEED_TABLE1,
    _regression_cells,
    confidential_regression_data,
)
from dpjax.studies import posterior_summaries, run_study

DATASETS, REPLICATES, ITERATIONS = (2025, 1, 2, 3), 8, 10_000


def main():
    rows = []
    for seed in DATASETS:
        x, y, T = confidential_regression_data(N, seed=seed)
        design = np.column_stack([np.ones(N), np.asarray(x)])
        ols = np.linalg.lstsq(design, np.asarray(y), rcond=None)[0]
        cell = _regression_cells(N, T, None, ITERATIONS // 2, ITERATIONS // 2)
        df = run_study(
            cell, {"eps_s": [1.0], "eps_n": [float("inf")]}, replicates=REPLICATES, rng_key=jax.random.key(7),
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
        f"Per dataset (n = {N:,}, drawn from the seed's model with β = (0, −1, 1)): {REPLICATES} releases, one "
        f"chain each of {ITERATIONS:,} iterations (half burn-in); E βⱼ is the mean over releases of the "
        "posterior mean ± its standard error. Dataset 2025 is the one of `dpjax reproduce awan-table1`. "
        "The seed's (its own dataset): E β = (−0.127, −0.956, 0.867).\n\n"
        + "\n".join(table(rows, [(c, lambda r, c=c: fmt(r[c])) for c in names]))
    )
    write_results(
        "unknown_n_datasets", {"rows": rows, "replicates": REPLICATES, "iterations": ITERATIONS}, md
    )


if __name__ == "__main__":
    main()
