"""The documentation site builds with warnings as errors, its cookbook executed (markdown-exec runs
every example; a failing one is a warning), and its results pages are rendered from the results files."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def test_docs_build_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    pytest.importorskip("markdown_exec")
    # conftest's XLA flags (cheap compiles) and compilation cache, less its virtual devices (as test_quick)
    flags = " ".join(f for f in os.environ.get("XLA_FLAGS", "").split() if "device_count" not in f)
    env = {**os.environ, "XLA_FLAGS": flags, "NO_MKDOCS_2_WARNING": "1", "MPLBACKEND": "Agg"}
    site = tmp_path / "site"
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml")]
    run = subprocess.run(
        [*command, "-d", str(site)], cwd=ROOT, capture_output=True, text=True, env=env, timeout=1200
    )
    assert run.returncode == 0, run.stderr[-6000:]
    pages = {p.relative_to(site).as_posix(): p.read_text() for p in site.rglob("*.html")}
    for name, page in pages.items():
        assert "Traceback (most recent call last)" not in page, f"{name}: a cookbook example raised"
        # docstrings' Sphinx roles become links (docs/hooks.py), never text like ":func:"
        assert not re.search(r":(func|class|mod|data|meth|attr|obj|exc|const):<code>", page), name
    cookbook = [n for n in pages if n.startswith("cookbook/") and n != "cookbook/index.html"]
    assert len(cookbook) >= 8, sorted(pages)
    # every registered experiment with a results file has its page, rendered from the JSON
    from dpjax.reproduce import REGISTRY

    for name in REGISTRY:
        if (ROOT / "benchmarks" / "results" / f"{name}.json").exists():
            assert re.search("dpjax next to the seed", pages[f"results/{name}/index.html"])
    assert "verdicts passed" in pages["results/index.html"]
    assert "DataAugmentationKernel" in pages["api/infer/index.html"]
    assert 'href="../model/#dpjax.privatized"' in pages["api/infer/index.html"]


def test_notebooks_are_stored_executed():
    """The notebooks are committed with their outputs (readable on GitHub) and at least one plot each;
    `tests/test_notebooks.py` (second tier) runs them again."""
    import nbformat

    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        printing = [c for c in code if "print(" in c.source or "plt." in c.source]
        assert all(c.get("outputs") for c in printing), f"{path.name}: a cell that prints has no output"
        assert any(o.get("output_type") == "display_data" for c in code for o in c.outputs), path.name


def _read(name, folder=RESULTS):
    """The results file ``<folder>/<name>.json``."""
    return json.loads((folder / f"{name}.json").read_text())


def _says(page, claims):
    """Assert that ``docs/<page>`` (whitespace folded) says every claim, naming those it does not."""
    text = " ".join((ROOT / "docs" / page).read_text().split())
    missing = [claim for claim in claims if claim not in text]
    assert not missing, f"docs/{page} should say:\n" + "\n".join(missing)
    return text


def _passed(name, quantity=""):
    """``"k of m"``: of the judged rows of ``name``'s results file whose quantity ends with ``quantity``,
    ``k`` passed."""
    rows = _read(name)["comparison"]
    verdicts = [r["verdict"] for r in rows if r["quantity"].endswith(quantity) and r["verdict"] != "—"]
    return f"{verdicts.count('pass')} of {len(verdicts)}"


def _failing(name):
    """The quantities (without their cell) of the rows of ``name``'s results file that failed."""
    rows = _read(name)["comparison"]
    return {r["quantity"].split(": ")[-1] for r in rows if r["verdict"] == "fail"}


