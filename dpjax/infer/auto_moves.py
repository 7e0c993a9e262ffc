"""``noncentred_moves="auto"``: keep the non-centred θ-moves only where they pay, decided from the
warmup itself.

The moves raise the effective sample size (ESS) per draw when the release is weak against the data
(10–100× on the clamped regression), but each costs an O(n) pass over the records, so where θ
already mixes (the Beta–Bernoulli count, the log-linear model) they lower ESS per second. Neither
side can be read off the model, so the chains try both: the last ``trial_length(num_warmup)``
iterations of warmup alternate blocks of ``BLOCK`` iterations without and with the moves (the
iterations before run with them, which reach the bulk fastest). At the end of warmup each variant's
blocks, taken as short chains (BlackJAX's ESS, which counts their disagreement too), give its ESS per
draw of the slowest θ coordinate; the moves stay on when theirs is at least ``GAIN_TO_KEEP`` times
plain data augmentation's. Five moves cost about one plain iteration (2.1× on the README's
quickstart), and the margin keeps a noisy estimate from choosing the slower variant. A batch of
chains decides together (one branch for all, not both under ``vmap``).

Nothing is compiled or run besides the warmup, and the choice is a function of the chains' keys:
the same ``rng_key`` gives the same choice and draws.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from blackjax.diagnostics import effective_sample_size

__all__ = [
    "BLOCK",
    "GAIN_TO_KEEP",
    "MIN_WARMUP",
    "MovesTrial",
    "choice",
    "ess_per_draw",
    "init",
    "trial_length",
    "update",
    "use_moves",
]

#: estimated ESS per draw of DA + moves over plain DA's needed to keep the moves
GAIN_TO_KEEP = 3.0
BLOCK = 50  # iterations per block of the trial: ESS sees autocorrelation up to this lag
MIN_WARMUP = 4 * BLOCK  # shorter warmups keep the moves (the structural default) without a trial
MAX_TRIAL = 10 * BLOCK  # the trial's draws are kept in the state: (trial length, dim θ) per chain


class MovesTrial(NamedTuple):
    """The flat θ after each trial iteration (blocks alternate: without the moves, with them) and the
    choice (True until the end of warmup)."""

    draws: jax.Array
    keep: jax.Array


def trial_length(num_warmup: int) -> int:
    """Iterations of the trial at the end of warmup: half of it, in pairs of blocks, at most ``MAX_TRIAL``."""
    if num_warmup < MIN_WARMUP:
        return 0
    return min(MAX_TRIAL, num_warmup // 2 // (2 * BLOCK) * 2 * BLOCK)


def init(num_warmup: int, dim: int, dtype) -> MovesTrial:
    return MovesTrial(jnp.zeros((trial_length(num_warmup), dim), dtype), jnp.array(True))


def update(trial: MovesTrial, theta, iteration, num_warmup, moved) -> MovesTrial:
    """Keep the flat θ of a trial iteration; after warmup, the choice it ran with (``moved``)."""
    length = trial_length(num_warmup)
    keep = jnp.where(iteration >= num_warmup, moved, trial.keep)
    if not length:  # no trial (JAX refuses any index into an empty axis)
        return MovesTrial(trial.draws, keep)
    slot = iteration - (num_warmup - length)
    slot = jnp.where((slot >= 0) & (slot < length), slot, length)  # out of range: dropped, O(dim θ)
    return MovesTrial(trial.draws.at[slot].set(theta, mode="drop"), keep)


def ess_per_draw(draws):
    """ESS per draw of the slowest coordinate without and with the moves (2,), from trial draws
    ``(..., length, dim)`` (chains along leading axes, pooled)."""
    length, dim = draws.shape[-2:]
    blocks = draws.reshape(-1, length // (2 * BLOCK), 2, BLOCK, dim)
    per_variant = jnp.moveaxis(blocks, 2, 0).reshape(2, -1, BLOCK, dim)  # (variant, block, iteration, dim)
    ess = jax.vmap(effective_sample_size)(per_variant).reshape(2, dim)  # (it squeezes a dim of 1)
    ess = jnp.where(jnp.isfinite(ess), ess, 0.0)  # a coordinate that never moved
    return jnp.min(ess, axis=-1) / (per_variant.shape[1] * BLOCK)


def use_moves(iteration, trial: MovesTrial, num_warmup):
    """Whether this iteration runs the moves, one choice for a batch of chains (``iteration`` and
    ``trial`` may hold one row per chain): on before the trial, alternating blocks in it (off first),
    then the choice, made at the first iteration after warmup."""
    length = trial_length(num_warmup)
    if not length:
        return jnp.array(True)
    t = jnp.ravel(iteration)[0]
    block = (t - (num_warmup - length)) // BLOCK

    def decide():
        plain, moved = ess_per_draw(trial.draws)
        return moved >= GAIN_TO_KEEP * plain

    after = jax.lax.cond(t == num_warmup, decide, lambda: jnp.ravel(trial.keep)[0])
    return jnp.where(t < num_warmup - length, True, jnp.where(t < num_warmup, block % 2 == 1, after))


def choice(state) -> tuple[bool, float] | None:
    """``(kept, gain)`` of a :class:`~dpjax.infer.DataAugmentationKernel` state after an ``"auto"``
    warmup (chains along a leading axis or one chain): whether the moves stayed on, and their estimated
    ESS per draw over plain DA's; None where no trial ran."""
    trial = getattr(state, "moves_trial", ())
    if not isinstance(trial, MovesTrial) or not trial.draws.shape[-2]:
        return None
    plain, moved = (float(v) for v in ess_per_draw(trial.draws))
    return bool(jnp.ravel(trial.keep)[0]), moved / plain if plain > 0 else float("inf")
