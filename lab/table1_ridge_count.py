"""Does ESS(n) per iteration grow with the number of ridge moves per iteration on Table 1's hardest cell
(ε_s = 1, ε_n = 0.001)? If it does, a ridge move made O(1) in the capacity (issue 85, item 10) could buy
the ESS(n)/s that the ±1 moves and size jumps cannot; if it saturates, cheaper ridge moves would not.
Same setting as ``benchmarks/table1_ridge.py`` (4 releases, 2 chains each, half warmup, 100 birth/death
and 5 joint moves per iteration); each count of ridge moves is one vmapped study.

    python lab/table1_ridge_count.py --ridge 0 3 10
    python lab/table1_ridge_count.py --ridge 30 --name table1_ridge_count_30
"""

import argparse

import jax
from _common import table, write_results

from dpjax.reproduce.unknown_n import N, confidential_regression_data, regression_cells
from dpjax.studies import posterior_summaries, run_study


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ridge", type=int, nargs="+", default=[0, 3, 10], help="ridge moves per iteration")
    parser.add_argument("--iterations", type=int, default=2_000, help="iterations per chain (half warmup)")
    parser.add_argument("--releases", type=int, default=4)
    parser.add_argument("--name", default="table1_ridge_count", help="results file name under lab/results/")
    args = parser.parse_args()
    _, _, T = confidential_regression_data(N)
    summaries = posterior_summaries({"n": ("mean", "sd", "rhat", "ess")})
    rows = []
    for ridge in args.ridge:
        half = args.iterations // 2
        cell = regression_cells(N, T, 3_000, half, half, num_chains=2, noncentred_moves=5, ridge_moves=ridge)
        df = run_study(
            cell, {"eps_s": [1.0], "eps_n": [0.001]}, replicates=args.releases, rng_key=jax.random.key(11),
            summaries=summaries, progress_bar=False,
        )  # fmt: skip
        seconds = float(df["seconds"].iloc[0])
        ess = df["n_ess"]
        rows.append(
            {
                "ridge moves": ridge,
                "iterations": args.iterations,
                "ESS(n) per release": ", ".join(f"{v:.0f}" for v in ess),
                "median ESS(n) per 1 000 kept draws": float(ess.median()) / (2 * half) * 1_000,
                "largest R-hat(n)": float(df["n_rhat"].max()),
                "seconds": seconds,
                "ESS(n)/s": float(ess.sum()) / seconds,
            }
        )
        print(rows[-1], flush=True)
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)
    md = (
        "# Table 1 at ε_s = 1, ε_n = 0.001: ESS(n) against the number of ridge moves per iteration\n\n"
        f"{args.releases} releases of the awan-table1 dataset (n = {N:,}, capacity 3 000), two chains per "
        "release (half warmup), 100 birth/death and 5 joint (θ, n) moves per iteration; seconds without "
        "compilation, all releases vmapped; ESS(n)/s summed over releases.\n\n"
        + "\n".join(table(rows, [(k, lambda r, k=k: fmt(r[k])) for k in rows[0]]))
    )
    write_results(args.name, {"rows": rows}, md)


if __name__ == "__main__":
    main()
