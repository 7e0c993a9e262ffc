"""Monte Carlo EM with an MCMC E-step as a pure core (BlackJAX's shape): ``init``/``step``/``run`` over a
named state, for running MCEM inside compiled code: many releases at once, or the cells of a simulation
study (:func:`dpjax.studies.mcem_cell`). Each iteration runs the θ-held record chains (the record step, and
the size step with an unknown n) from where the previous one left them, then the closed-form M-step on
their kept draws. :func:`~dpjax.infer.mcem` is the host driver with stages, a stopping rule and Louis's
information; this core runs a fixed number of iterations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import random

from .._validate import positive_int
from ..primitives import allow_overflow
from . import da_core, size_step
from .data_augmentation import DataAugmentationKernel
from .reversible_jump import ReversibleJumpKernel
from .spec import model_spec, prototype

__all__ = ["BURN_IN", "MCEMSampler", "MCEMState", "held_core", "mcmc_e_step", "em_kernel", "mcem_sampler"]

BURN_IN = 0.3  # of each E-step's iterations (the seed's, Awan et al. Appendix C.1)


class MCEMState(NamedTuple):
    """State of :func:`mcem_sampler`.

    - **params** – θ⁽ᵗ⁾, constrained values.
    - **chains** – the θ-held record chains (a :class:`~dpjax.infer.da_core.DAState` with the chains along
      axis 0), warm-started at every E-step.
    - **change** – the max-norm change of θ at the last M-step (inf before the first).
    - **valid** – False once a chain has left the model's support (its draws then weigh nothing that is
      right: θ is NaN from there on).
    - **iteration** – EM iterations done.
    """

    params: dict
    chains: object
    change: jax.Array
    valid: jax.Array
    iteration: jax.Array


class MCEMSampler(NamedTuple):
    """``init(rng_key, init_params, model_args, model_kwargs=None) -> MCEMState``;
    ``step(state, model_args, model_kwargs=None) -> MCEMState`` (one E-step and M-step);
    ``run(rng_key, init_params, model_args, model_kwargs=None) -> (MCEMState, θ⁽¹⁾..θ⁽ᵀ⁾)``."""

    init: Callable
    step: Callable
    run: Callable


def em_kernel(model, theta_update, *, unknown_n: bool, size_moves: int = 100) -> DataAugmentationKernel:
    """The record chain of an EM variant: a :class:`DataAugmentationKernel` (known n) or a
    :class:`ReversibleJumpKernel` (unknown n, ``size_moves`` birth/death moves per iteration), with no
    non-centred moves (they would move θ), whose θ-step is ``theta_update``: ``"held"`` for MCEM's
    E-step (θ put in ``state.z`` stays there; its prior is not used, it may be improper), the M-step
    for stochastic EM."""
    if unknown_n:
        return ReversibleJumpKernel(
            model, theta_update=theta_update, size_moves=size_moves, noncentred_moves=0
        )
    return DataAugmentationKernel(model, theta_update=theta_update, noncentred_moves=0)


def _spec(model, model_args, model_kwargs):
    with allow_overflow():  # an unknown n drawn from its prior may exceed the capacity here
        return model_spec(prototype(model, random.key(0), model_args, model_kwargs))


def held_core(model, model_args, model_kwargs, *, size_moves: int = 100) -> da_core.Core:
    """The static settings of MCEM's θ-held record chain for these (possibly traced) model arguments: the
    record sweep and, for an n that is a latent site of a records plate, the size step with
    ``size_moves`` births/deaths and the size jumps (as :func:`em_kernel` sets up), no θ-moves. Built
    from this call's trace, so a cached compilation never holds another call's mechanisms or supports."""
    spec = _spec(model, model_args, model_kwargs)
    size_kernel = None
    if spec.size is not None:
        settings = size_step.SizeSettings(size_moves=size_moves, hold_size=0)
        size_kernel = size_step.build_kernel(model, spec, settings, num_moves=0, num_warmup=0)
    return da_core.Core(
        model=model,
        spec=spec,
        theta_update="held",
        size_kernel=size_kernel,
        exchangeable=spec.size is not None,
    )


def mcmc_e_step(core: da_core.Core, chains, params, burn: int, keep: int, model_args, model_kwargs):
    """MCEM's MCMC E-step on the stages (:func:`dpjax.infer.da_core.build_kernel` of :func:`held_core`):
    ``burn`` then ``keep`` iterations of the θ-held chains (a state with the chains along axis 0) at
    θ = ``params`` → (chains, draws ``{record site (and n's): (chains · keep, ...)}`` chain by chain,
    whether every chain stayed valid). Births refused at the records plate's capacity raise a
    :class:`~dpjax.infer.CapacityWarning` once per E-step."""
    spec = core.spec
    step = da_core.build_kernel(core)
    z = {
        k: jnp.broadcast_to(jnp.asarray(params[k], v.dtype), v.shape) if k in params else v
        for k, v in chains.z.items()
    }
    size_sites = (spec.size,) if spec.size is not None else ()
    sample = lambda s: step(s, model_args, model_kwargs, num_warmup=0)

    def kept(s, _):
        s = sample(s)
        draws = {**{k: s.records[k] for k in spec.latent_records}, **{k: s.z[k] for k in size_sites}}
        return s, (draws, s.valid)

    def chain(state):
        state, _ = jax.lax.scan(lambda s, _: (sample(s), None), state, None, length=burn)
        return jax.lax.scan(kept, state, None, length=keep)

    start = chains._replace(z=z)
    chains, (draws, valid) = jax.lax.map(chain, start)
    if size_sites:
        blocked = jnp.sum(chains.capacity_blocked - start.capacity_blocked)
        size_step.warn_when_blocked(blocked, spec.size_bounds[1])
    draws = jax.tree.map(lambda v: v.reshape((-1,) + v.shape[2:]), draws)
    return chains, draws, jnp.all(valid)


def mcem_sampler(
    model,
    *,
    m_step: Callable,
    num_draws: int,
    num_iterations: int,
    num_chains: int = 4,
    size_moves: int = 100,
) -> MCEMSampler:
    """Monte Carlo EM (Awan, Barrientos & Ju, Algorithm 2) as a pure core. Each iteration is an E-step of
    ``num_chains`` chains, each ⌈num_draws / num_chains⌉ kept iterations after a burn-in of 30 % of its
    iterations (the records, and n when it is a latent site of a :func:`dpjax.records_plate`, given the
    release at θ⁽ᵗ⁾), then θ⁽ᵗ⁺¹⁾ = ``m_step(records, weights)`` (as :func:`~dpjax.infer.mcem`'s closed
    form: record sets along axis 0, equal weights). ``run`` does ``num_iterations`` of them in one
    ``lax.scan``; a stopping rule needs the host: :func:`~dpjax.infer.mcem`.

    >>> import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist, dpjax
    >>> def model(s_dp=None):
    ...     p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    ...     with numpyro.plate("people", 30):
    ...         x = numpyro.sample("x", dist.Bernoulli(p))
    ...     dpjax.privatized("count", dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0),
    ...                      lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)
    >>> m_step = lambda recs, w: {"p": w @ recs["x"].mean(1)}
    >>> em = dpjax.infer.mcem_sampler(model, m_step=m_step, num_draws=400, num_iterations=30)
    >>> run = jax.jit(jax.vmap(lambda k, s: em.run(k, {"p": 0.5}, (s,))[0].params))
    >>> run(jax.random.split(jax.random.key(0), 2), jnp.array([12.3, 20.0]))["p"].shape
    (2,)
    """
    if not callable(m_step):
        raise ValueError(f"`m_step` must be a function (records, weights) -> params, got {m_step!r}.")
    num_draws = positive_int(num_draws, "num_draws")
    num_iterations = positive_int(num_iterations, "num_iterations")
    num_chains = positive_int(num_chains, "num_chains")
    size_moves = positive_int(size_moves, "size_moves")
    keep = -(-num_draws // num_chains)
    burn = round(keep * BURN_IN / (1 - BURN_IN))

    def init(rng_key, init_params, model_args, model_kwargs=None):
        model_kwargs = {} if model_kwargs is None else dict(model_kwargs)
        unknown_n = _spec(model, model_args, model_kwargs).size is not None
        kernel = em_kernel(model, "held", unknown_n=unknown_n, size_moves=size_moves)
        params = {k: jnp.asarray(v, jnp.result_type(float)) for k, v in init_params.items()}
        per_chain = jax.tree.map(lambda v: jnp.broadcast_to(v, (num_chains,) + v.shape), params)
        chains = kernel.init(random.split(rng_key, num_chains), 0, per_chain, model_args, model_kwargs)
        inf = jnp.asarray(jnp.inf, jnp.result_type(float))
        return MCEMState(params, chains, inf, jnp.all(chains.valid), jnp.zeros((), jnp.int32))

    def step(state, model_args, model_kwargs=None):
        model_kwargs = {} if model_kwargs is None else dict(model_kwargs)
        core = held_core(model, model_args, model_kwargs, size_moves=size_moves)
        chains, draws, valid = mcmc_e_step(
            core, state.chains, state.params, burn, keep, model_args, model_kwargs
        )
        m = keep * num_chains
        new = m_step(draws, jnp.full(m, 1.0 / m, jnp.result_type(float)))
        valid = state.valid & valid
        new = {k: jnp.where(valid, jnp.asarray(new[k], v.dtype), jnp.nan) for k, v in state.params.items()}
        change = max(jnp.max(jnp.abs(new[k] - state.params[k])) for k in new)
        return MCEMState(new, chains, change, valid, state.iteration + 1)

    def run(rng_key, init_params, model_args, model_kwargs=None):
        def body(state, _):
            state = step(state, model_args, model_kwargs)
            return state, state.params

        return jax.lax.scan(body, init(rng_key, init_params, model_args, model_kwargs), None, num_iterations)

    return MCEMSampler(init, step, run)
