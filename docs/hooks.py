"""mkdocs hook: the results pages, rendered from the results files by dpjax's own code.

Each registered experiment with a ``benchmarks/results/<name>.json`` gets ``results/<name>.md``
(:func:`dpjax.reproduce.render_markdown`) and its figures; ``results/index.md`` is the summary table
(:func:`dpjax.reproduce.summary_table`), which marks every file produced by other code than HEAD's."""

import json
import re
from pathlib import Path

from mkdocs.structure.files import File

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"

INTRO = """# Results next to the seeds'

Every table and figure of the seeds that dpjax reproduces is one registered experiment
(`dpjax reproduce --list`); `dpjax reproduce NAME --out DIR` runs it and writes `DIR/NAME.json`, the
markdown page and the figures, with dpjax's figures next to the seed's and a verdict computed from the
Monte Carlo standard errors (or a stated tolerance). `dpjax reproduce --all --out DIR` runs them all;
long ones resume where they stopped. These pages are rendered from the committed JSON files in
`benchmarks/results/` when the docs are built: the last column says whether a file was produced by
the code of this version of dpjax.

"""


# the docstrings' Sphinx roles (:func:`dpjax.privatized`, :class:`~dpjax.infer.DAState`) as rendered by
# mkdocstrings: a role name before inline code; they become cross-references (plain code where the
# target is not documented; ``~`` shows the last name only, as in Sphinx)
ROLE = re.compile(r":(?:func|class|mod|data|meth|attr|obj|exc|const):<code>(~?)([^<]+)</code>")

STATIC = [
    ("Guo et al., Figure 1", "results/guo-figure1.md"),
    ("Not reproduced, and why", "results/not-reproduced.md"),
]
SBC = RESULTS / "sbc_seed_models.json"
SBC_INTRO = """# Simulation-based calibration on the seeds' models

`dpjax.testing.sbc` (see [the cookbook](../cookbook/sbc.md)) on the seeds' models, where no exact answer
exists: for each ε, 256 releases (fewer where a case says) drawn from the prior predictive, the engine's
posterior on each, the rank of the true θ among 99 thinned draws, and the verdict of the simultaneous ECDF
band (Säilynoja et al. 2022) at level 0.95 over every coordinate and ε of a case (Bonferroni).
`max_gap` is the largest distance of the ECDF from uniform in units of the band's half-width (over 1 is
outside). Rendered from
`benchmarks/results/sbc_seed_models.json`, made by `python benchmarks/sbc_seed_models.py`; the cost of
SBC is in `benchmarks/results/sbc_cost.md`.
"""


def sbc_page(payload: dict) -> str:
    """The SBC results page: per case its seed, engine, verdict, table and figure."""
    lines = [SBC_INTRO]
    for name, case in payload["cases"].items():
        verdict = "passed" if case["passed"] else "**failed**"
        lost = {v["epsilon"]: case["simulations"] - v["simulations"] for v in case["verdicts"]}
        if any(lost.values()):  # an engine that returned no draws is a defect unless the case says why
            counts = ", ".join(f"{n} at ε = {e:g}" for e, n in lost.items() if n)
            why = case.get("lost_because", "a defect")
            verdict += f" on the simulations with draws only; **no draws in {counts}** ({why})"
        lines += [
            f"## {name}",
            "",
            f"{case['seed']}; engine: {case['engine']}; {case.get('dtype', 'float32')}; "
            f"{case['simulations']} simulations per ε, {case['seconds']:.0f} s in all: {verdict}.",
            *(["", case["note"]] if "note" in case else []),
            "",
            "| ε | coordinate | inside | max_gap | median ESS |",
            "|---:|---|---|---:|---:|",
        ]
        row = "| {epsilon:g} | {coordinate} | {inside} | {max_gap:.2f} | {median_ess:.0f} |"
        lines += [row.format(**v) for v in case["verdicts"]]
        lines += ["", *(f"> {w}" for w in case["warnings"]), "", f"![{name}]({case['figure']})", ""]
    return "\n".join(lines)


