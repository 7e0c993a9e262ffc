"""The θ block of data augmentation: one draw of θ | records, as a pure stage built once from static
settings (BlackJAX's shape: ``init`` and ``build_kernel``; static in closures, traced in the state).

Three forms, one contract:

- an inner NumPyro HMC/NUTS on the model with the records (and an unknown n) conditioned and the
  releases masked; its state is the inner sampler's, refreshed before each step because the records
  it is conditioned on have moved (NumPyro 0.22's ``refresh``, as in ``HMCGibbs``);
- an exact conditional draw ``update(rng_key, records, params) -> {θ site: value}`` (as the
  ``gibbs_fn`` of ``numpyro.infer.HMCGibbs``); its state is ``()``;
- ``"held"``: θ kept where it is (the E-step of Monte Carlo EM); its state is ``()``.

``kernel(rng_key, theta_state, theta, records, size, public, model_args, model_kwargs)`` returns
``(theta, theta_state, ThetaInfo)``.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from jax import random
from jax.flatten_util import ravel_pytree
from numpyro.distributions import biject_to
from numpyro.infer.gibbs import conditioned, with_conditioning
from numpyro.infer.hmc import HMC
from numpyro.infer.initialization import init_to_value
from numpyro.infer.util import potential_energy

from ..mechanisms.base import concrete
from ._compile import avals, compiled, split_args
from .noncentred import MaskReleases, base_distribution

__all__ = [
    "RoundOffWarning",
    "ThetaInfo",
    "check_model",
    "check_round_off",
    "build_kernel",
    "check_draw_in_support",
    "check_update",
    "exact_draw",
    "in_support",
    "init",
    "inner_on_records",
    "point_at",
    "refresh",
    "resolve",
]


#: the float32 round-off (nats, sd) of log p(θ | x) above which ``init`` warns: noise of σ alone
#: costs NUTS roughly σ of its acceptance rate, and near 0.35 it cannot meet its 0.8 target at any step
ROUND_OFF_LIMIT = 0.2
ROUND_OFF_STEP = 1e-4  # length of the segment, in unconstrained θ, along which the noise is read
ROUND_OFF_POINTS = 16


class RoundOffWarning(UserWarning):
    """float32 round-off in a log density large enough to stall NUTS/HMC (enable 64-bit floats)."""


class ThetaInfo(NamedTuple):
    """- **accept_prob**, **diverging** – the inner HMC/NUTS step's (1 and False for an exact or held θ)."""

    accept_prob: jax.Array
    diverging: jax.Array


def _theta_given_records(model, *args, **kwargs):
    with MaskReleases():
        return model(*args, **kwargs)


def resolve(model, inner_kernel, theta_update):
    """``(model, inner_kernel)`` from a kernel's arguments, each checked (``ValueError`` naming it): the
    model may be given as an HMC/NUTS kernel on it (as with ``HMCGibbs``); without ``theta_update`` the
    inner kernel defaults to ``NUTS(model)``."""
    if isinstance(model, HMC):  # DataAugmentationKernel(NUTS(model))
        if inner_kernel is not None:
            raise ValueError("Give the inner NUTS/HMC kernel once.")
        model, inner_kernel = None, model
    if inner_kernel is not None and theta_update is not None:
        raise ValueError("Give `inner_kernel` or `theta_update`, not both.")
    if inner_kernel is not None:
        if not isinstance(inner_kernel, HMC):
            raise ValueError("`inner_kernel` must be a numpyro HMC or NUTS instance.")
        if model is not None and inner_kernel.model is not model:
            raise ValueError("`inner_kernel` must be built on the same `model`.")
        model = inner_kernel.model
    if model is None or not callable(model):
        raise ValueError("`model` must be a NumPyro model (a callable).")
    if theta_update is not None and not (callable(theta_update) or theta_update == "held"):
        raise ValueError("`theta_update` must be a callable (rng_key, records, params) -> params, or 'held'.")
    if inner_kernel is None and theta_update is None:
        from numpyro.infer import NUTS

        inner_kernel = NUTS(model)
    return model, inner_kernel


def inner_on_records(inner_kernel):
    """The inner HMC/NUTS kernel on the model with the records conditioned (each step conditions it on
    the current ones) and the releases masked: its target is p(θ | x), the θ-step of the Gibbs sampler."""
    return inner_kernel.wrap_model(lambda m: conditioned(partial(_theta_given_records, m)))