def _table2_schedule_claims():
    """What the notes say of Table 2 on the seed's MCEM schedule (`lab/table2_seed_schedule.py`), next to
    the seed's Table 2 at ε_n = 1 (as `awan-table2-seed-code` carries it)."""
    lab = ROOT / "lab" / "results"
    short = _read("table2_seed_schedule", lab)
    long = _read("table2_seed_schedule_670", lab)
    assert short["settings"]["eps_n"] == long["settings"]["eps_n"] == 1.0
    rounds = short["settings"]["rounds"]
    tau = np.array([r[f"τ after {rounds} M-steps"] for r in short["rows"]])
    beta = np.array([[float(b) for b in r["β at the end"].split(",")] for r in short["rows"]])
    beta_sd = beta.std(axis=0, ddof=1)
    seed = {r["quantity"]: r["seed"] for r in _read("awan-table2-seed-code")["comparison"]}
    seed_sd = [seed[f"ε_n=1: sd of θ̂ β{j}"] for j in range(3)]
    later = long["settings"]["rounds"]
    assert len(long["rows"]) == 3  # "on three releases"
    before = [tau[r["replicate"]] for r in long["rows"]]  # the same release and burn-in (the same key)
    after = [r[f"τ after {later} M-steps"] for r in long["rows"]]

    def listed(values):
        return ", ".join(f"{v:.2f}" for v in values[:-1]) + f" and {values[-1]:.2f}"

    return [
        f"{rounds} MCEM rounds of 100 record sweeps with Φ = I",
        f"{tau.mean():.2f} ± {tau.std(ddof=1) / np.sqrt(len(tau)):.2f} over {len(tau)} releases at ε_n = 1, "
        f"against the seed's {seed['ε_n=1: mean θ̂ τ']:.2f}",
        f"(sd {beta_sd.min():.2f}–{beta_sd.max():.2f} against the seed's "
        f"{min(seed_sd):.2f}–{max(seed_sd):.2f})",
        f"with {later} rounds τ̂ keeps moving (on three releases from {listed(before)} after {rounds} rounds "
        f"to {listed(after)} after {later})",
    ]


def test_seed_notes_quote_the_results_files():
    """The notes on the seeds are prose, so their counts of verdicts are typed by hand: each must be the
    committed results file's (a regenerated result that moves one fails here until the text follows), and
    no count may appear that this test does not check."""
    code_mu = _read("awan-table1-code-mu")["comparison"]
    failing = [r for r in code_mu if r["quantity"].endswith(": E β0") and r["verdict"] == "fail"]
    assert len(failing) == 4 and all(r["quantity"].startswith("ε_s=1,") for r in failing)
    below = [r["seed"] - r["dpjax"] for r in failing]
    claims = [
        f"passes {_passed('awan-table4-code-mu', ': E β0')} E β₀ rows where `awan-table4` passes "
        f"{_passed('awan-table4', ': E β0')}",
        f"**{_passed('awan-table1-seed-code')}** of the seed's Table 1 figures, against "
        f"{_passed('awan-table1')} for `awan-table1`",
        f"`awan-table1-code-mu` passes {_passed('awan-table1-code-mu', ': E β0')} E β₀ rows where "
        f"`awan-table1` passes {_passed('awan-table1', ': E β0')} ({_passed('awan-table1-code-mu')} verdicts "
        "in all)",
        f"where dpjax's E β₀ is below the seed's by {min(below):.2f}–{max(below):.2f}",
        f"and {_passed('awan-table1-code-mu')} for `awan-table1-code-mu` (the paper's model, the code's "
        "sign)",
    ]
    claims += _table2_schedule_claims()
    text = _says("seeds.md", claims)
    counts = re.findall(r"\d+ of \d+", text)
    checked = re.findall(r"\d+ of \d+", " ".join(claims))
    assert sorted(counts) == sorted(checked), "a count in docs/seeds.md that no claim here checks"
    # what the notes say of the failing rows
    seed_code = _read("awan-table1-seed-code")["comparison"]
    remain = [r["quantity"] for r in seed_code if r["verdict"] == "fail"]
    assert len(remain) == 3 and all(re.search(r"ε_n=0\.0?01: Var n$", q) for q in remain), remain
    assert "the three that remain are Var n at ε_n ≤ 0.01" in text
    assert {"E β0", "Var β2", "Var β0", "E τ", "E n"} <= _failing("awan-table1")


