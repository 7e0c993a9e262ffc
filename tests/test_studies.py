"""dpjax.studies: replicates × grids, sharded, summarised, resumable.

Cheap cells (a conjugate normal posterior drawn by an AR(1) "sampler") keep these fast; the
DataAugmentationKernel study is marked slow (its compilation alone takes 10-25 s)."""

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from numpyro.infer.mcmc import MCMCKernel

from dpjax import studies
from dpjax.studies import mcmc_cell, posterior_summaries, run_study

TIMING = ["seconds", "compile_seconds"]

# the cell of the two-process test, also run here: posterior N(y, 1) of θ given y ~ N(θ, 1), y
# simulated from the cell's true θ; the draws by an AR(1) chain with that stationary law
CELL_SRC = """
import jax, jax.numpy as jnp

def normal_cell(key, theta, num_samples=200, rho=0.5):
    k_y, k0, k_steps = jax.random.split(key, 3)
    y = theta + jax.random.normal(k_y)
    noise = jax.random.normal(k_steps, (2, num_samples)) * jnp.sqrt(1 - rho**2)

    def step(x, e):
        x = y + rho * (x - y) + e
        return x, x

    _, draws = jax.vmap(lambda x0, e: jax.lax.scan(step, x0, e))(y + jax.random.normal(k0, (2,)), noise)
    return {"theta": draws, "y": jnp.broadcast_to(y, (2, num_samples))}
"""
namespace: dict = {}
exec(CELL_SRC, namespace)
normal_cell = namespace["normal_cell"]


def small_cell(key, mu, n):
    """Summaries straight from the cell: the mean of n normal draws and a 2-vector."""
    x = mu + jax.random.normal(key, (n,))
    return {"mean": x.mean(), "pair": x[:2]}


def test_four_devices_are_visible():
    if jax.default_backend() != "cpu":  # conftest.py's flag makes host CPU devices only
        pytest.skip(f"the sharding tests below shard over this machine's {jax.device_count()} accelerator(s)")
    assert jax.device_count() == 4  # from conftest.py; the sharding tests below rely on it


def test_tidy_table_one_row_per_cell_and_replicate():
    df = run_study(
        small_cell,
        {"mu": [0.0, 10.0], "n": [5, 50, 500]},
        replicates=3,
        rng_key=jax.random.key(0),
        progress_bar=False,
    )
    assert list(df.columns) == ["mu", "n", "replicate", "mean", "pair[0]", "pair[1]", *TIMING]
    assert len(df) == 2 * 3 * 3
    assert df[["mu", "n"]].drop_duplicates().values.tolist() == [
        [0.0, 5],
        [0.0, 50],
        [0.0, 500],
        [10.0, 5],
        [10.0, 50],
        [10.0, 500],
    ]
    assert df["replicate"].tolist() == [0, 1, 2] * 6
    assert df["mean"].dtype == np.float64 and df["n"].dtype == np.int64
    # the replicates differ, and each cell mean is near mu, more so for larger n
    assert df.groupby(["mu", "n"])["mean"].nunique().eq(3).all()
    spread = (df["mean"] - df["mu"]).abs().groupby(df["n"]).max()
    assert spread[500] < 0.3 and spread[500] < spread[5]


def test_sharded_over_four_devices_is_bitwise_equal_to_one_device():
    """Each replicate gets the same key (split of the cell key, on the host) whatever the devices;
    vmap adds no cross-replicate arithmetic and the padding replicas are dropped, so the numbers
    are bitwise equal, not merely close. 7 replicates: padded to 8 over 4 devices."""
    kwargs = dict(replicates=7, rng_key=jax.random.key(11), progress_bar=False)
    summaries = posterior_summaries({"theta": ("mean", "var", "quantiles", "ess", "rhat"), "y": ("mean",)})
    grid = {"theta": [-1.0, 2.0]}
    four = run_study(normal_cell, grid, summaries=summaries, **kwargs)
    one = run_study(normal_cell, grid, summaries=summaries, devices=jax.devices()[:1], **kwargs)
    pd.testing.assert_frame_equal(four.drop(columns=TIMING), one.drop(columns=TIMING), check_exact=True)
    assert four["theta_mean"].nunique() == 14


