"""Ridge moves on Table 1's regression model at ε_s = 1, ε_n = 0.001 (the cell with the lowest ESS(n)):
do `ReversibleJumpKernel(ridge_moves=3)`, which fixed the ATUS chains, pay here? Same 4 releases of the
awan-table1 dataset (n = 1 000, capacity 3 000), two chains each, 100 birth/death and 5 joint (θ, n)
moves per iteration; with 3 ridge moves at 2 000 iterations, without them at 2 000 and at 8 000 (longer
chains instead). Per configuration: median ESS(n) and split R-hat of n over releases,
run time without compilation, and ESS(n) per second (6 min).

    python benchmarks/table1_ridge.py
"""

import argparse

import jax
from _common import table, write_results

from dpjax.reproduce.unknown_n import N, confidential_regression_data, regression_cells
from dpjax.studies import posterior_summaries, run_study

RELEASES, CONFIGS = 4, ((3, 2_000), (0, 2_000), (0, 8_000))


def run_cell(ridge: int, iterations: int, releases: int = RELEASES):
    """One vmapped study at ε_s = 1, ε_n = 0.001 with ``ridge`` ridge moves per iteration (half of
    ``iterations`` warmup): its table, one row per release, with n's mean, sd, R-hat and ESS."""
    _, _, T = confidential_regression_data(N)
    cell = regression_cells(
        N, T, 3_000, iterations // 2, iterations // 2, num_chains=2, noncentred_moves=5, ridge_moves=ridge
    )
    return run_study(
        cell, {"eps_s": [1.0], "eps_n": [0.001]}, replicates=releases, rng_key=jax.random.key(11),
        summaries=posterior_summaries({"n": ("mean", "sd", "rhat", "ess")}), progress_bar=False,
    )  # fmt: skip


def write(name: str, heading: str, intro: str, rows: list[dict]) -> None:
    """Write ``rows`` as ``results/<name>.{json,md}`` (floats to 3 significant digits)."""
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)
    md = f"# {heading}\n\n{intro}\n\n" + "\n".join(
        table(rows, [(k, lambda r, k=k: fmt(r[k])) for k in rows[0]])
    )
    write_results(name, {"rows": rows}, md)


def main():
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    rows = []
    for ridge, iterations in CONFIGS:
        df = run_cell(ridge, iterations)
        seconds = float(df["seconds"].iloc[0])
        rows.append(
            {
                "ridge moves": ridge,
                "iterations": iterations,
                "E n per release": ", ".join(f"{v:.0f}" for v in df["n_mean"]),
                "sd n per release": ", ".join(f"{v:.0f}" for v in df["n_sd"]),
                "median ESS(n)": float(df["n_ess"].median()),
                "median R-hat(n)": float(df["n_rhat"].median()),
                "largest R-hat(n)": float(df["n_rhat"].max()),
                "seconds": seconds,
                "compile s": float(df["compile_seconds"].iloc[0]),
                "ESS(n)/s": float(df["n_ess"].sum()) / seconds,
            }
        )
        print(rows[-1], flush=True)
    write(
        "table1_ridge",
        "Table 1 at ε_s = 1, ε_n = 0.001: ridge moves or longer chains",
        f"{RELEASES} releases of the awan-table1 dataset (n = {N:,}, capacity 3 000), two chains per release "
        "(half warmup), 100 birth/death and 5 joint (θ, n) moves per iteration. ESS(n) and split R-hat of n "
        "over the two chains of a release; seconds: the study's run time without compilation (all releases "
        "vmapped); ESS(n)/s: summed over releases.",
        rows,
    )


if __name__ == "__main__":
    main()