def test_guarantees_quote_the_sbc_results():
    """The guarantees page's count of float32 chains that left the support is the SBC results file's."""
    cases = _read("sbc_seed_models")["cases"]

    def lost(case):
        return [cases[case]["simulations"] - v["simulations"] for v in cases[case]["verdicts"]]

    f32, runs = lost("awan-unknown-n-rj-float32"), cases["awan-unknown-n-rj-float32"]["simulations"]
    claim = f"({min(f32)}–{max(f32)} of {runs} simulated releases"
    _says("guarantees.md", [claim])
    assert cases["awan-unknown-n-rj"]["dtype"] == "float64" and not any(lost("awan-unknown-n-rj"))


def _ratio(x):
    """A ratio as the docs write it: one decimal below 20 (8.2×, 10.3×), none above (23×)."""
    return f"{x:.1f}×" if x < 20 else f"{x:.0f}×"


def _count(x):
    return f"{x:,.0f}".replace(",", " ")


def test_cookbook_quotes_the_table1_ridge_results():
    """The cookbook's figures for the moves of n (prose, typed by hand) are those of
    `benchmarks/results/table1_ridge.json` and `lab/results/table1_start_check.json`."""
    bench = _read("table1_ridge")
    rows = {r["ridge moves; joint moves"]: r for r in bench["rows"]}
    old, default = rows["840f5ad: no size jumps, no ridge moves; 5 joint"], rows["none; 5 joint"]
    exact = rows["3, exact statistics; 5 joint"]
    forty = next(r for label, r in rows.items() if label.startswith("40 surrogate transitions of 1"))
    five, best = bench["rows"][-2:]  # 20 transitions of 3 ridge steps: 5 joint moves; 1 and no size jumps
    assert five["ridge moves; joint moves"].startswith("20 surrogate transitions of 3 ridge steps")
    assert five["ridge moves; joint moves"].endswith("; 5 joint")
    assert best["ridge moves; joint moves"].endswith("1 joint; no size jumps")
    curve = next(v for k, v in bench.items() if k.startswith("ESS(n)/s against ε_n"))
    at = {
        r["ε_n"]: r
        for r in curve
        if r["ridge moves; joint moves"]
        not in (old["ridge moves; joint moves"], default["ridge moves; joint moves"])
    }
    # the curve runs the table's best row: the text says which of the two that was
    first = at[0.001]["ridge moves; joint moves"] == five["ridge moves; joint moves"]
    per_iteration = (exact["seconds"] / exact["iterations"]) / (default["seconds"] / default["iterations"])
    keys = _read("table1_start_check", ROOT / "lab" / "results")["rows"]
    fixed = [r for r in keys if r["run"].startswith("best (d6262d4)")]
    slow = [r for r in keys if r["run"].startswith("HEAD (d6262d4), size_jumps=0")]
    fixed, slow = (sorted(rs, key=lambda r: r["key"]) for rs in (fixed, slow))
    gain = [f["ESS(n)/s"] / s["ESS(n)/s"] for f, s in zip(fixed, slow, strict=True)]
    # "the two differ by less than the second's spread from key to key"
    spread = max(r["ESS(n)/s"] for r in fixed) - min(r["ESS(n)/s"] for r in fixed)
    assert abs(five["ESS(n)/s"] - best["ESS(n)/s"]) < spread
    claims = [
        f"gives a median ESS of n of {_count(old['median ESS(n)'])} per 8 000 kept draws, the defaults "
        f"{_count(default['median ESS(n)'])} with R̂(n) up to {default['largest R-hat(n)']:.2f}",
        f"cost {per_iteration:.0f}× the defaults' time per iteration ({exact['× 840f5ad']:.1f}× the 840f5ad "
        "sampler's ESS(n)/s)",
        f"give {_count(forty['median ESS(n)'])} ({_ratio(forty['× 840f5ad'])} the 840f5ad sampler's "
        "ESS(n)/s)",
        f"give {_count(five['median ESS(n)'])} with five joint moves and the size jumps "
        f"({_ratio(five['× 840f5ad'])})",
        f"no size jumps, {_count(best['median ESS(n)'])} with R̂(n) ≤ {best['largest R-hat(n)']:.3f} in "
        f"{_ratio(best['seconds'] / old['seconds'])} the 840f5ad sampler's time: "
        f"**{_ratio(best['× 840f5ad'])} the 840f5ad sampler's ESS(n)/s and {_ratio(best['× defaults'])} the "
        "defaults'**",
        f"(the curve, 4 000 iterations, the {'first' if first else 'second'} of the two) that is "
        f"{_ratio(at[0.001]['× 840f5ad'])} the 840f5ad sampler at ε_n = 0.001, "
        f"{_ratio(at[0.01]['× 840f5ad'])} at 0.01 and {_ratio(at[0.1]['× 840f5ad'])} at 0.1",
        f"({at[0.1]['× defaults']:.2f}× the defaults at 0.1, {at[1]['× defaults']:.2f}× at 1)",
        "it gives "
        + ", ".join(f"{r['ESS(n)/s']:.1f}" for r in fixed[:-1])
        + f" and {fixed[-1]['ESS(n)/s']:.1f} "
        f"ESS(n)/s with R̂(n) ≤ {max(r['largest R-hat(n)'] for r in fixed):.3f}, against "
        + ", ".join(f"{r['ESS(n)/s']:.1f}" for r in slow[:-1])
        + f" and {slow[-1]['ESS(n)/s']:.1f} (R̂ up to "
        f"{max(r['largest R-hat(n)'] for r in slow):.2f}) for the 840f5ad sampler: "
        + ", ".join(_ratio(g) for g in gain[:-1])
        + f" and {_ratio(gain[-1])}",
    ]
    _says("cookbook/unknown-n.md", claims)


