"""Guo, Barrientos & Peña's §4.1 assembled from its parts: every cell that
`lab/guo_simulation_part.py` has run (results/guo_simulation_part*.json), drawn as the seed's
Figures 2–3 (median MSE of α and of E[x | α], median predictive coverage, against ε, one row per α),
with the seed's statements about those figures checked cell by cell and the grid's missing cells listed.
It runs no chains, only reads the parts' results, so it takes seconds. It pools the parts run with
``--datasets`` data sets per cell (the grid's 10; parts with another count are left to their own
grid) and refuses to pool parts whose other settings (chain lengths, …) differ. With a count other than
10 (the seed's 50, run on a few cells) it writes results/guo_simulation_grid_<count>sets.{md,json,png},
with the medians of the same cells at 10 data sets beside them.

    python lab/guo_simulation_grid.py [--datasets 10]
"""

import argparse
import functools
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from _common import RESULTS, median_se, write_results

from dpjax.reproduce import markdown_table
from dpjax.reproduce.compositional import ALPHAS, BAYES, METHODS, NO_PRIVACY

EPS = (0.25, 0.5, 1.5, NO_PRIVACY)
SIZES = (1000, 5000)
NON_PRIVATE = ("Boots", "MCMCp1")
DP = tuple(m for m in METHODS if m not in NON_PRIVATE)
SIMILAR = 1.5  # "similar MSE": within this factor
BASE = 10  # the grid's data sets per cell (the seed's: 50)
POOLED = ("chains", "warmup", "samples", "thin", "boot", "proposals", "b", "datasets", "m_eval")


def load_parts(datasets=BASE):
    """The per-cell medians and seconds of the parts run with ``datasets`` data sets per cell, each row
    tagged with its part's file and date."""
    medians, seconds, settings = [], [], {}
    for path in sorted(RESULTS.glob("guo_simulation_part*.json")):
        part = json.loads(path.read_text())
        if part["settings"]["datasets"] != datasets:
            continue
        settings[path.stem] = {k: part["settings"][k] for k in POOLED}
        source = {"part": path.stem.removeprefix("guo_simulation_part").lstrip("_") or "(first)"}
        source["run on"] = part["date"]
        source["machine"] = part["machine"]
        medians += [{**r, **source} for r in part["tables"]["Median over data sets per cell"]]
        seconds += [{**r, **source} for r in part["tables"]["Seconds per data set (compile excluded)"]]
    if not settings:
        raise SystemExit(
            f"no results/guo_simulation_part*.json with {datasets} data sets per cell: "
            "run lab/guo_simulation_part.py first"
        )
    if len({json.dumps(s, sort_keys=True) for s in settings.values()}) > 1:
        raise SystemExit(f"the parts' settings differ, so they cannot be pooled: {settings}")
    rank = {name: i for names in (ALPHAS, METHODS) for i, name in enumerate(names)}  # the seed's order
    order = lambda df: df.sort_values(
        [c for c in ("α", "n", "ε", "method") if c in df],
        key=lambda c: c.map(rank) if c.name in ("α", "method") else c,
        kind="stable",
    ).reset_index(drop=True)
    medians, seconds = order(pd.DataFrame(medians)), order(pd.DataFrame(seconds))
    twice = medians.duplicated(["α", "n", "ε", "method"], keep=False)
    if twice.any():
        raise SystemExit(f"cells run in more than one part:\n{medians[twice]}")
    return medians, seconds, next(iter(settings.values()))


@functools.cache
def cell_rows(part, cell):
    """A cell's per-data-set rows, as its part (label as in :func:`load_parts`) kept them in its cells
    folder; None for a part run before parts kept their cells. Read once per cell."""
    stem = "guo_simulation_part" + ("" if part == "(first)" else f"_{part}")
    a, n, e = cell
    files = sorted((RESULTS / f"{stem}.cells").glob(f"guo-simulation {a} n{n} eps{e:g} *.json"))
    return pd.DataFrame(json.loads(files[-1].read_text())["rows"]) if files else None


def cell_se(part, cell, method, col):
    """Bootstrap s.e. of a cell's median of ``col`` over its data sets; NaN without the cell's rows."""
    rows = cell_rows(part, cell)
    if rows is None:
        return np.nan
    return median_se(rows.loc[rows["method"] == method, col], np.random.default_rng(0))[1]