@contextlib.contextmanager
def _starting_at(kernel, theta):
    """NumPyro's HMC.init searches for a valid start with the kernel's init strategy (uniform in
    (−2, 2) by default) even when given ``init_params``, and raises if none of its tries is valid
    (a model with log density −inf on part of θ's support); with a start given, that search starts
    and ends at the start."""
    if theta is None or not hasattr(kernel, "_init_strategy"):
        yield
        return
    strategy = kernel._init_strategy
    kernel._init_strategy = init_to_value(values=theta)
    try:
        yield
    finally:
        kernel._init_strategy = strategy


def init(rng_key, theta, records, size, *, inner, supports, given, num_warmup, model_args, model_kwargs):
    """``(theta, theta_state)`` at the start: ``()`` without an inner kernel; else the inner HMC/NUTS
    initialised on the model conditioned on ``records`` and ``size``, from θ where ``given`` (the user's
    start), else from its own init strategy; θ is then read back from it."""
    if inner is None:
        return theta, ()
    kw = with_conditioning(model_kwargs, {**records, **size})
    unconstrained = {k: biject_to(supports[k]).inv(v) for k, v in theta.items()} if given else None
    with _starting_at(inner, theta if given else None):
        theta_state = inner.init(rng_key, num_warmup, unconstrained, model_args, kw)
    constrained = inner.get_constrain_fn(model_args, kw)(theta_state.z)
    return {k: constrained[k] for k in theta}, theta_state


def check_update(new, theta_sites):
    """The exact update's result must be ``{θ site: value}`` for exactly the θ sites."""
    if not isinstance(new, dict) or set(new) != set(theta_sites):
        raise ValueError(
            f"`theta_update` must return a dict with keys {sorted(theta_sites)}, "
            f"got {sorted(new) if isinstance(new, dict) else type(new).__name__}."
        )
    return new


def exact_draw(update: Callable | str, theta_sites):
    """``(rng_key, records, params) -> θ``: the user's exact conditional draw, or θ held (``"held"``)."""
    if update == "held":
        return lambda rng_key, records, params: {k: params[k] for k in theta_sites}
    return update


def check_model(tr, spec, *, inner, update):
    """The θ block's rules, on the host before any draws: a proper prior (except with θ held: MCEM's
    E-step never uses it), no discrete θ under NUTS/HMC, and an exact update whose draw lies in θ's
    support (called once at the prototype trace when its values are concrete)."""
    improper = [k for k in spec.theta if isinstance(base_distribution(tr[k]["fn"]), dist.ImproperUniform)]
    if improper and update != "held":
        raise ValueError(
            f"DataAugmentationKernel needs a proper prior; sites {improper} are improper. The likelihood "
            "of a noisy release is bounded below, so an improper prior can give an improper posterior."
        )
    discrete = [k for k in spec.theta if tr[k]["fn"].support.is_discrete]
    if discrete and inner is not None:
        raise ValueError(
            f"θ sites {discrete} are discrete, which NUTS/HMC cannot update: pass "
            "`theta_update=` (an exact conditional draw of θ given the records), or use "
            "dpjax.infer.exact_abc."
        )
    if update is not None and concrete([s["value"] for s in tr.values() if "value" in s]):
        check_draw_in_support(update, tr, spec)


def check_draw_in_support(update, tr, spec):
    """Call the exact update once at the prototype trace (concrete values) and refuse a draw outside
    θ's support before any draws: it would otherwise be silently carried along."""
    records = {k: tr[k]["value"] for k in spec.latent_records + spec.public_records}
    params = {k: jnp.asarray(tr[k]["value"]) for k in spec.theta + spec.size_sites}
    new = check_update(exact_draw(update, spec.theta)(random.key(0), records, params), spec.theta)
    bad = [k for k in spec.theta if not np.all(np.asarray(spec.supports[k](new[k])))]
    if bad:
        raise ValueError(
            f"`theta_update` returned values outside the support of sites {bad} (e.g. "
            f"{bad[0]} = {np.asarray(new[bad[0]])!r}, support {spec.supports[bad[0]]})."
        )


