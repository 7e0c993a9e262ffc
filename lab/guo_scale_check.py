"""Does the §4.1 grid's reduced scale change its answers? One cell of Guo, Barrientos & Peña's §4.1 run
at three settings with every method of `dpjax reproduce guo-simulation`:

- ``short``: what `lab/guo_simulation_part.py` ran for the grid: ``--datasets`` data sets
  (10), chains at ``--scale`` (5 %) of the seed's length;
- ``full chains``: the same data sets and releases (the same keys), chains at the seed's full length
  (5 × (25 000 warm-up + 25 000), every 125-th kept): a paired comparison, data set by data set;
- ``seed's data sets``: the seed's 50 data sets per cell, chains at ``--scale``.

For each method and metric it gives the median over data sets with a bootstrap s.e., and, paired by
data set, how far the full chains moved each data set's MSE and coverage. Each setting's cell is kept
in results/guo_scale_check[_TAG].cells/<setting>/ when done, so the command resumes. Writes
results/guo_scale_check[_TAG].{md,json}.

    python lab/guo_scale_check.py [--alpha α₃] [--n 1000] [--eps 0.5] [--datasets 10]
        [--many 50] [--scale 0.05] [--full-scale 1] [--settings short full many] [--methods ...] [--tag TAG]
"""

import argparse
import json

import numpy as np
import pandas as pd
from _common import RESULTS, guo_chains, median_se, write_results

from dpjax.reproduce import cells_folder, markdown_table
from dpjax.reproduce.compositional import ALPHAS, METHODS, simulation_study

NAME = "guo_scale_check"
LABELS = {"short": "short", "full": "full chains", "many": "seed's data sets"}
METRICS = ("MSE α", "MSE E[x|α]", "coverage", "max split-R̂")