def test_posterior_summaries_coverage_ess_and_rhat():
    """The AR(1) draws have the exact posterior N(y, 1) as stationary law: 90% intervals cover the
    true θ in 90% of replicates (binomial s.e. 0.03 at 100), ESS ≈ N(1-ρ)/(1+ρ), R-hat ≈ 1."""
    summaries = posterior_summaries(
        {"theta": ("mean", "sd", "quantiles", "coverage", "ess", "rhat"), "y": ("mean",)},
        quantiles=(0.05, 0.95),
        truth={"theta": lambda theta: theta},
        level=0.9,
    )
    df = run_study(
        normal_cell,
        {"theta": [0.5]},
        replicates=100,
        rng_key=jax.random.key(3),
        summaries=summaries,
        progress_bar=False,
    )
    expected = ["theta_mean", "theta_sd", "theta_q0.05", "theta_q0.95", "theta_covered", "theta_ess"]
    assert list(df.columns[2:-2]) == [*expected, "theta_rhat", "y_mean"]
    assert abs(df["theta_covered"].mean() - 0.9) < 4 * 0.03
    assert abs((df["theta_mean"] - df["y_mean"]).abs().max()) < 0.5
    assert abs(df["theta_sd"].mean() - 1) < 0.1
    assert 80 < df["theta_ess"].median() < 250  # 400 draws at ρ = 0.5: about 133
    assert df["theta_rhat"].between(0.95, 1.1).all()
    assert df["theta_covered"].dtype == bool


def test_interrupted_study_resumes_where_it_stopped(tmp_path):
    grid = {"mu": [0.0, 1.0, 2.0], "n": [10, 20]}
    kwargs = dict(replicates=5, rng_key=jax.random.key(7), progress_bar=False)
    full = run_study(small_cell, grid, out=tmp_path / "full.csv", **kwargs)

    out = tmp_path / "study.csv"
    seen = []

    def stop_after_two(params, frame):
        seen.append(params)
        if len(seen) == 2:
            raise KeyboardInterrupt  # as if the user pressed ctrl-C between cells

    with pytest.raises(KeyboardInterrupt):
        run_study(small_cell, grid, out=out, on_cell=stop_after_two, **kwargs)
    assert len(pd.read_csv(out)) == 2 * 5  # the finished cells are on disk

    resumed_cells = []
    resumed = run_study(small_cell, grid, out=out, on_cell=lambda p, f: resumed_cells.append(p), **kwargs)
    assert resumed_cells == [c for c in ({"mu": m, "n": n} for m in grid["mu"] for n in grid["n"])][2:]
    pd.testing.assert_frame_equal(resumed.drop(columns=TIMING), full.drop(columns=TIMING), check_exact=True)
    on_disk = pd.read_csv(out)
    pd.testing.assert_frame_equal(on_disk.drop(columns=TIMING), full.drop(columns=TIMING), check_exact=True)
    in_memory = run_study(small_cell, grid, **kwargs)  # no file: the same numbers
    pd.testing.assert_frame_equal(in_memory.drop(columns=TIMING), full.drop(columns=TIMING), check_exact=True)

    # a finished study reruns nothing; a grown grid runs only its new cells, the old ones unchanged
    again = []
    run_study(small_cell, grid, out=out, on_cell=lambda p, f: again.append(p), **kwargs)
    assert again == []
    grown = run_study(small_cell, {"mu": [0.0, 1.0, 2.0, 3.0], "n": [10, 20]}, out=out, **kwargs)
    pd.testing.assert_frame_equal(
        grown.iloc[: len(full)].drop(columns=TIMING), full.drop(columns=TIMING), check_exact=True
    )
    assert len(grown) == 8 * 5

    # another study in the same file is refused, naming out
    with pytest.raises(ValueError, match="out=.*another study"):
        run_study(small_cell, grid, out=out, replicates=6, rng_key=jax.random.key(7), progress_bar=False)
    with pytest.raises(ValueError, match="out=.*another study"):
        run_study(small_cell, grid, out=out, replicates=5, rng_key=jax.random.key(8), progress_bar=False)
    assert json.loads(Path(f"{out}.json").read_text())["replicates"] == 5


