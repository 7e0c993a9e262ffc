"""Does §4.2's reduced chain length change its answers? Guo, Barrientos & Peña's ATUS analysis
(Table 2; `lab/guo_atus_part.py` ran it with chains at 5 % of the seed's length) on the same
releases with chains at ``--scale`` (5 %) and at the seed's full length (5 × (25 000 warm-up + 25 000),
every 125-th kept), run by run: the mean time shares by sex, P(H₀) and whether H₀ is rejected, for
the methods whose answers depend on the chains (default MCMCp1, DPMCMCp1 and DPABCp5, whose prior p5
is a chain on D₁; DPreMCMCp4's target is degenerate, `benchmarks/remcmc_degeneracy.py`). Each
setting's runs are kept in results/guo_atus_scale_check.cells/<setting>/ when done, so the command
resumes. Writes results/guo_atus_scale_check.{md,json}.

    python lab/guo_atus_scale_check.py [--runs 1] [--scale 0.05] [--full-scale 1]
        [--methods MCMCp1 DPMCMCp1 DPABCp5]
"""

import argparse
import json

import pandas as pd
from _common import RESULTS, guo_chains, write_results

from dpjax.reproduce import cells_folder, markdown_table
from dpjax.reproduce.compositional import BAYES, atus_study

NAME = "guo_atus_scale_check"
QUANTITIES = ("mean female", "mean male", "prob", "reject")
BATCH = 1  # runs per cell file: a full-length run takes over an hour, so each is kept when done


def run(setting, runs, scale, methods):
    """The per-run rows (method × part) and the seconds per run and sex of one setting."""
    folder = RESULTS / f"{NAME}.cells" / setting
    with cells_folder(folder):
        report = atus_study(runs, guo_chains(scale), methods, progress=True, batch=BATCH)
    # this run's batches only: a folder left by another --runs or --methods holds other files too
    labels = [f"guo-atus runs {f}-{min(f + BATCH, runs) - 1}" for f in range(0, runs, BATCH)]
    paths = [p for label in labels for p in folder.glob(f"{label} *.json")]
    if len(paths) != len(labels):
        raise SystemExit(f"{folder} holds cells of other settings: delete it and run again")
    rows = pd.DataFrame([row for p in paths for row in json.loads(p.read_text())["rows"]])
    seconds = report.tables["Seconds per run (compile excluded)"].rename(columns={"index": "sex"})
    seconds.insert(0, "setting", setting)
    return rows, seconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1, help="releases per sex")
    parser.add_argument("--scale", type=float, default=0.05, help="short chains, as a fraction of the seed's")
    parser.add_argument("--full-scale", type=float, default=1.0, help="the 'full' chains (the seed's: 1)")
    parser.add_argument("--methods", nargs="+", default=["MCMCp1", "DPMCMCp1", "DPABCp5"], choices=BAYES)
    args = parser.parse_args()
    plan = {"short": args.scale, "full": args.full_scale}
    rows, seconds = {}, {}
    for setting, scale in plan.items():
        print(f"--- {setting}: {args.runs} runs per sex, chains at {scale:g} × the seed's", flush=True)
        rows[setting], seconds[setting] = run(setting, args.runs, scale, tuple(args.methods))

    paired = rows["short"].merge(rows["full"], on=["run", "method", "part"], suffixes=(" short", " full"))
    for q in QUANTITIES:
        paired[f"Δ {q}"] = paired[f"{q} full"] - paired[f"{q} short"]
    columns = ["run", "method", "part"] + [f"{q} {s}" for q in QUANTITIES for s in ("short", "full")]
    columns += [f"Δ {q}" for q in QUANTITIES]
    paired = paired[columns]
    worst = (
        paired.assign(**{f"Δ {q}": paired[f"Δ {q}"].abs() for q in QUANTITIES})
        .groupby("method", sort=False)[[f"Δ {q}" for q in QUANTITIES]]
        .max()
        .rename(columns=lambda c: f"largest |{c}|")
        .reset_index()
    )
    times = pd.concat(seconds.values(), ignore_index=True)
    chains = {s: guo_chains(scale) for s, scale in plan.items()}
    c_s, c_f = chains["short"], chains["full"]
    md = [
        "# Guo et al. §4.2 (ATUS) at the part's chain length and at the seed's",
        "",
        f"{args.runs} release(s) per sex at ε = 0.5, each analysed with chains at {args.scale:g} × the seed's "
        f"length (5 × ({c_s['warmup']} warm-up + {c_s['samples']}), every {c_s['thin']}-th kept, as in "
        f"`results/guo_atus_part.md`) and at {args.full_scale:g} × (5 × ({c_f['warmup']} warm-up + "
        f"{c_f['samples']}), every {c_f['thin']}-th kept). Both settings use the same releases (the same keys), "
        "so their difference is the chains' alone. P(H₀) is the posterior probability that a part's male − "
        "female share difference lies within ±0.01; H₀ is rejected when it is below 0.5 (`reject` = 1). "
        "DPBoots (run_methods always runs it) has no chains: its rows are the same in both settings when the "
        "releases are.",
        "",
        "## Largest change per method (over runs and parts)",
        "",
        markdown_table(worst),
        "",
        "## Run by run",
        "",
        markdown_table(paired),
        "",
        "## Seconds per run and sex (compile excluded)",
        "",
        markdown_table(times),
    ]
    payload = {
        "settings": {s: {"runs": args.runs, "chains": c} for s, c in chains.items()},
        "methods": args.methods,
        "largest changes": worst.to_dict("records"),
        "paired": paired.to_dict("records"),
        "seconds": times.to_dict("records"),
    }
    write_results(NAME, payload, "\n".join(md))


if __name__ == "__main__":
    main()
