"""`dpjax reproduce`: every experiment's --quick run writes its files, and its comparison column is
computed from the numbers beside it (never copied)."""

import json
import math
import os
import subprocess
import sys

import pandas as pd
import pytest

from dpjax.cli import main
from dpjax.reproduce import REGISTRY, compare, judge, run_experiment


def test_judge_and_compare():
    assert judge(0.52, 0.01, 0.50, 0.01)[1] == "pass"
    assert judge(0.60, 0.01, 0.50, 0.01)[1] == "fail"  # z = 7.1
    assert judge(37.3, seed=37.237, tol=0.05)[1] == "fail"
    assert judge(37.25, seed=37.237, tol=0.05)[1] == "pass"
    assert judge(1.0)[1] == judge(1.0, 0.1)[1] == "—"  # no seed figure: no judgement
    z, verdict = judge(1.0, 0.0, 1.0)  # no error and no tolerance: no judgement either
    assert math.isnan(z) and verdict == "—"
    with pytest.raises(ValueError, match="unknown fields"):
        compare([{"quantity": "x", "dpjax": 1.0, "sedd": 2.0}])


def test_cli_list_and_errors(capsys):
    assert main(["reproduce", "--list"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in REGISTRY)
    with pytest.raises(SystemExit):
        main(["reproduce", "no-such-experiment"])
    assert "unknown experiment" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown experiment"):
        run_experiment("no-such-experiment")


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_quick(name, tmp_path):
    """The command a user runs, in its own process with one CPU device: conftest's four virtual CPU
    devices on a 2-core machine deadlock XLA's CPU runtime in large batched computations (seen in
    awan-table4's bootstrap, 500 draws × 3 replicates per device), which says nothing about dpjax."""
    for module in REGISTRY[name].needs:
        pytest.importorskip(module)
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if "device_count" not in f]
    env = {**os.environ, "XLA_FLAGS": " ".join(flags)}  # conftest's flags, less the virtual devices
    command = [sys.executable, "-m", "dpjax.cli", "reproduce", name, "--quick", "--no-progress"]
    done = subprocess.run([*command, "--out", str(tmp_path)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    payload = json.loads((tmp_path / f"{name}.json").read_text())
    md = (tmp_path / f"{name}.md").read_text()
    assert payload["quick"] and payload["experiment"] == name
    assert all((tmp_path / png).exists() for png in payload["figures"])
    table = pd.DataFrame(payload["comparison"])
    assert len(table) > 0 and "| quantity | dpjax |" in md and f"dpjax reproduce {name} --quick" in md
    assert (table["seed"].notna()).any(), "an experiment must compare with at least one published figure"
    # the verdict column is a function of the numbers beside it, and a quick run gives verdicts only
    # where the experiment says its quick errors are sound
    nan_none = lambda v: None if v is None or (isinstance(v, float) and math.isnan(v)) else v
    for row in table.itertuples():
        args = [nan_none(getattr(row, c)) for c in ("dpjax", "dpjax_se", "seed", "seed_se", "tol")]
        assert row.verdict == (judge(*args)[1] if REGISTRY[name].quick_verdicts else "—"), row


def test_interrupted_experiment_resumes_its_finished_cells(tmp_path, capsys):
    """A stopped `dpjax reproduce` keeps the cells its studies finished and the next run computes only
    the others; once the results are written the kept cells are deleted (a later run starts afresh)."""
    import jax

    from dpjax.reproduce import Report, experiment, study_table
    from dpjax.studies import run_study

    computed, stop_after = [], [1]

    def on_cell(params, frame):
        computed.append(params["mu"])
        if len(computed) == stop_after[0]:
            raise KeyboardInterrupt

    @experiment("test-resume", source="test", title="resume", full_cost="seconds")
    def run(quick, progress):
        cell = lambda key, mu: {"mean": mu + jax.random.normal(key, (50,)).mean()}
        df = run_study(
            cell, {"mu": [0.0, 1.0, 2.0]}, replicates=2, rng_key=jax.random.key(0), progress_bar=False,
            on_cell=on_cell, out=study_table("means"),
        )  # fmt: skip
        means = df.groupby("mu")["mean"].mean()
        return Report("resume", compare([{"quantity": f"mean at {k}", "dpjax": v} for k, v in means.items()]))

    try:
        with pytest.raises(KeyboardInterrupt):
            run_experiment("test-resume", quick=True, out=tmp_path)
        assert computed == [0.0] and (tmp_path / ".test-resume.quick.cells" / "means.csv").exists()
        stop_after[0] = 0  # no more interruptions
        resumed = run_experiment("test-resume", quick=True, out=tmp_path)
        assert computed == [0.0, 1.0, 2.0], "the finished cell was computed again"
        assert "resuming the finished cells" in capsys.readouterr().err
        assert not (tmp_path / ".test-resume.quick.cells").exists()
        # an uninterrupted run gives the same table
        computed.clear()
        again = run_experiment("test-resume", quick=True, out=tmp_path / "again")
        assert computed == [0.0, 1.0, 2.0]
        pd.testing.assert_frame_equal(resumed.comparison, again.comparison)
    finally:
        REGISTRY.pop("test-resume", None)


@pytest.mark.parametrize("study", ["simulation", "atus"])
def test_compositional_studies_resume_after_their_last_finished_cell(study, tmp_path, monkeypatch):
    """guo-simulation and guo-atus (days on a CPU) keep each finished cell (a batch of ATUS runs) in the
    cells folder: stopped in the second cell, a rerun computes only the cells not finished and gives
    the tables of an uninterrupted run; other settings do not reuse them. ``run_methods`` (the chains)
    is replaced by a fake that draws α around the truth, so only the bookkeeping runs."""
    import jax
    import numpy as np

    from dpjax.reproduce import cells_folder
    from dpjax.reproduce import compositional as comp

    calls, stop_at = [], [2 if study == "simulation" else 3]  # ATUS: one call per sex and batch

    def fake_run_methods(key, x, epsilon, cfg, progress=False, methods=comp.METHODS):
        calls.append(key)
        if len(calls) == stop_at[0]:
            raise KeyboardInterrupt
        r, _, d = x.shape
        rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).tolist())
        draws = {m: rng.gamma(50.0, 0.1, (r, 40, d)) for m in methods}
        info = {"a": np.full(r, 1e-3), "rhat": {"DPMCMCp1": np.ones(r)}, "compile": {"DPMCMCp1": 1.0}}
        return draws, {m: 0.5 for m in methods}, info

    monkeypatch.setattr(comp, "run_methods", fake_run_methods)
    cfg = comp.chain_settings(True)
    if study == "simulation":
        run = lambda: comp.simulation_study(["α₃", "α₁"], [30], [1.5], 2, 200, cfg, comp.QUICK_METHODS)
    else:
        run = lambda: comp.atus_study(4, cfg, comp.QUICK_METHODS, batch=2)
    with cells_folder(tmp_path / "cells") as folder:
        with pytest.raises(KeyboardInterrupt):
            run()
        assert len(calls) == stop_at[0] and len(list(folder.iterdir())) == 1
        stop_at[0] = 0
        resumed = run()
        assert len(calls) == {"simulation": 3, "atus": 5}[study], "a finished cell was computed again"
        files = sorted(folder.iterdir())
        cfg_other = {**cfg, "samples": cfg["samples"] + 1}
        calls.clear()
        if study == "simulation":  # a cell's data do not depend on the grid: the same settings reuse it
            comp.simulation_study(["α₁"], [30], [1.5], 2, 200, cfg, comp.QUICK_METHODS)
            assert not calls
            comp.simulation_study(["α₃"], [30], [1.5], 2, 200, cfg_other, comp.QUICK_METHODS)
        else:
            comp.atus_study(2, cfg_other, comp.QUICK_METHODS, batch=2)
        assert len(calls) >= 1 and len(list(folder.iterdir())) > len(files), "other settings reused a cell"
    calls.clear()
    again = run()  # outside a cells folder: nothing kept, everything computed
    assert len(calls) == 2 + 2 * (study == "atus")
    pd.testing.assert_frame_equal(resumed.comparison, again.comparison)
    for key in resumed.tables:
        if "Seconds" not in key:
            pd.testing.assert_frame_equal(resumed.tables[key], again.tables[key], check_dtype=False)