def test_string_and_bool_parameters_round_trip_through_csv(tmp_path):
    def cell(key, scale, method, centred):
        x = jax.random.normal(key) * scale
        return {"x": x + (1.0 if method == "shift" else 0.0) + (0.0 if centred else 5.0)}

    # "NA" and "" are values, not missing ones (840f5ad recomputed them on every resume)
    grid = {"scale": [1.0], "method": ["1", "shift", "NA", ""], "centred": [True, False]}
    kwargs = dict(replicates=2, rng_key=jax.random.key(1), progress_bar=False, out=tmp_path / "s.csv")
    first = run_study(cell, grid, **kwargs)
    rerun = []
    second = run_study(cell, grid, on_cell=lambda p, f: rerun.append(p), **kwargs)
    assert rerun == []
    pd.testing.assert_frame_equal(first.drop(columns=TIMING), second.drop(columns=TIMING), check_exact=True)
    assert second["method"].tolist() == [m for m in grid["method"] for _ in range(4)]


def test_two_processes_sharing_out_keep_each_others_cells(tmp_path):
    """Another process writes its cells while this one runs (simulated: it runs inside this one's
    on_cell): each write merges the table on disk, so no cell is lost. At 840f5ad each process rewrote
    the table from its own cells, and half the rows were lost with both exiting 0."""
    kwargs = dict(replicates=2, rng_key=jax.random.key(3), progress_bar=False, out=tmp_path / "shared.csv")

    def other_process(params, frame):
        if params["mu"] == 0.0:
            run_study(small_cell, {"mu": [5.0, 6.0], "n": [3]}, **kwargs)

    run_study(small_cell, {"mu": [0.0, 1.0], "n": [3]}, on_cell=other_process, **kwargs)
    out = kwargs["out"]
    table = pd.read_csv(out)
    assert sorted(table["mu"].unique()) == [0.0, 1.0, 5.0, 6.0] and len(table) == 8


def test_static_floats_and_a_custom_summary_function():
    def cell(key, scale, n):
        assert isinstance(scale, float) and isinstance(n, int)  # both static: Python values
        return jax.random.normal(key, (1, n)) * scale

    def summary(draws, params):  # any host function of the replicates' outputs
        return {"sd": draws.std(axis=(1, 2)), "range": np.stack([draws.min((1, 2)), draws.max((1, 2))], 1)}

    kwargs = dict(replicates=3, rng_key=jax.random.key(2), progress_bar=False, summaries=summary)
    df = run_study(cell, {"scale": [1.0, 100.0], "n": [400]}, static=["scale"], **kwargs)
    assert list(df.columns[3:-2]) == ["sd", "range[0]", "range[1]"]
    assert df.groupby("scale")["sd"].mean().round(-1).tolist() == [0.0, 100.0]
    with pytest.raises(ValueError, match=r"static: \['sacle'\] are not grid parameters"):
        run_study(cell, {"scale": [1.0], "n": [4]}, static=["sacle"], **kwargs)


def test_parquet_needs_pyarrow_else_round_trips(tmp_path):
    kwargs = dict(replicates=2, rng_key=jax.random.key(0), progress_bar=False, out=tmp_path / "s.parquet")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="out=.*parquet needs pyarrow"):
            run_study(small_cell, {"mu": [0.0], "n": [3]}, **kwargs)
        return
    first = run_study(small_cell, {"mu": [0.0], "n": [3]}, **kwargs)
    second = run_study(small_cell, {"mu": [0.0], "n": [3]}, **kwargs)
    pd.testing.assert_frame_equal(first, second)


