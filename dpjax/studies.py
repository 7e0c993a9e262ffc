"""Simulation studies: any engine over replicates × a parameter grid, as compiled, vmapped and
sharded computations that keep only summaries, in a tidy, resumable table.

:func:`run_study` calls ``cell_fn(key, **params)`` (one replicate of one grid cell, a pure JAX
function) for ``replicates`` keys of every cell of ``grid``: one ``jax.jit(jax.vmap(cell_fn))`` per
cell with the replicate axis sharded over the devices (padded to a multiple of their number), so
a study compiles once per static setting. ``summaries`` reduces each replicate's draws on the
host (posterior mean, variance, quantiles, coverage of a true value, ESS and split R-hat by
``numpyro.diagnostics``, acceptance rates), so no draws and no imputed database reach the table:
one row per cell × replicate, written to ``out`` after every cell; a rerun resumes there.
:func:`mcmc_cell` builds ``cell_fn`` from a DA, reversible-jump or pseudo-marginal kernel.

Grid values are scalars of one type per parameter. Floats reach ``cell_fn`` as traced scalars
(one compilation for all their values) unless named in ``static``; ints, bools and strings as
Python values (shapes, switches: one compilation each). Cell ``params`` gets the key
``fold_in(rng_key, crc32 of its parameters)`` and its replicates ``split`` of it, so a cell's
numbers do not depend on the rest of the grid or on an interruption. They do depend on the number
of devices: XLA compiles each device's share of the replicates as a batch of that size, and a batch
of another size may sum in another order; an inner NUTS turns such last-bit differences into other
draws. Same devices, same numbers.

Several processes may share one ``out``: each merges the table on disk into its own under a lock
before it writes, so cells that another process wrote are kept (and not recomputed on a resume).

**Several hosts.** Start the same script on every host, calling
``jax.distributed.initialize(coordinator_address="host0:1234", num_processes=P, process_id=i)``
before anything else touches JAX (on CPU hosts, with ``XLA_FLAGS`` giving each process its
devices). ``run_study`` then shards the replicates over the global ``jax.devices()``, gathers
each cell's outputs on every process (``multihost_utils.process_allgather``), and process 0
alone resumes from, writes ``out`` and shows progress; which cells remain is broadcast from
process 0, so ``out`` need only be on its file system. Process 0 returns the whole table, the
others the cells this call ran. ``tests/test_studies.py`` runs two local processes this way.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import math
import os
import time
import warnings
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ._validate import positive_int

__all__ = [
    "STATS",
    "PosteriorSummaries",
    "abc_cell",
    "mcem_cell",
    "mcmc_cell",
    "posterior_summaries",
    "run_study",
]

STATS = ("mean", "var", "sd", "min", "max", "quantiles", "coverage", "ess", "rhat")
_RESERVED = ("replicate", "seconds", "compile_seconds")
_MAX_LEAF_SIZE = 64  # per replicate, without summaries: more looks like draws, not summaries


def _unknown(fn: str, options: dict) -> None:
    if options:
        raise ValueError(f"{fn}: unknown option(s) {sorted(options)}")


# ---------------------------------------------------------------------------------------- cells


def mcmc_cell(
    kernel,
    args_fn: Callable,
    *,
    num_warmup: int,
    num_samples: int,
    num_chains: int = 1,
    collect: Callable | None = None,
    stats: Sequence[str] = (),
    init_params: dict | Callable | None = None,
    **options,
) -> Callable:
    """``cell_fn(key, **params)`` running ``num_chains`` vmapped :func:`~dpjax.infer.run_chain` chains on
    the model arguments ``args_fn(key, **params)`` (a tuple; simulate the release there); draws
    come back shaped ``(chains, samples, ...)``. ``kernel`` is a kernel or ``kernel(**params)``;
    ``init_params`` (constrained values, the same for every chain) goes to the kernel's ``init``: a
    dict, or a function of the model arguments returning one (a start computed from each release, e.g.
    an estimate of θ from s).

    ``collect`` maps each draw's state to the outputs to keep, ``collect(state)``, or
    ``collect(state, args)`` to keep something of the replicate's model arguments too (e.g. its
    simulated release). It defaults to θ (``state.z``) plus the state fields named in ``stats``
    (e.g. ``"record_accept_rate"``), whose mean summary is the acceptance rate.

    >>> import jax, numpyro, numpyro.distributions as dist, dpjax
    >>> def model(n, s_dp=None):
    ...     p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    ...     with numpyro.plate("people", n):
    ...         x = numpyro.sample("x", dist.Bernoulli(p))
    ...     dpjax.privatized("count", dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0),
    ...                      lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)
    >>> def beta_draw(key, records, params):
    ...     k, n = records["x"].sum(), records["x"].shape[0]
    ...     return {"p": dist.Beta(1 + k, 1 + n - k).sample(key)}
    >>> kernel = dpjax.infer.DataAugmentationKernel(model, theta_update=beta_draw, noncentred_moves=0)
    >>> cell = mcmc_cell(kernel, lambda key, s: (20, s), num_warmup=20, num_samples=30,
    ...                  num_chains=2, stats=("record_accept_rate",))
    >>> jax.tree.map(lambda x: x.shape, jax.eval_shape(cell, jax.random.key(0), s=7.0))
    {'p': (2, 30), 'record_accept_rate': (2, 30)}
    """
    _unknown("mcmc_cell", options)
    num_warmup = positive_int(num_warmup, "num_warmup", minimum=0)
    num_samples = positive_int(num_samples, "num_samples")
    num_chains = positive_int(num_chains, "num_chains")
    if not (init_params is None or isinstance(init_params, dict) or callable(init_params)):
        raise ValueError(
            f"mcmc_cell: init_params must be a dict or a function (*args) -> dict, got {init_params!r}"
        )
    if not callable(args_fn):
        raise ValueError(f"mcmc_cell: args_fn must be a function (key, **params) -> args, got {args_fn!r}")
    if isinstance(stats, str):
        stats = (stats,)
    if collect is not None and stats:
        raise ValueError("mcmc_cell: give either collect or stats (stats extend the default collect)")
    from numpyro.infer.mcmc import MCMCKernel

    from .infer import run_chain

    def default_collect(state, kern, args):
        missing = [s for s in stats if not hasattr(state, s)]
        if missing:
            raise ValueError(f"mcmc_cell: stats {missing} are not fields of {type(state).__name__}")
        sites = kern.postprocess_fn(args, {})(state.z)  # numpyro's HMC/NUTS hold z unconstrained
        return {**sites, **{s: getattr(state, s) for s in stats}}

    with_args = collect is not None and len(_positional(collect)) >= 2

    def cell(key, **params):
        k_args, k_chains = jax.random.split(key)
        args = args_fn(k_args, **params)
        if not isinstance(args, tuple):
            raise ValueError(
                f"mcmc_cell: args_fn must return a tuple of model args, not {type(args).__name__}"
            )
        kern = kernel if isinstance(kernel, MCMCKernel) else kernel(**params)
        start = init_params(*args) if callable(init_params) else init_params
        run = lambda k: run_chain(
            kern,
            k,
            args,
            num_warmup=num_warmup,
            num_samples=num_samples,
            collect=(lambda st: collect(st, args))
            if with_args
            else collect or functools.partial(default_collect, kern=kern, args=args),
            init_params=start,
        )
        if num_chains == 1:  # no vmap: a lighter compilation
            return jax.tree.map(lambda x: x[None], run(k_chains))
        return jax.vmap(run)(jax.random.split(k_chains, num_chains))

    return cell


def abc_cell(
    model,
    args_fn: Callable,
    *,
    num_samples: int,
    batch_size: int = 10_000,
    max_batches: int = 1_000,
    simulator: Callable | None = None,
) -> Callable:
    """``cell_fn(key, **params)`` drawing ``num_samples`` exact posterior draws by rejection ABC
    (:func:`~dpjax.infer.exact_abc_sampler`: one compiled loop, vmapped over replicates and sharded
    over devices by :func:`run_study`) on the model arguments ``args_fn(key, **params)`` (a tuple;
    simulate the release there). Draws come back shaped ``(1, samples, ...)`` like one chain of
    :func:`mcmc_cell`, with ``abc_acceptance`` (accepted / proposed). A replicate that spends
    ``max_batches`` batches before filling its buffer has NaN draws (never a partial sample taken for
    a whole one): raise ``max_batches`` if its summaries are NaN.

    >>> import jax, numpyro, numpyro.distributions as dist, dpjax
    >>> def model(n, s_dp=None):
    ...     p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    ...     with numpyro.plate("people", n):
    ...         x = numpyro.sample("x", dist.Bernoulli(p))
    ...     dpjax.privatized("count", dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0),
    ...                      lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)
    >>> cell = abc_cell(model, lambda key, s: (20, s), num_samples=50, batch_size=500)
    >>> jax.tree.map(lambda x: x.shape, jax.eval_shape(cell, jax.random.key(0), s=7.0))
    {'abc_acceptance': (), 'p': (1, 50)}
    """
    from .infer import exact_abc_sampler

    if not callable(args_fn):
        raise ValueError(f"abc_cell: args_fn must be a function (key, **params) -> args, got {args_fn!r}")
    abc = exact_abc_sampler(
        model, num_samples=num_samples, batch_size=batch_size, max_batches=max_batches, simulator=simulator
    )

    def cell(key, **params):
        k_args, k_abc = jax.random.split(key)
        args = args_fn(k_args, **params)
        if not isinstance(args, tuple):
            raise ValueError(
                f"abc_cell: args_fn must return a tuple of model args, not {type(args).__name__}"
            )
        state = abc.run(k_abc, args, {})
        full = state.count >= num_samples
        nan = lambda v: jnp.where(full, v.astype(jnp.result_type(v, float)), jnp.nan)[None]
        acceptance = state.accepted / (state.batches * batch_size)
        return {**jax.tree.map(nan, state.samples), "abc_acceptance": acceptance}

    return cell


def mcem_cell(
    model,
    args_fn: Callable,
    *,
    m_step: Callable,
    init_params: dict | Callable,
    num_draws: int,
    num_iterations: int,
    num_chains: int = 4,
    size_moves: int = 100,
) -> Callable:
    """``cell_fn(key, **params)`` estimating θ by Monte Carlo EM with an MCMC E-step
    (:func:`~dpjax.infer.mcem_sampler`: ``num_iterations`` iterations of ``num_draws`` θ-held record
    draws and the closed-form ``m_step``, in one compiled loop, vmapped over replicates by
    :func:`run_study`) on the model arguments ``args_fn(key, **params)`` (a tuple; simulate the release
    there). Returns one row per replicate (``summaries=None``): θ̂ (the last iterate) per site,
    ``mcem_change`` (the max-norm change of the last iteration, to judge convergence) and
    ``mcem_valid``. ``init_params`` is a dict of constrained θ values or a function of the model
    arguments returning one (e.g. a start computed from the release).

    >>> import jax, numpyro, numpyro.distributions as dist, dpjax
    >>> def model(n, s_dp=None):
    ...     p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    ...     with numpyro.plate("people", n):
    ...         x = numpyro.sample("x", dist.Bernoulli(p))
    ...     dpjax.privatized("count", dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0),
    ...                      lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)
    >>> m_step = lambda recs, w: {"p": w @ recs["x"].mean(1)}
    >>> cell = mcem_cell(model, lambda key, s: (20, s), m_step=m_step, init_params={"p": 0.5},
    ...                  num_draws=200, num_iterations=10)
    >>> jax.tree.map(lambda x: x.shape, jax.eval_shape(cell, jax.random.key(0), s=7.0))
    {'mcem_change': (), 'mcem_valid': (), 'p': ()}
    """
    from .infer import mcem_sampler

    if not callable(args_fn):
        raise ValueError(f"mcem_cell: args_fn must be a function (key, **params) -> args, got {args_fn!r}")
    if not (isinstance(init_params, dict) or callable(init_params)):
        raise ValueError(
            f"mcem_cell: init_params must be a dict or a function (*args) -> dict, got {init_params!r}"
        )
    em = mcem_sampler(
        model, m_step=m_step, num_draws=num_draws, num_iterations=num_iterations, num_chains=num_chains,
        size_moves=size_moves,
    )  # fmt: skip

    def cell(key, **params):
        k_args, k_em = jax.random.split(key)
        args = args_fn(k_args, **params)
        if not isinstance(args, tuple):
            raise ValueError(
                f"mcem_cell: args_fn must return a tuple of model args, not {type(args).__name__}"
            )
        start = init_params(*args) if callable(init_params) else init_params
        state, _ = em.run(k_em, start, args, {})
        return {**state.params, "mcem_change": state.change, "mcem_valid": state.valid}

    return cell


def _positional(fn) -> list[str]:
    """The parameters of ``fn`` that a positional argument can fill."""
    import inspect

    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in inspect.signature(fn).parameters.values() if p.kind in kinds]


# ------------------------------------------------------------------------------------ summaries


def _leaves(tree) -> list[tuple[str, Any]]:
    """``(name, leaf)`` pairs: dict keys and sequence indices joined by dots."""

    def part(k):
        for attr in ("key", "idx", "name"):
            if hasattr(k, attr):
                return str(getattr(k, attr))
        return str(k)

    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    return [(".".join(part(k) for k in path) or "value", leaf) for path, leaf in flat]


def _columns(name: str, values: np.ndarray) -> dict[str, np.ndarray]:
    """Columns of a ``(replicates, *shape)`` array: ``name`` or ``name[i,j]`` per entry."""
    values = np.asarray(values)
    if values.ndim == 1:
        return {name: values}
    flat = values.reshape(values.shape[0], -1)
    idx = np.ndindex(values.shape[1:])
    return {f"{name}[{','.join(map(str, i))}]": flat[:, j] for j, i in enumerate(idx)}


def _split_suffix(name: str) -> tuple[str, str]:
    head, _, index = name.partition("[")
    return head, ("[" + index if index else "")


@dataclass(frozen=True)
class PosteriorSummaries:
    """Host-side summaries of draws shaped ``(replicates, chains, samples, ...)``; see
    :func:`posterior_summaries`."""

    stats: Mapping[str, tuple[str, ...]] | tuple[str, ...]
    quantiles: tuple[float, ...] = (0.05, 0.5, 0.95)
    level: float = 0.9
    truth: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self, outputs, params: Mapping[str, Any]) -> dict[str, np.ndarray]:
        from numpyro.diagnostics import effective_sample_size, split_gelman_rubin

        leaves = dict(_leaves(outputs))
        per_leaf = self.stats if isinstance(self.stats, Mapping) else dict.fromkeys(leaves, self.stats)
        for name in (*per_leaf, *self.truth):
            if name not in leaves:
                raise ValueError(f"summaries: no output named {name!r}; the cell returns {sorted(leaves)}")
        cols: dict[str, np.ndarray] = {}
        for name, names in per_leaf.items():
            x = np.asarray(leaves[name], dtype=np.float64)
            if x.ndim < 3:
                raise ValueError(
                    f"summaries: output {name!r} has shape {x.shape[1:]} per replicate; summaries need draws "
                    "shaped (chains, samples, ...) (mcmc_cell gives them; add a chain axis with x[None])"
                )
            pooled = x.reshape(x.shape[0], -1, *x.shape[3:])
            out = {}
            for stat in names:
                if stat == "mean":
                    out["mean"] = pooled.mean(1)
                elif stat == "var":
                    out["var"] = pooled.var(1, ddof=1)
                elif stat == "sd":
                    out["sd"] = pooled.std(1, ddof=1)
                elif stat in ("min", "max"):
                    out[stat] = getattr(pooled, stat)(1)
                elif stat == "quantiles":
                    for q, v in zip(self.quantiles, np.quantile(pooled, self.quantiles, axis=1)):
                        out[f"q{q:g}"] = v
                elif stat == "coverage" and name in self.truth:
                    true = self.truth[name]
                    true = np.asarray(true(**params) if callable(true) else true, dtype=np.float64)
                    lo, hi = np.quantile(pooled, [(1 - self.level) / 2, (1 + self.level) / 2], axis=1)
                    out["covered"] = (lo <= true) & (true <= hi)
                elif stat == "ess":
                    out["ess"] = np.stack([effective_sample_size(r) for r in x])
                elif stat == "rhat":
                    out["rhat"] = np.stack([split_gelman_rubin(r) for r in x])
            for stat, values in out.items():
                for col, v in _columns(name, values).items():
                    head, index = _split_suffix(col)
                    cols[f"{head}{index}_{stat}"] = v
        return cols


def posterior_summaries(
    stats: Sequence[str] | Mapping[str, Sequence[str]] = ("mean", "var", "quantiles", "ess", "rhat"),
    *,
    quantiles: Sequence[float] = (0.05, 0.5, 0.95),
    level: float = 0.9,
    truth: Mapping[str, Any] | None = None,
    **options,
) -> PosteriorSummaries:
    """Summaries for :func:`run_study`: ``stats`` (names from :data:`STATS`, for every output or per
    output as ``{name: stats}``) of each replicate's draws; ``"coverage"`` checks the central
    ``level`` interval against ``truth[name]`` (a value or ``f(**params)``), giving ``<name>_covered``.

    >>> s = posterior_summaries({"p": ("mean", "coverage")}, truth={"p": 0.3}, level=0.5)
    >>> draws = {"p": np.arange(11.0)[None, None] / 8}  # one replicate, one chain, 11 samples
    >>> {k: v.tolist() for k, v in s(draws, {}).items()}
    {'p_mean': [0.625], 'p_covered': [False]}
    """
    _unknown("posterior_summaries", options)
    as_tuple = lambda names: (names,) if isinstance(names, str) else tuple(names)
    lists = stats.values() if isinstance(stats, Mapping) else [stats]
    if isinstance(stats, Mapping):
        stats = {str(k): as_tuple(v) for k, v in stats.items()}
    else:
        stats = as_tuple(stats)
    wanted = {s for names in lists for s in as_tuple(names)}
    bad = sorted(wanted - set(STATS))
    if bad or not wanted:
        raise ValueError(f"summaries: unknown or no statistics {bad}; choose from {STATS}")
    quantiles = tuple(float(q) for q in np.atleast_1d(quantiles))
    if not quantiles or not all(0 <= q <= 1 for q in quantiles):
        raise ValueError(f"quantiles must be numbers in [0, 1], got {quantiles}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if "coverage" in wanted and not truth:
        raise ValueError("truth: coverage needs the true values, e.g. truth={'theta': 2.0}")
    return PosteriorSummaries(stats, quantiles, float(level), dict(truth or {}))


# ----------------------------------------------------------------------------------- the runner


def _check_grid(grid) -> dict[str, list]:
    if not isinstance(grid, Mapping) or not grid:
        raise ValueError(f"grid must be a non-empty dict {{name: [values, ...]}}, got {grid!r}")
    checked = {}
    for name, values in grid.items():
        if not isinstance(name, str) or not name.isidentifier() or name in _RESERVED:
            raise ValueError(f"grid: {name!r} must be an identifier other than {_RESERVED}")
        if isinstance(values, str | bytes) or not isinstance(values, Sequence | np.ndarray):
            raise ValueError(f"grid[{name!r}] must be a list of values, got {values!r}")
        values = [v.item() if isinstance(v, np.generic) else v for v in values]
        if not values:
            raise ValueError(f"grid[{name!r}] is empty; give at least one value")
        kinds = {type(v) for v in values}
        if len(kinds) > 1 or not kinds <= {bool, int, float, str}:
            raise ValueError(f"grid[{name!r}]: values must be scalars of one type (bool, int, float, str)")
        if len(set(values)) < len(values):
            raise ValueError(f"grid[{name!r}] repeats a value: {values}")
        if any(isinstance(v, float) and math.isnan(v) for v in values):
            raise ValueError(f"grid[{name!r}] holds NaN: every cell needs a value to run at")
        checked[name] = values
    return checked


def _check_resolution(grid: dict[str, list], static: tuple[str, ...]) -> None:
    """Traced floats reach ``cell_fn`` in JAX's float type: two grid values that round to one float32
    would run as one cell under two labels."""
    dtype = np.dtype(jax.numpy.result_type(float))
    for name, values in grid.items():
        if name in static or not isinstance(values[0], float):
            continue
        rounded = np.asarray(values, dtype)
        if len(set(rounded.tolist())) < len(values):
            raise ValueError(
                f"grid[{name!r}]: values {values} are not all distinct in {dtype.name}, the type in which "
                f"cell_fn receives them; space them further apart, name {name!r} in `static` (Python "
                "floats), "
                "or enable 64-bit floats"
            )


def _cell_id(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def _cell_key(rng_key, params):
    return jax.random.fold_in(rng_key, zlib.crc32(_cell_id(params).encode()) & 0x7FFFFFFF)


class _Batched:
    """``cell_fn`` vmapped over replicate keys, jitted with the replicate axis sharded over ``mesh``.

    The vmap runs inside ``shard_map``: each device runs its own replicates with no communication.
    (Under plain ``jit`` sharding, a vmapped ``while_loop`` -- NUTS, JAX's gamma sampler -- reduces its
    batched predicate across devices at every iteration: a collective per step, which also deadlocks
    virtual CPU devices that outnumber the cores.)"""

    def __init__(self, cell_fn, mesh, impl):
        self.cell_fn, self.impl, self.mesh = cell_fn, impl, mesh
        self.spread, self.whole = NamedSharding(mesh, P("replicates")), NamedSharding(mesh, P())
        self.jitted = jax.jit(self._sharded, static_argnums=2)
        self.compiled = {}

    def _sharded(self, key_data, traced, static):
        local = lambda kd, tr: self._batch(kd, tr, static)
        in_specs, out_specs = (P("replicates"), P()), P("replicates")
        # check_vma=False: cell functions are ordinary JAX code (scans mixing per-replicate and shared values)
        sharded = jax.shard_map(
            local, mesh=self.mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False
        )
        return sharded(key_data, traced)

    def _batch(self, key_data, traced, static):
        keys = jax.random.wrap_key_data(key_data, impl=self.impl)
        return jax.vmap(lambda k: self.cell_fn(k, **traced, **dict(static)))(keys)

    def __call__(self, key_data, traced, static):
        put = lambda x, s: jax.make_array_from_callback(x.shape, s, lambda i: x[i])
        key_data = put(key_data, self.spread)
        traced = {k: put(v, self.whole) for k, v in traced.items()}
        sig = (static, tuple((k, v.dtype) for k, v in traced.items()), key_data.shape)
        start = time.perf_counter()
        if sig not in self.compiled:
            lowered = self.jitted.lower(key_data, traced, static)
            _warn_if_the_pool_may_deadlock(lowered, self.mesh)
            self.compiled[sig] = lowered.compile()
        compile_s = time.perf_counter() - start
        out = jax.block_until_ready(self.compiled[sig](key_data, traced))
        if jax.process_count() > 1:
            from jax.experimental import multihost_utils

            out = multihost_utils.process_allgather(out, tiled=True)
        return jax.device_get(out), compile_s, time.perf_counter() - start - compile_s


def _warn_if_the_pool_may_deadlock(lowered, mesh) -> None:
    """Warn where a study may hang on a CPU: jaxlib's batched LAPACK kernels (triangular solves,
    Cholesky, eigh: a multivariate record law, a θ-step's matrix algebra) split a large batch over XLA's
    CPU thread pool (one thread per core) and wait for the pieces; with one such kernel running on each
    of as many devices as there are cores, every thread waits and none is left to run the pieces."""
    devices = list(mesh.devices.flat)
    if len(devices) < 2 or any(d.platform != "cpu" for d in devices):
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if len(devices) < cores or "lapack_" not in lowered.as_text():
        return
    warnings.warn(
        f"This study runs on {len(devices)} CPU devices with {cores} cores and calls LAPACK kernels "
        "(matrix solves or factorisations): jaxlib's batched LAPACK kernels can then deadlock XLA's CPU "
        "thread pool, and the study hangs with the CPU idle. Give XLA fewer CPU devices than cores "
        f"(XLA_FLAGS=--xla_force_host_platform_device_count={max(1, cores - 1)}), or pass "
        "run_study(devices=jax.devices()[:1]); the numbers do not depend on the devices.",
        RuntimeWarning,
        stacklevel=4,
    )


@functools.lru_cache(maxsize=16)
def _cached(cell_fn, mesh, impl) -> _Batched:
    return _Batched(cell_fn, mesh, impl)


def _batched(cell_fn, mesh, impl) -> _Batched:
    """Reuse the compilations of an earlier study of the same (hashable) ``cell_fn``."""
    try:
        return _cached(cell_fn, mesh, impl)
    except TypeError:  # an unhashable callable
        return _Batched(cell_fn, mesh, impl)


def _paths(out) -> tuple[Path, Path]:
    out = Path(out)
    if out.suffix not in (".csv", ".parquet"):
        raise ValueError(f"out must end in .csv or .parquet, got {str(out)!r}")
    if out.suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ValueError(
                f"out={str(out)!r}: parquet needs pyarrow (pip install pyarrow) or use .csv"
            ) from None
    return out, out.with_name(out.name + ".json")


def _read(path: Path, grid: dict[str, list]):
    import pandas as pd

    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    # a string grid value is read as written ("NA" and "" are values, not missing); elsewhere an empty
    # field is a missing number
    columns = pd.read_csv(path, nrows=0).columns
    strings = {k for k, v in grid.items() if isinstance(v[0], str)}
    missing = {c: ["", "nan", "NaN"] for c in columns if c not in strings}
    types = {k: type(v[0]) for k, v in grid.items()}
    return pd.read_csv(path, dtype=types, keep_default_na=False, na_values=missing)


def _cells_of(table, grid: dict[str, list], replicates: int) -> dict:
    """``{cell id: frame}`` of the complete cells of a table read from ``out``."""
    cells = {}
    for key, frame in table.groupby(list(grid), sort=False, dropna=False):
        cid = _cell_id(dict(zip(grid, (k.item() if isinstance(k, np.generic) else k for k in key))))
        if len(frame) == replicates:
            cells[cid] = frame.reset_index(drop=True)
    return cells


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive lock on ``path`` + ".lock" (POSIX; elsewhere no lock), so that processes sharing
    ``out`` read-merge-write it one at a time."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover (Windows)
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write(frames: dict, ids: list[str], path: Path, grid: dict[str, list], replicates: int) -> None:
    """Write ``frames`` to ``path``, first merging in the cells another process has written there
    since (``frames`` takes them too, so a resume does not run them again)."""
    import pandas as pd

    with _locked(path):
        if path.exists():
            for cid, frame in _cells_of(_read(path, grid), grid, replicates).items():
                frames.setdefault(cid, frame)
        table = pd.concat([frames[c] for c in _ordered(frames, ids)], ignore_index=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        table.to_parquet(tmp, index=False) if path.suffix == ".parquet" else table.to_csv(tmp, index=False)
        os.replace(tmp, path)  # atomic: an interruption leaves the previous table


def run_study(
    cell_fn: Callable,
    grid: Mapping[str, Sequence],
    *,
    replicates: int,
    rng_key,
    summaries: PosteriorSummaries | Sequence[str] | Callable | None = None,
    out: str | Path | None = None,
    progress_bar: bool = True,
    devices: Sequence | None = None,
    on_cell: Callable | None = None,
    static: Sequence[str] = (),
    **options,
):
    """Run ``cell_fn(key, **params)`` for ``replicates`` keys of every cell of ``grid`` (the product of
    its value lists); returns a pandas DataFrame, one row per cell × replicate: the parameters,
    ``replicate``, the summaries, and the cell's ``seconds`` and ``compile_seconds``.

    ``summaries``: ``None`` if ``cell_fn`` returns per-replicate summaries (small arrays), else a
    :func:`posterior_summaries` (or its stats names, or ``f(outputs, params) -> {column: values}``)
    of draws. ``out`` (``.csv``, or ``.parquet`` with pyarrow) is rewritten after every cell;
    an existing ``out`` is resumed (its ``.json`` sidecar checks the grid names, ``replicates`` and
    ``rng_key``; the same ``cell_fn`` and ``summaries`` are up to you). ``devices`` (default
    ``jax.devices()``) share the replicates; ``on_cell(params, frame)`` is called after each cell;
    floats named in ``static`` reach ``cell_fn`` as Python floats (one compilation per value).

    >>> cell = lambda key, mu: {"mean": mu + jax.random.normal(key, (100,)).mean()}
    >>> df = run_study(cell, {"mu": [0.0, 5.0]}, replicates=3, rng_key=jax.random.key(0), progress_bar=False)
    >>> df.groupby("mu")["mean"].mean().round().tolist(), len(df)
    ([0.0, 5.0], 6)
    """
    import pandas as pd
    from tqdm.auto import tqdm

    _unknown("run_study", options)
    if not callable(cell_fn):
        raise ValueError(f"cell_fn must be a function (key, **params) -> outputs, got {cell_fn!r}")
    grid = _check_grid(grid)
    replicates = positive_int(replicates, "replicates")
    if not (isinstance(rng_key, jax.Array) and rng_key.shape == ()) or not (
        jax.dtypes.issubdtype(rng_key.dtype, jax.dtypes.prng_key)
    ):
        raw = isinstance(rng_key, jax.Array | np.ndarray) and rng_key.shape == (2,)
        if raw and rng_key.dtype == np.uint32:
            rng_key = jax.random.wrap_key_data(rng_key)
        else:
            raise ValueError(f"rng_key must be one PRNG key (jax.random.key(0)), got {rng_key!r}")
    if summaries is not None and not callable(summaries):
        summaries = posterior_summaries(summaries)
    if on_cell is not None and not callable(on_cell):
        raise ValueError(f"on_cell must be a function (params, frame), got {on_cell!r}")
    devices = list(jax.devices() if devices is None else devices)
    if not devices or not all(isinstance(d, jax.Device) for d in devices):
        raise ValueError(f"devices must be a non-empty list of jax devices, got {devices!r}")
    static = (static,) if isinstance(static, str) else tuple(static)
    if not set(static) <= set(grid):
        raise ValueError(f"static: {sorted(set(static) - set(grid))} are not grid parameters {list(grid)}")
    _check_resolution(grid, static)
    paths = None if out is None else _paths(out)
    main = jax.process_index() == 0

    cells = [dict(zip(grid, values)) for values in itertools.product(*grid.values())]
    ids = [_cell_id(c) for c in cells]
    spec = {
        "grid": list(grid),
        "replicates": replicates,
        "rng_key": np.asarray(jax.random.key_data(rng_key)).tolist(),
    }
    frames: dict[str, Any] = {}  # cell id -> frame, in the file's order (cells beyond the grid kept)
    if paths is not None and main and paths[0].exists():
        if not paths[1].exists():
            raise ValueError(f"out={str(paths[0])!r} exists but is not a study table (no {paths[1].name})")
        old = json.loads(paths[1].read_text())
        if old != spec:
            raise ValueError(
                f"out={str(paths[0])!r} holds another study ({old}); this one is {spec}: "
                "use another out, or delete it to start again"
            )
        frames.update(_cells_of(_read(paths[0], grid), grid, replicates))
    elif paths is not None and main:
        paths[1].write_text(json.dumps(spec))
    todo = np.array([cid not in frames for cid in ids])
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        todo = np.asarray(multihost_utils.broadcast_one_to_all(todo)).astype(bool)

    mesh = Mesh(np.array(devices), ("replicates",))
    batched = _batched(cell_fn, mesh, jax.random.key_impl(rng_key))
    padded = -(-replicates // len(devices)) * len(devices)
    float_dtype = jax.numpy.result_type(float)
    bar = tqdm(
        total=len(cells) * replicates,
        initial=int((~todo).sum()) * replicates,
        unit="replicate",
        desc="study",
        disable=not (progress_bar and main),
    )
    try:
        for params, cid, run in zip(cells, ids, todo):
            if not run:
                continue
            if cid in frames:  # written meanwhile by another process sharing `out`
                bar.update(replicates)
                continue
            bar.set_postfix_str(cid)
            keys = jax.random.split(_cell_key(rng_key, params), replicates)
            key_data = np.asarray(jax.random.key_data(keys))
            key_data = np.concatenate([key_data, np.repeat(key_data[:1], padded - replicates, axis=0)])
            is_traced = lambda k, v: isinstance(v, float) and k not in static
            traced = {k: np.asarray(v, float_dtype) for k, v in params.items() if is_traced(k, v)}
            fixed = tuple((k, v) for k, v in params.items() if not is_traced(k, v))
            try:
                outputs, compile_s, run_s = batched(key_data, traced, fixed)
            except jax.errors.ConcretizationTypeError as e:  # a Python branch on a traced grid value
                if not traced:
                    raise
                raise ValueError(
                    f"cell_fn needs a concrete value of a traced input ({type(e).__name__}). The float grid "
                    f"parameters {list(traced)} reach cell_fn as traced scalars (one compilation for all "
                    "their "
                    "values); name those it branches on in Python (or uses as a shape) in `static=`, e.g. "
                    f"static={list(traced)[:1]}."
                ) from e
            outputs = jax.tree.map(lambda x: np.asarray(x)[:replicates], outputs)
            named = _leaves(outputs) if summaries is None else summaries(outputs, params).items()
            columns = {}
            for name, x in named:
                if summaries is None and math.prod(x.shape[1:]) > _MAX_LEAF_SIZE:
                    raise ValueError(
                        f"summaries: cell output {name!r} has shape {x.shape[1:]} per replicate, which "
                        "looks like draws; pass summaries=posterior_summaries(...) or return summaries"
                    )
                columns.update(_columns(name, x))
            frame = pd.DataFrame(
                {
                    **{k: [v] * replicates for k, v in params.items()},
                    "replicate": np.arange(replicates),
                    **{
                        k: (np.asarray(v, np.float64) if np.asarray(v).dtype.kind == "f" else np.asarray(v))
                        for k, v in columns.items()
                    },
                    "seconds": run_s,
                    "compile_seconds": compile_s,
                }
            )
            frames[cid] = frame
            if paths is not None and main:
                _write(frames, ids, paths[0], grid, replicates)
            bar.update(replicates)
            if on_cell is not None:
                on_cell(params, frame)
    finally:
        bar.close()
    done = [frames[c] for c in ids if c in frames]
    return pd.concat(done, ignore_index=True)


def _ordered(frames: Mapping[str, Any], ids: list[str]) -> list[str]:
    """The grid's cells in grid order, then cells of earlier runs that are not in this grid."""
    known = set(ids)
    return [c for c in ids if c in frames] + [c for c in frames if c not in known]
