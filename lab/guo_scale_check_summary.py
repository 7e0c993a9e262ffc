"""The §4.1 cells run at the seed's full chain length, side by side: one row per cell and method with
chains, read from every results/guo_scale_check[_TAG].json that `guo_scale_check.py` wrote (no chain is
run here). For each: the medians over data sets at 5 % of the seed's chain length and at its full length,
how far the full chains moved each data set's MSE of α and coverage (paired), the largest split-R̂ and
the seconds per data set. Writes results/guo_scale_check_summary.{md,json,png}.

    python lab/guo_scale_check_summary.py
"""

import argparse
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from _common import RESULTS, write_results
from scipy import stats

from dpjax.reproduce import markdown_table
from dpjax.reproduce.compositional import BAYES, NO_PRIVACY

NAME = "guo_scale_check_summary"


def cell_rows(path):
    """One row per method with chains of one guo_scale_check results file."""
    d = json.loads(path.read_text())
    alpha, n, eps = d["cell"]["α"], d["cell"]["n"], d["cell"]["ε"]
    med = {(r["method"], r["metric"]): r for r in d["medians"]}
    paired = {r["method"]: r for r in d["paired"]}
    full_seconds = next(s for s in d["seconds"] if s["setting"] == "full chains")
    nan = {"short": np.nan, "full chains": np.nan}  # none recorded (DPABCp5: its p5 chain's, from 2026-12-02)
    rows = []
    for method in BAYES:  # the methods with chains; Boots and DPBoots run none
        if method not in paired:
            continue
        p = paired[method]
        rows.append(
            {
                "α": alpha,
                "n": n,
                "ε": "10¹⁰" if eps == NO_PRIVACY else f"{eps:g}",
                "ε value": eps,
                "method": method,
                "data sets": p["data sets"],
                "MSE α, short": med[method, "MSE α"]["short"],
                "MSE α, full": med[method, "MSE α"]["full chains"],
                "MSE α full/short, min": 10 ** p["min"],
                "MSE α full/short, max": 10 ** p["max"],
                "coverage, short": med[method, "coverage"]["short"],
                "coverage, full": med[method, "coverage"]["full chains"],
                "mean Δ coverage": p["mean Δ coverage (full − short)"],
                "Δ coverage s.e.": p["s.e."],
                "max split-R̂, short": med.get((method, "max split-R̂"), nan)["short"],
                "max split-R̂, full": med.get((method, "max split-R̂"), nan)["full chains"],
                # DPABCp5's prior p5 is a DPMCMC chain on D₁, DPreMCMCp4's p4 an elicitation: counted in
                "s/set, full": full_seconds[f"s/set {method}"]
                + full_seconds.get(
                    {"DPABCp5": "s/set p5 (DPMCMC on D₁)", "DPreMCMCp4": "s/set elicit p4"}.get(method), 0
                ),
            }
        )
    return rows


def rhat(x):
    """A median largest split-R̂ as text: 3 decimals near 1, 2 significant digits when drifting; – if none."""
    return "–" if np.isnan(x) else f"{x:.3f}" if x < 10 else f"{x:.1e}"


def both(template, a, b):
    """Two columns as one column of text, e.g. "a → b" or "a ± b"."""
    return [template.format(x, y) for x, y in zip(a, b)]