def test_guo_simulation_rows_carry_the_split_rhat_of_dpabc_p5s_prior_chain():
    """DPABCp5 runs no chain of its own, but its prior p5 is a chain's draws: its rows carry that
    chain's largest split-R̂, so a prior that has not mixed shows in the tables (it was computed and
    dropped before). DPBoots runs no chain: NaN. A real, tiny run: 2 data sets of 40 records."""
    import numpy as np

    from dpjax.reproduce import compositional as comp

    cfg = dict(chains=2, warmup=20, samples=20, thin=1, boot=50, proposals=200, b=5)
    report = comp.simulation_study(["α₁"], [40], [1.5], 2, 100, cfg, ("DPBoots", "DPABCp5"))
    rhat = report.tables["Median over data sets per cell"].set_index("method")["max split-R̂"]
    assert np.isfinite(rhat["DPABCp5"]) and rhat["DPABCp5"] > 0.5
    assert np.isnan(rhat["DPBoots"])


def test_awan_atus_full_run_refuses_float32():
    """Measured: in float32 a chain of the full ATUS study made ~1 000 NUTS steps per iteration where
    float64 makes ~15 from the same state; the full run asks for 64-bit floats before any work."""
    import jax

    if jax.config.jax_enable_x64:
        pytest.skip("float32 only")
    with pytest.raises(ValueError, match="JAX_ENABLE_X64=1 dpjax reproduce awan-atus"):
        REGISTRY["awan-atus"].run(False, False)


