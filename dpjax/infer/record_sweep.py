"""Algorithm 1, step 2 of the data-augmentation seed as a pure function.

Proposals ``x*ᵢ ~ f(·|θ)`` and their statistics ``t(x*ᵢ)`` arrive precomputed (one vectorised
model call, one ``vmap``); the ``lax.scan`` below touches only the low-dimensional running
residual ``R = s - T`` of each privatized site. Carrying the residual rather than ``T`` keeps
float32 accurate at large n (``|R|`` is of the order of the noise, ``|T|`` of n) and works for
every noise-adding mechanism, whose density depends on ``s - T`` alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax, random

__all__ = ["SweepResult", "accept_records", "record_sweep"]


class SweepResult(NamedTuple):
    """- **accepted** – bool ``(n,)``, which proposals replaced their record.
    - **residuals** – tuple of ``s - T`` per privatized site after the sweep.
    - **accept_rate** – mean Metropolis acceptance probability over the sweep (≥ e^{-ε} for a
      pure ε-DP release, by the seed's Proposition 3.1)."""

    accepted: jax.Array
    residuals: tuple
    accept_rate: jax.Array


def record_sweep(
    rng_key,
    t_old: Sequence[jax.Array],
    t_new: Sequence[jax.Array],
    residuals: Sequence[jax.Array],
    log_noise: Sequence[Callable],
) -> SweepResult:
    """One systematic sweep of independence-Metropolis record updates.

    :param rng_key: PRNG key.
    :param t_old: per site, ``(n, *stat_shape)`` statistics of the current records.
    :param t_new: per site, the same for the proposals.
    :param residuals: per site, ``s - Σᵢ t_old[i]`` at the start of the sweep.
    :param log_noise: per site, elementwise log noise density at a residual.
    :return: a :class:`SweepResult`.
    """
    t_old, t_new, residuals = tuple(t_old), tuple(t_new), tuple(residuals)
    n = t_old[0].shape[0]

    def log_eta(res):
        return sum(jnp.sum(f(r)) for f, r in zip(log_noise, res))

    def step(carry, xs):
        res, logp = carry
        old, new, log_u = xs
        res_star = tuple(r + o - w for r, o, w in zip(res, old, new))
        logp_star = log_eta(res_star)
        log_alpha = logp_star - logp
        accept = log_u < log_alpha
        res = tuple(jnp.where(accept, a, b) for a, b in zip(res_star, res))
        logp = jnp.where(accept, logp_star, logp)
        return (res, logp), (accept, jnp.exp(jnp.minimum(log_alpha, 0.0)))

    log_u = jnp.log(random.uniform(rng_key, (n,)))
    (residuals, _), (accepted, probs) = lax.scan(
        step, (residuals, log_eta(residuals)), (t_old, t_new, log_u)
    )
    return SweepResult(accepted, residuals, jnp.mean(probs))


def accept_records(accepted, proposals: dict, records: dict) -> dict:
    """Replace the accepted records (vectorised, outside the scan)."""

    def pick(new, old):
        mask = accepted.reshape(accepted.shape + (1,) * (jnp.ndim(old) - 1))
        return jnp.where(mask, new, old)

    return {k: pick(proposals[k], records[k]) for k in records}