def run(name, setting, alpha, n, eps, reps, scale, methods):
    """The per-data-set rows and the seconds per data set of one setting (run, or read back)."""
    folder = RESULTS / f"{name}.cells" / setting
    with cells_folder(folder):
        report = simulation_study(
            [alpha], [n], [eps], reps, 10_000, guo_chains(scale), methods, progress=True
        )
    (cell,) = folder.glob("*.json")  # the one cell's rows (method × data set), as simulation_study kept it
    rows = pd.DataFrame(json.loads(cell.read_text())["rows"])
    seconds = report.tables["Seconds per data set (compile excluded)"].iloc[0]
    return rows.assign(setting=LABELS[setting]), seconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--alpha", default="α₃", choices=list(ALPHAS))
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--eps", type=float, default=0.5)
    parser.add_argument("--datasets", type=int, default=10)
    parser.add_argument(
        "--many", type=int, default=50, help="data sets of the 'many' setting (the seed's 50)"
    )
    parser.add_argument("--scale", type=float, default=0.05, help="short chains, as a fraction of the seed's")
    parser.add_argument("--full-scale", type=float, default=1.0, help="the 'full chains' (the seed's: 1)")
    parser.add_argument("--settings", nargs="+", default=list(LABELS), choices=list(LABELS))
    parser.add_argument(
        "--methods",
        nargs="+",
        default=list(METHODS),
        choices=list(METHODS),
        help="a subset (e.g. without DPreMCMCp4, whose drifting NUTS chains cost most at full length)",
    )
    parser.add_argument("--tag", default="", help="suffix of the output files (keeps other cells' results)")
    args = parser.parse_args()
    name = NAME + (f"_{args.tag}" if args.tag else "")
    plan = {
        "short": (args.datasets, args.scale),
        "full": (args.datasets, args.full_scale),
        "many": (args.many, args.scale),
    }
    rows, seconds = {}, {}
    for setting in args.settings:
        reps, scale = plan[setting]
        print(f"--- {LABELS[setting]}: {reps} data sets, chains at {scale:g} × the seed's", flush=True)
        rows[setting], seconds[setting] = run(
            name, setting, args.alpha, args.n, args.eps, reps, scale, args.methods
        )

    rng = np.random.default_rng(0)
    medians = []
    for method in args.methods:
        for metric in METRICS:
            row = {"method": method, "metric": metric}
            for setting, df in rows.items():
                row[LABELS[setting]], row[f"{LABELS[setting]} s.e."] = median_se(
                    df.loc[df["method"] == method, metric], rng
                )
            medians.append(row)
    medians = pd.DataFrame(medians).dropna(subset=[LABELS[s] for s in rows], how="all")  # no R̂: no chains

    paired = []
    if "short" in rows and "full" in rows:
        both = rows["short"].merge(rows["full"], on=["method", "data set"], suffixes=(" short", " full"))
        for method in args.methods:
            b = both[both["method"] == method]
            ratio = np.log10(b["MSE α full"] / b["MSE α short"])
            dcov = b["coverage full"] - b["coverage short"]
            paired.append(
                {
                    "method": method,
                    "data sets": len(b),
                    "median log₁₀(MSE α full / short)": float(np.median(ratio)),
                    "min": float(ratio.min()),
                    "max": float(ratio.max()),
                    "mean Δ coverage (full − short)": float(dcov.mean()),
                    "s.e.": float(dcov.std(ddof=1) / np.sqrt(len(dcov))) if len(dcov) > 1 else np.nan,
                    "data sets with |Δ coverage| > 0.02": int((dcov.abs() > 0.02).sum()),
                }
            )
    paired = pd.DataFrame(paired)
    times = pd.DataFrame(
        [
            {"setting": LABELS[s], **{k: v for k, v in t.items() if k.startswith("s/set")}}
            for s, t in seconds.items()
        ]
    )

    settings = {s: {"datasets": plan[s][0], "chains": guo_chains(plan[s][1])} for s in rows}
    md = [
        f"# Guo et al. §4.1 at the grid's scale and at the seed's: {args.alpha}, n = {args.n}, ε = {args.eps:g}",
        "",
        "The §4.1 grids (`results/guo_simulation_grid.md`, `results/guo_simulation_grid_50sets.md`) ran 10 and "
        "50 data sets per cell with chains at 5 % of the seed's length; the seed ran 50 data sets with 5 chains "
        "of 50 000 iterations. Here one cell at "
        f"{len(rows)} settings: "
        + "; ".join(
            f"**{LABELS[s]}**: {plan[s][0]} data sets, chains 5 × ({c['warmup']} warm-up + {c['samples']}), "
            f"every {c['thin']}-th kept"
            for s, c in ((s, settings[s]["chains"]) for s in rows)
        )
        + ". *short* and *full chains* use the same data sets and the same releases (the same keys), so "
        "their difference is the chains' alone. "
        + (
            "*seed's data sets* extends *short*: its first data sets, releases and chains are *short*'s (a key "
            "splits into the same first keys whatever their number). "
            if "many" in rows
            else ""
        )
        + "Medians over data sets with bootstrap s.e. (2 000 resamples). Boots and DPBoots run no chains, "
        "so their draws are the same at both chain lengths: their Δ coverage is the coverage estimate's own "
        "noise (its evaluation draws come from one generator that the methods use in turn).",
        "",
        "## Medians over data sets",
        "",
        markdown_table(medians),
    ]
    if len(paired):
        md += ["", "## Full chains against short ones, data set by data set", "", markdown_table(paired)]
    md += ["", "## Seconds per data set (compile excluded)", "", markdown_table(times)]
    payload = {
        "cell": {"α": args.alpha, "n": args.n, "ε": args.eps},
        "settings": settings,
        "medians": medians.to_dict("records"),
        "paired": paired.to_dict("records"),
        "seconds": times.to_dict("records"),
    }
    write_results(name, payload, "\n".join(md))


if __name__ == "__main__":
    main()
