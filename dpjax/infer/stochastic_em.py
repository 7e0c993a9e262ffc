"""Stochastic EM for privatized data (Celeux & Diebolt 1985): the data-augmentation chain (with an
unknown n, the reversible-jump chain) in which θ is not drawn but set, at every iteration, to the
complete-data MLE of the current records; θ̂ is the mean of the iterates after a burn-in. This is how
Awan, Barrientos & Ju ran the "MCEM chains of 10 000 iterations with a burn-in of 30 %" of their
Table 2 (one E-step draw per iteration, θ updated every time).

Why beside :func:`~dpjax.infer.mcem`: a release usually carries a small part of the records'
information. With a fraction r of it missing, EM moves θ by only (1 − r) of its distance to the MLE
per iteration (r ≈ 0.993 in the seed's regression), so MCEM needs thousands of iterations of many
draws each. Stochastic EM's iterates instead form a stationary Markov chain around the MLE, one
record sweep per iteration; the mean's Monte Carlo error comes from the chain's effective sample size.
The stationary mean is not exactly the MLE: the two differ by a term that vanishes, relative to the
MLE's standard error, as n grows (Nielsen 2000). Computed exactly for Bernoulli records with a Laplace
count (n = 30, noise scale 1; ``benchmarks/stochastic_em_bias.py``): MLE 0.40890 (sd 0.099), stationary
mean 0.40877, a gap of 0.1 % of the MLE's sd.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import random
from numpyro import handlers
from numpyro.diagnostics import effective_sample_size
from numpyro.distributions import biject_to
from numpyro.infer import MCMC

from .._validate import positive_int
from ..primitives import allow_overflow
from .chains import check_init_params
from .em_core import em_kernel
from .spec import model_spec, prototype

__all__ = ["StochasticEMResult", "m_step_update", "records_at", "stochastic_em"]

MIN_ESS = 50  # below this effective sample size of a θ component, θ̂'s Monte Carlo error is large: warn


class StochasticEMResult(NamedTuple):
    """- **params** – θ̂, the mean of the iterates after the burn-in over all chains;
    **mc_std_errors** – its Monte Carlo standard error per site (sd / √ESS);
    **ess** – the effective sample size of the iterates per site (numpyro's, across chains);
    **samples** – the kept iterates ``{site: (chains, draws, ...)}`` of θ (and of n when it is latent),
    for trace plots and ``az.from_dict``."""

    params: dict
    mc_std_errors: dict
    ess: dict
    samples: dict


def m_step_update(m_step: Callable, size_site: str | None = None) -> Callable:
    """The ``theta_update`` that turns :class:`~dpjax.infer.DataAugmentationKernel` or
    :class:`~dpjax.infer.ReversibleJumpKernel` into stochastic EM: θ ← ``m_step(records, weights)`` on
    the chain's current records, with :func:`~dpjax.infer.mcem`'s M-step convention (record sites
    with one record set along axis 0, weights ``[1.0]``, and, when ``size_site`` names the latent n,
    its value of shape ``(1,)``: only the first n slots are records).

    >>> import jax.numpy as jnp
    >>> upd = m_step_update(lambda recs, w: {"p": w @ recs["x"].mean(1)})
    >>> float(upd(None, {"x": jnp.array([1.0, 0.0, 1.0, 1.0])}, {"p": 0.5})["p"])
    0.75
    """
    if not callable(m_step):
        raise ValueError(f"`m_step` must be a callable (records, weights) -> params, got {m_step!r}.")

    def update(rng_key, records, params):
        recs = {k: jnp.asarray(v)[None] for k, v in records.items()}
        if size_site is not None:
            recs[size_site] = jnp.asarray(params[size_site])[None]
        return m_step(recs, jnp.ones(1))

    return update


def stochastic_em(
    rng_key,
    model,
    init_params: dict,
    *model_args,
    m_step: Callable,
    num_iterations: int = 10_000,
    burn_in: float = 0.3,
    num_chains: int = 4,
    size_moves: int = 100,
    progress_bar: bool = True,
    **model_kwargs,
) -> StochasticEMResult:
    """Maximum likelihood for θ from a privatized release by stochastic EM: ``num_chains`` chains of
    ``num_iterations`` iterations, each one record sweep given the release at θ⁽ᵗ⁾ (plus
    ``size_moves`` birth/death moves when n is a latent site of a :func:`dpjax.records_plate`) and
    θ⁽ᵗ⁺¹⁾ = ``m_step`` on the records (its closed form, as for :func:`~dpjax.infer.mcem`); θ̂ is
    the mean of θ over the last ``1 − burn_in`` of the iterations (the seed's 30 % burn-in). Chains
    start at ``init_params`` (constrained values; n at the noisy n); the prior of θ is not used.

    Use it when the release carries little of the records' information (see this module's
    docstring); with a well-informed release :func:`~dpjax.infer.mcem` is as good and gives Louis's
    standard errors. A :class:`UserWarning` flags an effective sample size below 50 for some component
    of θ (its Monte Carlo error is then large: raise ``num_iterations``). The iterates behave like
    draws from a flat-prior posterior: where the likelihood stays flat out to the edge of θ's space,
    they drift there and θ̂ is not an MLE. Look at ``samples`` (trace plots); the seed's regression
    release is such a case (``dpjax reproduce awan-table2``).

    >>> import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist, dpjax
    >>> def model(s_dp=None):
    ...     p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    ...     with numpyro.plate("people", 30):
    ...         x = numpyro.sample("x", dist.Bernoulli(p))
    ...     dpjax.privatized("count", dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0),
    ...                      lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)
    >>> m_step = lambda recs, w: {"p": w @ recs["x"].mean(1)}
    >>> out = dpjax.infer.stochastic_em(jax.random.key(0), model, {"p": 0.5}, jnp.array(12.3),
    ...                                 m_step=m_step, num_iterations=2_000, progress_bar=False)
    >>> abs(float(out.params["p"]) - 0.4089) < 4 * float(out.mc_std_errors["p"])  # the exact MLE
    True
    """
    num_iterations = positive_int(num_iterations, "num_iterations")
    num_chains = positive_int(num_chains, "num_chains")
    if not (isinstance(burn_in, float | int) and 0 <= burn_in < 1):
        raise ValueError(f"`burn_in` must be a fraction in [0, 1), got {burn_in!r}.")
    num_warmup = round(num_iterations * burn_in)
    if num_iterations - num_warmup < 2:
        raise ValueError(
            f"`num_iterations`={num_iterations} with `burn_in`={burn_in} keeps fewer than 2 iterations."
        )
    if not isinstance(init_params, dict):
        raise ValueError(f"`init_params` must be a dict of θ's constrained values, got {init_params!r}.")
    with allow_overflow():  # an unknown n drawn from its prior may exceed the capacity here
        tr = prototype(model, random.key(0), model_args, model_kwargs)
    roles = model_spec(tr)
    if set(init_params) != set(roles.theta):
        raise ValueError(
            f"`init_params` must give exactly the sites {sorted(roles.theta)}, got {sorted(init_params)}."
        )
    supports = {k: tr[k]["fn"].support for k in roles.theta}
    check_init_params(init_params, supports)
    update = m_step_update(m_step, roles.size)
    kernel = em_kernel(model, update, unknown_n=roles.size is not None, size_moves=size_moves)
    mcmc = MCMC(
        kernel,
        num_warmup=num_warmup,
        num_samples=num_iterations - num_warmup,
        num_chains=num_chains,
        chain_method="sequential",
        progress_bar=progress_bar,
    )
    # the chains' first records are drawn from the model at θ⁽⁰⁾: records drawn at another θ (the
    # kernel's default start, from the prior) can put θ⁽¹⁾ on the boundary of its support (e.g. p = 0
    # when every record is 0), where proposals from f(· | θ) can never leave it
    rng_key, key_records = random.split(rng_key)
    start = jax.vmap(
        lambda k: records_at(model, init_params, roles.latent_records, k, model_args, model_kwargs)
    )(random.split(key_records, num_chains))
    start.update(
        {k: jnp.broadcast_to(jnp.asarray(v), (num_chains, *jnp.shape(v))) for k, v in init_params.items()}
    )
    if num_chains == 1:
        start = {k: v[0] for k, v in start.items()}
    mcmc.run(rng_key, *model_args, init_params=start, **model_kwargs)
    samples = mcmc.get_samples(group_by_chain=True)
    params = {k: jnp.mean(samples[k], axis=(0, 1)) for k in roles.theta}
    absorbed = _absorbed(samples, supports)
    if absorbed:
        params.update({k: jnp.full_like(params[k], jnp.nan) for k in absorbed})
        where = "; ".join(f"{k} = {v}" for k, v in absorbed.items())
        warnings.warn(
            f"stochastic_em: chains were absorbed on the boundary of θ's support ({where} from some "
            "iteration to the end of the run): there the records drawn from f(· | θ) give back the same "
            "θ (e.g. p = 0 once every record is 0), so the iterates have no stationary law around the MLE, "
            "and θ̂ is NaN for these sites. Use dpjax.infer.mcem, whose E-step weighs the records given the "
            "release.",
            UserWarning,
            stacklevel=2,
        )
    with np.errstate(invalid="ignore", divide="ignore"):  # a chain that did not move: NaN, flagged below
        ess = {k: effective_sample_size(np.asarray(samples[k], np.float64)) for k in roles.theta}
    se = {k: jnp.std(samples[k], axis=(0, 1)) / jnp.sqrt(jnp.asarray(ess[k])) for k in roles.theta}
    low = {k: float(np.min(v)) for k, v in ess.items() if not np.min(v) >= MIN_ESS}  # NaN: a stuck chain
    if low:
        warnings.warn(
            f"stochastic_em: effective sample sizes {low} of θ's iterates are below {MIN_ESS} (NaN: a "
            "chain did not move): θ̂'s Monte Carlo error is large; raise `num_iterations`, or check "
            "`samples` for a chain stuck on the boundary of θ's support.",
            UserWarning,
            stacklevel=2,
        )
    return StochasticEMResult(params, se, jax.tree.map(jnp.asarray, ess), samples)


def _absorbed(samples, supports) -> dict:
    """``{site: value}`` of the θ sites whose iterates sit, in some chain, on the boundary of their
    support (unconstrained value ±inf: p = 0 or 1, a rate 0) over the last tenth of the kept iterations:
    the boundary absorbs (records drawn from f(· | θ) there give back the same θ), so a chain found there
    at the end has stayed since it arrived, perhaps after the burn-in."""
    out = {}
    for k, support in supports.items():
        if support.is_discrete:
            continue
        draws = np.asarray(samples[k], np.float64)
        edge = ~np.isfinite(np.asarray(biject_to(support).inv(jnp.asarray(samples[k]))))
        tail = max(1, edge.shape[1] // 10)
        stuck = np.all(edge[:, -tail:].reshape((edge.shape[0], tail, -1)), axis=1)  # (chains, entries)
        if stuck.any():
            out[k] = np.unique(
                draws.reshape(stuck.shape[:1] + (-1,) + stuck.shape[1:])[:, -1][stuck]
            ).tolist()
    return out


def records_at(model, params, sites, rng_key, model_args=(), model_kwargs=None):
    """The record sites ``sites`` of one draw of ``model`` at θ = ``params`` (a start for the records
    of stochastic EM or a data-augmentation chain); n may be drawn beyond a records plate's capacity."""
    model_kwargs = model_kwargs or {}
    with allow_overflow():
        tr = handlers.trace(handlers.seed(handlers.substitute(model, data=params), rng_key))
        tr = tr.get_trace(*model_args, **model_kwargs)
    return {k: tr[k]["value"] for k in sites}
