"""Table 1's ε_n = 0.001 rows and the capacity of the records plate. There n_dp's noise has sd 1 414 and
the release s, with θ unknown, says little about n, so the posterior of n under the flat prior on
1..capacity may depend on the capacity. Per cell: 20 releases of `dpjax reproduce awan-table1`'s
dataset (n = 1 000), two chains per release (4 000 iterations, 2 000 warmup), at capacity 3 000 (the
experiment's) and 8 000: the spread over releases of the posterior mean of n, the mean posterior sd,
the posterior mass within 1 % of the capacity and the split R-hat of n over the two chains (5 min).

    python lab/unknown_n_capacity.py
"""

import argparse

import jax
from _common import table, write_results

from dpjax.reproduce.unknown_n import N, confidential_regression_data, regression_cells
from dpjax.studies import posterior_summaries, run_study

RELEASES, ITERATIONS, CAPACITIES, EPS_S = 20, 4_000, (3_000, 8_000), (0.1, 1.0)


def main():
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    _, _, T = confidential_regression_data(N)
    summaries = posterior_summaries(
        {"beta": ("mean",), "tau": ("mean",), "n": ("mean", "sd", "max", "rhat"), "near_capacity": ("mean",)}
    )
    rows = []
    for capacity in CAPACITIES:
        cell = regression_cells(N, T, capacity, ITERATIONS // 2, ITERATIONS // 2, num_chains=2)
        df = run_study(
            cell, {"eps_s": list(EPS_S), "eps_n": [0.001]}, replicates=RELEASES, rng_key=jax.random.key(11),
            summaries=summaries, progress_bar=False,
        )  # fmt: skip
        for es, g in df.groupby("eps_s"):
            m = g["n_mean"]
            rows.append(
                {
                    "ε_s": es,
                    "capacity": capacity,
                    "E n: min": m.min(),
                    "median": m.median(),
                    "max": m.max(),
                    "mean posterior sd of n": g["n_sd"].mean(),
                    "mass near capacity: mean": g["near_capacity_mean"].mean(),
                    "largest": g["near_capacity_mean"].max(),
                    "R-hat(n): median": g["n_rhat"].median(),
                    "releases with R-hat > 1.1": int((g["n_rhat"] > 1.1).sum()),
                    "seconds": g["seconds"].iloc[0],
                }
            )
            print(rows[-1], flush=True)
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)
    columns = [(k, lambda r, k=k: fmt(r[k])) for k in rows[0]]
    md = (
        "# Table 1 at ε_n = 0.001: the posterior of n and the capacity\n\n"
        f"{RELEASES} releases (s, n_dp) of the awan-table1 dataset (n = {N:,}) per cell, ε_n = 0.001 (n_dp's "
        f"noise sd 1 414), two reversible-jump chains per release ({ITERATIONS // 2:,} warmup + "
        f"{ITERATIONS // 2:,} draws, 100 birth/death and 5 joint (θ, n) moves per iteration), prior of n uniform on "
        "1..capacity. E n: the posterior mean of n per release (min, median, max over releases). Mass near "
        "capacity: the share of draws with n within 1 % of the capacity. R-hat: split R-hat of n over "
        "the two chains of a release.\n\n" + "\n".join(table(rows, columns))
    )
    write_results("unknown_n_capacity", {"rows": rows}, md)


if __name__ == "__main__":
    main()
