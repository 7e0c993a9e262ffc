"""The record step: one pass of exact Metropolis updates of the imputed records given θ and the
release, as a pure kernel built once from static settings (BlackJAX's shape).

``build_kernel(update, discrete_records)`` returns ``kernel(rng_key, records, proposals, t_old, t_new,
residuals, densities, active, groups=None) -> (records, RecordInfo)``: ``"sweep"`` offers proposal i to
record i (:func:`~dpjax.infer.record_sweep`, O(dim t) per update; with ``groups``, a release per unit, it
moves record i's unit's total only), ``"soma"`` offers each proposal to every record
(:func:`~dpjax.infer.soma.soma_sweep`). Both target p(x | θ, s) exactly.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..primitives import record_statistics, simulate
from .record_sweep import accept_records, record_sweep, rows_differ
from .samplers import fast_sampling
from .soma import place_records, soma_sweep

__all__ = [
    "STICKY_RATE",
    "RecordInfo",
    "StickyRecordsWarning",
    "build_kernel",
    "draw_records",
    "masked",
    "per_record",
    "report_sticky",
    "sticky_rate",
    "sweep_density",
    "unit_density",
    "where_records",
]


def where_records(mask, new, old):
    """``new`` in the record slots where ``mask`` (one bool per slot, axis 0) holds, else ``old``."""
    return jnp.where(mask.reshape((-1,) + (1,) * (jnp.ndim(new) - 1)), new, old)


def masked(t, active):
    """Per-record statistics with the slots beyond n zeroed."""
    return where_records(active, t, 0.0)


def per_record(infos, full_records, active=None):
    """Per privatized site, ``t(recordᵢ)`` stacked along axis 0 (``infos``: the sites' PrivatizedInfo
    from the step's own trace); zero in the slots a records_plate leaves empty (``active`` False)."""
    stats = tuple(
        record_statistics(info.statistic, {k: full_records[k] for k in info.record_sites}) for info in infos
    )
    return stats if active is None else tuple(masked(t, active) for t in stats)


def draw_records(model, latent_records, rng_key, given, model_args, model_kwargs):
    """One vectorised model call at ``given`` (θ, n): fresh records x* ~ f(·|θ) for every record slot
    (Gamma, Dirichlet, Beta and Poisson records by whole-array samplers: jax.random's draw a key per
    element). These are the proposals of the sweep and the births of an unknown n."""
    tr, _ = simulate(rng_key, fast_sampling(model), (), model_args, model_kwargs, data=given)
    return {k: tr[k]["value"] for k in latent_records}


def sweep_density(info, release, anchor=None):
    """log η(s | T) as a function of what the record sweep carries, r = ``anchor`` − T: for a release of
    T itself ``anchor`` is s, r the residual s − T, and the density the mechanism's noise density when
    it is additive (the fast path), else η(s | s − r); for a release of ``transform(T)`` (``info``'s)
    ``anchor`` is T at the sweep's start and the density η(s | transform(anchor − r))."""
    mechanism = info.mechanism
    if info.groups is not None:  # a unit's row reads that unit's parameters (per-unit budgets)
        return partial(unit_density, info, release, anchor)
    if info.transform is not None:
        return lambda r: mechanism.log_density(release, info.transform(anchor - r))
    if mechanism.additive:
        return mechanism.log_noise_density
    return lambda r: mechanism.log_density(release, release - r)


def unit_density(info, release, anchor, residual, unit=None):
    """``sweep_density`` of a release per unit (G, ...): elementwise log η at the whole carried
    residual, or with ``unit`` at that unit's row, read with that unit's row of every mechanism
    parameter that has one (a per-unit budget) and, for a released function of each unit's totals,
    that unit's anchor."""
    mechanism = info.mechanism
    if unit is not None:
        shape = jnp.shape(release)
        mechanism = jax.tree.map(lambda p: jnp.asarray(p)[unit] if jnp.shape(p) == shape else p, mechanism)
        release = release[unit]
    if info.transform is None:
        return mechanism.log_noise_density(residual)
    if unit is None:
        return mechanism.log_density(release, info.released(anchor - residual))
    return mechanism.log_density(release, info.transform(anchor[unit] - residual))


class RecordInfo(NamedTuple):
    """- **accepted** – with the sweep, bool ``(slots,)``: which proposals replaced their record (None
      under SOMA).
    - **residuals** – ``s − T`` per privatized site after the step; **log_density** – log η(s | T).
    - **accept_rate** – mean acceptance probability (the seed's: a proposal equal to its record counts
      as accepted); **move_rate** – the same over the proposals that differ from their record."""

    accepted: jax.Array | None
    residuals: tuple
    log_density: jax.Array
    accept_rate: jax.Array
    move_rate: jax.Array


def build_kernel(update: str = "sweep", discrete_records: bool = False):
    """The record step for ``update`` (``"sweep"`` or ``"soma"``). ``discrete_records``: every latent
    record site is discrete, so a proposal may repeat its record; such offers change nothing and are
    left out of the sweep and of its move rate (where they would hide records that never move)."""
    if update not in ("sweep", "soma"):
        raise ValueError(f"`update` must be 'sweep' or 'soma', got {update!r}.")

    def soma(rng_key, records, proposals, t_old, t_new, residuals, densities, active, groups=None):
        units = [g for g in (groups or ()) if g is not None]
        if len(units) > 1:
            raise ValueError(
                "record_update='soma' scores an offer against the records of its own unit: it takes one "
                "privatized site released per unit (`groups`), not several; use record_update='sweep'."
            )
        grouped = None if groups is None else [g is not None for g in groups]
        unit = units[0] if units else None
        result = soma_sweep(rng_key, t_old, t_new, residuals, densities, active, unit=unit, grouped=grouped)
        records = place_records(result.source, proposals, records)
        return records, RecordInfo(
            None, result.residuals, result.log_density, result.accept_rate, result.move_rate
        )

    def sweep(rng_key, records, proposals, t_old, t_new, residuals, densities, active, groups=None):
        moving = active
        if discrete_records:
            differs = rows_differ([proposals[k] for k in records], records.values())
            moving = differs if active is None else active & differs
        result = record_sweep(rng_key, t_old, t_new, residuals, densities, moving, groups=groups)
        new = accept_records(result.accepted, proposals, records)
        accept_rate = move_rate = result.accept_rate
        if discrete_records:  # the seed's rate: each of the (slots − m) repeats is accepted
            slots, m = (differs.shape[0] if active is None else jnp.sum(active)), jnp.sum(moving)
            accept_rate = jnp.where(slots > 0, (move_rate * m + slots - m) / jnp.maximum(slots, 1), 1.0)
        return new, RecordInfo(result.accepted, result.residuals, result.log_density, accept_rate, move_rate)

    return soma if update == "soma" else sweep


# Below this mean rate a record is expected to move less than once in 1 000 iterations. (Both sweeps'
# move rates leave out offers that change nothing: the plain sweep's proposals equal to their record,
# SOMA's swaps for a record with the same statistic; so frozen discrete records are flagged too. Records
# the non-centred moves carry with θ count: `sticky_rate`.)
STICKY_RATE = 1e-3


class StickyRecordsWarning(UserWarning):
    """The record sweep barely moves the imputed records: θ's draws are those of θ | those records."""


def sticky_rate(state):
    """The rate the sticky check reads from a DA ``state``: the last sweep's ``record_move_rate``, or where
    it is higher the mean fraction of record slots that changed after the sweep per iteration over the
    second half of warmup (``state.record_changes``: records the non-centred θ-moves carry with θ). (A
    sum of Normal records pinned to 10⁻⁴: the sweep moves no record, the moves carry them with μ, and
    the draws match the exact posterior; the sweep's rate alone flagged it:
    ``tests/test_noncentred.py::test_records_the_moves_carry_are_not_sticky``.)"""
    return jnp.maximum(state.record_move_rate, state.record_changes[1][..., 0])


def report_sticky(rate):
    """Host side of the sticky-records check: ``rate`` holds each checked chain's record move rate."""
    stuck = rate < STICKY_RATE
    if not stuck.any():
        return
    warnings.warn(
        f"DataAugmentationKernel: {int(stuck.sum())} of {stuck.size} chains move a record with mean "
        f"probability {rate.min():.2g} (the lowest; below {STICKY_RATE:g}): each record is expected to "
        "move less than once in 1 000 sweeps, so θ's draws are those of θ given nearly fixed records "
        "(wherever they started). They are the posterior given the release only if those records' statistic "
        "matches the release within its noise and is sufficient for θ. One record moves the released "
        "statistic by far more than the noise scale here (a large ε: an ε-DP release bounds the acceptance "
        "below by e^(−ε) only). Compare chains started at different records (r_hat), or use an "
        "approximation built for this limit.",
        StickyRecordsWarning,
        stacklevel=1,
    )
