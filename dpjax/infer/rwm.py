"""Adaptive random-walk Metropolis on unconstrained θ, shared by the non-centred moves and the
pseudo-marginal ABC kernel: a Robbins–Monro step size on a target acceptance rate and BlackJAX's
Welford estimate of the per-coordinate variance (regularised as Stan and BlackJAX do), both frozen
after warmup."""

from __future__ import annotations

import jax.numpy as jnp
from blackjax.adaptation.mass_matrix import WelfordAlgorithmState, welford_algorithm

_, _welford_update, _ = welford_algorithm(is_diagonal_matrix=True)  # BlackJAX's, as in its window adaptation


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
    mean, m2, count = _welford_update(WelfordAlgorithmState(state.mean, state.m2, state.count), flat)
    keep = lambda new, old: jnp.where(warm, new, old)
    return state._replace(
        i=state.i + 1,
        log_step=keep(state.log_step + gain * (rate - target), state.log_step),
        count=keep(count, state.count),
        mean=keep(mean, state.mean),
        m2=keep(m2, state.m2),
    )
