"""The size step of an unknown n (Awan, Barrientos & Ju, Algorithm 1, with the moves that free n on its
ridge), as a pure stage built once from static settings (BlackJAX's shape).

After the record sweep, in this order:

1. size jumps: n → n ± k with the sweep's unused proposals as the records that join
   (:func:`~dpjax.infer.birth_death.size_jumps`), their scale σ adapted in the warmup towards 0.44;
2. joint (θ, n) moves with the record noise held, and ridge moves
   (:mod:`~dpjax.infer.joint_size_moves`);
3. birth/death moves of one record each (:func:`~dpjax.infer.birth_death.birth_death`), their fresh
   records from one model call whose records plate holds ``size_moves`` slots.

Every move is held off for the first ``held_for`` iterations (n stays at its start while the sweep and
θ fit the records to the release); by default only where the size release pins n (:func:`held_until`).
``kernel(rng_key, key_moves, iteration, ...)`` returns a :class:`SizeResult`; nothing is stored on any
object.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import random
from numpyro import handlers
from numpyro.distributions import biject_to

from .._validate import positive_int
from ..primitives import INFER_KEY, allow_overflow
from .birth_death import JUMP_ACCEPT, birth_death, size_jumps
from .joint_size_moves import RidgeSurrogate, joint_size_moves
from .record_step import draw_records, masked, per_record, where_records
from .spec import ModelSpec

__all__ = [
    "SIZE_JUMPS",
    "CapacityWarning",
    "SizeSettings",
    "SizeInfo",
    "SizeResult",
    "active_slots",
    "build_kernel",
    "check_ridge",
    "check_unit_sizes",
    "initial_jump_scale",
    "near_capacity",
    "size_settings",
    "warn_blocked",
    "warn_when_blocked",
]


SIZE_JUMPS = 10  # size jumps per iteration by default (ReversibleJumpKernel, the EM variants' chains)


class SizeSettings(NamedTuple):
    """The static settings of the size step (:class:`~dpjax.infer.ReversibleJumpKernel`'s arguments of
    the same names): birth/death moves, size jumps, warmup iterations with n held (None: half the
    warmup), ridge moves per iteration and the ridge moves' surrogate statistic."""

    size_moves: int = 100
    size_jumps: int = SIZE_JUMPS
    hold_size: int | None = None
    ridge_moves: int = 0
    ridge_surrogate: RidgeSurrogate | None = None
    surrogate_steps: int = 0
    surrogate_ridge_steps: int = 1


def size_settings(
    size_moves, size_jumps, hold_size, ridge_moves, ridge_surrogate=None, surrogate_steps=0,
    surrogate_ridge_steps=1,
) -> SizeSettings:  # fmt: skip
    """:class:`SizeSettings` from a user's arguments, each checked (``ValueError`` naming it)."""
    if ridge_surrogate is not None:
        if not isinstance(ridge_surrogate, RidgeSurrogate):
            raise ValueError(
                f"`ridge_surrogate` must be a dpjax.infer.RidgeSurrogate(features, statistic) or None; "
                f"got {type(ridge_surrogate).__name__}."
            )
        if not ridge_moves:
            raise ValueError("`ridge_surrogate` steers the ridge moves: set `ridge_moves` > 0 as well.")
    if positive_int(surrogate_steps, "surrogate_steps", minimum=0) and ridge_surrogate is None:
        raise ValueError("`surrogate_steps` walk on the target with the `ridge_surrogate`: give one as well.")
    if positive_int(surrogate_ridge_steps, "surrogate_ridge_steps") > 1 and not surrogate_steps:
        raise ValueError(
            "`surrogate_ridge_steps` are steps of a surrogate transition: set `surrogate_steps` > 0 as well."
        )
    return SizeSettings(
        positive_int(size_moves, "size_moves"),
        positive_int(size_jumps, "size_jumps", minimum=0),
        None if hold_size is None else positive_int(hold_size, "hold_size", minimum=0),
        positive_int(ridge_moves, "ridge_moves", minimum=0),
        ridge_surrogate,
        surrogate_steps,
        surrogate_ridge_steps,
    )


#: the extra fields of an unknown-n chain, collected by default (the jump fields only with size jumps)
FIELDS = ("birth_accept_rate", "death_accept_rate", "capacity_blocked", "near_capacity")
JUMP_FIELDS = ("jump_accept_rate", "jump_scale")