def build_kernel(theta_sites: tuple[str, ...], *, inner=None, update: Callable | str | None = None):
    """The θ-step: with ``inner`` (from :func:`inner_on_records`), one HMC/NUTS transition after a
    refresh at the current records; else one call of ``update`` (or θ held, ``"held"``), whose results
    keep θ's dtypes."""
    if inner is None:
        draw = exact_draw(update, theta_sites)

        def exact(rng_key, theta_state, theta, records, size, public, model_args, model_kwargs):
            new = check_update(draw(rng_key, {**public, **records}, {**theta, **size}), theta_sites)
            new = {k: jnp.asarray(v, jnp.result_type(theta[k])) for k, v in new.items()}
            return new, theta_state, ThetaInfo(jnp.array(1.0), jnp.array(False))

        return exact

    def hmc(rng_key, theta_state, theta, records, size, public, model_args, model_kwargs):
        # the inner kernel's key lives in its state (rng_key is unused: NumPyro's HMC carries its own)
        kw = with_conditioning(model_kwargs, {**records, **size})
        hs = inner.refresh(theta_state, model_args, kw)
        hs = inner.sample(hs, model_args, kw)
        new = inner.get_constrain_fn(model_args, kw)(hs.z)
        return {k: new[k] for k in theta_sites}, hs, ThetaInfo(hs.accept_prob, hs.diverging)

    return hmc


def refresh(inner, theta_state, records, size, model_args, model_kwargs):
    """The inner sampler's cached potential and gradient recomputed at ``records`` (θ kept)."""
    if inner is None:
        return theta_state
    return inner.refresh(theta_state, model_args, with_conditioning(model_kwargs, {**records, **size}))


def point_at(theta, theta_state: Any, supports):
    """The inner HMC/NUTS state moved to θ (after moves made outside it); ``()`` stays ``()``."""
    if not theta_state:
        return theta_state
    z = {k: biject_to(supports[k]).inv(v) for k, v in theta.items()}
    return theta_state._replace(z={**theta_state.z, **z})


def in_support(theta, supports):
    """θ finite and inside its support (a traced bool)."""
    ok = jnp.array(True)
    for k, v in theta.items():
        ok = ok & jnp.all(supports[k](v))
        if jnp.issubdtype(jnp.result_type(v), jnp.floating):
            ok = ok & jnp.all(jnp.isfinite(v))
    return ok


def check_round_off(inner, theta_state, records, size, model_args, model_kwargs):
    """Warn when, at the start, float32 round-off in log p(θ | x) is large enough to stall the
    inner NUTS/HMC. Summed over many records the log density can reach 10⁶ in parts that cancel
    (n · log Γ(α₀) for Dirichlet records), where float32 resolves ~0.5; step-size adaptation then
    chases that noise to a vanishing step (the ATUS study at 6 863 records: ~1 000 NUTS steps per
    iteration in float32, ~15 in float64). The noise is read off second differences of the
    potential along a segment short enough for its curvature to be negligible. One chain's concrete
    start is checked (the caller skips traced ones)."""
    if inner is None or jnp.result_type(float) != jnp.float32:
        return
    split = split_args(model_args, model_kwargs)

    def build(traced):
        def potentials(z, records, size, dynamic):
            args, kwargs = split.rebuild(dynamic) if traced else (model_args, model_kwargs)
            kw = with_conditioning(kwargs, {**records, **size})
            flat, unravel = ravel_pytree(z)
            direction = random.normal(random.key(0), flat.shape, flat.dtype)
            step = ROUND_OFF_STEP * direction / jnp.linalg.norm(direction)
            at = lambda t: potential_energy(inner.model, args, kw, unravel(flat + t * step))
            # one point at a time: XLA's vmapped (batched) form of such a sum carried nats of its own
            # error in float32 (2.1 against 0.006 at 3 000 Dirichlet records, α = 3)
            return jax.lax.map(at, jnp.arange(ROUND_OFF_POINTS, dtype=flat.dtype))

        return jax.jit(potentials)  # one compilation per model and shapes, not one per operation

    values = jax.tree.flatten((theta_state.z, records, size))
    key = ("round-off", inner, split.key, values[1], avals(values[0]))
    u = np.asarray(compiled(key, build, split.dynamic)(theta_state.z, records, size), np.float64)
    noise = float(np.std(np.diff(u, 2)) / np.sqrt(6))  # Var(u[i+1] − 2u[i] + u[i−1]) = 6σ²
    if np.isfinite(noise) and noise > ROUND_OFF_LIMIT:
        warnings.warn(
            f"log p(θ | records) carries float32 round-off of about {noise:.2g} nats at the start: "
            "NUTS/HMC may shrink its step to nothing and run at its maximum tree depth (slow, and "
            "poorly mixing). Enable 64-bit floats: JAX_ENABLE_X64=1, or "
            "jax.config.update('jax_enable_x64', True) before creating any array.",
            RoundOffWarning,
            stacklevel=3,
        )
