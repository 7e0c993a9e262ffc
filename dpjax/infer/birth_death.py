"""Between-model moves of the unknown-n sampler (Awan, Barrientos & Ju, Algorithm 1, step 2) as
a pure function over a fixed-capacity records buffer.

Each move proposes n* = n ± 1 with the seed's q(n* | n) (a birth with probability 1 at the lower
end of n's support, else ½ each way). As in the seed, a birth appends a fresh x* ~ f(·|θ) in slot
n and a death removes the last record, slot n − 1, so the first n slots always hold the database
and the pair is exactly reversible. The acceptance probability is the seed's eq. (5):
η(s | T*) / η(s | T) (over every privatized site, n_dp included) × p(n*) / p(n) × q(n | n*) /
q(n* | n); f(x* | θ) cancels against the birth proposal.

Record additivity makes a move O(dim T): the release residuals r = s − T move by one record's t.
Within one call the buffer behaves as a stack, so the scan carries only the indices of the births
still on it (K integers), never the O(n) buffer (which XLA would copy at every move): a death
pops this call's last birth, or else reads the untouched slot n − 1. The surviving births are
written into their slots once, after the scan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax, random

__all__ = ["BirthDeathResult", "SizeJumpResult", "birth_death", "size_jumps"]

#: the acceptance rate the size jumps' scale adapts towards (one-dimensional random walk: Roberts et al.)
JUMP_ACCEPT = 0.44


class BirthDeathResult(NamedTuple):
    """- **size** – n after the moves.
    - **records**, **t_records** – the records buffer and its per-record statistics (slots ≥ n stale).
    - **residuals** – per privatized site, s − T after the moves.
    - **birth_accept_rate**, **death_accept_rate** – mean acceptance probability of the births and
      of the deaths proposed (NaN when none was).
    - **blocked** – births refused because n had reached the capacity, which would have been accepted
      without it (the prior of n allows more).
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
    enabled=True,
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
    :param enabled: a boolean scalar (traceable); when false every move is refused and none is counted
      (rates NaN, nothing blocked): n is held at ``size``.
    """
    capacity = next(iter(records.values())).shape[0]
    num_moves = t_births[0].shape[0]
    key_dir, key_acc = random.split(rng_key)
    u_dir = random.uniform(key_dir, (num_moves,))
    log_u = jnp.log(random.uniform(key_acc, (num_moves,)))
    size, enabled = jnp.asarray(size), jnp.asarray(enabled, bool)

    def log_eta(res):
        return sum(jnp.sum(f(r)) for f, r in zip(log_noise, res))

    def row(buffer, i):
        return lax.dynamic_index_in_dim(buffer, i, keepdims=False)

    def step(carry, xs):
        # ``top``: the stack's top entry, carried (read after the last step's write) so that the only read
        # of the stack follows its write and XLA updates it in place, not copying its K entries per move
        n, stack, height, res, logp, blocked, top = carry
        k, u, log_ui = xs
        birth = (n <= lower) | (u < 0.5)
        full = birth & (n >= capacity)
        # the last record: this call's latest surviving birth, or the untouched slot n − 1
        t_last = tuple(
            jnp.where(height > 0, row(tb, top), row(t, jnp.maximum(n - 1, 0)))
            for tb, t in zip(t_births, t_records)
        )
        # T* = T + t(x*) for a birth, T − t(x_last) for a death
        res_star = tuple(jnp.where(birth, r - row(tb, k), r + tl) for r, tb, tl in zip(res, t_births, t_last))
        n_star = jnp.where(birth, n + 1, n - 1)
        logp_star = log_eta(res_star)
        # q(n | n*) / q(n* | n): ½ / 1 for a birth from the lower end, 1 / ½ for a death onto it
        log_q = jnp.where(
            birth,
            jnp.where(n <= lower, -jnp.log(2.0), 0.0),
            jnp.where(n_star <= lower, jnp.log(2.0), 0.0),
        )
        log_alpha = logp_star - logp + log_prior(n_star) - log_prior(n) + log_q
        # refused at the capacity: counted only where the move would have been accepted without it
        blocked = blocked + (enabled & full & (log_ui < log_alpha)).astype(blocked.dtype)
        log_alpha = jnp.where(full | ~enabled, -jnp.inf, log_alpha)
        accept = log_ui < log_alpha
        push, pop = accept & birth, accept & ~birth & (height > 0)
        stack = lax.dynamic_update_index_in_dim(stack, k, height, 0)  # above the top unless pushed
        height = height + push.astype(height.dtype) - pop.astype(height.dtype)
        top = row(stack, jnp.maximum(height - 1, 0))
        res = tuple(jnp.where(accept, a, b) for a, b in zip(res_star, res))
        alpha = jnp.exp(jnp.minimum(log_alpha, 0.0))
        carry = (
            jnp.where(accept, n_star, n),
            stack,
            height,
            res,
            jnp.where(accept, logp_star, logp),
            blocked,
            top,
        )
        return carry, (birth, alpha)

    zero = jnp.zeros((), jnp.int32)
    init = (size, jnp.zeros(num_moves, jnp.int32), zero, tuple(residuals), log_eta(residuals), zero, zero)
    xs = (jnp.arange(num_moves, dtype=jnp.int32), u_dir, log_u)
    (size, stack, height, residuals, logp, blocked, _), (birth, alpha) = lax.scan(step, init, xs)
    # the births still on the stack fill slots n − height … n − 1, in order
    slots = jnp.where(jnp.arange(num_moves) < height, size - height + jnp.arange(num_moves), capacity)
    records = {k: b.at[slots].set(births[k][stack], mode="drop") for k, b in records.items()}
    t_records = tuple(t.at[slots].set(tb[stack], mode="drop") for t, tb in zip(t_records, t_births))

    def rate(which):
        which = which & enabled
        count = jnp.sum(which)
        return jnp.where(count > 0, jnp.sum(jnp.where(which, alpha, 0.0)) / jnp.maximum(count, 1), jnp.nan)

    return BirthDeathResult(size, records, t_records, residuals, rate(birth), rate(~birth), blocked, logp)


class SizeJumpResult(NamedTuple):
    """- **size** – n after the jumps; **residuals** – per privatized site, s − T after them;
    **log_density** – log η(s | T) after them; **accept_rate** – their mean acceptance probability
    (NaN when disabled)."""

    size: jax.Array
    residuals: tuple
    log_density: jax.Array
    accept_rate: jax.Array


def size_jumps(
    rng_key,
    size,
    t_buffer: Sequence[jax.Array],
    residuals: Sequence[jax.Array],
    log_noise: Sequence[Callable],
    log_prior: Callable,
    *,
    scale,
    num_jumps: int,
    lower: int,
    enabled=True,
) -> SizeJumpResult:
    """``num_jumps`` moves n → n* = n + k of many records at once, k = ±max(1, round(σ|z|)) with
    z ~ N(0, 1) and σ = ``scale`` (adapted by the caller to n's posterior spread), where birth and
    death move n by one record at a time.

    The records buffer is read as an augmented state: the slots ≥ n hold records x ~ f(·|θ) drawn
    independently of everything else (the record sweep's unused proposals: an exact Gibbs refresh of
    those auxiliary slots). A jump only moves the boundary: slots n..n*−1 join the database (k > 0) or
    leave it (k < 0), their values unchanged. The f-terms of the joining (leaving) records cancel
    between the database and the auxiliary slots, k's law is symmetric, and the move is its own
    inverse with −k, so the acceptance probability is η(s | T*) p(n*) / (η(s | T) p(n)), as for a
    single birth or death. With the buffer fixed, prefix sums of its statistics make each jump O(dim T)
    after one O(capacity) pass.

    :param t_buffer: per privatized site, ``(capacity, *stat_shape)`` statistics of the buffer (the
      database in its first n slots, fresh f-draws after).
    :param residuals: per site, s − T of the first n slots.
    :param log_prior: log p(n) of an integer n (−inf outside its support).
    :param scale: σ, a positive scalar (traceable).
    :param lower: the smallest n of the prior's support; n* beyond [lower, capacity] is refused.
    """
    capacity = t_buffer[0].shape[0]
    key_z, key_u = random.split(rng_key)
    z = random.normal(key_z, (num_jumps,))
    log_u = jnp.log(random.uniform(key_u, (num_jumps,)))
    size, enabled = jnp.asarray(size), jnp.asarray(enabled, bool)
    zero = lambda t: jnp.zeros((1,) + t.shape[1:], t.dtype)
    prefix = tuple(jnp.concatenate([zero(t), jnp.cumsum(t, 0)]) for t in t_buffer)  # Σ of slots < i

    def log_eta(res):
        return sum(jnp.sum(f(r)) for f, r in zip(log_noise, res))

    def step(carry, xs):
        n, res, logp = carry
        zi, log_ui = xs
        k = jnp.sign(zi) * jnp.maximum(1.0, jnp.round(scale * jnp.abs(zi)))
        n_star = n + k.astype(n.dtype)
        inside = (n_star >= lower) & (n_star <= capacity)
        m = jnp.clip(n_star, 0, capacity)
        res_star = tuple(r - (c[m] - c[n]) for r, c in zip(res, prefix))  # T* − T: slots n..n*−1
        logp_star = log_eta(res_star)
        log_alpha = logp_star - logp + log_prior(m) - log_prior(n)
        log_alpha = jnp.where(inside & enabled, jnp.nan_to_num(log_alpha, nan=-jnp.inf), -jnp.inf)
        accept = log_ui < log_alpha
        carry = (
            jnp.where(accept, m, n),
            tuple(jnp.where(accept, a, b) for a, b in zip(res_star, res)),
            jnp.where(accept, logp_star, logp),
        )
        return carry, jnp.exp(jnp.minimum(log_alpha, 0.0))

    init = (size, tuple(residuals), log_eta(residuals))
    (size, residuals, logp), alpha = lax.scan(step, init, (z, log_u))
    return SizeJumpResult(size, residuals, logp, jnp.where(enabled, jnp.mean(alpha), jnp.nan))
