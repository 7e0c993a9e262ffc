"""``noncentred_moves="auto"``: keep the non-centred θ-moves only where they pay, decided from the warmup
itself.

The moves raise the effective sample size (ESS) per draw when the release is weak against the data
(10–100× on the clamped regression), but each costs an O(n) pass over the records, so where θ already
mixes (the Beta–Bernoulli count, the log-linear model) they lower ESS per second. Neither side can be read
off the model, so the chains try both: the last ``trial_length(num_warmup)`` iterations of warmup
alternate blocks of ``BLOCK`` iterations without and with the moves (the iterations before run with them,
which reach the bulk fastest). At the end of warmup each variant's blocks, taken as short chains
(BlackJAX's ESS, which counts their disagreement too), give its ESS per draw of the slowest θ coordinate;
the moves stay on when theirs is at least ``GAIN_TO_KEEP`` times plain data augmentation's. Blocks of
``BLOCK`` draws cannot show an ESS much below one per block, so a variant that barely moves reads
~1/``BLOCK`` per draw and the gain over it is capped (Gong's Lalonde summaries at ε = 1: 2.1× read, ~25×
real, and plain DA's τ kept an ESS of 4 of 4 000); the lag-1 estimate (1 − ρ₁)/(1 + ρ₁), ρ₁ from each
variant's mean squared jump, has no such floor, and the moves stay on when either estimate reaches
``GAIN_TO_KEEP`` (:func:`lag1_ess_per_draw`). Five moves cost about one plain iteration (2.1× on the
README's quickstart), and the margin keeps a noisy estimate from choosing the slower variant. A batch of
chains decides together (one branch for all, not both under ``vmap``).

Nothing is compiled or run besides the warmup, and the choice is a function of the chains' keys: the same
``rng_key`` gives the same choice and draws.
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
    "gain",
    "init",
    "lag1_ess_per_draw",
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


def lag1_ess_per_draw(draws):
    """The AR(1) approximation (1 − ρ₁)/(1 + ρ₁) of each variant's ESS per draw of its slowest coordinate
    (2,), with 1 − ρ₁ the variant's mean squared jump within its blocks over twice the variance of all
    the trial's draws (one target, so one variance): a variant that barely moves reads near 0."""
    length, dim = draws.shape[-2:]
    blocks = draws.reshape(-1, length // (2 * BLOCK), 2, BLOCK, dim)
    jumps = jnp.mean(jnp.diff(blocks, axis=3) ** 2, axis=(0, 1, 3))  # (variant, dim)
    variance = jnp.var(draws.reshape(-1, dim), axis=0)
    one_minus_rho = jnp.clip(jumps / (2 * variance), 0.0, 1.5)  # ρ₁ ≥ −0.5: at most 3 per draw
    ess = one_minus_rho / (2.0 - one_minus_rho)
    return jnp.min(jnp.where(jnp.isfinite(ess), ess, 0.0), axis=-1)


def gain(draws):
    """The moves' estimated ESS per draw over plain DA's: the larger of the blocks' and the lag-1
    estimates' ratios (inf where plain DA's reads 0)."""
    ratio = lambda pair: jnp.where(pair[0] > 0, pair[1] / jnp.maximum(pair[0], 1e-30), jnp.inf)
    return jnp.maximum(ratio(ess_per_draw(draws)), ratio(lag1_ess_per_draw(draws)))


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
        return gain(trial.draws) >= GAIN_TO_KEEP

    after = jax.lax.cond(t == num_warmup, decide, lambda: jnp.ravel(trial.keep)[0])
    return jnp.where(t < num_warmup - length, True, jnp.where(t < num_warmup, block % 2 == 1, after))


def choice(state) -> tuple[bool, float] | None:
    """``(kept, gain)`` of a :class:`~dpjax.infer.DataAugmentationKernel` state after an ``"auto"``
    warmup (chains along a leading axis or one chain): whether the moves stayed on, and their estimated
    ESS per draw over plain DA's (:func:`gain`); None where no trial ran."""
    trial = getattr(state, "moves_trial", ())
    if not isinstance(trial, MovesTrial) or not trial.draws.shape[-2]:
        return None
    return bool(jnp.ravel(trial.keep)[0]), float(gain(trial.draws))
