"""A record update that scores one proposal against every slot at once (single offer, multiple attempts).

The plain sweep (:func:`dpjax.infer.record_sweep`) offers proposal ``x*ᵢ`` to slot i only. Here each
offer ``x*ₖ ~ f(·|θ)`` is scored against all n current records (Xiong & Ju's SOMA idea): with the
residual ``R = s − T``, replacing record j gives weight ``w_j = η(R + t_j − t*)``; a slot i is chosen
with probability ``w_i / W`` (``W = Σ_j w_j``) and the move is accepted with probability
``min(1, W / W')``. This is a multiple-try Metropolis step, exact for p(x | θ, s): the f-terms of the
target and of the proposal cancel, and the reverse weights at the new state (offering the removed record
back) are the forward ones except in slot i, where the weight becomes η(R) — so
``W' = W − w_i + η(R)`` costs nothing extra.

With a release per unit (``unit``, the records' units) an offer drawn for a slot of unit g is scored
against the slots of unit g only, so it needs records exchangeable within each unit, not across them.
Its weights read unit g's residual (and g's row of any per-unit mechanism parameter): replacing slot j
of unit g gives ``w_j = η(s | T) · η_g(R_g + t_j − t*) / η_g(R_g)``, and the reverse weights are again
the forward ones but in slot i, whose weight becomes η(s | T): the same step, within the unit.

Each offer costs O(n) work, all of it parallel (n residual evaluations, one categorical draw), so a
sweep of n offers is O(n²) work in O(n) sequential steps: a GPU option for weak releases where the
plain sweep rejects most proposals, not the default. Select it with
``DataAugmentationKernel(model, record_update="soma")``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax, random
from jax.scipy.special import logsumexp

from .record_sweep import mean_rate, rows_differ
from .samplers import uniform

__all__ = ["SomaResult", "place_records", "soma_sweep"]


class SomaResult(NamedTuple):
    """- **source** – int ``(n,)``: which proposal now fills each slot, −1 where the record stayed.
    - **residuals** – tuple of ``s − T`` per privatized site after the sweep.
    - **accept_rate** – mean acceptance probability ``min(1, W / W')`` over the offers (1 when none
      is made).
    - **move_rate** – mean probability that an offer changes a slot's statistic, over the offers
      that differ in statistic from some active slot (1 when none does); a lower bound, at least
      half the true value. Swapping a record for one with the same statistic (a repeat, for discrete
      records) is accepted but moves nothing: ``accept_rate`` counts it, and frozen records hide there.
    - **log_density** – log η(s | T) after the sweep."""

    source: jax.Array
    residuals: tuple
    accept_rate: jax.Array
    move_rate: jax.Array
    log_density: jax.Array


def soma_sweep(
    rng_key,
    t_old: Sequence[jax.Array],
    t_new: Sequence[jax.Array],
    residuals: Sequence[jax.Array],
    log_noise: Sequence[Callable],
    active: jax.Array | None = None,
    unit: jax.Array | None = None,
    grouped: Sequence[bool] | None = None,
) -> SomaResult:
    """n single-offer-multiple-attempts updates, one per proposal; arguments as
    :func:`dpjax.infer.record_sweep` (``t_new[k]`` is the statistic of offer k; an offer is scored
    against the active slots only). ``unit``: int ``(n,)``, each record's unit, with ``grouped[k]``
    True for a site released per unit (its residual ``(G, ...)``, its ``log_noise(r, unit=None)``
    reading unit g's row at ``unit=g``); offer k is then scored against the slots of ``unit[k]`` only."""
    residuals = tuple(residuals)
    n = t_old[0].shape[0]
    active = jnp.ones(n, bool) if active is None else active
    grouped = (False,) * len(residuals) if grouped is None else tuple(grouped)

    def log_eta(res):
        return sum(jnp.sum(f(r)) for f, r in zip(log_noise, res))

    def row_sum(x):
        return jnp.sum(x.reshape(n, -1), axis=1)

    def log_weights(res, t_cur, t_star, g):  # log η(s | T) after replacing slot j, for every j
        total = 0
        for f, r, t, s, per_unit in zip(log_noise, res, t_cur, t_star, grouped):
            if per_unit:  # only unit g's factor changes: η_g(R_g + t_j − t*) in place of η_g(R_g)
                rows = jax.vmap(partial(f, unit=g))(r[g] + t - s)  # a transform reads one row of totals
                total = total + (jnp.sum(f(r)) - jnp.sum(f(r[g], unit=g)) + row_sum(rows))
            else:  # residual R + t_j − t*
                total = total + row_sum(f(r + t - s))
        return total

    def step(carry, xs):
        res, logp, t_cur, source = carry
        t_star, key, log_u, k, made = xs
        g = 0 if unit is None else unit[k]
        scored = active if unit is None else active & (unit == g)
        log_w = jnp.where(scored, log_weights(res, t_cur, t_star, g), -jnp.inf)
        i = random.categorical(key, log_w)
        log_total = logsumexp(log_w)
        log_total_rev = logsumexp(log_w.at[i].set(logp))
        log_alpha = log_total - log_total_rev
        offered = jnp.isfinite(log_total) & made
        accept = (log_u < log_alpha) & offered
        # P(the chosen slot's statistic changes and the swap is accepted) is P(it changes) · c to 2c,
        # c = W / (W + η(R)): each slot's min(1, W / W') lies between c (W' ≤ W + η(R)) and min(1, W / η(R))
        differs = rows_differ(t_cur, t_star)
        can_move = offered & jnp.any(differs & scored)  # else a repeat, left out
        p_differs = jnp.sum(jnp.where(differs, jnp.exp(log_w - log_total), 0.0))
        move = jnp.where(can_move, p_differs * jnp.exp(log_total - jnp.logaddexp(log_total, logp)), 0.0)
        res = tuple(
            jnp.where(accept, r.at[g].add(t[i] - s) if per_unit else r + t[i] - s, r)
            for r, t, s, per_unit in zip(res, t_cur, t_star, grouped)
        )
        t_cur = tuple(jnp.where(accept, t.at[i].set(s), t) for t, s in zip(t_cur, t_star))
        source = jnp.where(accept, source.at[i].set(k), source)
        logp = jnp.where(accept, log_w[i], logp)
        alpha = jnp.where(offered, jnp.exp(jnp.minimum(log_alpha, 0.0)), 0.0)
        return (res, logp, t_cur, source), (alpha, move, can_move)

    keys = random.split(rng_key, n + 1)
    log_u = jnp.log(uniform(keys[0], (n,)))
    init = (residuals, log_eta(residuals), tuple(t_old), jnp.full(n, -1))
    # as many offers as active records (the plain sweep's count of updates)
    made = jnp.arange(n) < jnp.sum(active)
    xs = (tuple(t_new), keys[1:], log_u, jnp.arange(n), made)
    (residuals, logp, _, source), (alpha, moves, can_move) = lax.scan(step, init, xs)
    rate, move_rate = mean_rate(alpha, jnp.sum(made)), mean_rate(moves, jnp.sum(can_move))
    return SomaResult(source, residuals, rate, move_rate, logp)


def place_records(source, proposals: dict, records: dict) -> dict:
    """Records after a SOMA sweep: slot i takes proposal ``source[i]`` where it is ≥ 0."""

    def pick(new, old):
        taken = jnp.take(new, jnp.maximum(source, 0), axis=0)
        mask = (source >= 0).reshape(source.shape + (1,) * (jnp.ndim(old) - 1))
        return jnp.where(mask, taken, old)

    return {k: pick(proposals[k], records[k]) for k in records}