class CapacityWarning(UserWarning):
    """The unknown-n chain reached the capacity of its records plate while n's prior allows more."""


def warn_blocked(blocked, capacity):
    if np.any(np.asarray(blocked) > 0):
        warnings.warn(
            f"The chain proposed n beyond the records plate's capacity {capacity}, which n's prior "
            f"allows: the draws are from the posterior truncated at n ≤ {capacity}, not the posterior. "
            f"Rebuild the model with a larger capacity (e.g. {2 * capacity}) or a prior of n bounded by "
            "the capacity; `capacity_blocked` counts the refused births.",
            CapacityWarning,
            stacklevel=2,
        )


def warn_when_blocked(blocked, capacity):
    """Never truncate silently: a host warning (from inside the compiled chain) when a birth was
    refused at the capacity. Called on all chains at once, the callback runs only then; under a
    user's ``vmap`` ``cond`` becomes ``select``, and the host check above decides (``run_chain``
    checks once, at the end: ``check_end``)."""
    jax.lax.cond(
        blocked > 0,
        lambda b: jax.debug.callback(partial(warn_blocked, capacity=capacity), b),
        lambda b: None,
        blocked,
    )


def check_unit_sizes(spec: ModelSpec, settings: SizeSettings, noncentred_moves, record_update: str):
    """What one n per unit does not support yet, refused on the host before any draws: the joint (θ, n)
    moves (``noncentred_moves`` other than 'auto' or 0), ridge moves and SOMA."""
    if not spec.size_units:
        return
    unsupported = {
        "noncentred_moves": noncentred_moves not in ("auto", 0),
        "ridge_moves": bool(settings.ridge_moves),
        "record_update='soma'": record_update == "soma",
    }
    named = [k for k, v in unsupported.items() if v]
    if named:
        raise ValueError(
            f"With one n per unit (a records_plate sized by {spec.size!r} of shape ({spec.size_units},)) "
            "ReversibleJumpKernel moves each unit's n by size jumps and births/deaths; "
            f"{', '.join(named)} is not supported there yet: leave it at its default."
        )


def check_ridge(tr, spec: ModelSpec, ridge_moves: int):
    """The ridge moves' rules, on the host before any draws: continuous records, and as many release
    statistics (other than n's) as unconstrained θ entries (they solve for θ at each proposed n)."""
    if not ridge_moves:
        return
    discrete = [k for k in spec.latent_records if tr[k]["fn"].support.is_discrete]
    if discrete:
        raise ValueError(
            f"`ridge_moves` solve for θ at each proposed n, so the release statistics must vary smoothly "
            f"with θ; the record sites {discrete} are discrete. Use `noncentred_moves` alone."
        )
    dim_theta = sum(np.size(biject_to(spec.supports[k]).inv(tr[k]["value"])) for k in spec.theta)
    kept = [n for i, (n, _) in enumerate(spec.privatized) if i != spec.size_release]
    dim_s = sum(np.size(tr[n]["value"]) for n in kept)
    if dim_s != dim_theta:
        raise ValueError(
            f"`ridge_moves` keep the release statistics {kept} ({dim_s} numbers) fixed while θ "
            f"({dim_theta} unconstrained numbers) follows n, so the two must have the same size."
        )


class SizeInfo(NamedTuple):
    """- **jump_accept_rate** – mean acceptance of the size jumps (NaN without them).
    - **birth_accept_rate**, **death_accept_rate** – mean acceptance of the births and deaths.
    - **blocked** – births refused at the records plate's capacity in this iteration.
    - **nc_accept_rate** – mean acceptance of the joint (θ, n) moves (carried over without them)."""

    jump_accept_rate: jax.Array
    birth_accept_rate: jax.Array
    death_accept_rate: jax.Array
    blocked: jax.Array
    nc_accept_rate: jax.Array


class SizeResult(NamedTuple):
    """The chain after the size step: θ, n, the records buffer (its first n slots are the database), the
    residuals s − T and log η(s | T) of that database, the joint moves' adaptation state ``nc``, the
    jumps' scale, the key for the rest of the iteration, and the step's :class:`SizeInfo`."""

    theta: dict
    size: jax.Array
    records: dict
    residuals: tuple
    log_density: jax.Array
    nc: object
    jump_scale: jax.Array
    rng_key: jax.Array
    info: SizeInfo