def against_base(med, datasets):
    """The cells run with ``datasets`` data sets beside the same cells at the grid's 10: medians with
    their bootstrap s.e."""
    base = load_parts(BASE)[0]
    both = med.merge(base, on=["α", "n", "ε", "method"], suffixes=("", " base"))
    rows = []
    for r in both.to_dict("records"):
        cell = (r["α"], r["n"], r["ε"])
        row = {"α": r["α"], "n": r["n"], "ε": r["ε"], "method": r["method"]}
        for col in ("MSE α", "coverage"):
            if col == "coverage" and r["method"] not in BAYES:
                continue
            for sets, part, value in (
                (BASE, r["part base"], r[f"{col} base"]),
                (datasets, r["part"], r[col]),
            ):
                row[f"{col}, {sets} sets"] = f"{value:.4g} ± {cell_se(part, cell, r['method'], col):.2g}"
        rows.append(row)
    return pd.DataFrame(rows).fillna("")


def speedups(sec):
    """How many times faster than DPMCMCp1 each of the seed's faster Bayesian methods ran, per cell."""
    mcmc = sec["s/set DPMCMCp1"]
    return sec[["α", "n", "ε"]].assign(
        **{
            "DPreMCMCp4": mcmc / sec["s/set DPreMCMCp4"],
            "DPABCp5": mcmc / sec["s/set DPABCp5"],
            "DPABCp5 with p5's chain": mcmc / (sec["s/set DPABCp5"] + sec["s/set p5 (DPMCMC on D₁)"]),
        }
    )


def statements(med, fast):
    """The seed's statements about Figures 2–3 (§4.1), each checked on every cell where it applies."""
    at = med.set_index(["α", "n", "ε", "method"])
    cells = list(med[["α", "n", "ε"]].drop_duplicates().itertuples(index=False, name=None))  # in order
    rows = []

    def check(statement, tested):  # tested: (cell label, holds) pairs
        fails = [label for label, holds in tested if not holds]
        rows.append(
            {
                "the seed says": statement,
                "holds in": f"{len(tested) - len(fails)} of {len(tested)}",
                "where not": "; ".join(fails),
            }
        )

    def v(cell, method, col="MSE α"):
        return at.loc[(*cell, method), col]

    label = lambda c, extra="": f"{c[0]} n={c[1]} ε={c[2]:g}{extra}"
    # "the MSEs are decreasing in ε": every consecutive pair of ε that a cell pair covers
    steps = []
    for m in DP:
        for a, n in {(c[0], c[1]) for c in cells}:
            eps = sorted(c[2] for c in cells if c[:2] == (a, n))
            for lo, hi in zip(eps, eps[1:]):
                ok = v((a, n, hi), m) < v((a, n, lo), m)
                steps.append((f"{m} {a} n={n} ε {lo:g}→{hi:g}", ok))
    check("the MSE of α decreases in ε (each DP method, each step between run ε)", sorted(steps))
    both = sorted((a, e) for a, n, e in cells if n == SIZES[1] and (a, SIZES[0], e) in cells)
    check(
        f"the MSE of α decreases in n (each DP method, n {SIZES[0]} → {SIZES[1]})",
        [(f"{m} {a} ε={e:g}", v((a, SIZES[1], e), m) < v((a, SIZES[0], e), m)) for m in DP for a, e in both],
    )
    free = [c for c in cells if c[2] == NO_PRIVACY]
    pairs = (("DPBoots", "Boots"), ("DPMCMCp1", "MCMCp1"))
    check(
        f"ε = 10¹⁰: DPBoots and DPMCMCp1 have MSEs of α similar to Boots and MCMCp1 (within {SIMILAR}×)",
        [
            (label(c, f" {dp}/{ref} = {v(c, dp) / v(c, ref):.2f}"), v(c, dp) / v(c, ref) < SIMILAR)
            for c in free
            for dp, ref in pairs
        ],
    )
    check(
        "ε = 10¹⁰: DPABCp5's MSE of α is larger than MCMCp1's, but acceptable",
        [
            (label(c, f" ratio {v(c, 'DPABCp5') / v(c, 'MCMCp1'):.2f}"), v(c, "DPABCp5") > v(c, "MCMCp1"))
            for c in free
        ],
    )
    private = [c for c in cells if c[2] != NO_PRIVACY]
    check(
        "DPBoots' MSE of α is (slightly) larger than DPMCMCp1's",
        [(label(c), v(c, "DPBoots") > v(c, "DPMCMCp1")) for c in private],
    )
    for other in ("DPreMCMCp4", "DPABCp5"):
        gap = lambda c, m: abs(v(c, m, "coverage") - 0.95)
        check(
            f"DPMCMCp1's predictive coverage is closer to 95 % than {other}'s",
            [(label(c), gap(c, "DPMCMCp1") <= gap(c, other)) for c in private],
        )
    # §4.1's run times: "with n = 5000 and α₅ … DPreMCMCp4 and DPABCp5 are approximately 6.2 (b = 5) and
    # 60.3 times faster than DPMCMCp1"; whether p5's own chain counts it does not say (the table shows both)
    hard = fast[(fast["α"] == "α₅") & (fast["n"] == SIZES[1])]
    for m, seed in (("DPreMCMCp4", 6.2), ("DPABCp5", 60.3)):
        check(
            f"α₅, n = {SIZES[1]}: {m} is faster than DPMCMCp1 (the seed: {seed}×)",
            [(f"α₅ n={r['n']} ε={r['ε']:g}: {r[m]:.1f}×", r[m] > 1) for r in hard.to_dict("records")],
        )
    return pd.DataFrame(rows)