def test_cookbook_quotes_the_many_chains_and_unit_sizes_results():
    """The cookbook's figures for many short chains and for one n per unit are the benchmarks'."""
    chains = _read("many_chains")["rows"]
    many = [r for r in chains if r["backend"] == "cpu" and r["path"] != "1 chain"]
    largest = max(many, key=lambda r: r["n"])
    vs = sorted(r["vs 1 chain"] for r in many)
    claims = {
        "many-chains.md": [
            f"at n = 10⁴, {largest['chains']} chains of {largest['warmup']} + {largest['draws']} give nested "
            f"R̂ {largest['nested R̂']:.2f}",
            f"{vs[0]:.2f}–{vs[-1]:.2f}× its ESS/s",
        ],
    }
    assert largest["n"] == 10_000
    units = _read("unit_sizes")["rows"]
    ratios = [r["ratio"] for r in units]
    assert 2.5 <= min(ratios) and max(ratios) < 3.5  # "about 3×"
    claims["per-unit.md"] = [
        "linear in G, about 3× an iteration of",
        f"{units[-1]['rj_s'] * 1e3:.0f} ms per iteration at {units[-1]['G']:,} units of "
        f"{units[-1]['slots'] // units[-1]['G']} slots".replace(",", " "),
    ]
    for page, page_claims in claims.items():
        _says(f"cookbook/{page}", page_claims)