WALD = RESULTS / "wald_coverage.json"
WALD_INTRO = """## Coverage of MCEM's Wald intervals

MCEM gives an MLE with standard errors (Louis's observed information), not a posterior, so its check is
the frequentist one: releases simulated at a fixed θ₀, one fit each, and the fraction of 95 % Wald
intervals that contain θ₀ (`dpjax.testing.wald_coverage`), with an exact binomial test at level 0.95
over every coordinate and ε of a case (Bonferroni). The z-scores (θ̂ − θ₀)/s.e. have mean 0 and sd 1
when θ̂ is unbiased and its standard errors right. Rendered from `benchmarks/results/wald_coverage.json`,
made by `python benchmarks/wald_coverage.py`. Wald intervals are asymptotic, so each MCEM case sits
beside an exact reference (the exact MLE and observed information on the same releases): where both
fail together, the interval fails, not MCEM. Stochastic EM gives no standard errors of θ̂ (only its
Monte Carlo error), so it has no intervals to check.
"""


def wald_section(payload: dict) -> str:
    """The Wald-coverage section of the SBC page: per case its seed, estimator, verdict and table."""
    lines = [WALD_INTRO]
    for name, case in payload["cases"].items():
        verdict = "passed" if case["passed"] else "**failed**"
        ref = payload["cases"].get(case.get("reference"), {"verdicts": []})
        ref_coverage = {(v["epsilon"], v["coordinate"]): v["coverage"] for v in ref["verdicts"]}
        lines += [
            f"### {name}",
            "",
            f"{case['seed']}; {case['estimator']}; {case['simulations']} simulations per ε, "
            f"{case['seconds']:.0f} s in all: {verdict}.",
            *(["", case["note"]] if "note" in case else []),
            "",
            "| ε | coordinate | simulations | coverage | p-value | mean z | sd z | inside |"
            + (f" coverage of {case['reference']} |" if ref_coverage else ""),
            "|---:|---|---:|---:|---:|---:|---:|---|" + ("---:|" if ref_coverage else ""),
        ]
        row = (
            "| {epsilon:g} | {coordinate} | {simulations} | {coverage:.3f} | {p_value:.2g} | {mean_z:+.2f} | "
            "{sd_z:.2f} | {inside} |"
        )
        for v in case["verdicts"]:
            other = ref_coverage.get((v["epsilon"], v["coordinate"]))
            lines.append(row.format(**v) + (f" {other:.3f} |" if other is not None else ""))
        lines += ["", *(f"> {w}" for w in case["warnings"]), ""]
    return "\n".join(lines)


def on_config(config):
    """The Results section of the nav: the index, one page per registered experiment with a results
    file, and the static pages."""
    from dpjax.reproduce import REGISTRY

    pages = [{"Overview": "results/index.md"}]
    pages += [{name: f"results/{name}.md"} for name in REGISTRY if (RESULTS / f"{name}.json").exists()]
    pages += [{title: path} for title, path in STATIC]
    if SBC.exists():
        pages.append({"Simulation-based calibration": "results/sbc.md"})
    config["nav"] = [
        {"Results": pages} if item == {"Results": "results/index.md"} else item for item in config["nav"]
    ]
    return config


def on_files(files, config):
    from dpjax.reproduce import REGISTRY, render_markdown, summary_table

    for name in REGISTRY:
        path = RESULTS / f"{name}.json"
        if not path.exists():
            continue
        payload = json.loads(path.read_text())
        files.append(File.generated(config, f"results/{name}.md", content=render_markdown(payload)))
        for png in payload.get("figures", []):
            files.append(File.generated(config, f"results/{png}", abs_src_path=str(RESULTS / png)))
    if SBC.exists():
        payload = json.loads(SBC.read_text())
        wald = wald_section(json.loads(WALD.read_text())) if WALD.exists() else ""
        files.append(File.generated(config, "results/sbc.md", content=sbc_page(payload) + "\n" + wald))
        for case in payload["cases"].values():
            png = case["figure"]
            files.append(File.generated(config, f"results/{png}", abs_src_path=str(RESULTS / png)))
    notes = "\n\nWhere dpjax differs from a seed, and why: [notes on the seeds](../seeds.md).\n"
    index = INTRO + summary_table(RESULTS, link="./") + notes
    files.append(File.generated(config, "results/index.md", content=index))
    return files


def on_page_content(html, page, config, files):
    """Sphinx roles in the rendered docstrings become autorefs cross-references."""

    def reference(match):
        short, target = match[1], match[2].strip()
        title = target.rsplit(".", 1)[-1] if short else target
        return f'<autoref identifier="{target}" optional><code>{title}</code></autoref>'

    return ROLE.sub(reference, html)