class _AR1State(NamedTuple):
    z: dict
    accept_prob: jax.Array
    rng_key: jax.Array


class _AR1Kernel(MCMCKernel):
    """θ-draws with stationary law N(y, 1), y = model_args[0]: a cheap stand-in for a DA kernel."""

    sample_field = "z"

    def init(self, rng_key, num_warmup, init_params, model_args, model_kwargs):
        start = model_args[0] if init_params is None else init_params["theta"]
        return _AR1State({"theta": jnp.asarray(start, jnp.float32)}, jnp.asarray(1.0), rng_key)

    def sample(self, state, model_args, model_kwargs):
        key, sub = jax.random.split(state.rng_key)
        theta = model_args[0] + 0.5 * (state.z["theta"] - model_args[0]) + 0.75**0.5 * jax.random.normal(sub)
        return _AR1State({"theta": theta}, jnp.asarray(0.5), key)


def test_mcmc_cell_init_params_from_the_model_args():
    """init_params as a function of each cell's model arguments (a start computed from its release)."""
    args_fn = lambda key, y: (jnp.asarray(y, jnp.float32),)
    cell = mcmc_cell(
        _AR1Kernel(), args_fn, num_warmup=0, num_samples=1, init_params=lambda y: {"theta": y + 100.0}
    )
    first = cell(jax.random.key(0), y=3.0)["theta"]  # one step from 103 towards 3: 53 + N(0, 0.75)
    assert 45 < float(first[0, 0]) < 61
    fixed = mcmc_cell(_AR1Kernel(), args_fn, num_warmup=0, num_samples=1, init_params={"theta": -97.0})
    assert -61 < float(fixed(jax.random.key(0), y=3.0)["theta"][0, 0]) < -39
    with pytest.raises(ValueError, match="init_params must be a dict or a function"):
        mcmc_cell(_AR1Kernel(), args_fn, num_warmup=0, num_samples=1, init_params=[1.0])


def test_mcmc_cell_collect_can_keep_the_simulated_release():
    """collect(state, args): the replicate's simulated model arguments reach the table beside θ, equal to
    what args_fn drew from the replicate's key."""
    args_fn = lambda key, theta: (theta + jax.random.normal(key),)
    cell = mcmc_cell(
        _AR1Kernel(),
        args_fn,
        num_warmup=0,
        num_samples=3,
        collect=lambda state, args: {"theta": state.z["theta"], "y": args[0]},
    )
    key = jax.random.key(5)
    out = cell(key, theta=2.0)
    assert out["theta"].shape == out["y"].shape == (1, 3)
    assert np.all(np.asarray(out["y"]) == float(args_fn(jax.random.split(key)[0], 2.0)[0]))
    df = run_study(
        cell, {"theta": [2.0]}, replicates=3, rng_key=key, summaries={"y": ("mean",)}, progress_bar=False
    )
    assert df["y_mean"].nunique() == 3  # one release per replicate


