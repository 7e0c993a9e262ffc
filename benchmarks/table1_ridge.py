"""Ridge moves on Table 1's regression model (issue 85, item 10): at ε_s = 1, ε_n = 0.001 (the cell with
the lowest ESS(n)) ESS(n) per second with the sampler of 840f5ad, where the issue was filed (births and
deaths of one record, joint (θ, n) moves; `size_jumps=0`), with today's defaults (size jumps added), with
ridge moves that solve with the exact (clamped) release statistics (`ReversibleJumpKernel(ridge_moves=3)`,
dozens of passes over the capacity per move), and with ridge moves that solve with the model's unclamped
statistics (`ridge_surrogate=unknown_n_regression_ridge_surrogate()`, in closed form, one pass per move),
3 to 60 per iteration, with 5, 15 or 30 joint (θ, n) moves, and as surrogate transitions
(`surrogate_steps=3`: 3 + 3 random-walk steps around each ridge step on the surrogate's target, one
pass per move); then ESS(n)/s against ε_n for the 840f5ad sampler, the defaults and the table's best
configuration. The awan-table1 dataset (n = 1 000, capacity 3 000), 4 releases per ε_n, two chains each
(half warmup), 100 birth/death moves per iteration. Per configuration: median ESS(n) and R-hat of n
over releases, run time without compilation, and ESS(n)/s summed over releases (about 50 min on one
core).

    python benchmarks/table1_ridge.py
"""

import argparse

import jax
from _common import table, write_results

from dpjax.reproduce.unknown_n import N, confidential_regression_data, regression_cells
from dpjax.studies import posterior_summaries, run_study

RELEASES = 4
#: size jumps per iteration: 0 is the sampler of 840f5ad (the issue's starting point); None the defaults'
START, DEFAULTS = 0, None
#: (ridge moves, surrogate, joint moves, iterations, surrogate steps, size jumps) at ε_n = 0.001
CONFIGS = (
    (0, False, 5, 8_000, 0, START),
    (0, False, 5, 8_000, 0, DEFAULTS),
    (0, False, 15, 8_000, 0, DEFAULTS),
    (3, False, 5, 2_000, 0, DEFAULTS),
    (3, True, 5, 8_000, 0, DEFAULTS),
    (10, True, 5, 8_000, 0, DEFAULTS),
    (30, True, 5, 8_000, 0, DEFAULTS),
    (10, True, 15, 8_000, 0, DEFAULTS),
    (20, True, 30, 8_000, 0, DEFAULTS),
    (20, True, 5, 8_000, 3, DEFAULTS),
    (40, True, 5, 8_000, 3, DEFAULTS),
    (60, True, 5, 8_000, 3, DEFAULTS),
)
#: the curve against ε_n (4 000 iterations): the 840f5ad sampler, the defaults and the best of CONFIGS
CURVE_EPS_N = (0.001, 0.01, 0.1, 1.0)


def run_cell(
    ridge: int, iterations: int, releases: int = RELEASES, surrogate=False, eps_n=(0.001,), joint=5, steps=0,
    jumps=DEFAULTS,
):  # fmt: skip
    """One vmapped study at ε_s = 1 and each ``eps_n`` with ``ridge`` ridge moves, ``joint`` joint
    (θ, n) moves and ``jumps`` size jumps (None: the kernel's default) per iteration (half of
    ``iterations`` warmup), the ridge moves solving with the surrogate statistic if ``surrogate``: its
    table, one row per release and ε_n, with n's mean, sd, R-hat and ESS."""
    _, _, T = confidential_regression_data(N)
    cell = regression_cells(
        N, T, 3_000, iterations // 2, iterations // 2, num_chains=2, noncentred_moves=joint,
        ridge_moves=ridge, ridge_surrogate=surrogate, surrogate_steps=steps, size_jumps=jumps,
    )  # fmt: skip
    return run_study(
        cell, {"eps_s": [1.0], "eps_n": list(eps_n)}, replicates=releases, rng_key=jax.random.key(11),
        summaries=posterior_summaries({"n": ("mean", "sd", "rhat", "ess")}), progress_bar=False,
    )  # fmt: skip


def write(name: str, heading: str, intro: str, rows: list[dict], extra=None) -> None:
    """Write ``rows`` (and the tables ``extra``: heading → rows) as ``results/<name>.{json,md}`` (floats
    to 3 significant digits)."""
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)
    render = lambda rows: "\n".join(table(rows, [(k, lambda r, k=k: fmt(r[k])) for k in rows[0]]))
    md = f"# {heading}\n\n{intro}\n\n" + render(rows)
    for title, more in (extra or {}).items():
        md += f"\n\n## {title}\n\n" + render(more)
    write_results(name, {"rows": rows, **(extra or {})}, md)


