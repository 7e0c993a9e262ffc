"""Joint moves of θ and an unknown n along their ridge, with the record noise held fixed.

When n_dp is noisy, s pins down n·E_θ[t] far better than n: the posterior of (θ, n) is a narrow
ridge. Birth/death moves change n by ±1 at fixed θ and the θ-step changes θ at fixed records, so
the chain crawls along it. Here the records are written as x = g(θ, u) (the noise
representations of :mod:`dpjax.infer.noncentred`) and (θ, n) move together by random-walk
Metropolis with every u held fixed, on the target

    p(θ) p(n) Πᵢ g(uᵢ) η(s | T(g(θ, u₁..uₙ)))

over all ``capacity`` slots, whose slots ≥ n hold noise from its own θ-free law g (refreshed
before the moves from records x ~ f(·|θ) drawn independently of all else: an exact Gibbs step;
:class:`~dpjax.infer.ReversibleJumpKernel` passes the record sweep's unused proposals). Πg cancels
in every ratio, so a move that grows n to n* simply brings slots n..n*−1 into the database. The
proposal is Gaussian in (unconstrained θ, n) with the chain's own warmup covariance (adaptive
Metropolis: Haario et al. 2001), so it learns the ridge's direction;
n* = n + round(d_n) keeps it symmetric. Each move is O(capacity · dim T).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from blackjax.adaptation.mass_matrix import WelfordAlgorithmState, welford_algorithm
from jax import random
from jax.flatten_util import ravel_pytree
from numpyro.distributions import biject_to

from .noncentred import noise_of, unconstrained_target

__all__ = ["JointState", "init_joint_state", "joint_size_moves"]

#: the optimal acceptance rate of random-walk Metropolis in several dimensions (Roberts et al. 1997)
TARGET_ACCEPT = 0.234
_, _welford_update, _ = welford_algorithm(is_diagonal_matrix=False)


class JointState(NamedTuple):
    """Adaptation state of the joint (θ, n) moves (frozen after warmup)."""

    log_step: jax.Array  # log of the scalar step multiplying the covariance's Cholesky factor
    count: jax.Array  # Welford estimate of the covariance of (unconstrained θ, n)
    mean: jax.Array
    m2: jax.Array
    adapted: jax.Array  # iterations that adapted the state so far


def init_joint_state(theta, supports) -> JointState:
    flat, _ = ravel_pytree({k: biject_to(supports[k]).inv(theta[k]) for k in theta})
    dim = flat.shape[0] + 1
    zero = jnp.zeros((), jnp.int32)
    return JointState(
        jnp.log(jnp.array(2.38 / jnp.sqrt(dim), flat.dtype)),
        zero,
        jnp.zeros(dim, flat.dtype),
        jnp.zeros((dim, dim), flat.dtype),
        zero,
    )


def _cholesky(state: JointState):
    """Regularised covariance (shrunk towards 10⁻³·I early on, as Stan and NumPyro do; n's own
    variance at least 1) and its Cholesky factor; the identity before 10 draws."""
    dim = state.mean.shape[0]
    eye = jnp.eye(dim, dtype=state.m2.dtype)
    w = state.count / (state.count + 5.0)
    cov = w * state.m2 / jnp.maximum(state.count - 1, 1) + 1e-3 * (1 - w) * eye
    cov = cov.at[-1, -1].max(1.0)
    return jnp.where(state.count > 10, jnp.linalg.cholesky(cov), eye)


def joint_size_moves(
    rng_key,
    state: JointState,
    theta: dict,
    n,
    records: dict,
    fresh: dict,
    log_eta,
    *,
    model,
    supports: dict,
    size_site: str,
    capacity: int,
    support,
    num_moves: int,
    enabled,
    adapting,
    model_args,
    model_kwargs,
):
    """``num_moves`` random-walk Metropolis moves of (θ, n) with the record noise held fixed.

    :param records: the records buffer (its first n slots are the database).
    :param fresh: records drawn from f(·|θ) for every slot, independently of the chain's state, whose
      noise fills the slots ≥ n.
    :param log_eta: log η(s | T) of the current database (the record sweep's), added to the start's
      release-free log target: one O(capacity) pass fewer.
    :param capacity: the records buffer's slots; a proposal n* outside the prior's ``support`` (a
      constraint) or above the capacity is refused, and counted as blocked when the support admits it.
    :param enabled: a boolean scalar; when false nothing moves (n is held) and nothing adapts.
    :param adapting: a boolean scalar; whether the proposal's covariance and step adapt (warmup).
    :returns: ``(theta, n, records, state, accept_rate, blocked)``; records are g(θ, u) in every
      slot, ``blocked`` counts proposals refused for passing the capacity.
    """
    key_u, key_moves = random.split(rng_key)
    active = jnp.arange(capacity) < n
    buffer = {
        k: jnp.where(active.reshape((-1,) + (1,) * (v.ndim - 1)), v, fresh[k]) for k, v in records.items()
    }
    noise = noise_of(key_u, model, {**theta, size_site: n}, buffer, model_args, model_kwargs)
    dtypes = {k: v.dtype for k, v in records.items()}
    phi, target = unconstrained_target(model, noise, dtypes, supports, theta, model_args, model_kwargs)

    def log_density(phi, n, releases=True):
        log_p, theta, recs = target(phi, {size_site: n}, releases)
        return jnp.where(support(n) & (n <= capacity), log_p, -jnp.inf), theta, recs

    chol = jnp.exp(state.log_step) * _cholesky(state)

    def move(carry, key):
        phi, n, lp, theta, recs, blocked = carry
        k1, k2 = random.split(key)
        d = chol @ random.normal(k1, (phi.shape[0] + 1,), phi.dtype)
        phi_star, n_star = phi + d[:-1], n + jnp.round(d[-1]).astype(n.dtype)
        lp_star, theta_star, recs_star = log_density(phi_star, n_star)
        log_alpha = jnp.nan_to_num(lp_star - lp, nan=-jnp.inf)
        accept = enabled & jnp.isfinite(lp) & (jnp.log(random.uniform(k2)) < log_alpha)
        pick = lambda a, b: jax.tree.map(lambda x, y: jnp.where(accept, x, y), a, b)
        blocked = blocked + (enabled & (n_star > capacity) & support(n_star)).astype(blocked.dtype)
        carry = (
            jnp.where(accept, phi_star, phi),
            jnp.where(accept, n_star, n),
            jnp.where(accept, lp_star, lp),
            pick(theta_star, theta),
            pick(recs_star, recs),
            blocked,
        )
        return carry, jnp.where(jnp.isfinite(lp), jnp.exp(jnp.minimum(log_alpha, 0.0)), 0.0)

    lp0 = log_density(phi, n, releases=False)[0] + log_eta
    init = (phi, jnp.asarray(n), lp0, theta, buffer, jnp.zeros((), jnp.int32))
    (phi, n, _, theta, records, blocked), probs = jax.lax.scan(move, init, random.split(key_moves, num_moves))
    rate = jnp.mean(probs)
    # adapt the step (Robbins–Monro on the acceptance rate) and the covariance of (φ, n), warmup only
    learn = enabled & adapting
    gain = (state.adapted + 1.0) ** -0.6
    welford = _welford_update(
        WelfordAlgorithmState(state.mean, state.m2, state.count), jnp.append(phi, n.astype(phi.dtype))
    )
    keep = lambda new, old: jnp.where(learn, new, old)
    state = JointState(
        keep(state.log_step + gain * (rate - TARGET_ACCEPT), state.log_step),
        keep(welford.sample_size, state.count),
        keep(welford.mean, state.mean),
        keep(welford.m2, state.m2),
        state.adapted + learn.astype(state.adapted.dtype),
    )
    return theta, n, records, state, jnp.where(enabled, rate, jnp.nan), blocked