def test_mcmc_cell_runs_chains_with_stats():
    cell = mcmc_cell(
        _AR1Kernel(),
        lambda key, theta: (theta + jax.random.normal(key),),
        num_warmup=10,
        num_samples=50,
        num_chains=3,
        stats=("accept_prob",),
    )
    out = jax.eval_shape(cell, jax.random.key(0), theta=1.0)
    assert out["theta"].shape == (3, 50) and out["accept_prob"].shape == (3, 50)
    df = run_study(
        cell,
        {"theta": [1.0]},
        replicates=4,
        rng_key=jax.random.key(0),
        summaries={"theta": ("mean", "rhat"), "accept_prob": ("mean",)},
        progress_bar=False,
    )
    assert df["accept_prob_mean"].tolist() == [0.5] * 4 and df["theta_rhat"].notna().all()
    one = mcmc_cell(lambda theta: _AR1Kernel(), lambda k, theta: (theta,), num_warmup=1, num_samples=5)
    assert jax.eval_shape(one, jax.random.key(0), theta=1.0)["theta"].shape == (1, 5)  # kernel(**params)
    with pytest.raises(ValueError, match="stats .*not fields"):
        bad = mcmc_cell(_AR1Kernel(), lambda k, theta: (theta,), num_warmup=1, num_samples=2, stats=("nope",))
        jax.eval_shape(bad, jax.random.key(0), theta=1.0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(grid={}), "grid must be a non-empty"),
        (dict(grid=[1.0, 2.0]), "grid must be a non-empty"),
        (dict(grid={"mu": []}), r"grid\['mu'\] is empty"),
        (dict(grid={"mu": 1.0}), r"grid\['mu'\] must be a list"),
        (dict(grid={"mu": [1.0, 1]}), r"grid\['mu'\]: values must be scalars of one type"),
        (dict(grid={"mu": [1.0, 1.0]}), r"grid\['mu'\] repeats"),
        (dict(grid={"mu": [float("nan"), 1.0], "n": [3]}), r"grid\['mu'\] holds NaN"),
        (dict(grid={"mu": [1.0, 1.0 + 1e-9], "n": [3]}), r"not all distinct in float32"),
        (
            dict(cell_fn=lambda key, mu, n: {"x": 1.0 if mu > 0 else 0.0}),
            r"name those it branches on .* static=",
        ),
        (dict(grid={"replicate": [1.0]}), "grid: 'replicate' must be an identifier"),
        (dict(replicates=0), "`replicates` must be a positive integer"),
        (dict(replicates=2.5), "`replicates` must be a positive integer"),
        (dict(rng_key=0), "rng_key must be one PRNG key"),
        (dict(rng_key=jax.random.split(jax.random.key(0))), "rng_key must be one PRNG key"),
        (dict(summaries=("mean", "median")), r"summaries: unknown or no statistics \['median'\]"),
        (dict(summaries=("coverage",)), "truth: coverage needs"),
        (dict(out="results.txt"), "out must end in .csv or .parquet"),
        (dict(devices=[]), "devices must be a non-empty list"),
        (dict(on_cell="print"), "on_cell must be a function"),
        (dict(progres_bar=False), r"run_study: unknown option\(s\) \['progres_bar'\]"),
        (dict(cell_fn=None), "cell_fn must be a function"),
    ],
)
def test_bad_specifications_name_the_argument(kwargs, match):
    spec = dict(cell_fn=small_cell, grid={"mu": [0.0], "n": [3]}, replicates=2, rng_key=jax.random.key(0))
    spec.update(kwargs, progress_bar=False)
    with pytest.raises(ValueError, match=match):
        run_study(spec.pop("cell_fn"), spec.pop("grid"), **spec)


def test_draws_without_summaries_are_refused_and_summary_errors_name_the_output():
    kwargs = dict(replicates=2, rng_key=jax.random.key(0), progress_bar=False)
    with pytest.raises(ValueError, match=r"'theta' has shape \(2, 200\) per replicate, which looks like"):
        run_study(normal_cell, {"theta": [0.0]}, **kwargs)
    with pytest.raises(ValueError, match="summaries: no output named 'beta'"):
        run_study(normal_cell, {"theta": [0.0]}, summaries={"beta": ("mean",)}, **kwargs)
    with pytest.raises(ValueError, match="summaries need draws shaped \\(chains, samples"):
        run_study(small_cell, {"mu": [0.0], "n": [3]}, summaries=("mean",), **kwargs)
    with pytest.raises(ValueError, match="level must be in"):
        posterior_summaries(("mean",), level=90)
    with pytest.raises(ValueError, match=r"posterior_summaries: unknown option\(s\) \['thruth'\]"):
        posterior_summaries(("mean",), thruth={})
    with pytest.raises(ValueError, match="`num_samples` must be a positive integer"):
        mcmc_cell(_AR1Kernel(), lambda k: (), num_warmup=0, num_samples=0)


