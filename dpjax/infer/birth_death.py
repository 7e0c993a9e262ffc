"""Between-model moves of the unknown-n sampler (Awan, Barrientos & Ju, Algorithm 1, step 2) as
a pure function over a fixed-capacity records buffer.

Each move proposes n* = n ± 1 with the seed's q(n* | n) (a birth with probability 1 at the lower
end of n's support, else ½ each way). A birth writes a fresh x* ~ f(·|θ) into slot n; a death
removes a uniformly chosen record j and moves the last record into its slot, so the first n slots
always hold the database. Thanks to record additivity the release residuals r = s − T move by one
record's t, so a move costs O(dim T) whatever n is. The acceptance probability is the seed's
eq. (5): η(s | T*) / η(s | T) (over every privatized site, n_dp included) × p(n*) / p(n) ×
q(n | n*) / q(n* | n); f(x* | θ) cancels against the birth proposal, and the uniform choice of
the record to delete against the n! orderings of a database (the target is exchangeable).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax, random

__all__ = ["BirthDeathResult", "birth_death"]


class BirthDeathResult(NamedTuple):
    """- **size** – n after the moves.
    - **records**, **t_records** – the records buffer and its per-record statistics (slots ≥ n stale).
    - **residuals** – per privatized site, s − T after the moves.
    - **birth_accept_rate**, **death_accept_rate** – mean acceptance probability of the births and
      of the deaths proposed (NaN when none was).
    - **blocked** – births refused because n had reached the capacity although the prior allows more.
    - **log_density** – log η(s | T) after the moves."""

    size: jax.Array
    records: dict
    t_records: tuple
    residuals: tuple
    birth_accept_rate: jax.Array
    death_accept_rate: jax.Array
    blocked: jax.Array
    log_density: jax.Array


def birth_death(
    rng_key,
    size,
    records: dict,
    t_records: Sequence[jax.Array],
    residuals: Sequence[jax.Array],
    births: dict,
    t_births: Sequence[jax.Array],
    log_noise: Sequence[Callable],
    log_prior: Callable,
    *,
    lower: int,
) -> BirthDeathResult:
    """``len(t_births[0])`` birth/death moves of the database size.

    :param size: current n (an integer scalar).
    :param records: ``{site: (capacity, ...)}``, the records buffer; its first n slots are the data.
    :param t_records: per privatized site, ``(capacity, *stat_shape)`` statistics of those records.
    :param residuals: per privatized site, s − Σ_{i<n} t_records[i].
    :param births: ``{site: (K, ...)}``, K fresh records x* ~ f(·|θ), one per move.
    :param t_births: per privatized site, their ``(K, *stat_shape)`` statistics.
    :param log_noise: per site, elementwise log η at a residual.
    :param log_prior: log p(n) of an integer n (−inf outside its support).
    :param lower: the smallest n of the prior's support (n never goes below it).
    """
    capacity = next(iter(records.values())).shape[0]
    num_moves = t_births[0].shape[0]
    key_dir, key_pick, key_acc = random.split(rng_key, 3)
    u_dir = random.uniform(key_dir, (num_moves,))
    u_pick = random.uniform(key_pick, (num_moves,))
    log_u = jnp.log(random.uniform(key_acc, (num_moves,)))

    def log_eta(res):
        return sum(jnp.sum(f(r)) for f, r in zip(log_noise, res))

    def row(buffer, i):
        return lax.dynamic_index_in_dim(buffer, i, keepdims=False)

    def put(buffer, i, value):
        return lax.dynamic_update_index_in_dim(buffer, value, i, 0)

    def step(carry, xs):
        n, recs, ts, res, logp, blocked = carry
        born, t_born, u, v, log_ui = xs
        birth = (n <= lower) | (u < 0.5)
        full = birth & (n >= capacity)
        j = jnp.minimum(jnp.floor(v * n).astype(n.dtype), n - 1)  # the record a death removes
        last = jnp.maximum(n - 1, 0)
        res_star = tuple(
            jnp.where(birth, r - tb, r + row(t, j)) for r, tb, t in zip(res, t_born, ts)
        )  # T* = T + t(x*) for a birth, T − t(x_j) for a death
        n_star = jnp.where(birth, n + 1, n - 1)
        logp_star = log_eta(res_star)
        # q(n | n*) / q(n* | n): ½ / 1 for a birth from the lower end, 1 / ½ for a death onto it
        log_q = jnp.where(
            birth, jnp.where(n <= lower, -jnp.log(2.0), 0.0), jnp.where(n_star <= lower, jnp.log(2.0), 0.0)
        )
        log_alpha = logp_star - logp + log_prior(n_star) - log_prior(n) + log_q
        log_alpha = jnp.where(full, -jnp.inf, log_alpha)
        accept = log_ui < log_alpha
        blocked = blocked + (full & jnp.isfinite(log_prior(n_star))).astype(blocked.dtype)
        # a birth writes x* into slot n; a death moves the last record into slot j
        slot = jnp.where(birth, jnp.minimum(n, capacity - 1), j)
        recs = {
            k: put(b, slot, jnp.where(accept, jnp.where(birth, born[k], row(b, last)), row(b, slot)))
            for k, b in recs.items()
        }
        ts = tuple(
            put(t, slot, jnp.where(accept, jnp.where(birth, tb, row(t, last)), row(t, slot)))
            for t, tb in zip(ts, t_born)
        )
        res = tuple(jnp.where(accept, a, b) for a, b in zip(res_star, res))
        alpha = jnp.exp(jnp.minimum(log_alpha, 0.0))
        carry = (jnp.where(accept, n_star, n), recs, ts, res, jnp.where(accept, logp_star, logp), blocked)
        return carry, (birth, alpha)

    size = jnp.asarray(size)
    init = (
        size,
        dict(records),
        tuple(t_records),
        tuple(residuals),
        log_eta(residuals),
        jnp.zeros((), size.dtype),
    )
    xs = (births, tuple(t_births), u_dir, u_pick, log_u)
    (size, records, t_records, residuals, logp, blocked), (birth, alpha) = lax.scan(step, init, xs)

    def rate(which):
        count = jnp.sum(which)
        return jnp.where(count > 0, jnp.sum(jnp.where(which, alpha, 0.0)) / jnp.maximum(count, 1), jnp.nan)

    return BirthDeathResult(size, records, t_records, residuals, rate(birth), rate(~birth), blocked, logp)