def test_atus_verdicts_judge_the_sd_of_n_wherever_n_varies():
    """awan-atus's last full run had, at ε_s = 10, ε_n = 0.1, a posterior sd of n of 11.1 against the
    oracle's 14.0 (chains that explored too little of the ridge), and no row judged it: the sd of n
    was compared only at the smallest ε_n. Every ε_n where n varies by a record or more is judged now."""
    import numpy as np

    from dpjax.reproduce.awan_atus import _oracle_verdicts

    rng = np.random.default_rng(0)
    cells = {0.01: (85.0, 84.0), 0.1: (11.1, 14.0), 10.0: (0.02, 0.025), math.inf: (0.0, 0.0)}
    rows = []
    for eps_n, (sd, oracle_sd) in cells.items():
        for r in range(10):
            rows.append(
                {"eps_n": eps_n, "replicate": r, "n_mean": 6656.0, "oracle_n_mean": 6656.0,
                 "n_sd": sd * (1 + 0.02 * rng.standard_normal()), "oracle_n_sd": oracle_sd, "n_ess": 1000.0,
                 "alpha[0]_mean": 12.0, "oracle_alpha[0]_mean": 12.0, "alpha[0]_sd": 0.7,
                 "alpha[0]_ess": 1000.0, "oracle_alpha[0]_sd": 0.7}
            )  # fmt: skip
    table = compare(_oracle_verdicts(pd.DataFrame(rows), 10.0)).set_index("quantity")["verdict"]
    assert table["ε_s=10, ε_n=0.1: posterior sd of n / oracle sd"] == "fail"
    assert table["ε_s=10, ε_n=0.01: posterior sd of n / oracle sd"] == "pass"
    assert not any("ε_n=10: posterior sd of n" in q for q in table.index)  # n hardly moves there