@pytest.mark.slow
def test_two_processes_with_jax_distributed_match_one(tmp_path):
    """Two local processes, two CPU devices each, one study sharded over all four: process 0 writes
    the table, which equals the single-process one."""
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    script = tmp_path / "worker.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            import jax
            pid, port = int(sys.argv[1]), sys.argv[2]
            jax.distributed.initialize(f"localhost:{port}", num_processes=2, process_id=pid)
            import importlib.util  # dpjax.studies alone: importing all of dpjax takes seconds
            spec = importlib.util.spec_from_file_location("studies", sys.argv[3])
            studies = sys.modules["studies"] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(studies)
            run_study = studies.run_study
            """
        )
        + CELL_SRC
        + textwrap.dedent(
            f"""
            assert jax.device_count() == 4 and jax.local_device_count() == 2
            df = run_study(normal_cell, {{"theta": [-1.0, 2.0]}}, replicates=7, rng_key=jax.random.key(11),
                           summaries={{"theta": ("mean", "ess")}}, out={str(tmp_path / "study.csv")!r},
                           progress_bar=False)
            assert len(df) == 14
            """
        )
    )
    # the parent's XLA flags but two devices a process: conftest's fast-compile flags change the last
    # bits of the sums, so both sides must compile alike for the tables to match to the bit
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if "device_count" not in f]
    flags.append("--xla_force_host_platform_device_count=2")
    env = {**os.environ, "XLA_FLAGS": " ".join(flags), "JAX_PLATFORMS": "cpu"}
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(i), str(port), studies.__file__],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(2)
    ]
    try:
        logs = [p.communicate(timeout=120)[0] for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert [p.returncode for p in procs] == [0, 0], "\n".join(logs)
    here = run_study(
        normal_cell,
        {"theta": [-1.0, 2.0]},
        replicates=7,
        rng_key=jax.random.key(11),
        summaries={"theta": ("mean", "ess")},
        progress_bar=False,
    )
    there = pd.read_csv(tmp_path / "study.csv")
    pd.testing.assert_frame_equal(there.drop(columns=TIMING), here.drop(columns=TIMING), check_exact=True)


@pytest.mark.slow
def test_data_augmentation_study_sharded_matches_one_device_and_covers():
    """A real engine: Beta-Bernoulli records, Laplace-noised count, DA with the exact conjugate θ-step;
    90% intervals cover the true p in about 90% of 48 replicates per ε."""
    import numpyro
    import numpyro.distributions as dist

    import dpjax

    def model(n, eps, s_dp=None):
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        with numpyro.plate("people", n):
            x = numpyro.sample("x", dist.Bernoulli(p))
        mech = dpjax.LaplaceMechanism(epsilon=eps, sensitivity=1.0)
        dpjax.privatized("count", mech, lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)

    def beta_draw(key, records, params):
        k, n = records["x"].sum(), records["x"].shape[0]
        return {"p": dist.Beta(1 + k, 1 + n - k).sample(key)}

    def simulate(key, eps, n, p):
        k_x, k_r = jax.random.split(key)
        count = jax.random.bernoulli(k_x, p, (n,)).sum()
        return (n, eps, dpjax.LaplaceMechanism(epsilon=eps, sensitivity=1.0).release(k_r, count))

    kernel = dpjax.infer.DataAugmentationKernel(model, theta_update=beta_draw, noncentred_moves=0)
    cell = mcmc_cell(kernel, simulate, num_warmup=200, num_samples=400, stats=("record_accept_rate",))

    def cell_with_truth(key, eps, n):  # p from its prior, so the coverage is exact whatever p is
        k_p, k_cell = jax.random.split(key)
        p = jax.random.uniform(k_p)
        return {**cell(k_cell, eps=eps, n=n, p=p), "true_p": jnp.broadcast_to(p, (1, 400))}

    summaries = posterior_summaries(
        {"p": ("mean", "quantiles", "ess"), "true_p": ("mean",), "record_accept_rate": ("mean",)},
        quantiles=(0.05, 0.95),
    )
    kwargs = dict(replicates=48, rng_key=jax.random.key(5), summaries=summaries, progress_bar=False)
    grid = {"eps": [0.5, 2.0], "n": [30]}
    four = run_study(cell_with_truth, grid, **kwargs)
    one = run_study(cell_with_truth, grid, devices=jax.devices()[:1], **kwargs)
    pd.testing.assert_frame_equal(four.drop(columns=TIMING), one.drop(columns=TIMING), check_exact=True)
    covered = (four["p_q0.05"] <= four["true_p_mean"]) & (four["true_p_mean"] <= four["p_q0.95"])
    assert abs(covered.mean() - 0.9) < 4 * (0.09 / 96) ** 0.5
    acc = four.groupby("eps")["record_accept_rate_mean"].mean()
    assert acc[0.5] > acc[2.0]  # more noise, easier record moves


def test_numpyro_nuts_draws_come_back_constrained():
    """numpyro's HMC/NUTS hold ``state.z`` unconstrained (log α for a positive α): run_chain's and
    mcmc_cell's default collect must return the sites' values. Before, they returned log α, and the
    compositional study's MCMCp1 reported α ≈ (0.79, 1.2, 1.46) for α_true = (2.2, 3.3, 4.4)."""
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import NUTS

    from dpjax.diagnostics import mcse
    from dpjax.infer import run_chain

    def model(shape):
        numpyro.sample("alpha", dist.Gamma(shape, 1.0))

    kernel = NUTS(model)
    draws = jax.vmap(lambda k: run_chain(kernel, k, (3.0,), num_warmup=300, num_samples=1000))(
        jax.random.split(jax.random.key(0), 4)
    )["alpha"]
    se, ess = mcse(np.asarray(draws))
    assert float(draws.min()) > 0 and ess > 300 and abs(float(draws.mean()) - 3.0) < 4 * se
    cell = mcmc_cell(NUTS(model), lambda key: (3.0,), num_warmup=300, num_samples=1000, num_chains=2)
    alpha = np.asarray(cell(jax.random.key(1))["alpha"])
    se, ess = mcse(alpha)
    assert alpha.min() > 0 and ess > 300 and abs(alpha.mean() - 3.0) < 4 * se


