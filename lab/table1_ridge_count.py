"""Does ESS(n) per iteration grow with the number of ridge moves per iteration on Table 1's hardest cell
(ε_s = 1, ε_n = 0.001)? If it does, a ridge move made O(1) in the capacity (issue 85, item 10) could buy
the ESS(n)/s that the ±1 moves and size jumps cannot; if it saturates, cheaper ridge moves would not.
Same setting as ``benchmarks/table1_ridge.py`` (4 releases, 2 chains each, half warmup, 100 birth/death
and 5 joint moves per iteration); each count of ridge moves is one vmapped study.

    python lab/table1_ridge_count.py --ridge 0 3 10
    python lab/table1_ridge_count.py --ridge 30 --name table1_ridge_count_30
"""

import argparse

from _common import benchmark

from dpjax.reproduce.unknown_n import N

bench = benchmark("table1_ridge")


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ridge", type=int, nargs="+", default=[0, 3, 10], help="ridge moves per iteration")
    parser.add_argument("--iterations", type=int, default=2_000, help="iterations per chain (half warmup)")
    parser.add_argument("--releases", type=int, default=4)
    parser.add_argument("--name", default="table1_ridge_count", help="results file name under lab/results/")
    args = parser.parse_args()
    rows = []
    for ridge in args.ridge:
        df = bench.run_cell(ridge, args.iterations, args.releases)
        seconds, ess = float(df["seconds"].iloc[0]), df["n_ess"]
        rows.append(
            {
                "ridge moves": ridge,
                "iterations": args.iterations,
                "ESS(n) per release": ", ".join(f"{v:.0f}" for v in ess),
                "median ESS(n) per 1 000 kept draws": float(ess.median()) / args.iterations * 1_000,
                "largest R-hat(n)": float(df["n_rhat"].max()),
                "seconds": seconds,
                "ESS(n)/s": float(ess.sum()) / seconds,
            }
        )
        print(rows[-1], flush=True)
    bench.write(
        args.name,
        "Table 1 at ε_s = 1, ε_n = 0.001: ESS(n) against the number of ridge moves per iteration",
        f"{args.releases} releases of the awan-table1 dataset (n = {N:,}, capacity 3 000), two chains per "
        "release (half warmup), 100 birth/death and 5 joint (θ, n) moves per iteration; seconds without "
        "compilation, all releases vmapped; ESS(n)/s summed over releases.",
        rows,
    )


if __name__ == "__main__":
    main()
