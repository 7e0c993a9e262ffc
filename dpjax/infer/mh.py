"""Metropolis–Hastings pieces, one copy for every engine: the accept step (as BlackJAX's
``static_binomial_sampling``, with a NaN ratio read as a refusal) and the adaptive random walk on
unconstrained θ of the non-centred moves, the joint (θ, n) moves and the pseudo-marginal ABC kernel: a
Robbins–Monro step size on a target acceptance rate and BlackJAX's Welford estimate of the covariance
(regularised as Stan and BlackJAX do), both frozen after warmup.

The covariance is dense: posteriors of a few parameters are often thin ridges off the axes. On the
ATUS compositions with n known at ε_s = 1, s pins the ratios of the Dirichlet α but hardly its scale;
plain DA gave an ESS of α₁ of 11–12 per 2 000 draws, 5 non-centred moves per iteration with a
per-coordinate variance 17 per 3 000, and with the dense one 190–225 per 2 000 (`awan-atus`)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from blackjax.adaptation.mass_matrix import WelfordAlgorithmState, welford_algorithm
from jax import random

__all__ = [
    "MHInfo",
    "RWState",
    "accept",
    "adapt",
    "gain",
    "init_rw",
    "proposal_cholesky",
    "proposer",
    "welford_update",
]

#: BlackJAX's Welford update of (mean, m2, count), as in its window adaptation
_, welford_update, _ = welford_algorithm(is_diagonal_matrix=False)


class MHInfo(NamedTuple):
    """One Metropolis–Hastings decision: whether the proposal was taken, and min(1, α) (0 where the
    move was not allowed)."""

    accepted: jax.Array
    accept_prob: jax.Array


def accept(rng_key, log_alpha, new, old, allowed=True):
    """Metropolis–Hastings: ``new`` (a pytree) with probability min(1, exp(``log_alpha``)), else ``old``.

    A NaN ratio counts as −inf (a proposal whose density cannot be evaluated is refused); where
    ``allowed`` is False the move is refused outright (e.g. from a state outside an exact region).
    Returns ``(state, MHInfo)``.

    >>> import jax, jax.numpy as jnp
    >>> state, info = accept(jax.random.key(0), jnp.array(jnp.nan), 1.0, 0.0)
    >>> float(state), bool(info.accepted), float(info.accept_prob)
    (0.0, False, 0.0)
    """
    log_alpha = jnp.nan_to_num(log_alpha, nan=-jnp.inf)
    accepted = allowed & (jnp.log(random.uniform(rng_key)) < log_alpha)
    state = jax.tree.map(lambda a, b: jnp.where(accepted, a, b), new, old)
    return state, MHInfo(accepted, jnp.where(allowed, jnp.exp(jnp.minimum(log_alpha, 0.0)), 0.0))


class RWState(NamedTuple):
    """Adaptation state of a random-walk proposal on unconstrained θ, one layout for every engine that
    has one (the non-centred moves, the joint (θ, n) moves, PseudoMarginalABC); frozen after warmup.

    - **log_step** – log of the scalar step multiplying the covariance's Cholesky factor;
    - **count**, **mean**, **m2** – BlackJAX's Welford estimate of the covariance of the moves' end
      points; ``count`` is also the number of adapting iterations so far (the Robbins–Monro gain's)."""

    log_step: jax.Array
    count: jax.Array
    mean: jax.Array
    m2: jax.Array


def init_rw(dim: int, dtype, step) -> RWState:
    """An :class:`RWState` for ``dim`` coordinates with step ``step``, before any adaptation."""
    zeros = jnp.zeros((), dtype)
    return RWState(jnp.log(zeros + step), zeros, jnp.zeros(dim, dtype), jnp.zeros((dim, dim), dtype))


def proposal_cholesky(count, m2):
    """Cholesky factor of the Welford covariance ``m2 / (count − 1)`` (the identity before 10 draws),
    shrunk towards 10⁻³·I early on as NumPyro and Stan regularise their mass matrices."""
    eye = jnp.eye(m2.shape[-1], dtype=m2.dtype)
    cov = jnp.where(count > 10, m2 / jnp.maximum(count - 1, 1), eye)
    w = count / (count + 5.0)
    return jnp.linalg.cholesky(w * cov + 1e-3 * (1 - w) * eye)


def proposer(state):
    """``propose(key, flat)``: a random-walk proposal, step × Cholesky factor × N(0, I), with the factor
    computed once for all the moves that share ``state`` (an :class:`RWState`)."""
    step, chol = jnp.exp(state.log_step), proposal_cholesky(state.count, state.m2)
    return lambda key, flat: flat + step * (chol @ random.normal(key, flat.shape, flat.dtype))


def gain(state: RWState):
    """The Robbins–Monro gain of the next adapting iteration, (k + 1)^−0.6 after k of them."""
    return (state.count + 1.0) ** -0.6


def adapt(state: RWState, flat, rate, target, learn) -> RWState:
    """``state`` after an iteration whose moves ended at ``flat`` with mean acceptance probability
    ``rate``: where ``learn`` (the warmup), the step moves towards ``target`` and ``flat`` joins the
    covariance estimate; else ``state`` is kept."""
    mean, m2, count = welford_update(WelfordAlgorithmState(state.mean, state.m2, state.count), flat)
    keep = lambda new, old: jnp.where(learn, new, old)
    return RWState(
        keep(state.log_step + gain(state) * (rate - target), state.log_step),
        keep(count, state.count),
        keep(mean, state.mean),
        keep(m2, state.m2),
    )
