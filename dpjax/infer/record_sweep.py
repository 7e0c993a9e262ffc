"""Algorithm 1, step 2 of the data-augmentation seed as a pure function.

Proposals ``x*ᵢ ~ f(·|θ)`` and their statistics ``t(x*ᵢ)`` arrive precomputed (one vectorised
model call, one ``vmap``); the ``lax.scan`` below touches only the low-dimensional running
residual ``R = s - T`` of each privatized site. Carrying the residual rather than ``T`` keeps
float32 accurate at large n (``|R|`` is of the order of the noise, ``|T|`` of n) and works for
every noise-adding mechanism, whose density depends on ``s - T`` alone.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from .samplers import uniform

__all__ = [
    "SlowBackendWarning",
    "SweepResult",
    "accept_records",
    "mean_rate",
    "record_sweep",
    "rows_differ",
    "warn_slow_backend",
]

# scan steps per loop iteration, by backend (``jax.default_backend()``). A GPU pays ~6 µs per loop
# iteration however many chains it carries, which an unrolled body shares out (an H200: the d = 5 scan
# 6.1 → 1.4 ns per record per chain at 1 024 chains, 5.3 → 0.9 µs for one chain); XLA:CPU runs an
# unrolled body several times slower. benchmarks/sweep_unroll.py measures both.
UNROLL = {"cpu": 1, "gpu": 8}

# From this many records a single chain's sweep on a GPU costs milliseconds per iteration: its scan steps
# run one launch at a time (an H200, unroll 8: 0.9 µs per record; a 2-core CPU: 20–50 ns).
SLOW_BACKEND_RECORDS = 1_000


class SlowBackendWarning(UserWarning):
    """The configuration is known to be slow on the backend in use (one chain's record sweep on a GPU)."""


def warn_slow_backend(num_chains: int, num_records: int, backend: str | None = None, stacklevel: int = 2):
    """Warn where ``num_chains`` chains of ``num_records`` records would sweep slowly on ``backend``
    (default ``jax.default_backend()``): a GPU with one chain and ≥ ``SLOW_BACKEND_RECORDS`` records."""
    backend = jax.default_backend() if backend is None else backend
    if backend == "cpu" or num_chains > 1 or num_records < SLOW_BACKEND_RECORDS:
        return
    warnings.warn(
        f"One chain's record sweep on the {backend.upper()} steps through its {num_records} records one "
        "launch at a time: ~1–5 µs per record against 20–50 ns on a 2-core CPU "
        "(benchmarks/results/sweep_unroll_gpu_1chain.md), and the same cost carries hundreds of chains. Run "
        "many short chains at once (MCMC(..., num_chains=K * M, chain_method='vectorized') started by "
        "dpjax.infer.superchain_init, judged by dpjax.diagnostics.nested_rhat), or this chain on the CPU "
        "(`with jax.default_device(jax.devices('cpu')[0]):`).",
        SlowBackendWarning,
        stacklevel=stacklevel,
    )


class SweepResult(NamedTuple):
    """- **accepted** – bool ``(n,)``, which proposals replaced their record.
    - **residuals** – tuple of ``s - T`` per privatized site after the sweep.
    - **accept_rate** – mean Metropolis acceptance probability over the sweep's active slots (≥ e^{-ε}
      for a pure ε-DP release, by the seed's Proposition 3.1; 1 without active slots).
    - **log_density** – log η(s | T) after the sweep (non-finite: the chain left the support)."""

    accepted: jax.Array
    residuals: tuple
    accept_rate: jax.Array
    log_density: jax.Array


def record_sweep(
    rng_key,
    t_old: Sequence[jax.Array],
    t_new: Sequence[jax.Array],
    residuals: Sequence[jax.Array],
    log_noise: Sequence[Callable],
    active: jax.Array | None = None,
    unroll: int | None = None,
    groups: Sequence[jax.Array | None] | None = None,
) -> SweepResult:
    """One systematic sweep of independence-Metropolis record updates.

    :param rng_key: PRNG key.
    :param t_old: per site, ``(n, *stat_shape)`` statistics of the current records.
    :param t_new: per site, the same for the proposals.
    :param residuals: per site, ``s - Σᵢ t_old[i]`` at the start of the sweep.
    :param log_noise: per site, elementwise log noise density at a residual.
    :param active: bool ``(n,)``, the slots that hold records (a records_plate's first n of its
        capacity); the others are never updated and leave the acceptance rate out. Default: all.
    :param unroll: scan steps per loop iteration; default: the backend's entry in ``UNROLL``. It
        changes the loop's layout, not the update: on XLA:CPU the draws are the same for any value; a
        GPU may fuse an unrolled body's float arithmetic differently, so its last bits (then, rarely,
        an accept decision) can differ between values, never the chain's law.
    :param groups: per site, None, or for a release of one total per unit the records' units, int
        ``(n,)``: that site's residual is ``(G, *stat_shape)`` and record i's update reads and moves row
        ``groups[i]`` only, O(dim t) whatever G; that site's ``log_noise(r, unit=None)`` gives the
        density of a whole residual, or with ``unit`` of that unit's row (its parameters).
    :return: a :class:`SweepResult`.
    """
    residuals = tuple(residuals)
    n = t_old[0].shape[0]
    unroll = UNROLL.get(jax.default_backend(), 1) if unroll is None else unroll
    if isinstance(unroll, bool) or not isinstance(unroll, int) or unroll < 1:
        raise ValueError(f"unroll: expected a positive int (scan steps per loop iteration), got {unroll!r}")
    active = jnp.ones(n, bool) if active is None else active
    # one precomputed input stream per site: the residual moves by t(xᵢ) - t(x*ᵢ), and not at all in
    # an inactive slot (whose update, always accepted, is then dropped below), so the scan is unchanged
    deltas = tuple(
        jnp.where(active.reshape((-1,) + (1,) * (o.ndim - 1)), o - w, 0) for o, w in zip(t_old, t_new)
    )

    def log_eta(res):
        return sum(jnp.sum(f(r)) for f, r in zip(log_noise, res))

    grouped = groups is not None and any(g is not None for g in groups)

    def grouped_step(carry, xs):
        # each site's change of log η from its own rows: unit g's row for a grouped site, all of it else.
        # A grouped site's row of this record's unit comes in the carry, read at the end of the last step
        # from the residual it wrote: the only read of the whole residual follows its write, so XLA
        # updates it in place (read here, before the write, the accept decision's fusion would read it
        # too, and XLA would copy its G rows at every step: O(G) per record update)
        res, logp, carried = carry
        delta, log_u, units, following = xs
        rows = [r if g is None else row for r, row, g in zip(res, carried, units)]  # row None: ungrouped
        log_alpha = 0.0
        for f, row, d, g in zip(log_noise, rows, delta, units):
            density = f if g is None else (lambda x, f=f, g=g: f(x, g))  # the unit's own parameters
            log_alpha = log_alpha + jnp.sum(density(row + d)) - jnp.sum(density(row))
        accept = log_u < log_alpha
        new, following_rows = [], []
        for r, row, d, g, h in zip(res, rows, delta, units, following):
            kept = jnp.where(accept, row + d, row)
            r = kept if g is None else lax.dynamic_update_index_in_dim(r, kept, g, 0)
            new.append(r)
            following_rows.append(None if h is None else lax.dynamic_index_in_dim(r, h, keepdims=False))
        carry = (tuple(new), logp + jnp.where(accept, log_alpha, 0.0), tuple(following_rows))
        return carry, (accept, log_alpha)

    def step(carry, xs):
        res, logp = carry
        delta, log_u = xs
        res_star = tuple(r + d for r, d in zip(res, delta))
        logp_star = log_eta(res_star)
        log_alpha = logp_star - logp
        accept = log_u < log_alpha
        res = tuple(jnp.where(accept, a, b) for a, b in zip(res_star, res))
        return (res, jnp.where(accept, logp_star, logp)), (accept, log_alpha)

    log_u = jnp.log(uniform(rng_key, (n,)))
    init = (residuals, log_eta(residuals))
    if grouped:
        following = tuple(None if g is None else jnp.roll(g, -1) for g in groups)  # the next record's unit
        first = tuple(None if g is None else r[g[0]] for r, g in zip(residuals, groups))
        xs = (deltas, log_u, tuple(groups), following)
        (residuals, _, _), (accepted, log_alpha) = lax.scan(grouped_step, init + (first,), xs, unroll=unroll)
        logp = log_eta(residuals)  # afresh: the carried sum of changes would drift in float32
    else:
        (residuals, logp), (accepted, log_alpha) = lax.scan(step, init, (deltas, log_u), unroll=unroll)
    accepted = accepted & active
    alpha = jnp.where(active, jnp.exp(jnp.minimum(log_alpha, 0.0)), 0.0)
    return SweepResult(accepted, residuals, mean_rate(alpha, jnp.sum(active)), logp)


def mean_rate(alpha, count):
    """``sum(alpha) / count``, the mean acceptance over ``count`` updates; 1 when there is none (none was
    refused)."""
    return jnp.where(count > 0, jnp.sum(alpha) / jnp.maximum(count, 1), 1.0)


def rows_differ(rows, others):
    """bool ``(n,)``: which rows of the arrays ``rows`` (each ``(n, ...)``) differ, in any array or
    element, from ``others`` (arrays of the same shapes, or of one row's shape to compare every row with)."""
    n = rows[0].shape[0]
    return jnp.stack([jnp.any(jnp.reshape(a != b, (n, -1)), axis=1) for a, b in zip(rows, others)]).any(0)


def accept_records(accepted, proposals: dict, records: dict) -> dict:
    """Replace the accepted records (vectorised, outside the scan)."""

    def pick(new, old):
        mask = accepted.reshape(accepted.shape + (1,) * (jnp.ndim(old) - 1))
        return jnp.where(mask, new, old)

    return {k: pick(proposals[k], records[k]) for k in records}