def figure(df):
    """Coverage at full length against at 5 %, and the per-data-set range of MSE α full/short."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    colours = dict(zip(BAYES, plt.get_cmap("tab10").colors))
    for method, g in df.groupby("method", sort=False):
        ax1.errorbar(
            g["coverage, short"],
            g["coverage, full"],
            yerr=2 * g["Δ coverage s.e."],
            fmt="o",
            mfc="none",  # hollow: the methods that share a coverage stay visible
            color=colours[method],
            label=method,
        )
    ax1.axline((0.95, 0.95), slope=1, color="grey", lw=0.8)
    ax1.set(xlabel="median coverage, chains at 5 %", ylabel="median coverage, full chains (± 2 s.e. of Δ)")
    ax1.legend(loc="upper left", fontsize=8)
    cells = list(dict.fromkeys(df["cell"]))
    for k, method in enumerate(m for m in BAYES if m != "DPreMCMCp4"):  # its target is degenerate
        g = df[df["method"] == method].set_index("cell").reindex(cells)
        y = np.arange(len(cells)) + 0.2 * (k - 1)
        lo, hi = g["MSE α full/short, min"], g["MSE α full/short, max"]
        ax2.hlines(y, lo, hi, color=colours[method], lw=2, label=method)
    ax2.axvline(1, color="grey", lw=0.8)
    ax2.set_xscale("log")
    ticks = [0.25, 0.5, 1, 2, 4]
    ax2.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax2.xaxis.set_minor_formatter(plt.NullFormatter())
    ax2.invert_yaxis()  # the table's order, top down
    ax2.set_yticks(np.arange(len(cells)), cells, fontsize=8)
    ax2.set(xlabel="MSE of α, full chains / 5 %: range over the cell's data sets")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return fig


def main():
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()

    # cells run at both lengths, in the study's precision: a float64 rerun of a cell (a check,
    # `JAX_ENABLE_X64=1`) is not another cell, nor is a rerun of one length alone
    def is_cell(d):
        return "float64" not in d["machine"] and {"short", "full"} <= set(d["settings"])

    files = sorted(
        p
        for p in RESULTS.glob("guo_scale_check*.json")
        if p.stem != NAME and is_cell(json.loads(p.read_text()))
    )
    if not files:
        raise SystemExit("no results/guo_scale_check*.json: run lab/guo_scale_check.py first")
    df = pd.DataFrame([row for p in files for row in cell_rows(p)])
    df["cell"] = df["α"] + ", n = " + df["n"].astype(str) + ", ε = " + df["ε"]
    df = df.assign(order=df["method"].map(BAYES.index)).sort_values(["order", "α", "n", "ε value"])
    # paired t-test of Δ coverage = 0 per row (rows whose Δ are all equal, s.e. 0, are left out)
    tested = df[df["Δ coverage s.e."] > 0]
    t = tested["mean Δ coverage"] / tested["Δ coverage s.e."]
    p = 2 * stats.t.sf(t.abs(), tested["data sets"] - 1)
    moved = tested[p < 0.05]
    dp = df[df["method"] == "DPMCMCp1"]
    # each method's Δ coverage over the cells, cells weighted equally: a bias of the short chains would show here
    pooled = df.groupby("method", sort=False).agg(
        mean=("mean Δ coverage", "mean"), se=("Δ coverage s.e.", lambda s: np.sqrt((s**2).sum()) / len(s))
    )
    pooled["z"] = pooled["mean"] / pooled["se"]

    show = pd.DataFrame(
        {
            "cell": df["cell"],
            "method": df["method"],
            "data sets": df["data sets"],
            "MSE α, 5 % → full": both("{:.3g} → {:.3g}", df["MSE α, short"], df["MSE α, full"]),
            "per data set, full/5 %": both(
                "{:.2f} to {:.2f}", df["MSE α full/short, min"], df["MSE α full/short, max"]
            ),
            "coverage, 5 % → full": both("{:.3f} → {:.3f}", df["coverage, short"], df["coverage, full"]),
            "mean Δ coverage ± s.e.": both("{:+.4f} ± {:.4f}", df["mean Δ coverage"], df["Δ coverage s.e."]),
            "largest split-R̂, 5 % → full": both(
                "{} → {}", df["max split-R̂, short"].map(rhat), df["max split-R̂, full"].map(rhat)
            ),
            "s/set, full": df["s/set, full"].round(1),
        }
    )
    md = [
        "# Guo et al. §4.1: the cells run at the seed's full chain length",
        "",
        f"{len(files)} cells of the §4.1 grid ran with chains at 5 % of the seed's length (as the grids did) and "
        "at its full length (5 × (25 000 warm-up + 25 000), every 125-th kept), on the same data sets and "
        "releases, by `lab/guo_scale_check.py` (each cell's own file: `results/guo_scale_check[_TAG].md`). "
        "Medians over a cell's data sets; *per data set, full/5 %*: the range over data sets of the ratio of "
        "their MSE of α; *mean Δ coverage*: the paired mean change of a data set's 95 % predictive coverage, "
        "with its s.e. Methods with chains only (Boots and DPBoots draw the same at both lengths).",
        "",
        f"- Rows whose mean Δ coverage differs from 0 at the 5 % level (paired t-test over the cell's data "
        f"sets): {len(moved)} of {len(tested)} tested, where chance alone would give about {0.05 * len(tested):.1f}"
        + (
            ": "
            + "; ".join(
                f"{m} at {c} ({d:+.4f})"
                for m, c, d in zip(moved["method"], moved["cell"], moved["mean Δ coverage"])
            )
            if len(moved)
            else ""
        )
        + ".",
        "- Each method's mean Δ coverage averaged over the cells (cells weighted equally, s.e. √(Σ s.e.²) / cells): "
        + "; ".join(f"{m} {r['mean']:+.4f} ± {r['se']:.4f} (z {r['z']:+.1f})" for m, r in pooled.iterrows())
        + f". Largest |z|: {pooled['z'].abs().max():.1f}"
        + (" (no method's average is 2 s.e. from 0)." if pooled["z"].abs().max() < 2 else "."),
        f"- DPMCMCp1's largest |mean Δ coverage|: {dp['mean Δ coverage'].abs().max():.4f}; its median largest "
        f"split-R̂ at full length: {dp['max split-R̂, full'].min():.3f} to {dp['max split-R̂, full'].max():.3f} "
        f"over the cells (5 %: {dp['max split-R̂, short'].min():.3f} to {dp['max split-R̂, short'].max():.3f}).",
        "- DPreMCMCp4's split-R̂ stays large at any length: its power-scaled target drifts "
        "(`benchmarks/results/remcmc_degeneracy.md`).",
        "",
        markdown_table(show),
        "",
        f"![coverage and MSE of α at both lengths]({NAME}.png)",
    ]
    figure(df).savefig(RESULTS / f"{NAME}.png", dpi=100, bbox_inches="tight")
    records = {
        "cells": df.drop(columns=["cell", "order"]).to_dict("records"),
        "mean Δ coverage over the cells": pooled.reset_index().to_dict("records"),
    }
    write_results(NAME, records, "\n".join(md))


if __name__ == "__main__":
    main()