def label(ridge: int, surrogate: bool, joint: int, steps: int = 0, jumps=DEFAULTS) -> str:
    if jumps == START:
        return f"840f5ad: no size jumps, no ridge moves; {joint} joint"
    moves = "none" if not ridge else f"{ridge}, {'surrogate' if surrogate else 'exact statistics'}"
    return f"{moves}{f' with {steps} + {steps} steps' if steps else ''}; {joint} joint"


def main():
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    rows = []
    for ridge, surrogate, joint, iterations, steps, jumps in CONFIGS:
        df = run_cell(ridge, iterations, surrogate=surrogate, joint=joint, steps=steps, jumps=jumps)
        seconds = float(df["seconds"].iloc[0])
        rows.append(
            {
                "ridge moves; joint moves": label(ridge, surrogate, joint, steps, jumps),
                "iterations": iterations,
                "E n per release": ", ".join(f"{v:.0f}" for v in df["n_mean"]),
                "sd n per release": ", ".join(f"{v:.0f}" for v in df["n_sd"]),
                "median ESS(n)": float(df["n_ess"].median()),
                "largest R-hat(n)": float(df["n_rhat"].max()),
                "seconds": seconds,
                "compile s": float(df["compile_seconds"].iloc[0]),
                "ESS(n)/s": float(df["n_ess"].sum()) / seconds,
            }
        )
        print(rows[-1], flush=True)
    ratios(rows)
    best = max(range(len(CONFIGS)), key=lambda i: rows[i]["ESS(n)/s"])
    curve = []
    for ridge, surrogate, joint, _, steps, jumps in (CONFIGS[0], CONFIGS[1], CONFIGS[best]):
        df = run_cell(
            ridge, 4_000, surrogate=surrogate, eps_n=CURVE_EPS_N, joint=joint, steps=steps, jumps=jumps
        )
        per_cell = float(df["seconds"].iloc[0]) / len(CURVE_EPS_N)  # the cells run together, vmapped
        for eps_n, group in df.groupby("eps_n"):
            curve.append(
                {
                    "ε_n": float(eps_n),
                    "ridge moves; joint moves": label(ridge, surrogate, joint, steps, jumps),
                    "median ESS(n)": float(group["n_ess"].median()),
                    "largest R-hat(n)": float(group["n_rhat"].max()),
                    "seconds per ε_n": per_cell,
                    "ESS(n)/s": float(group["n_ess"].sum()) / per_cell,
                }
            )
            print(curve[-1], flush=True)
    curve = sorted(curve, key=lambda r: r["ε_n"])  # (stable: 840f5ad, defaults, best within each ε_n)
    for eps_n in CURVE_EPS_N:
        ratios([r for r in curve if r["ε_n"] == eps_n])
    write(
        "table1_ridge",
        "Table 1 at ε_s = 1: ridge moves solved with the exact statistics or a surrogate, against none",
        f"{RELEASES} releases of the awan-table1 dataset (n = {N:,}, capacity 3 000), two chains per release "
        "(half warmup), 100 birth/death moves per iteration, 10 size jumps and 5 joint (θ, n) moves unless "
        "said. 840f5ad: the sampler where issue 85 was filed (no size jumps). Ridge moves solve for θ at "
        "each proposed n with the exact (clamped) release statistics or with the model's unclamped ones "
        "(`unknown_n_regression_ridge_surrogate`, solved in closed form); both are exact MCMC; with steps: "
        "each ridge move a surrogate transition with that many random-walk steps on the surrogate's target "
        "before and after its ridge step. ESS(n) and split R-hat of n over the two chains of a release; "
        "seconds: the study's run time without compilation (all releases vmapped); ESS(n)/s: summed over "
        "releases; × 840f5ad and × defaults: against the first two rows. First ε_n = 0.001:",
        rows,
        {
            "ESS(n)/s against ε_n (4 000 iterations, all ε_n in one vmapped study; seconds shared equally; "
            "the 840f5ad sampler, the defaults and the best configuration above)": curve
        },
    )


def ratios(rows: list[dict]) -> None:
    """Add "× 840f5ad" and "× defaults" to ``rows``: their ESS(n)/s against the first and second row."""
    for row in rows:
        row["× 840f5ad"] = row["ESS(n)/s"] / rows[0]["ESS(n)/s"]
        row["× defaults"] = row["ESS(n)/s"] / rows[1]["ESS(n)/s"]


if __name__ == "__main__":
    main()