def test_docs_quote_the_atus_ridge_and_poisson_cdf_results():
    """The unknown-n cookbook's ATUS figures and the architecture page's speed-up of the Poisson CDF are
    those of their benchmark files."""
    atus = _read("atus_ridge_eps_n0.1")
    joint, ridge = atus["rows"][1:]
    draws = 4 * atus["settings"]["samples"]
    oracle_sd, time = atus["oracle"]["sd_n"], _ratio(ridge["seconds"] / joint["seconds"])
    cookbook = (
        f"the joint moves alone give an ESS of n of {joint['ESS n']:.0f} per {_count(draws)} draws and "
        f"too narrow a posterior (sd of n {joint['sd n']:.1f} against {oracle_sd:.1f}), three ridge moves "
        f"an ESS of {_count(ridge['ESS n'])} and sd {ridge['sd n']:.1f} at {time} the time"
    )
    cdf = _read("poisson_cdf")["rows"]
    million = next(r for r in cdf if float(r["rate"]) == 1e6)
    speedup = float(f"{million['gammaincc ns/value'] / million['dpjax ns/value']:.2g}")
    architecture = f"{speedup:.0f}× faster than `gammaincc` at 10⁶"
    cost = _read("unknown_n")["cost"]
    dearer = [r["record_ns_joint"] / r["record_ns"] for r in cost if r["n"] <= 100_000]
    joint = (
        f"five make an iteration {min(dearer):.1f}–{max(dearer):.1f}× dearer (Bernoulli records, n = 10²–10⁵"
    )
    table1 = _read("awan-table1")
    cells = next(v for k, v in table1["tables"].items() if k.startswith("Cells"))
    plain = [c for c in cells if c["joint moves"] == 0 and c["ε_n"] != "∞"]
    assert {c["ε_n"] for c in plain} == {"0.1", "1", "10"}
    kept = table1["settings"]["iterations"] - table1["settings"]["burn_in"]
    least = min(c["median ESS(n)"] for c in plain) // 100 * 100
    precise = f"median ESS(n) is at least {_count(least)} per {_count(kept)} draws without them"
    _says("cookbook/unknown-n.md", [cookbook, joint, precise])
    _says("architecture.md", [architecture])


def _index_rows(folder):
    """The rows of ``<folder>/README.md``'s index tables: per cell, its text and its backticked names."""
    rows = []
    for line in (ROOT / folder / "README.md").read_text().splitlines():
        if line.startswith("| ") and not line.startswith("|---"):
            rows.append([(cell, re.findall(r"`([^`]+)`", cell)) for cell in line.strip("| ").split(" | ")])
    return rows


def _expand(name):
    """``a_{b,c}.{md,json}`` → the names it stands for."""
    match = re.search(r"\{([^{}]*)\}", name)
    if not match:
        return [name]
    head, tail = name[: match.start()], name[match.end() :]
    return [n for part in match[1].split(",") for n in _expand(head + part + tail)]


def _words(row):
    """The words of a row's backticked names."""
    return [w for _, names in row for name in names for w in name.split()]


def _named_files(row):
    """The files a row of an index names: scripts and results, ``_suffix.md`` read as the row's script's
    results under that suffix; left out: outputs named by the command (``--out``), files outside the
    repository (``shared/``) and cells that say their files are not there (GPU runs "to run", "none
    committed")."""
    stem = next((Path(w).stem for w in _words(row) if w.endswith(".py")), "")
    for text, names in row:
        if "to run" in text or "none committed" in text:
            continue
        for name in names:
            parts = name.split()
            for before, word in zip(["", *parts], parts):
                if before == "--out" or word.startswith("shared/") or "<" in word:
                    continue
                if re.search(r"\.(py|md|json|png|log)$", word):
                    yield from _expand(stem + word if word.startswith("_") else word)


@pytest.mark.parametrize("folder", ["lab", "benchmarks"])
def test_the_lab_and_benchmark_indexes_name_files_that_exist(folder):
    """Every script in ``lab/`` and ``benchmarks/`` has a row in its folder's index, and every script and
    results file a row names exists: a renamed or deleted file would otherwise leave the index pointing
    nowhere. Fails on a name edited to be wrong."""
    here = ROOT / folder
    rows = _index_rows(folder)
    scripts = {Path(w).name for row in rows for w in _words(row) if w.endswith(".py")}
    unindexed = sorted(p.name for p in here.glob("*.py") if p.name not in scripts | {"_common.py"})
    assert not unindexed, f"{folder}/README.md has no row for {unindexed}"
    places = [ROOT, *(ROOT / f / sub for f in ("lab", "benchmarks") for sub in ("", "results"))]
    missing = [
        name
        for row in rows
        for name in _named_files(row)
        if not any(any(p.glob(name)) for p in places) and not any(ROOT.glob(f"dpjax/**/{name}"))
    ]
    assert not missing, f"{folder}/README.md names files that do not exist: {missing}"