def test_exact_abc_runs_as_vmapped_study_cells_and_matches_the_exact_posterior():
    """Issue 87's proof that the engines are pure stages: exact ABC (its pure core,
    exact_abc_sampler) runs as run_study cells, vmapped over replicates, one compiled loop per cell;
    each replicate's draws pass the MCSE z-test against the enumeration, and fail it at a wrong value."""
    from oracles import bernoulli_model, exact_bernoulli

    from dpjax.studies import abc_cell
    from dpjax.testing import mcse_z_test

    draws = {}

    def summaries(outputs, params):  # keeps the draws, summarises each replicate by its mean
        draws[float(params["s"])] = p = np.asarray(outputs["p"])
        return {"p_mean": p.mean(axis=(1, 2))}

    cell = abc_cell(bernoulli_model, lambda key, s: (jnp.asarray(s),), num_samples=2_000, batch_size=2_000)
    df = run_study(
        cell, {"s": [6.0, 21.0]}, replicates=2, rng_key=jax.random.key(3), summaries=summaries,
        progress_bar=False,
    )  # fmt: skip
    assert len(df) == 4
    for s, p in draws.items():
        exact = exact_bernoulli(s)[0]
        p = np.asarray(p)  # (replicates, 1, samples)
        assert p.shape == (2, 1, 2_000) and np.isfinite(p).all()
        for replicate in p:
            assert mcse_z_test(replicate, exact)
        assert not mcse_z_test(p[0], exact + 0.03)  # the verdict can fail