def active_slots(spec: ModelSpec, n):
    """Which slots of the records plate hold the database at size n (one size per unit: unit g's first
    n[g] slots of its ``capacity``, unit-major)."""
    slots = jnp.arange(spec.size_bounds[1])
    return slots < n if not spec.size_units else (slots[None, :] < n[:, None]).reshape(-1)


def near_capacity(spec: ModelSpec, size: dict):
    """n within 1 % of the capacity (False with a known n)."""
    if not spec.size_sites:
        return jnp.array(False)
    capacity = spec.size_bounds[1]
    return jnp.any(jnp.asarray(size[spec.size]) >= capacity - capacity // 100)  # any unit's


def _noise_sd(mechanism, like):
    """The noise sd of a size release (a Laplace's √2 b; a Gaussian's σ is overstated by √2), shaped
    like ``like`` (one size per unit: each unit's)."""
    scale = jnp.asarray(mechanism.scale, like.dtype)
    scale = scale if scale.shape == like.shape else jnp.broadcast_to(jnp.max(scale), like.shape)
    return jnp.sqrt(2.0) * scale


def initial_jump_scale(spec: ModelSpec, tr, size: dict):
    """σ of the size jumps at the start: the noise sd of a noisy n (n's posterior spread is at most
    about that), else √n; at least 1, at most a quarter of the capacity. 0 with a known n."""
    if not spec.size_sites:
        return jnp.array(0.0)
    spread = jnp.sqrt(jnp.asarray(size[spec.size], jnp.result_type(float)))
    if spec.size_release is not None:
        spread = _noise_sd(tr[spec.privatized[spec.size_release][0]]["infer"][INFER_KEY].mechanism, spread)
    return jnp.clip(spread, 1.0, max(1.0, spec.size_bounds[1] / 4))


def held_until(spec: ModelSpec, held_for: int, releases, infos, n):
    """The first iteration whose size moves run: ``held_for``, or 0 where the size release does not
    pin n, i.e. its noisy n rounded into n's support (the chain's start) lies within two noise sd of 0.
    Holding n there keeps the chain on a database far smaller or larger than the release's other
    statistics say, where the sweep and θ cannot fit them (a float32 θ-step then leaves the support:
    Table 1 at ε_n = 0.001, a release with n_dp < 0, n held at 1). With one size per unit, held only
    where every unit's release pins its n."""
    if not held_for or spec.size_release is None:
        return jnp.asarray(held_for)
    lower, capacity = spec.size_bounds
    start = jnp.clip(jnp.round(releases[spec.size_release]), lower, capacity).astype(jnp.result_type(float))
    start = jnp.broadcast_to(start, jnp.shape(n))
    pinned = jnp.all(2.0 * _noise_sd(infos[spec.size_release].mechanism, start) < start)
    return jnp.where(pinned, held_for, 0)


def _log_prior_n(model, spec, given, records, model_args, model_kwargs):
    """log p(n) at the current θ (its hyperparameters may be θ sites), −inf outside its support
    (numpyro's log_prob does not check it)."""
    model = handlers.condition(model, data={**given, **records})
    size_fn = handlers.trace(model).get_trace(*model_args, **model_kwargs)[spec.size]["fn"]
    n = given[spec.size]

    def log_prior(m):
        m = jnp.asarray(m, n.dtype)
        return jnp.where(size_fn.support(m), size_fn.log_prob(m), -jnp.inf)

    return log_prior


def build_kernel(model, spec: ModelSpec, settings: SizeSettings, *, num_moves: int, num_warmup: int):
    """The size step for these static settings (see the module docstring): ``settings.size_moves`` births
    or deaths, ``settings.size_jumps`` size jumps, ``num_moves`` joint (θ, n) moves with
    ``settings.ridge_moves`` ridge moves among them, none of them in the first ``settings.hold_size``
    iterations (default half the warmup where the size release pins n, :func:`held_until`); adaptation
    ends at ``num_warmup``. Raises ``ValueError`` for settings that cannot apply, so before any draws
    where the kernel is built at ``init``."""
    size_moves, num_jumps, hold_size, ridge_moves, surrogate, surrogate_steps, ridge_steps = settings
    if hold_size is not None and hold_size > num_warmup:
        raise ValueError(
            f"`hold_size` ({hold_size}) exceeds num_warmup ({num_warmup}): draws would be taken with n held. "
            "Lower it or lengthen the warmup."
        )
    if ridge_moves and not num_moves:
        raise ValueError(
            "`ridge_moves` run within the joint (θ, n) moves: `noncentred_moves` must be 'auto' or an int "
            "> 0, not 0."
        )
    held_for = num_warmup // 2 if hold_size is None else hold_size
    default_hold = hold_size is None  # half the warmup where the size release pins n (held_until)
    if spec.size_units:  # no joint (θ, n) moves there (check_unit_sizes): num_moves is 0
        return _build_unit_kernel(
            model, spec, settings, held_for=held_for, default_hold=default_hold, num_warmup=num_warmup
        )
    site, (lower, capacity) = spec.size, spec.size_bounds
    kept = [i for i in range(len(spec.privatized)) if i != spec.size_release]

    def kernel(
        rng_key, key_moves, iteration, theta, n, records, proposals, t_now, t_fresh, residuals, log_eta,
        densities, releases, public, infos, nc, nc_accept_rate, jump_scale, model_args, model_kwargs,
    ):  # fmt: skip
        given = {**theta, site: n}
        moves_from = held_until(spec, held_for, releases, infos, n) if default_hold else held_for
        enabled = iteration >= moves_from  # n held at its start while the sweep and θ fit the release
        log_prior = _log_prior_n(model, spec, given, records, model_args, model_kwargs)
        key_size_jumps = None
        if num_jumps:
            rng_key, key_size_jumps = random.split(rng_key)
        # 1. the size jumps, on the buffer whose slots ≥ n hold the sweep's unused proposals
        active = active_slots(spec, n)
        buffer = {k: where_records(active, v, proposals[k]) for k, v in records.items()}
        jump_rate = jnp.array(jnp.nan)
        if num_jumps:
            t_buffer = tuple(where_records(active, a, b) for a, b in zip(t_now, t_fresh))
            jump = size_jumps(
                key_size_jumps, n, t_buffer, residuals, densities, log_prior,
                scale=jump_scale, num_jumps=num_jumps, lower=lower, enabled=enabled,
            )  # fmt: skip
            adapting = enabled & (iteration < num_warmup)
            gain = (iteration - moves_from + 1.0) ** -0.6
            step = jnp.where(adapting, gain * (jnp.nan_to_num(jump.accept_rate) - JUMP_ACCEPT), 0.0)
            jump_scale = jnp.clip(jump_scale * jnp.exp(step), 0.5, float(capacity))
            n, residuals, log_eta, jump_rate = jump.size, jump.residuals, jump.log_density, jump.accept_rate
            t_now = tuple(masked(t, active_slots(spec, n)) for t in t_buffer)
        records = buffer
        # 2. the joint (θ, n) moves: the proposals in the empty slots (≥ n) were drawn at this θ and n
        # and never used, so they are the fresh records whose noise fills those slots (an exact Gibbs
        # step at no extra cost); made before the births, which need the records' statistics again
        blocked = jnp.zeros((), jnp.result_type(int))
        if num_moves:
            theta, n, records, nc, nc_accept_rate, blocked = joint_size_moves(
                key_moves, nc, theta, n, records, records, log_eta,
                model=model, supports=spec.supports, size_site=site, capacity=capacity,
                support=spec.supports[site],
                log_prior_n=_log_prior_n(model, spec, {**theta, site: n}, records, model_args, model_kwargs),
                num_moves=num_moves, enabled=enabled, adapting=iteration < num_warmup,
                model_args=model_args, model_kwargs=model_kwargs, ridge_moves=ridge_moves,
                ridge_statistic=_ridge_statistic(infos, public), ridge_surrogate=surrogate,
                surrogate_steps=surrogate_steps, surrogate_ridge_steps=ridge_steps,
                release_log_eta=_release_log_eta(densities, releases, infos, public, records)
                if surrogate_steps else None,
            )  # fmt: skip
            t_now = per_record(infos, {**public, **records}, active_slots(spec, n))
            residuals = tuple(s - jnp.sum(t, 0) for s, t in zip(releases, t_now))
        # 3. births and deaths, with K fresh records from one model call whose plate holds K slots
        rng_key, key_births, key_bd = random.split(rng_key, 3)
        given = {**theta, site: n}
        try:
            with allow_overflow(capacity=size_moves):
                births = draw_records(model, spec.latent_records, key_births, given, model_args, model_kwargs)
        except (ValueError, TypeError) as e:  # e.g. an array sized by the capacity meets the births' plate
            raise ValueError(
                f"ReversibleJumpKernel draws its {size_moves} births from one model call whose records "
                f"plate holds {size_moves} slots, and the model failed there ({type(e).__name__}: "
                f"{e}). Build the records from the plate alone: no arrays sized by the capacity."
            ) from e
        bd = birth_death(
            key_bd, n, records, t_now, residuals, births, per_record(infos, births), densities,
            _log_prior_n(model, spec, given, records, model_args, model_kwargs), lower=lower, enabled=enabled,
        )  # fmt: skip
        info = SizeInfo(
            jump_rate, bd.birth_accept_rate, bd.death_accept_rate, blocked + bd.blocked, nc_accept_rate
        )
        return SizeResult(
            theta, bd.size, bd.records, bd.residuals, bd.log_density, nc, jump_scale, rng_key, info
        )

    def _release_log_eta(densities, releases, infos, public, records):
        """``(S, n) -> log η``: the releases' log density at the statistics S other than n's (flattened,
        as ``_ridge_statistic``'s) and, for n's release, the sum of its statistic over the first n
        records as they stand (exact where that statistic is a count)."""
        shapes = [releases[i].shape for i in kept]
        cuts = np.cumsum([int(np.prod(shape)) for shape in shapes])[:-1]
        prefix = None
        if spec.size_release is not None:
            t = per_record(infos, {**public, **records})[spec.size_release]
            prefix = jnp.concatenate([jnp.zeros_like(t[:1]), jnp.cumsum(t, 0)])

        def log_eta(S, n):
            parts = jnp.split(S, cuts)
            residuals = [releases[i] - p.reshape(shape) for i, p, shape in zip(kept, parts, shapes)]
            lp = sum(jnp.sum(densities[i](r)) for i, r in zip(kept, residuals))
            if prefix is not None:
                i = spec.size_release
                lp = lp + jnp.sum(densities[i](releases[i] - prefix[n]))
            return lp

        return log_eta

    def _ridge_statistic(infos, public):
        """``(records, n) -> S``: the release statistics other than n's, of the first n records."""

        def statistic(records, n):
            t = per_record(infos, {**public, **records}, active_slots(spec, n))
            return jnp.concatenate([jnp.ravel(jnp.sum(t[i], 0)) for i in kept])

        return statistic

    return kernel


def _log_prior_table(model, spec: ModelSpec, given, records, model_args, model_kwargs):
    """``(G, capacity + 2)``: log p(n_g = m | θ) for every unit g and every m in 0 … capacity + 1 (−inf
    outside the support; capacity + 1 tells a birth refused at the capacity that the prior allows), from
    the size site's elementwise log density (the units' sizes are independent given θ: the site's batch
    shape is (G,)). O(G · capacity), as one record pass."""
    model = handlers.condition(model, data={**given, **records})
    size_fn = handlers.trace(model).get_trace(*model_args, **model_kwargs)[spec.size]["fn"]
    n = given[spec.size]
    values = spec.size_bounds[1] + 2
    m = jnp.broadcast_to(jnp.arange(values, dtype=n.dtype)[:, None], (values,) + n.shape)
    return jnp.where(size_fn.support(m), size_fn.log_prob(m), -jnp.inf).T


def _build_unit_kernel(
    model, spec: ModelSpec, settings: SizeSettings, *, held_for: int, default_hold: bool, num_warmup: int
):
    """The size step with one n per unit (n of shape (G,), unit g's records in its own ``capacity``
    slots, every release per unit): each unit's size jumps and births/deaths, all units at once
    (``vmap`` over units). Exact: given θ the units' sizes, records and releases are independent, so
    the moves of one unit leave every other unit's terms unchanged; each unit's moves are those of
    :func:`~dpjax.infer.birth_death.size_jumps` and :func:`~dpjax.infer.birth_death.birth_death` on
    its own slots, residuals and log p(n_g | θ)."""
    size_moves, num_jumps = settings.size_moves, settings.size_jumps
    site, (lower, capacity), num_units = spec.size, spec.size_bounds, spec.size_units
    rows = lambda x: x.reshape((num_units, -1) + x.shape[1:])  # slots → (unit, slot in unit)
    flat = lambda x: x.reshape((-1,) + x.shape[2:])
    units = jnp.arange(num_units)

    def for_unit(densities, unit, prior):
        """A unit's log η of its residual rows and its log p(n_g) (a row of the table)."""
        return [partial(d, unit=unit) for d in densities], lambda m: prior[jnp.clip(m, 0, capacity + 1)]

    def kernel(
        rng_key, key_moves, iteration, theta, n, records, proposals, t_now, t_fresh, residuals, log_eta,
        densities, releases, public, infos, nc, nc_accept_rate, jump_scale, model_args, model_kwargs,
    ):  # fmt: skip
        moves_from = held_until(spec, held_for, releases, infos, n) if default_hold else held_for
        enabled = iteration >= moves_from  # n held at its start while the sweep and θ fit the release
        table = _log_prior_table(model, spec, {**theta, site: n}, records, model_args, model_kwargs)
        active = active_slots(spec, n)
        records = {k: where_records(active, v, proposals[k]) for k, v in records.items()}
        jump_rate = jnp.array(jnp.nan)
        if num_jumps:  # 1. the size jumps, each unit's slots ≥ n[g] holding the sweep's unused proposals
            rng_key, key_jumps = random.split(rng_key)
            t_buffer = tuple(where_records(active, a, b) for a, b in zip(t_now, t_fresh))

            def unit_jumps(key, n, t_buffer, residuals, scale, unit, prior):
                log_noise, log_prior = for_unit(densities, unit, prior)
                return size_jumps(
                    key, n, t_buffer, residuals, log_noise, log_prior,
                    scale=scale, num_jumps=num_jumps, lower=lower, enabled=enabled,
                )  # fmt: skip

            keys = random.split(key_jumps, num_units)
            jump = jax.vmap(unit_jumps)(
                keys, n, tuple(map(rows, t_buffer)), residuals, jump_scale, units, table
            )
            adapting = enabled & (iteration < num_warmup)
            gain = (iteration - moves_from + 1.0) ** -0.6
            step = jnp.where(adapting, gain * (jnp.nan_to_num(jump.accept_rate) - JUMP_ACCEPT), 0.0)
            jump_scale = jnp.clip(jump_scale * jnp.exp(step), 0.5, float(capacity))  # each unit's own
            n, residuals, jump_rate = jump.size, jump.residuals, jnp.mean(jump.accept_rate)
            t_now = tuple(masked(t, active_slots(spec, n)) for t in t_buffer)
        # 2. births and deaths, K fresh records per unit from one model call whose plate holds K per unit
        rng_key, key_births, key_bd = random.split(rng_key, 3)
        given = {**theta, site: n}
        with allow_overflow(capacity=size_moves):
            births = draw_records(model, spec.latent_records, key_births, given, model_args, model_kwargs)
        t_births = per_record(infos, births)

        def unit_births(key, n, records, t_records, residuals, births, t_births, unit, prior):
            log_noise, log_prior = for_unit(densities, unit, prior)
            return birth_death(
                key, n, records, t_records, residuals, births, t_births, log_noise, log_prior,
                lower=lower, enabled=enabled,
            )  # fmt: skip

        bd = jax.vmap(unit_births)(
            random.split(key_bd, num_units), n, jax.tree.map(rows, records), tuple(map(rows, t_now)),
            residuals, jax.tree.map(rows, births), tuple(map(rows, t_births)), units, table,
        )  # fmt: skip
        info = SizeInfo(
            jump_rate,
            jnp.nanmean(bd.birth_accept_rate),
            jnp.nanmean(bd.death_accept_rate),
            jnp.sum(bd.blocked),
            nc_accept_rate,
        )
        records = jax.tree.map(flat, bd.records)
        log_density = jnp.sum(bd.log_density)
        return SizeResult(theta, bd.size, records, bd.residuals, log_density, nc, jump_scale, rng_key, info)

    return kernel
