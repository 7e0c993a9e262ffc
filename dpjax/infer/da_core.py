"""The data-augmentation iteration as pure functions (BlackJAX's shape): ``init`` and ``build_kernel``
over static :class:`Core` settings, composing the stages: the θ block (:mod:`~dpjax.infer.theta_block`),
the record step (:mod:`~dpjax.infer.record_step`), then either the size step of an unknown n
(:mod:`~dpjax.infer.size_step`) or the non-centred θ-moves (:mod:`~dpjax.infer.noncentred`).
:class:`~dpjax.infer.DataAugmentationKernel` and :class:`~dpjax.infer.ReversibleJumpKernel` are NumPyro
faces over it; MCEM's E-step calls the same functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import random
from numpyro import handlers

from ..mechanisms.base import concrete
from ..primitives import INFER_KEY, allow_overflow, integer_statistics
from . import auto_moves, noncentred, record_step, size_step, theta_block
from .chains import draw_moments, flat_theta, warmup_moments
from .record_step import draw_records, masked, per_record, sweep_density, where_records
from .record_sweep import rows_differ
from .rules import record_units, records_exchangeable
from .spec import ModelSpec, privatized_infos, prototype

__all__ = [
    "Core",
    "DAInfo",
    "DAState",
    "build_kernel",
    "check_start",
    "init",
    "log_eta",
    "observed",
    "refresh",
    "statistics",
]


class DAInfo(NamedTuple):
    """What the last iteration of :class:`DataAugmentationKernel` did (its stages' Info, as scalars).

    - **record_accept_rate** – mean record acceptance probability of the last sweep (the seed's: a
      proposal equal to its record counts as accepted).
    - **record_move_rate** – the same over the proposals that differ from their record (1 when none
      does). Equal to ``record_accept_rate`` for continuous records; for discrete ones it shows records
      that never move, which the proposals that repeat them hide from ``record_accept_rate``
      (:class:`StickyRecordsWarning` reads it). Under ``record_update="soma"``: ``SomaResult.move_rate``.
    - **accept_prob**, **diverging** – the inner θ-step's (1 and False for an exact draw).
    - **nc_accept_rate** – mean acceptance probability of the non-centred θ-moves (0 when they are off).
    - **jump_accept_rate** – with an unknown n, the mean acceptance probability of the size jumps (moves
      of many records at once; NaN with a known n).
    - **birth_accept_rate**, **death_accept_rate** – with an unknown n
      (:class:`~dpjax.infer.ReversibleJumpKernel`), the mean acceptance probabilities of the births and
      deaths (NaN with a known n).
    - **near_capacity** – with an unknown n, whether n lies within 1 % of the records plate's capacity
      (its mean over the draws is the posterior mass there; False with a known n). Mass there means the
      capacity, or a prior of n that ends at it, shapes the posterior.
    """

    record_accept_rate: jax.Array
    record_move_rate: jax.Array
    accept_prob: jax.Array
    diverging: jax.Array
    nc_accept_rate: jax.Array
    jump_accept_rate: jax.Array
    birth_accept_rate: jax.Array
    death_accept_rate: jax.Array
    near_capacity: jax.Array


class DAState(NamedTuple):
    """State of :class:`DataAugmentationKernel`: what the next iteration needs, and ``info``, what the
    last one did (:class:`DAInfo`, whose fields read as the state's own too: ``state.record_accept_rate``
    is ``state.info.record_accept_rate``, so ``extra_fields=("record_accept_rate",)`` collects it).

    - **z** – constrained θ (and the latent records when ``store_records=True``); collected.
    - **records** – current latent records (records along axis 0); not collected by default.
    - **statistics** – ``{site: T}``, the confidential statistic of the imputed database.
    - **theta_state** – the inner HMC/NUTS state, or ``()`` with an exact conditional.
    - **nc** – the adaptation state of the non-centred θ-moves (or the joint (θ, n) moves), ``()`` when
      they are off; **nc_step_size** (read-only) – their random-walk step (0 when they are off).
    - **jump_scale** – with an unknown n, the scale σ of the size jumps, adapted in the warmup (0 with a
      known n); **capacity_blocked** – how many births the capacity has refused so far.
    - **iteration** – iterations done since ``init`` (an unknown n is held at its start for the first
      ``hold_size`` of them: :class:`~dpjax.infer.ReversibleJumpKernel`).
    - **valid** – False once the chain has left the model's support (a release impossible under
      the mechanism, a non-finite log η, θ outside its support): the chain is then frozen and its θ
      draws are NaN (an integer n keeps its value: :func:`~dpjax.infer.run_chain` and the studies
      return it as NaN too), so a study under ``jit``/``vmap`` can never take them for posterior draws.
    - **rng_key** – PRNG key for the next iteration; **info** – :class:`DAInfo`.
    - **warmup_moments** – (count, mean, M2) of the flat θ over the second half of warmup, for the
      chains' R̂ at its end (:func:`dpjax.infer.chains.warmup_moments`).
    - **draw_moments** – running sums of the flat θ over the kept draws, for the chains' R̂ and ESS after
      warmup (:func:`dpjax.infer.chains.draw_moments`).
    - **record_changes** – the same of the fraction of (active) record slots changed after the sweep in
      an iteration: carried with θ by the non-centred moves, or by an unknown n's moves (the
      sticky-records check reads its mean).
    - **moves_trial** – with ``noncentred_moves="auto"``, the θ draws of the trial without and with the
      moves at the end of warmup, and the choice (:class:`dpjax.infer.auto_moves.MovesTrial`); ``()``
      otherwise.
    """

    z: dict
    records: dict
    statistics: dict
    theta_state: Any
    nc: Any
    jump_scale: jax.Array
    capacity_blocked: jax.Array
    iteration: jax.Array
    valid: jax.Array
    rng_key: jax.Array
    info: DAInfo
    warmup_moments: tuple = ()
    draw_moments: tuple = ()
    record_changes: tuple = ()
    moves_trial: Any = ()

    @property
    def nc_step_size(self):
        if isinstance(self.nc, tuple) and not self.nc:
            return jnp.zeros_like(self.jump_scale)
        return jnp.exp(self.nc.log_step)


def _info_field(name):
    return property(lambda state: getattr(state.info, name), doc=f"``info.{name}`` (:class:`DAInfo`).")


for _name in DAInfo._fields:  # the Info fields read as the state's own (extra_fields, diagnostics)
    setattr(DAState, _name, _info_field(_name))


class Core(NamedTuple):
    """The static settings of one data-augmentation chain (built once, at a kernel's ``init``).

    - **model**, **spec** – the model and its :class:`~dpjax.infer.spec.ModelSpec`;
    - **inner**, **theta_update** – the θ block's form (:func:`~dpjax.infer.theta_block.build_kernel`);
    - **record_update** – ``"sweep"`` or ``"soma"``; **record_sweeps** – record steps per iteration, each
      with fresh proposals at the iteration's θ; **store_records** – the records go into ``z``;
    - **num_moves** – non-centred θ-moves (or joint (θ, n) moves) per iteration, and **init_moves**, the
      initial state of their random walk given θ; **auto_moves** – whether the warmup tries them
      against none (:mod:`~dpjax.infer.auto_moves`);
    - **size_kernel** – the size step of an unknown n (None with a known n);
    - **exchangeable** – whether records drawn for one slot are used in another (births, SOMA), so that
      ``init`` checks, under ``jit`` too, that the records' law does not depend on the slot."""

    model: Callable
    spec: ModelSpec
    inner: Any = None
    theta_update: Any = None
    record_update: str = "sweep"
    record_sweeps: int = 1
    store_records: bool = False
    num_moves: int = 0
    init_moves: Callable | None = None
    auto_moves: bool = False
    size_kernel: Callable | None = None
    exchangeable: bool = False


def observed(core: Core, given, records, model_args, model_kwargs):
    """Public record values, releases, the active record slots (None: all) of a records plate and
    each privatized site's PrivatizedInfo (statistic, mechanism) as this trace builds them: a trace
    with every latent site conditioned (no randomness; XLA folds away what is unused)."""
    model = handlers.condition(core.model, data={**given, **records})
    tr = handlers.trace(model).get_trace(*model_args, **model_kwargs)
    public = {k: tr[k]["value"] for k in core.spec.public_records}
    active = tr[core.spec.privatized[0][0]]["infer"][INFER_KEY].active
    releases = tuple(jnp.asarray(tr[n]["value"]) for n, _ in core.spec.privatized)
    return public, releases, active, privatized_infos(tr, core.spec)


def statistics(spec: ModelSpec, infos, public, records, active):
    """``{site: T}`` of the database ``public`` ∪ ``records``."""
    t_now = per_record(infos, {**public, **records}, active)
    return {n: info.total(t) for (n, _), info, t in zip(spec.privatized, infos, t_now)}


def log_eta(spec: ModelSpec, infos, releases, stats):
    """log η(s | T) summed over the privatized sites."""
    return sum(
        jnp.sum(info.mechanism.log_density(s, info.released(stats[n])))
        for (n, _), info, s in zip(spec.privatized, infos, releases)
    )


def _z(core, theta, size, records):
    return {**theta, **size, **records} if core.store_records else {**theta, **size}


def _size(spec, z):
    return {k: z[k] for k in spec.size_sites}


def init(core: Core, rng_key, init_params, *, num_warmup, model_args, model_kwargs) -> DAState:
    """One chain's start: the records drawn from the model at the given θ (not at θ drawn from its
    prior), θ, n and the records taken from ``init_params`` where given (constrained values), n else at
    the noisy n rounded into its support, and the θ block started there."""
    key_trace, key_inner, key_next = random.split(rng_key, 3)
    spec = core.spec
    init_params = dict(init_params or {})
    given = {k: v for k, v in init_params.items() if k in spec.theta}
    model = handlers.condition(core.model, data=given) if given else core.model
    with allow_overflow():
        tr = prototype(model, key_trace, model_args, model_kwargs)
    records = {k: jnp.asarray(tr[k]["value"]) for k in spec.latent_records}
    theta = {k: jnp.asarray(tr[k]["value"]) for k in spec.theta}
    size = {k: jnp.asarray(tr[k]["value"]) for k in spec.size_sites}
    # numpyro.infer.Gibbs gives every site of the block
    records.update({k: jnp.asarray(v, records[k].dtype) for k, v in init_params.items() if k in records})
    theta.update({k: jnp.asarray(init_params[k]) for k in theta if k in init_params})
    for k in spec.size_sites:
        lower, capacity = spec.size_bounds
        start = init_params.get(k)
        if start is None and spec.size_release is not None:
            start = jnp.round(tr[spec.privatized[spec.size_release][0]]["value"])
        start = size[k] if start is None else start
        size[k] = jnp.clip(jnp.asarray(start), lower, capacity).astype(size[k].dtype)
    theta, theta_state = theta_block.init(
        key_inner, theta, records, size, inner=core.inner, supports=spec.supports,
        given=any(k in init_params for k in spec.theta), num_warmup=num_warmup, model_args=model_args,
        model_kwargs=model_kwargs,
    )  # fmt: skip
    public, releases, active, infos = observed(core, {**theta, **size}, records, model_args, model_kwargs)
    t_records = per_record(infos, {**public, **records}, active)
    stats = {n: info.total(t) for (n, _), info, t in zip(spec.privatized, infos, t_records)}
    nc = core.init_moves(theta) if core.num_moves else ()
    valid = jnp.isfinite(log_eta(spec, infos, releases, stats)) & theta_block.in_support(theta, spec.supports)
    for info, t in zip(infos, t_records):  # checked on the host when concrete
        valid = valid & integer_statistics(info.mechanism, t)
    if core.exchangeable:  # checked in the kernel's `init` when concrete; here too when traced (jit)
        capacity = spec.size_bounds[1] if spec.size_sites else None
        units = record_units(infos)  # a release per unit: exchangeable within units (SOMA)
        args = (core.model, spec, {**theta, **size}, records, capacity, model_args, model_kwargs, units)
        valid = valid & records_exchangeable(*args)
    sizes = sum(int(np.size(v)) for v in theta.values())
    flat = jnp.zeros(sizes, jnp.result_type(float))
    return DAState(
        z=_z(core, theta, size, records),
        records=records,
        statistics=stats,
        theta_state=theta_state,
        nc=nc,
        jump_scale=size_step.initial_jump_scale(spec, tr, size),
        capacity_blocked=jnp.array(0),
        iteration=jnp.array(0, jnp.int32),
        valid=valid,
        rng_key=key_next,
        info=DAInfo(
            record_accept_rate=jnp.array(1.0),
            record_move_rate=jnp.array(1.0),
            accept_prob=jnp.array(1.0),
            diverging=jnp.array(False),
            nc_accept_rate=jnp.array(0.0),
            jump_accept_rate=jnp.array(jnp.nan),
            birth_accept_rate=jnp.array(jnp.nan),
            death_accept_rate=jnp.array(jnp.nan),
            near_capacity=size_step.near_capacity(spec, size),
        ),
        warmup_moments=(jnp.array(0, jnp.int32), flat, flat),
        draw_moments=(jnp.array(0, jnp.int32), flat, flat, flat, flat, flat),
        record_changes=(jnp.array(0, jnp.int32), jnp.zeros(1, flat.dtype), jnp.zeros(1, flat.dtype)),
        moves_trial=auto_moves.init(num_warmup, sizes, flat.dtype) if core.auto_moves else (),
    )


def check_start(core: Core, state: DAState, model_args, model_kwargs):
    """Host-side checks of the chains' first state, before any draws: a ``ValueError`` for a non-finite
    log density, a :class:`~dpjax.infer.theta_block.RoundOffWarning` where float32 would stall the inner
    NUTS/HMC. Skipped where the state is traced (under ``jit``/``vmap``: ``valid`` reports instead)."""
    if concrete(state.valid) and not np.all(state.valid):
        raise ValueError(
            "The initial state has a non-finite log density: log η(s | T) of the release is -inf or "
            "NaN at the initial imputed database, or θ is outside its support. Check the release "
            "against the mechanism (an integer mechanism needs an integer release) and `init_params`."
        )
    if concrete(state.iteration):  # eager init only: under jit/vmap (a study's cells) θ is traced
        first = jax.tree.map(lambda v: v[0], state) if state.iteration.ndim else state
        size = {k: first.z[k] for k in core.spec.size_sites}
        theta = first.theta_state
        theta_block.check_round_off(core.inner, theta, first.records, size, model_args, model_kwargs)


def refresh(core: Core, state: DAState, model_args, model_kwargs) -> DAState:
    """Recompute the statistics of the imputed database (public records come from the model's
    arguments), the chain's validity at them, and the inner sampler's cached potential and gradient
    (with the records conditioned): NumPyro 0.22's ``refresh`` for a block of ``numpyro.infer.Gibbs``.
    Deterministic: θ and the records are kept."""
    spec = core.spec
    size = _size(spec, state.z)
    given = {**{k: state.z[k] for k in spec.theta}, **size}
    public, releases, active, infos = observed(core, given, state.records, model_args, model_kwargs)
    stats = statistics(spec, infos, public, state.records, active)
    stats = {n: jnp.asarray(t, jnp.result_type(state.statistics[n])) for n, t in stats.items()}
    theta_state = theta_block.refresh(
        core.inner, state.theta_state, state.records, size, model_args, model_kwargs
    )
    valid = state.valid & jnp.isfinite(log_eta(spec, infos, releases, stats))
    return state._replace(statistics=stats, theta_state=theta_state, valid=valid)


def build_kernel(core: Core):
    """``step(state, model_args, model_kwargs, *, num_warmup, use_moves=None) -> DAState``: one iteration
    (θ block, record step, then the size step or the non-centred moves); the moves adapt in the first
    ``num_warmup`` iterations; ``use_moves`` switches them on or off (a scalar shared by a batch of
    chains: :func:`dpjax.infer.auto_moves.use_moves`)."""
    spec = core.spec
    theta_kernel = theta_block.build_kernel(spec.theta, inner=core.inner, update=core.theta_update)
    sweep = record_step.build_kernel(core.record_update, spec.discrete_records)
    nc_kernel = noncentred.build_kernel(core.model, spec.supports, core.num_moves)

    def moves(
        key, nc, public, active, infos, log_density, learn, model_args, model_kwargs, theta, records, ts
    ):
        """The non-centred θ-moves, then the statistics and the inner sampler's θ brought along."""
        theta, records, nc, info = nc_kernel(
            key, nc, theta, records, log_density, learn, model_args, model_kwargs
        )
        stats = statistics(spec, infos, public, records, active)
        return theta, records, nc, info.accept_rate, stats, theta_block.point_at(theta, ts, spec.supports)

    def trial(state, theta, num_warmup, use_moves):
        if not core.auto_moves:
            return state.moves_trial
        flat = flat_theta(theta, state.warmup_moments[1])
        moved = True if use_moves is None else use_moves
        return auto_moves.update(state.moves_trial, flat, state.iteration, num_warmup, moved)

    def step(state, model_args, model_kwargs, *, num_warmup, use_moves=None):
        key_theta, key_prop, key_sweep, key_nc, key_next = random.split(state.rng_key, 5)
        theta = {k: state.z[k] for k in spec.theta}
        size = _size(spec, state.z)
        public, releases, active, infos = observed(
            core, {**theta, **size}, state.records, model_args, model_kwargs
        )
        theta, theta_state, theta_info = theta_kernel(
            key_theta, state.theta_state, theta, state.records, size, public, model_args, model_kwargs
        )
        given = {**theta, **size}
        groups = tuple(info.groups for info in infos)

        def record_pass(key_prop, key_sweep, records):
            """One record step with fresh proposals x* ~ f(·|θ): what the size step reads after it too."""
            latent = spec.latent_records
            proposals = draw_records(core.model, latent, key_prop, given, model_args, model_kwargs)
            t_old = per_record(infos, {**public, **records}, active)
            t_fresh = per_record(infos, {**public, **proposals})  # every slot (the size jumps read them)
            t_new = t_fresh if active is None else tuple(masked(t, active) for t in t_fresh)
            # what each site's sweep carries: s − T, or for a transformed release T₀ − T from this sweep's
            # start T₀ (its density reads transform(T₀ − r)); recomputed each sweep, so float error never
            # accumulates
            totals = tuple(info.total(t) for info, t in zip(infos, t_old))
            anchors = tuple(s if info.transform is None else T for s, info, T in zip(releases, infos, totals))
            residuals = tuple(a - T for a, T in zip(anchors, totals))
            densities = [sweep_density(info, s, a) for info, s, a in zip(infos, releases, anchors)]
            records, result = sweep(
                key_sweep, records, proposals, t_old, t_new, residuals, densities, active, groups
            )
            return records, (result, proposals, t_old, t_new, t_fresh, anchors)

        records, last = record_pass(key_prop, key_sweep, state.records)
        if core.record_sweeps > 1:  # more passes at the same θ: each is an exact step for p(x | θ, s)

            def another(carry, keys):  # carries the last pass only: memory O(n), not O(k·n)
                records, _, rates = carry
                records, last = record_pass(keys[0], keys[1], records)
                return (records, last, rates + jnp.stack([last[0].accept_rate, last[0].move_rate])), None

            keys = random.split(random.fold_in(key_sweep, 1), (core.record_sweeps - 1, 2))
            rates = jnp.stack([last[0].accept_rate, last[0].move_rate])
            (records, last, rates), _ = jax.lax.scan(another, (records, last, rates), keys)
            rates = rates / core.record_sweeps  # the reported rates: the mean over every pass
            last = (last[0]._replace(accept_rate=rates[0], move_rate=rates[1]),) + last[1:]
        result, proposals, t_old, t_new, t_fresh, anchors = last
        # the last pass's densities again (closures cannot leave the scan); the size step reads them
        densities = [sweep_density(info, s, a) for info, s, a in zip(infos, releases, anchors)]
        log_density, residuals, swept = result.log_density, result.residuals, records
        nc, nc_rate = state.nc, state.nc_accept_rate
        jump_scale, blocked, size_info = state.jump_scale, state.capacity_blocked, state.info
        stats = {n: a - r for (n, _), a, r in zip(spec.privatized, anchors, residuals)}
        if core.size_kernel is not None:  # unknown n: size jumps, joint (θ, n) moves, births and deaths
            if result.accepted is None:  # SOMA put proposals in any slot: the statistics of the records now
                t_now = per_record(infos, {**public, **records}, active)
            else:
                t_now = tuple(where_records(result.accepted, w, o) for o, w in zip(t_old, t_new))
            moved = core.size_kernel(
                key_next, key_nc, state.iteration, theta, size[spec.size], records, proposals, t_now, t_fresh,
                residuals, log_density, densities, releases, public, infos, nc, nc_rate, state.jump_scale,
                model_args, model_kwargs,
            )  # fmt: skip
            theta, records, residuals, log_density = (
                moved.theta,
                moved.records,
                moved.residuals,
                moved.log_density,
            )
            nc, size, key_next = moved.nc, {spec.size: moved.size}, moved.rng_key
            nc_rate = moved.info.nc_accept_rate
            if core.num_moves:
                theta_state = theta_block.point_at(theta, theta_state, spec.supports)
            stats = {n: a - r for (n, _), a, r in zip(spec.privatized, anchors, residuals)}
            jump_scale, blocked, size_info = moved.jump_scale, blocked + moved.info.blocked, moved.info
        elif core.num_moves:
            learn = state.iteration < num_warmup  # the moves adapt in the warmup
            args = (key_nc, state.nc, public, active, infos, log_density, learn, model_args, model_kwargs)
            moved = lambda th, rec, ts: moves(*args, th, rec, ts)
            unmoved = lambda th, rec, ts: (th, rec, nc, jnp.zeros_like(nc_rate), stats, ts)
            if use_moves is None:
                theta, records, nc, nc_rate, stats, theta_state = moved(theta, records, theta_state)
            else:  # a scalar shared by the chains, so a real branch under their vmap
                theta, records, nc, nc_rate, stats, theta_state = jax.lax.cond(
                    use_moves, moved, unmoved, theta, records, theta_state
                )
        # the record slots changed after the sweep: carried with θ by the moves, or an unknown n's moves
        changed = rows_differ(list(swept.values()), list(records.values()))
        slots = changed.shape[0] if active is None else jnp.maximum(jnp.sum(active), 1)
        changed = jnp.sum(changed if active is None else changed & active) / slots
        valid = state.valid & jnp.isfinite(log_density) & theta_block.in_support(theta, spec.supports)
        nan = lambda v: jnp.where(valid, v, jnp.nan) if jnp.issubdtype(v.dtype, jnp.floating) else v
        info = DAInfo(
            record_accept_rate=result.accept_rate,
            record_move_rate=result.move_rate,
            accept_prob=theta_info.accept_prob,
            diverging=theta_info.diverging,
            nc_accept_rate=nc_rate,
            jump_accept_rate=size_info.jump_accept_rate,
            birth_accept_rate=size_info.birth_accept_rate,
            death_accept_rate=size_info.death_accept_rate,
            near_capacity=size_step.near_capacity(spec, size),
        )
        return DAState(
            z=_z(core, jax.tree.map(nan, theta), size, records),
            records=records,
            statistics=stats,
            theta_state=theta_state,
            nc=nc,
            jump_scale=jump_scale,
            capacity_blocked=blocked,
            iteration=state.iteration + 1,
            valid=valid,
            rng_key=key_next,
            info=info,
            warmup_moments=warmup_moments(state.warmup_moments, theta, state.iteration, num_warmup),
            draw_moments=draw_moments(state.draw_moments, theta, state.iteration, num_warmup),
            record_changes=warmup_moments(state.record_changes, {"x": changed}, state.iteration, num_warmup),
            moves_trial=trial(state, theta, num_warmup, use_moves),
        )

    return step