def test_mcem_runs_as_vmapped_study_cells_and_matches_the_exact_mle():
    """Issue 87's second study cell: Monte Carlo EM (its pure core, mcem_sampler: the θ-held record chains
    of the stages and the closed-form M-step in one compiled loop) runs as run_study cells, vmapped over
    replicates; the replicates' estimates agree with the exact MLE (enumeration over the count) by a t-test,
    which fails at a wrong value."""
    from scipy.stats import t as student_t
    from test_stochastic_em import exact_mle, known_log_lik, known_m_step, known_model

    from dpjax.studies import mcem_cell

    cell = mcem_cell(
        known_model, lambda key, s: (jnp.asarray(s),), m_step=known_m_step, init_params={"p": 0.5},
        num_draws=1_000, num_iterations=25,
    )  # fmt: skip
    replicates = 4
    df = run_study(
        cell, {"s": [6.0, 12.3]}, replicates=replicates, rng_key=jax.random.key(5), progress_bar=False
    )
    assert len(df) == 2 * replicates and df["mcem_valid"].all()
    bound = student_t.ppf(1 - 0.001 / 2, replicates - 1)
    for s, rows in df.groupby("s"):
        mle, _ = exact_mle(lambda p, s=s: known_log_lik(p, s=s))
        est = rows["p"].to_numpy()
        se = est.std(ddof=1) / np.sqrt(replicates)
        assert abs(est.mean() - mle) <= bound * se, (s, est, mle)
        assert abs(est.mean() - (mle + 0.03)) > bound * se  # the verdict can fail
        assert (rows["mcem_change"] < 0.02).all()  # converged to within the Monte Carlo noise


def _cores():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@pytest.mark.skipif(len(jax.devices()) < _cores(), reason="needs at least as many CPU devices as cores")
def test_a_study_that_may_deadlock_the_cpu_pool_warns():
    """As many CPU devices as cores and a LAPACK kernel in the cell (a triangular solve): a warning that
    the pool may deadlock, with the way out; one device, or no LAPACK call, stays silent."""

    def cell(key, scale):
        a = jnp.eye(2) * scale
        return {"x": jax.scipy.linalg.solve_triangular(a, jax.random.normal(key, (2,)), lower=True)[0]}

    def plain(key, scale):
        return {"x": scale * jax.random.normal(key)}

    grid = {"scale": [1.0, 2.0]}
    with pytest.warns(RuntimeWarning, match="deadlock XLA's CPU thread pool"):
        run_study(cell, grid, replicates=4, rng_key=jax.random.key(0), progress_bar=False)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        run_study(
            cell, grid, replicates=4, rng_key=jax.random.key(0), progress_bar=False, devices=jax.devices()[:1]
        )
        run_study(plain, grid, replicates=4, rng_key=jax.random.key(0), progress_bar=False)


def test_the_two_passes_of_the_traced_exchangeability_check_run_one_after_the_other():
    """The traced exchangeability check of an unknown n reads the records' log densities twice; with a
    multivariate record law under a vmap (the §6.1 regression, capacity 3 000, 100 replicates) each is a
    batched LAPACK triangular solve that jaxlib splits over XLA's CPU thread pool, and run at once the two
    waited on each other's pieces: the init of awan-table1's study never returned. The second pass now
    reads the records through an optimization barrier with the first pass's densities (checked here in
    the program: the barrier, and a solve on each side of it)."""
    from dpjax.reproduce.unknown_n import N, confidential_regression_data, regression_cells

    _, _, T = confidential_regression_data(N)
    cell = regression_cells(N, T, 40, 1, 1, noncentred_moves=0)
    text = str(
        jax.make_jaxpr(jax.vmap(lambda k: cell(k, eps_s=1.0, eps_n=0.001)))(
            jax.random.split(jax.random.key(0), 2)
        )
    )
    pattern = (
        r"f32\[2,2,40\] = jit\[name=_solve_triangular"  # the slots' solves: 2 replicates, x ∈ ℝ², 40 slots
    )
    solves = [m.start() for m in re.finditer(pattern, text)]
    barrier = text.find("optimization_barrier")
    assert len(solves) == 2 and solves[0] < barrier < solves[1], (solves, barrier)
