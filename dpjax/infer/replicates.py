"""A pure, jit- and vmap-able chain runner for simulation studies: ``jax.vmap`` it over
replicates (different releases, keys or settings) where ``numpyro.infer.MCMC`` would need a
Python loop, since its chains share one set of model arguments."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax

from .chains import checks_at_end, warn_invalid

__all__ = ["run_chain"]


def run_chain(
    kernel,
    rng_key,
    model_args=(),
    model_kwargs=None,
    *,
    num_warmup: int,
    num_samples: int,
    collect: Callable | None = None,
    init_params=None,
    thinning: int = 1,
):
    """Initialise ``kernel`` and run ``num_warmup + num_samples`` iterations in one ``lax.scan``.

    Returns ``collect(state)`` stacked over the post-warmup iterations (default: the sites' values,
    ``kernel.postprocess_fn`` of ``state.z``: numpyro's HMC/NUTS hold ``z`` unconstrained, so a
    ``collect`` of your own that reads ``state.z`` of such a kernel must constrain it so too), every
    ``thinning``-th of them (``num_samples // thinning`` draws, as ``numpyro.infer.MCMC``);
    ``init_params`` is passed to ``kernel.init``. Collect summaries, not the database, when vmapping
    over many replicates. A chain that leaves the model's support (dpjax's ``state.valid`` False) has
    NaN draws of everything collected from there on, integers (an unknown n) returned as floats.

    >>> import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist, dpjax
    >>> def model(n, s_dp=None):
    ...     p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    ...     with numpyro.plate("people", n):
    ...         x = numpyro.sample("x", dist.Bernoulli(p))
    ...     dpjax.privatized("count", dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0),
    ...                      lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)
    >>> def beta_draw(key, records, params):
    ...     k, n = records["x"].sum(), records["x"].shape[0]
    ...     return {"p": dist.Beta(1 + k, 1 + n - k).sample(key)}
    >>> kernel = dpjax.infer.DataAugmentationKernel(model, theta_update=beta_draw)
    >>> run = lambda key, s: run_chain(kernel, key, (50, s), num_warmup=100, num_samples=200)
    >>> keys = jax.random.split(jax.random.key(0), 3)
    >>> draws = jax.jit(jax.vmap(run))(keys, jnp.array([5.0, 25.0, 45.0]))
    >>> draws["p"].shape
    (3, 200)
    """
    if isinstance(thinning, bool) or not isinstance(thinning, int) or not 1 <= thinning <= num_samples:
        raise ValueError(f"`thinning` must be an int in [1, num_samples], got {thinning!r}.")
    model_kwargs = {} if model_kwargs is None else model_kwargs
    state = kernel.init(rng_key, num_warmup, init_params, model_args, model_kwargs)
    if collect is None:
        constrain = kernel.postprocess_fn(model_args, model_kwargs)
        collect = lambda state: constrain(state.z)
    if hasattr(state, "valid"):
        collect = _nan_once_invalid(collect)

    def step(state, _):
        state = kernel.sample(state, model_args, model_kwargs)
        return state, None

    def step_collect(state, _):
        state = kernel.sample(state, model_args, model_kwargs)
        return state, collect(state)

    def thinned(state, _):
        state, _ = lax.scan(step, state, None, length=thinning - 1)
        return step_collect(state, None)

    # dpjax's kernels warn from the final state, not per iteration (a host call per replicate under vmap)
    with checks_at_end():
        state, _ = lax.scan(step, state, None, length=num_warmup)
        state, draws = lax.scan(
            step_collect if thinning == 1 else thinned, state, None, length=num_samples // thinning
        )
    if hasattr(kernel, "check_end"):
        kernel.check_end(state)
    if hasattr(state, "valid"):
        jax.debug.callback(warn_invalid, state.valid)
    return draws


def _nan_once_invalid(collect):
    """``collect`` whose outputs are NaN where the state is not ``valid``: a dpjax kernel's θ is NaN
    there already, but an integer site (an unknown n) keeps its value, which a summary would otherwise
    average in with the θ draws gone (Table 1 at ε_n = 0.001: a chain stuck at n = 1)."""

    def masked(state):
        def nan(v):
            v = jnp.asarray(v)
            if v.dtype == jnp.bool_:
                return v
            v = v if jnp.issubdtype(v.dtype, jnp.inexact) else v.astype(jnp.result_type(float))
            return jnp.where(state.valid, v, jnp.nan)

        return jax.tree.map(nan, collect(state))

    return masked