def test_awan_table2_seed_code_holds_phi_at_the_identity():
    """The seed code's Table 2 variant reaches the fixed-Φ M-step (its wiring once dropped the flag)."""
    import jax.numpy as jnp

    from dpjax.reproduce import unknown_n as un

    records = {"x": jnp.ones((1, 4, 2)) + jnp.arange(8.0).reshape(1, 4, 2) ** 2, "y": jnp.arange(4.0)[None]}
    fit = un._fixed_phi_m_step(records, jnp.ones(1))
    assert jnp.allclose(fit["Phi"], jnp.eye(2))
    source = __import__("inspect").getsource(un._regression_study)
    assert "fixed_phi=fixed_phi" in source.split("regression_cells(")[1].split(")")[0]


def test_awan_table2_leaves_out_chains_that_ran_off():
    """One runaway chain (β̂ far along the collinear direction) would inflate a mean row's standard error
    until its z-test cannot fail (β̂₀ −154 ± 152 at ε_n = 1 at dc090db): it is counted and left out, so a
    mean that is off fails, and one that is right passes."""
    import numpy as np

    from dpjax.reproduce import unknown_n as un

    rng = np.random.default_rng(0)
    seed = dict(zip(("beta[0]", "beta[1]", "beta[2]", "tau"), un.SEED_TABLE2[1.0]))

    def replicates(shift):
        g = pd.DataFrame({f"{c}_mean": rng.normal(m + shift, sd, 100) for c, (m, sd) in seed.items()})
        g.loc[0, ["beta[0]_mean", "beta[1]_mean", "beta[2]_mean"]] = (-1500.0, -2200.0, -900.0)
        g.loc[1, "tau_mean"] = np.nan
        return g

    for shift, expected in ((0.0, "pass"), (0.5, "fail")):
        rows, finite, runaway = un._table2_rows(1.0, replicates(shift))
        assert int((~finite).sum()) == 1 and int(runaway.sum()) == 1
        table = compare(rows).set_index("quantity")["verdict"]
        assert table["ε_n=1: mean θ̂ β0"] == expected, (shift, rows[0])


def test_awan_table1_counts_and_leaves_out_replicates_whose_chain_left_the_support(monkeypatch):
    """A replicate whose float32 chain left the support has NaN draws (run_chain): Table 1 leaves it out
    of every mean, not only of θ's (pandas skips NaN per column), and its cells table counts it."""
    import numpy as np

    from dpjax.reproduce import unknown_n as un

    def fake_study(T, eps_s, eps_n, *args, **kwargs):
        rows = []
        for es in eps_s:
            for en in eps_n:
                for r in range(4):
                    row = {c: 1.0 for c in un._COLUMNS} | {"eps_s": es, "eps_n": en, "capacity": 1200}
                    row |= {"n_mean": 1000.0 + r, "n_max": 1010.0, "near_capacity_mean": 0.0, "n_ess": 50.0}
                    row |= {f"{c}_covered": 1.0 for c in ("beta[0]", "beta[1]", "beta[2]", "tau")}
                    row |= {"seconds": 1.0, "compile_seconds": 1.0}
                    rows.append(row)
        df = pd.DataFrame(rows)
        df.loc[0, "beta[0]_mean"] = np.nan  # replicate 0 of the first cell left the support
        return df

    monkeypatch.setattr(un, "_regression_study", fake_study)
    report = un._table1(quick=True, progress=False)
    cells = next(iter(report.tables.values()))
    assert cells["left the support (left out)"].tolist() == [1, 0]
    assert cells["replicates"].tolist() == [4, 4]
    e_n = report.comparison.set_index("quantity")["dpjax"]
    assert e_n["ε_s=1, ε_n=1: E n"] == pytest.approx(1002.0)  # replicates 1–3, not 0
    assert e_n["ε_s=1, ε_n=10: E n"] == pytest.approx(1001.5)
