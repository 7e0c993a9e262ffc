"""Adaptive random-walk Metropolis on unconstrained θ, shared by the non-centred moves and the
pseudo-marginal ABC kernel: a Robbins–Monro step size on a target acceptance rate and a Welford
estimate of the per-coordinate variance, both frozen after warmup."""

from __future__ import annotations

import jax.numpy as jnp


def proposal_scale(state):
    """Per-coordinate proposal s.d.: step × sqrt(regularised Welford variance), as NumPyro
    regularises its mass matrices. ``state`` has fields ``log_step, count, m2``."""
    var = jnp.where(state.count > 10, state.m2 / jnp.maximum(state.count - 1, 1), 1.0)
    w = state.count / (state.count + 5.0)
    return jnp.exp(state.log_step) * jnp.sqrt(w * var + 1e-3 * (1 - w))


def adapt(state, flat, rate, num_warmup, target):
    """Advance ``state`` (fields ``i, log_step, count, mean, m2``) after a move landed at ``flat``
    with acceptance probability ``rate``; adaptation stops after ``num_warmup`` iterations."""
    warm = state.i < num_warmup
    gain = (state.i + 1.0) ** -0.6
    count = state.count + 1
    delta = flat - state.mean
    mean = state.mean + delta / count
    return state._replace(
        i=state.i + 1,
        log_step=jnp.where(warm, state.log_step + gain * (rate - target), state.log_step),
        count=jnp.where(warm, count, state.count),
        mean=jnp.where(warm, mean, state.mean),
        m2=jnp.where(warm, state.m2 + delta * (flat - mean), state.m2),
    )