def figure(med):
    """The seed's Figures 2–3 as lines against ε: one row per α, one colour per method."""
    names = [a for a in ALPHAS if a in set(med["α"])]
    cols = ["MSE α", "MSE E[x|α]", "coverage"]
    fig, axes = plt.subplots(len(names), 3, figsize=(14, 2.8 * len(names)), squeeze=False)
    colours = dict(zip(METHODS, plt.get_cmap("tab10").colors))  # as simulation_study's figure
    x = {e: i for i, e in enumerate(EPS)}
    for row, a in zip(axes, names):
        for ax, col in zip(row, cols):
            for (m, n), g in med[med["α"] == a].groupby(["method", "n"], sort=False):
                if col == "coverage" and m not in BAYES:
                    continue
                g = g.sort_values("ε")
                wide = m in NON_PRIVATE  # the seed draws the non-private benchmarks wider
                ax.plot(
                    [x[e] for e in g["ε"]],
                    g[col],
                    marker="o" if n == 1000 else "s",
                    ls="-" if n == 1000 else "--",
                    lw=3 if wide else 1.5,
                    color=colours[m],
                    label=m,
                )
            ax.set_xticks(range(len(EPS)), ["0.25", "0.5", "1.5", "10¹⁰"])
            ax.set_xlim(-0.3, len(EPS) - 0.7)
            if col == "coverage":
                ax.axhline(0.95, color="k", lw=0.8)
                ax.set_ylim(0.6, 1.0)
            else:
                ax.set_yscale("log")
            cut = " (below 0.6: see the table)" if col == "coverage" else ""
            ax.set_title(f"{a} = {ALPHAS[a]}: median {col}{cut}", fontsize=9)
    for ax in axes[-1]:
        ax.set_xlabel("ε")
    shown = [m for m in METHODS if m in set(med["method"])]
    handles = [plt.Line2D([], [], color=colours[m], lw=3 if m in NON_PRIVATE else 1.5) for m in shown]
    handles += [plt.Line2D([], [], color="k", marker=mk, ls=ls) for mk, ls in (("o", "-"), ("s", "--"))]
    labels = shown + [f"n = {n}" for n in SIZES]
    fig.legend(handles, labels, loc="upper center", ncol=len(labels))
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.2 / len(names)))
    return fig


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--datasets", type=int, default=BASE, help="pool the parts run with this many per cell"
    )
    datasets = parser.parse_args().datasets
    name = "guo_simulation_grid" + ("" if datasets == BASE else f"_{datasets}sets")
    med, sec, settings = load_parts(datasets)
    done = med[["α", "n", "ε", "part", "run on", "machine"]].drop_duplicates()
    grid = pd.DataFrame(
        [(a, n, e) for a in ALPHAS for n in SIZES for e in EPS], columns=["α", "n", "ε"]
    ).merge(done, how="left")
    missing = grid[grid["part"].isna()]
    fast = speedups(sec)
    checks = statements(med, fast)
    cells = pd.MultiIndex.from_frame(done[["α", "n", "ε"]])  # in the seed's order (load_parts)
    wide = lambda col, methods: (
        med.set_index(["α", "n", "ε", "method"])[col].unstack("method").reindex(cells)
    )[[m for m in METHODS if m in methods]].reset_index()
    times = sec[["α", "n", "ε"] + [c for c in sec if c.startswith("s/set")]]
    figure(med).savefig(RESULTS / f"{name}.png", dpi=100, bbox_inches="tight")

    md = [
        "# Guo et al. §4.1 (Figures 2–3): the grid so far, assembled from its parts"
        + ("" if datasets == BASE else f", the cells run with {datasets} data sets"),
        "",
        f"{len(done)} of the grid's {len(grid)} cells (α × n × ε) have been run, each with "
        f"{settings['datasets']} data sets (the seed: 50) and chains of {settings['chains']} × "
        f"({settings['warmup']} warm-up + {settings['samples']}) iterations, every {settings['thin']}-th kept "
        "(5 % of the seed's length). Settings, methods and metrics: see any part's notes "
        "(`results/guo_simulation_part*.md`). The seed's figures are bars without numbers, so its "
        "statements about them are what can be checked: each is tested on every cell where it applies "
        "(medians over the cell's data sets, so a statement about a *slight* difference can flip on Monte "
        "Carlo noise). **DPreMCMCp4 samples a degenerate target** (see the parts' notes), so its MSE and "
        "coverage measure where its chains had got to.",
        "",
        "## The seed's statements, cell by cell",
        "",
        markdown_table(checks),
        "",
        "## Median MSE of α",
        "",
        markdown_table(wide("MSE α", METHODS)),
        "",
        "## Median MSE of E[x | α]",
        "",
        markdown_table(wide("MSE E[x|α]", METHODS)),
        "",
        "## Median predictive coverage (nominal 0.95)",
        "",
        markdown_table(wide("coverage", BAYES)),
        "",
        "## Seconds per data set (compile excluded)",
        "",
        "Each cell's times are those of the machine that ran its part (the last table names it), so "
        "compare them within a part, not across parts.",
        "",
        markdown_table(times),
        "",
        "## Times faster than DPMCMCp1 (its seconds per data set over theirs)",
        "",
        "The seed states this only for α₅ at n = 5 000: DPreMCMCp4 6.2× (b = 5), DPABCp5 60.3×, "
        "not saying whether p5's own chain (DPMCMC on D₁, which DPABCp5's prior needs) is counted.",
        "",
        markdown_table(fast),
        "",
        "## Cells run, and the part that ran them",
        "",
        markdown_table(done),
        "",
        (
            f"Not yet run ({len(missing)}): "
            + ", ".join(f"{r.α} n={r.n} ε={r.ε:g}" for r in missing.itertuples())
            + ". Each is `python lab/guo_simulation_part.py --alpha A --n N --eps E --tag TAG"
            + ("" if datasets == BASE else f" --datasets {datasets}")
            + "`, "
            "then this script."
            if len(missing)
            else f"Every cell of the grid has been run ({len(done)})."
        ),
        "",
        f"![{name}.png]({name}.png)",
    ]
    if datasets != BASE:
        beside = against_base(med, datasets)
        md[2:2] = [
            f"**These cells ran with {datasets} data sets each**, against the grid's {BASE} "
            "(`results/guo_simulation_grid.md`). Medians over data sets, ± their bootstrap s.e. (from the "
            "rows each part kept in its cells folder; none for a part run before parts kept them). A cell's "
            f"first {BASE} data sets, releases and chains are the same in both (the same seeds: a key splits "
            f"into the same first keys whatever their number), so the {datasets} extend the {BASE}.",
            "",
            markdown_table(beside),
            "",
        ]
    payload = {
        "settings": settings,
        "statements": checks.to_dict("records"),
        "times faster than DPMCMCp1": fast.to_dict("records"),
        "cells": done.to_dict("records"),
        "medians": med.replace({np.nan: None}).to_dict("records"),
    }
    if datasets != BASE:
        payload[f"beside the grid's {BASE} data sets"] = beside.to_dict("records")
    write_results(name, payload, "\n".join(md))
    print("\n".join(md[:12]))


if __name__ == "__main__":
    main()
