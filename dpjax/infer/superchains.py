"""Many short chains on one release (Margossian et al. 2024, "Nested R̂"): K superchains of M chains each,
the M chains of a superchain started at one point, judged by :func:`dpjax.diagnostics.nested_rhat`.

Why: a vectorized ``MCMC`` carries hundreds of chains for little more than the cost of one where a step is
bound by its launch (a GPU: the record sweep's scan steps cost ~1–6 µs each however many chains they
carry, ``benchmarks/results/sweep_unroll_gpu*.md``), so width buys ESS that length would buy slowly. Short
chains need a convergence check made for them: the classic R̂ of a few draws per chain is too noisy, nested
R̂ pools each superchain's chains.
"""

from __future__ import annotations

import numpy as np
from numpyro.infer import Predictive

from .._validate import positive_int
from ..mechanisms.base import check_key
from ..primitives import allow_overflow
from .spec import model_spec, prototype

__all__ = ["superchain_init"]


def superchain_init(
    model, rng_key, num_superchains: int, chains_per_superchain: int, *model_args, **model_kwargs
):
    """``init_params`` for ``MCMC(kernel, num_chains=K·M, chain_method="vectorized")``: K starting points
    (θ, an unknown n, and the latent records) drawn from the prior, each repeated for the M chains of its
    superchain, superchain after superchain (the layout :func:`dpjax.diagnostics.nested_rhat` reads).

    The chains of a superchain share their start and differ in their keys; dispersed starts across
    superchains are what lets nested R̂ see a chain that has not forgotten where it began.

    >>> import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist, dpjax
    >>> from numpyro.infer import MCMC
    >>> def model(n, s_dp=None):
    ...     p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    ...     with numpyro.plate("people", n):
    ...         x = numpyro.sample("x", dist.Bernoulli(p))
    ...     dpjax.privatized("count", dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0),
    ...                      lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)
    >>> init = dpjax.infer.superchain_init(model, jax.random.key(1), 8, 16, 50, jnp.array(20.3))
    >>> mcmc = MCMC(dpjax.infer.DataAugmentationKernel(model), num_warmup=100, num_samples=20,
    ...             num_chains=128, chain_method="vectorized", progress_bar=False)
    >>> mcmc.run(jax.random.key(0), 50, jnp.array(20.3), init_params=init)
    >>> draws = mcmc.get_samples(group_by_chain=True)["p"]
    >>> bool(dpjax.diagnostics.nested_rhat(draws, num_superchains=8) < 1.01)
    True
    """
    check_key(rng_key)
    num_superchains = positive_int(num_superchains, "num_superchains", minimum=2)
    chains_per_superchain = positive_int(chains_per_superchain, "chains_per_superchain")
    with allow_overflow():  # an unknown n drawn from its prior may exceed the capacity here
        spec = model_spec(prototype(model, rng_key, model_args, model_kwargs))
    sites = spec.theta + spec.size_sites + spec.latent_records
    starts = Predictive(model, num_samples=num_superchains, return_sites=list(sites))(
        rng_key, *model_args, **model_kwargs
    )
    return {k: np.repeat(np.asarray(v), chains_per_superchain, axis=0) for k, v in starts.items()}
