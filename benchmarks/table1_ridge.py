"""Ridge moves on Table 1's regression model (issue 85, item 10): at ε_s = 1, ε_n = 0.001 (the cell with
the lowest ESS(n)) ESS(n) per second with the sampler of 840f5ad, where the issue was filed (births and
deaths of one record, joint (θ, n) moves; `size_jumps=0`), with today's defaults (size jumps added), with
ridge moves that solve with the exact (clamped) release statistics (`ReversibleJumpKernel(ridge_moves=3)`,
dozens of passes over the capacity per move), and with ridge moves that solve with the model's unclamped
statistics (`ridge_surrogate=unknown_n_regression_ridge_surrogate()`, in closed form, one pass per move),
3 to 20 per iteration, with 5, 15 or 30 joint (θ, n) moves, and as surrogate transitions
(`surrogate_steps=3`: 3 random-walk steps on the surrogate's target before and after each ridge step,
1 or 3 ridge steps per transition (`surrogate_ridge_steps`), one pass over the capacity per
transition); then ESS(n)/s against ε_n for the 840f5ad sampler, the defaults and the table's best
configuration. The awan-table1 dataset (n = 1 000, capacity 3 000), 4 releases per ε_n, two chains each
(half warmup), 100 birth/death moves per iteration. Per configuration: median ESS(n) and R-hat of n
over releases, run time without compilation, and ESS(n)/s summed over releases (about an hour on one
core).

    python benchmarks/table1_ridge.py
"""

import argparse
from typing import NamedTuple

import jax
from _common import table, write_results

from dpjax.reproduce.unknown_n import N, confidential_regression_data, regression_cells
from dpjax.studies import posterior_summaries, run_study

RELEASES = 4
#: size jumps per iteration: 0 is the sampler of 840f5ad (the issue's starting point); None the defaults'
START, DEFAULTS = 0, None


class Config(NamedTuple):
    """A row at ε_n = 0.001: ridge moves (surrogate transitions with ``steps``), whether they solve with
    the surrogate, joint (θ, n) moves, iterations, random-walk steps per side of a surrogate
    transition's ridge step, size jumps and ridge steps per surrogate transition."""

    ridge: int
    surrogate: bool
    joint: int
    iterations: int
    steps: int = 0
    jumps: int | None = DEFAULTS
    ridge_steps: int = 1


CONFIGS = (
    Config(0, False, 5, 8_000, jumps=START),
    Config(0, False, 5, 8_000),
    Config(0, False, 15, 8_000),
    Config(3, False, 5, 2_000),
    Config(3, True, 5, 8_000),
    Config(10, True, 5, 8_000),
    Config(10, True, 15, 8_000),
    Config(20, True, 30, 8_000),
    Config(20, True, 5, 8_000, steps=3),
    Config(40, True, 5, 8_000, steps=3),
    Config(20, True, 5, 8_000, steps=3, ridge_steps=3),
    Config(20, True, 1, 8_000, steps=3, jumps=0, ridge_steps=3),
)
#: the curve against ε_n (4 000 iterations): the 840f5ad sampler, the defaults and the best of CONFIGS
CURVE_EPS_N = (0.001, 0.01, 0.1, 1.0)


def run_cell(config: Config, iterations: int, releases: int = RELEASES, eps_n=(0.001,)):
    """One vmapped study at ε_s = 1 and each ``eps_n`` with the sampler of ``config`` (half of
    ``iterations`` warmup): its table, one row per release and ε_n, with n's mean, sd, R-hat and ESS."""
    _, _, T = confidential_regression_data(N)
    cell = regression_cells(
        N, T, 3_000, iterations // 2, iterations // 2, num_chains=2, noncentred_moves=config.joint,
        ridge_moves=config.ridge, ridge_surrogate=config.surrogate, surrogate_steps=config.steps,
        size_jumps=config.jumps, surrogate_ridge_steps=config.ridge_steps,
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


def label(c: Config) -> str:
    if c.jumps == START and not c.ridge:
        return f"840f5ad: no size jumps, no ridge moves; {c.joint} joint"
    moves = "none" if not c.ridge else f"{c.ridge}, {'surrogate' if c.surrogate else 'exact statistics'}"
    if c.steps:
        moves = f"{c.ridge} surrogate transitions of {c.ridge_steps} ridge step{'s' * (c.ridge_steps > 1)}"
        moves += f" ({c.steps} walk steps before and after each)"
    return f"{moves}; {c.joint} joint" + ("; no size jumps" if c.jumps == 0 else "")


def main():
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    rows = []
    for config in CONFIGS:
        df = run_cell(config, config.iterations)
        seconds = float(df["seconds"].iloc[0])
        rows.append(
            {
                "ridge moves; joint moves": label(config),
                "iterations": config.iterations,
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
    for config in (CONFIGS[0], CONFIGS[1], CONFIGS[best]):
        df = run_cell(config, 4_000, eps_n=CURVE_EPS_N)
        per_cell = float(df["seconds"].iloc[0]) / len(CURVE_EPS_N)  # the cells run together, vmapped
        for eps_n, group in df.groupby("eps_n"):
            curve.append(
                {
                    "ε_n": float(eps_n),
                    "ridge moves; joint moves": label(config),
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
        "(`unknown_n_regression_ridge_surrogate`, solved in closed form); both are exact MCMC; surrogate "
        "transitions: that many random-walk steps on the surrogate's target before and after each of their "
        "ridge steps, then one accept/reject against the exact target (one pass over the capacity). ESS(n) and split R-hat of n over the two chains of a release; "
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
