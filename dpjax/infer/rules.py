"""The model-shape rules of the record-imputing engines, each written once.

The data-augmentation family (``DataAugmentationKernel``, ``ReversibleJumpKernel``, ``mcem``,
``stochastic_em``) updates the records by proposals from their own sites, accepted by the releases'
likelihood η(s | T) alone, and updates θ given the records. That is exact only for models of a
certain shape, checked here before any draws:

- **the releases read the records only** (:func:`check_release_reads_records`): η(s | T(x)) may not
  depend on θ or on the latent n other than through the records, i.e. neither the ``statistic`` nor
  the mechanism reads a θ site or n (the θ-step sees the records, not the release);
- **nothing else reads the records** (:func:`check_records_feed_only_releases`): no other site's
  density depends on the latent records (a ``factor`` of them would be ignored by the record step);
- **exchangeable records** where a record is drawn for one slot and used in another (the
  reversible-jump births, SOMA's offers; :func:`records_exchangeable`): the records' joint law may
  not vary along the records plate (a plate index, a covariate array, public records); with a release
  per unit SOMA swaps within a unit, so the law may vary by unit (:func:`record_units`).

The ABC engines simulate the whole model and weigh each simulation by every observed site, so they
need none of these. (The proposals' dtypes are checked where they are drawn:
:func:`dpjax.infer.samplers.check_same_draws`.)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Var
from numpyro import handlers

from ..mechanisms.base import concrete
from ..primitives import INFER_KEY, allow_overflow, depends_on, record_statistics
from .spec import ModelSpec, privatized_infos

__all__ = [
    "check_records_feed_only_releases",
    "check_release_reads_records",
    "dependence",
    "records_exchangeable",
    "record_units",
    "release_reads",
    "slot_log_densities",
]


def dependence(fn, inputs: dict) -> list[set]:
    """For each output leaf of ``fn(inputs)``: the names of the entries of ``inputs`` it depends on (a
    conservative data-flow pass over the jaxpr, as :func:`dpjax.primitives.depends_on`)."""
    names = list(inputs)
    leaves = [jax.tree.leaves(inputs[k]) for k in names]
    owner = [k for k, ls in zip(names, leaves) for _ in ls]

    def flat_fn(*flat):
        rebuilt = {}
        it = iter(flat)
        for k, ls in zip(names, leaves):
            rebuilt[k] = jax.tree.unflatten(jax.tree.structure(inputs[k]), [next(it) for _ in ls])
        return [jnp.asarray(x) for x in jax.tree.leaves(fn(rebuilt))]

    jaxpr = jax.make_jaxpr(flat_fn)(*[v for ls in leaves for v in ls]).jaxpr
    taint = {v: {k} for v, k in zip(jaxpr.invars, owner)}
    for eqn in jaxpr.eqns:
        hit = set().union(*(taint.get(v, set()) for v in eqn.invars if isinstance(v, Var)))
        if hit:
            for v in eqn.outvars:
                taint[v] = hit
    return [set(taint.get(v, set())) if isinstance(v, Var) else set() for v in jaxpr.outvars]


def release_reads(model, tr, roles: ModelSpec, model_args=(), model_kwargs=None) -> dict:
    """``{privatized site: [latent sites]}``: the θ sites (and the latent size n) that a release's
    statistic or mechanism reads other than through the records, found by tracing the model with them
    as inputs and the records held at their values in ``tr``."""
    latent = roles.theta + ((roles.size,) if roles.size else ())
    if not latent:
        return {}
    held = {k: tr[k]["value"] for k in roles.latent_records}

    def outputs(values):
        run = handlers.substitute(handlers.seed(model, 0), data={**values, **held})
        with allow_overflow():
            t = handlers.trace(run).get_trace(*model_args, **(model_kwargs or {}))
        out = []
        for name, _ in roles.privatized:
            info = t[name]["infer"][INFER_KEY]
            # the statistic as built in this trace (its closure sees this trace's θ), on the held records
            records = {k: held.get(k, t[k]["value"]) for k in info.record_sites}
            read = [record_statistics(info.statistic, records), *_parameters(info.mechanism)]
            out.append(jnp.concatenate([jnp.ravel(jnp.asarray(x, float)) for x in jax.tree.leaves(read)]))
        return out

    values = {k: jnp.asarray(tr[k]["value"]) for k in latent}
    reads = {}
    for (name, _), sites in zip(roles.privatized, dependence(outputs, values)):
        if sites:
            reads[name] = [k for k in latent if k in sites]
    return reads


def _parameters(mechanism) -> list:
    """A mechanism's array parameters: its pytree leaves, and the array attributes of a leaf that is an
    object (a user's mechanism class not registered as a pytree)."""
    array = lambda v: isinstance(v, (jax.Array, np.ndarray, np.generic, int, float))
    out = []
    for leaf in jax.tree.leaves(mechanism):
        out += [leaf] if array(leaf) else [v for v in getattr(leaf, "__dict__", {}).values() if array(v)]
    return out


def check_release_reads_records(model, tr, roles: ModelSpec, model_args=(), model_kwargs=None, *, engine):
    """Raise a ValueError naming the site when a release's statistic or mechanism reads θ or the latent
    n (see the module docstring); ``engine`` names the caller in the message."""
    reads = release_reads(model, tr, roles, model_args, model_kwargs)
    if not reads:
        return
    name, sites = next(iter(reads.items()))
    what = " and ".join(f"the latent size {k!r}" if k == roles.size else f"the θ site {k!r}" for k in sites)
    raise ValueError(
        f"privatized site {name!r}: its statistic or mechanism reads {what} (not only the records), e.g. "
        "statistic=lambda r: mu + r['x'] or a released mean r['x'] / n. "
        f"{engine} updates θ given the records and the records given the release, so it needs "
        "η(s | T(records)) to involve θ and n only through the records. Put such a quantity into a "
        "record site's distribution (e.g. x ~ Normal(mu, 1) and statistic=lambda r: r['x']), release a "
        "total instead of a mean, or use dpjax.infer.exact_abc / PseudoMarginalABC, which simulate the "
        "whole model."
    )


def check_records_feed_only_releases(model, tr, roles: ModelSpec, model_args=(), model_kwargs=None) -> None:
    """Raise if a site other than the latent records and the privatized releases has a log density
    that depends on the latent records (a ``numpyro.factor`` of them, an observed site given them):
    the data-augmentation record step proposes records from their own sites and accepts by the
    releases alone, so such a term would be silently ignored. (The ABC engines weigh each simulation
    by every observed site and need no such check.)"""
    fixed = {k: tr[k]["value"] for k in roles.theta + ((roles.size,) if roles.size else ())}
    skip = set(roles.latent_records) | {n for n, _ in roles.privatized}
    others = [k for k, s in tr.items() if s["type"] == "sample" and k not in skip]
    if not others:
        return

    def log_densities(records):
        run = handlers.substitute(handlers.seed(model, 0), data={**fixed, **records})
        t = handlers.trace(run).get_trace(*model_args, **(model_kwargs or {}))
        return [jnp.sum(t[k]["fn"].log_prob(t[k]["value"])) for k in others]

    records = {k: tr[k]["value"] for k in roles.latent_records}
    bad = [k for k, dep in zip(others, depends_on(log_densities, records)) if dep]
    if bad:
        raise ValueError(
            f"Sites {bad} have log densities that depend on the latent records {list(roles.latent_records)}. "
            "The data-augmentation record step proposes records from their own sites and accepts by the "
            "privatized releases only, so these terms would be ignored: make such a term part of the "
            "records' own distribution (a latent record site), or use exact_abc / PseudoMarginalABC, "
            "which weigh each simulation by every observed site."
        )


def slot_log_densities(model, roles: ModelSpec, given, records, model_args=(), model_kwargs=None):
    """log p(recordᵢ | θ) for every slot i of the records plate (latent and public record sites,
    summed over each record's entries), with θ (and n) ``given``."""
    run = handlers.condition(model, data={**given, **records})
    with allow_overflow():
        t = handlers.trace(handlers.seed(run, 0)).get_trace(*model_args, **(model_kwargs or {}))
    total = 0.0
    for k in roles.latent_records + roles.public_records:
        lp = t[k]["fn"].log_prob(t[k]["value"])
        total = total + jnp.reshape(lp, (jnp.shape(lp)[0], -1)).sum(1)
    return total


def record_units(infos):
    """The records' units where a privatized site is released per unit (its ``groups``), else None:
    SOMA then swaps records within a unit only, so they need be exchangeable within units only."""
    return next((info.groups for info in infos if info.groups is not None), None)


def _previous_in_unit(units):
    """For each slot, the slot before it in its own unit (cyclically): a shift along the plate within
    each unit, by a stable sort on the units (traceable)."""
    n = units.shape[0]
    order = jnp.argsort(units, stable=True)
    ordered, index = units[order], jnp.arange(n)
    start = jnp.concatenate([jnp.array([True]), ordered[1:] != ordered[:-1]])
    end = jnp.concatenate([ordered[1:] != ordered[:-1], jnp.array([True])])
    block_end = jnp.flip(jax.lax.cummin(jnp.flip(jnp.where(end, index, n))))
    previous = jnp.where(start, block_end, index - 1)
    return jnp.zeros(n, int).at[order].set(order[previous])


def records_exchangeable(
    model, roles: ModelSpec, given, records, capacity=None, model_args=(), model_kwargs=None, units=None
):
    """Whether the records' law is the same in every slot of the plate, read off one set of records:
    the slot densities of the records moved one slot along equal the slot densities moved along
    (exact for an exchangeable law; a slot index, a covariate array or public records break it). A JAX
    boolean, traced when the records or θ are. ``capacity``: with an unknown n, every slot is read.
    ``units``: the records' units (int, one per slot): the law need only be the same within each unit,
    and the records move along within their units."""
    if capacity is not None:
        n = given[roles.size]  # every slot read (one size per unit: every unit's)
        given = {**given, roles.size: jnp.full(jnp.shape(n), capacity, jnp.result_type(n))}
    lp = slot_log_densities(model, roles, given, records, model_args, model_kwargs)
    if jnp.shape(lp)[0] < 2:
        return jnp.array(True)
    source = jnp.roll(jnp.arange(jnp.shape(lp)[0]), 1) if units is None else _previous_in_unit(units)
    moved = {k: jnp.take(v, source, axis=0) for k, v in records.items()}
    # the second pass only after the first: two batched LAPACK solves at once (a multivariate record law
    # under vmap) each wait on the other's thread of XLA's 2-thread CPU pool, a deadlock (jaxlib 0.10)
    _, moved = jax.lax.optimization_barrier((lp, moved))
    lp_moved = slot_log_densities(model, roles, given, moved, model_args, model_kwargs)
    return jnp.allclose(lp_moved, jnp.take(lp, source, axis=0), rtol=1e-4, atol=1e-4)


def check_exchangeable(model, tr, roles: ModelSpec, capacity=None, model_args=(), model_kwargs=None, *, why):
    """Raise a ValueError when the records of the concrete trace ``tr`` are not exchangeable along the
    plate (within units for a release per unit; see :func:`records_exchangeable`); a no-op for a traced
    ``tr`` (the engine folds the traced check into its ``valid`` flag)."""
    given = {k: tr[k]["value"] for k in roles.theta + ((roles.size,) if roles.size else ())}
    records = {k: tr[k]["value"] for k in roles.latent_records}
    units = record_units(privatized_infos(tr, roles))
    if not concrete(given, records, units, model_args, model_kwargs):
        return
    with jax.ensure_compile_time_eval():
        args = (model, roles, given, records, capacity, model_args, model_kwargs, units)
        ok = bool(records_exchangeable(*args))
    if not ok:
        public = f" (public record sites {list(roles.public_records)})" if roles.public_records else ""
        where = "along the records plate" if units is None else "within a unit (`groups`)"
        raise ValueError(
            f"The records' law varies {where}{public}: a slot index (`with plate as i`), an array of "
            f"covariates or public records make record i differ from record j. {why} draws a record for "
            "one slot and uses it in another, so it needs exchangeable records. Move what varies by slot "
            "out of the records' law, or use the plain sweep with a known n."
        )
