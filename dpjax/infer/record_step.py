"""The record step: one pass of exact Metropolis updates of the imputed records given θ and the
release, as a pure kernel built once from static settings (BlackJAX's shape).

``build_kernel(update, discrete_records)`` returns ``kernel(rng_key, records, proposals, t_old, t_new,
residuals, densities, active) -> (records, RecordInfo)``: ``"sweep"`` offers proposal i to record i
(:func:`~dpjax.infer.record_sweep`, O(dim t) per update), ``"soma"`` offers each proposal to every record
(:func:`~dpjax.infer.soma.soma_sweep`). Both target p(x | θ, s) exactly.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from .record_sweep import accept_records, record_sweep, rows_differ
from .soma import place_records, soma_sweep

__all__ = ["RecordInfo", "build_kernel"]


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

    def soma(rng_key, records, proposals, t_old, t_new, residuals, densities, active):
        result = soma_sweep(rng_key, t_old, t_new, residuals, densities, active)
        records = place_records(result.source, proposals, records)
        return records, RecordInfo(
            None, result.residuals, result.log_density, result.accept_rate, result.move_rate
        )

    def sweep(rng_key, records, proposals, t_old, t_new, residuals, densities, active):
        moving = active
        if discrete_records:
            differs = rows_differ([proposals[k] for k in records], records.values())
            moving = differs if active is None else active & differs
        result = record_sweep(rng_key, t_old, t_new, residuals, densities, moving)
        new = accept_records(result.accepted, proposals, records)
        accept_rate = move_rate = result.accept_rate
        if discrete_records:  # the seed's rate: each of the (slots − m) repeats is accepted
            slots, m = (differs.shape[0] if active is None else jnp.sum(active)), jnp.sum(moving)
            accept_rate = jnp.where(slots > 0, (move_rate * m + slots - m) / jnp.maximum(slots, 1), 1.0)
        return new, RecordInfo(result.accepted, result.residuals, result.log_density, accept_rate, move_rate)

    return soma if update == "soma" else sweep
