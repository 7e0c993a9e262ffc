"""Monte Carlo EM for privatized data (Gong, Algorithms 2–3, eqs. 4.2–4.7; Awan, Barrientos & Ju,
§5.2, Algorithm 2 and Remark 5.7).

E-step (``e_step``): record sets drawn, or weighted, from p(records, n | s_dp, θ⁽ᵗ⁾). The importance
E-step simulates the records from the model at θ⁽ᵗ⁾ and weights them by the mechanism density,
w̃ᵢ ∝ η(s_dp | Tᵢ) (the privatized sites' own log densities). The MCMC E-step runs the
data-augmentation record sweep (and, with an unknown n, the reversible-jump birth/death moves) with
θ held at θ⁽ᵗ⁾, warm-started from the previous iteration's chains, and weights its draws equally.
M-step: a user's closed form on the weighted records (exponential families, eq. 4.3), or any
``optax`` optimizer on the weighted complete-data log-likelihood Q (eq. 4.5), log p(x_{1:n}, n | θ)
when n is latent. At the end, the observed score and observed Fisher information by Louis's formula
(eqs. 4.6–4.7), with per-record-set gradients from JAX autodiff.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import random
from jax.flatten_util import ravel_pytree
from numpyro import handlers
from numpyro.distributions import biject_to
from tqdm.auto import tqdm

from .._validate import positive_int
from ..primitives import allow_overflow, simulate
from . import em_core
from ._compile import avals, compiled, split_args
from .chains import check_init_params
from .em_core import BURN_IN, em_kernel
from .rules import check_release_reads_records
from .spec import model_spec, prototype

__all__ = ["E_STEPS", "ConvergenceWarning", "MCEMResult", "is_mcem", "mcem"]

# the E-steps `mcem` accepts: each gives (record sets, normalised weights, effective sample size)
E_STEPS = ("importance", "mcmc")

# per E-step: default (num_particles, tolerances) stages
DEFAULT_STAGES = {
    "importance": ((1_000, 100_000, 1_000_000), (1e-3, 1e-4, 1e-5)),
    "mcmc": ((1_000, 4_000, 16_000), (1e-2, 3e-3, 1e-3)),
}
NOISE_Z = 2.0  # e_step="mcmc": a step within NOISE_Z Monte Carlo s.e. is noise (ends a non-final stage)
#: warn when EM's rate says θ̂ is further than this many final tolerances from the fixed point (at 10,
#: mcem(e_step="mcmc") stopped 9 tolerances from the MLE without a word: reliability_t3 C-mcem-mcmc-n25)
DISTANCE_OVER_TOLERANCE = 2.0


class ConvergenceWarning(UserWarning):
    """An ``mcem`` stage stopped at ``max_iterations`` before meeting its tolerance."""


class MCEMResult(NamedTuple):
    """- **params** – the MLE θ̂; **score** and **information** – observed score and observed
    Fisher information at θ̂ (Louis), flattened in ``ravel_pytree`` order of ``params``;
    **std_errors** – ``sqrt(diag(information⁻¹))`` per site;
    **history** – θ after each iteration, ``{site: array of shape (num_iterations, *site_shape)}``
    (row t is the M-step of iteration t; the starting value is not included, the last row is
    ``params``); **ess** – the E-step's effective sample size per iteration (importance
    sampling: eq. 4.4; MCMC: the batch-means ESS of the complete-data score at θ⁽ᵗ⁺¹⁾, smallest over its
    components), shape ``(num_iterations,)``; **num_particles** – N per iteration (MCMC: draws kept), shape
    ``(num_iterations,)``; **mc_std_errors** – e_step="mcmc": per iteration, the Monte Carlo standard
    error of its M-step output θ⁽ᵗ⁺¹⁾ given θ⁽ᵗ⁾, ``{site: (num_iterations, *site_shape)}`` (delta
    method: J⁻¹ Σ J⁻¹ with J the mean complete-data information of the draws and Σ the batch-means
    variance of their mean complete-data score); NaN for the importance E-step; **information_mcse**
    – the Monte Carlo standard error of each entry of ``information`` (same shape); **em_rate** – the
    fraction of missing information: EM's linear rate of convergence near θ̂, the largest eigenvalue
    of I_c⁻¹ I_miss (complete and missing information at θ̂, from Louis's terms), in [0, 1); the
    distance to the fixed point is about change/(1 − em_rate), so a change below the tolerance is no
    evidence of convergence when it is near 1.

    All fields are arrays (a pytree), so results of a study can be stacked with ``jax.tree.map``
    (histories of equal length, e.g. by padding, for the per-iteration fields)."""

    params: dict
    score: np.ndarray
    information: np.ndarray
    std_errors: dict
    history: dict
    ess: jax.Array
    num_particles: jax.Array
    mc_std_errors: dict
    information_mcse: np.ndarray
    em_rate: np.ndarray

    def wald_interval(self, level: float = 0.95) -> dict:
        """``{site: (lower, upper)}``: θ̂ ± z_{(1+level)/2} · s.e. from the observed information.

        Built on the ``params`` scale; for a positive parameter near zero, reparametrise the model
        (e.g. sample log θ) so the interval stays in the support."""
        if not 0.0 < level < 1.0:
            raise ValueError(f"`level` must lie in (0, 1), got {level!r}.")
        from scipy.stats import norm

        z = norm.ppf(0.5 + level / 2)
        return {
            k: (np.asarray(v) - z * self.std_errors[k], np.asarray(v) + z * self.std_errors[k])
            for k, v in self.params.items()
        }


def mcem(
    rng_key,
    model,
    init_params: dict,
    *model_args,
    e_step: str = "importance",
    num_particles: Sequence[int] | None = None,
    tolerances: Sequence[float] | None = None,
    max_iterations: int = 200,
    m_step: Callable | None = None,
    optimizer=None,
    num_m_steps: int = 200,
    num_chains: int = 4,
    progress_bar: bool = True,
    **model_kwargs,
) -> MCEMResult:
    """Maximum likelihood for θ from a privatized release by Monte Carlo EM, with Louis's observed
    information.

    ``e_step`` chooses how the records given the release are drawn at θ⁽ᵗ⁾ (one of
    :data:`E_STEPS`):

    * ``"importance"`` (Gong, Algorithm 2) simulates N record sets from the model at θ⁽ᵗ⁾ and
      weights them by the mechanism density η(s_dp | T). Runs stage k with ``num_particles[k]``
      record sets (common random numbers within the stage) until the max-norm change of θ is below
      ``tolerances[k]`` (the seed's stopping rule, Appendix E), then the next stage from there.
      Default stages: ``(1_000, 100_000, 1_000_000)`` with tolerances ``(1e-3, 1e-4, 1e-5)``.
      It needs a known n.
    * ``"mcmc"`` (Awan, Barrientos & Ju, Algorithm 2 and Remark 5.7) draws (x_{1:n}, n) from
      p(x_{1:n}, n | s_dp, θ⁽ᵗ⁾) with θ held at θ⁽ᵗ⁾: the :class:`~dpjax.infer.DataAugmentationKernel`
      record sweep for a known n, the :class:`~dpjax.infer.ReversibleJumpKernel` sweep and 100
      birth/death moves per iteration for an n that is a latent site of a
      :func:`dpjax.records_plate`. ``num_chains`` chains are started once (n at the noisy n, as the
      kernel does) and warm-started at every E-step from where the previous one left them (the
      seed's Appendix C.1). An E-step of stage k runs each chain ⌈num_particles[k] / num_chains⌉
      kept iterations after a burn-in of 30 % of its iterations (the seed's), and the M-step
      maximises the equally weighted average of log p(x_{1:n}, n | θ) over the kept draws (p(n | θ)
      counts when n's prior has θ in it). Stopping rule: stage k ends when the max-norm change of θ
      is below ``tolerances[k]``, or, except in the last stage, when every component of the step is
      within 2 Monte Carlo standard errors of zero (the step can no longer be told from the noise
      of ``num_particles[k]`` draws, Booth & Hobert's signal to use more: the next stage). The
      draws are dependent across iterations, so the change never falls below the Monte Carlo noise:
      give the last stage a tolerance above about twice its Monte Carlo error
      (``result.mc_std_errors``), or it ends at ``max_iterations`` with a warning. Default stages:
      ``(1_000, 4_000, 16_000)`` draws with tolerances ``(1e-2, 3e-3, 1e-3)``.

    ``m_step(records, weights) -> params`` gives a closed-form M-step (``records`` holds the latent
    record sites with record sets along axis 0 and, with an unknown n, n's site, shape ``(N,)``;
    only the first n slots of each record set are records); otherwise ``optimizer`` (default
    ``optax.adam(0.05)``) takes ``num_m_steps`` steps on the weighted log-likelihood in
    unconstrained space. ``init_params`` are constrained θ values; the prior sites of the model
    are ignored (likelihood inference). A progress bar (``progress_bar=False`` silences it) shows
    the stage, its particle count, the iteration and the last change; a stage that reaches
    ``max_iterations`` before its tolerance issues a :class:`ConvergenceWarning`. A change below the
    tolerance bounds the distance to the MLE only when EM converges fast: near θ̂ it is linear with
    rate r = ``result.em_rate`` (the fraction of missing information), so the distance is about
    change/(1 − r); when that exceeds twice the final tolerance (r near 1: a very noisy release),
    ``mcem`` also issues a :class:`ConvergenceWarning`.

    Observed information (Louis): I(θ̂) = −E[∇² log p_c] − E[∇ log p_c ∇ log p_c^T] + E[∇ log p_c]
    E[∇ log p_c]^T, expectations over the records (and n) given s_dp at θ̂, from one more E-step with
    the last stage's size (weighted particles, or the MCMC draws). Its Monte Carlo error is in
    ``information_mcse`` (importance: the weighted-sample standard error; MCMC: batch means over
    the chains); the information is a difference of the complete and the missing information, so
    its relative error grows with the fraction of missing information.

    >>> import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist, dpjax
    >>> def model(s_dp=None):
    ...     p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    ...     with numpyro.plate("people", 30):
    ...         x = numpyro.sample("x", dist.Bernoulli(p))
    ...     dpjax.privatized("count", dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0),
    ...                      lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)
    >>> m_step = lambda recs, w: {"p": w @ recs["x"].mean(1)}
    >>> out = dpjax.infer.mcem(jax.random.key(0), model, {"p": 0.5}, jnp.array(12.3), e_step="mcmc",
    ...                        m_step=m_step, num_particles=(400,), tolerances=(0.01,), progress_bar=False)
    >>> 0.3 < float(out.params["p"]) < 0.5
    True
    """
    if not isinstance(e_step, str) or e_step not in E_STEPS:
        raise ValueError(f"`e_step` must be one of {list(E_STEPS)}, got {e_step!r}.")
    mcmc = e_step == "mcmc"
    default_particles, default_tolerances = DEFAULT_STAGES[e_step]
    num_particles = tuple(default_particles if num_particles is None else num_particles)
    tolerances = tuple(default_tolerances if tolerances is None else tolerances)
    if len(num_particles) != len(tolerances) or not num_particles:
        raise ValueError("`num_particles` and `tolerances` must be non-empty and of equal length.")
    num_particles = tuple(positive_int(n, "num_particles") for n in num_particles)
    if any(not (np.isfinite(t) and t > 0) for t in tolerances):
        raise ValueError(f"`tolerances` must be positive and finite, got {tolerances!r}.")
    max_iterations = positive_int(max_iterations, "max_iterations")
    num_m_steps = positive_int(num_m_steps, "num_m_steps")
    num_chains = positive_int(num_chains, "num_chains")
    params = {k: jnp.asarray(v, dtype=jnp.result_type(float)) for k, v in init_params.items()}
    with allow_overflow():  # an unknown n drawn from its prior may exceed the capacity here
        tr = prototype(model, random.key(0), model_args, model_kwargs)
    roles = model_spec(tr)
    # the M-step maximises log p(records | θ): a release that reads θ itself would drop out of it
    check_release_reads_records(model, tr, roles, model_args, model_kwargs, engine="mcem")
    supports = {k: tr[k]["fn"].support for k in roles.theta}
    check_init_params(params, supports, allowed=roles.theta)
    if set(params) != set(roles.theta):
        raise ValueError(
            f"`init_params` must give exactly the sites {sorted(roles.theta)}, got {sorted(params)}."
        )
    discrete = [k for k in params if supports[k].is_discrete]
    if discrete:
        raise ValueError(
            f"mcem maximises over continuous θ; sites {discrete} have a discrete support "
            f"({', '.join(str(supports[k]) for k in discrete)})."
        )
    size_sites = (roles.size,) if roles.size is not None else ()  # an unknown n: imputed with the records
    if size_sites and not mcmc:
        raise ValueError(
            f"The records plate is sized by the latent site {roles.size!r} (an unknown n): use "
            "e_step='mcmc' (reversible jump), or condition the site on a known n."
        )
    privatized = [n for n, _ in roles.privatized]
    latent, records = roles.latent_records, roles.latent_records + roles.public_records

    args = split_args(model_args, model_kwargs)

    def simulate_records(key, params, a, kw):
        tr, log_eta = simulate(key, model, privatized, a, kw, data=params)
        return {k: tr[k]["value"] for k in latent}, log_eta

    def record_loglik(params, recs, a=model_args, kw=model_kwargs):
        """log p(records, n | θ): the record sites' densities (and n's, when it is latent),
        privatized sites excluded; a records plate masks the slots beyond n."""
        tr = handlers.trace(handlers.condition(model, data={**params, **recs})).get_trace(*a, **kw)
        return sum(jnp.sum(tr[k]["fn"].log_prob(tr[k]["value"])) for k in records + size_sites)

    def unpack(traced, dynamic):
        return args.rebuild(dynamic) if traced else (model_args, model_kwargs)

    def build_importance_e_step(traced):
        @partial(jax.jit, static_argnums=2)
        def importance_e_step(key, params, num, dynamic):
            a, kw = unpack(traced, dynamic)
            recs, log_eta = jax.vmap(lambda k: simulate_records(k, params, a, kw))(random.split(key, num))
            w = jax.nn.softmax(log_eta)
            return recs, w, 1.0 / jnp.sum(w**2)

        return importance_e_step

    def build_mcmc_e_step(traced):
        @partial(jax.jit, static_argnums=(2, 3))
        def mcmc_e_step(states, params, burn, keep, dynamic):
            a, kw = unpack(traced, dynamic)
            core = em_core.held_core(model, a, kw)
            states, draws, valid = em_core.mcmc_e_step(core, states, params, burn, keep, a, kw)
            return _strongly_typed(states), draws, valid

        return mcmc_e_step

    # build(traced) -> jitted (key, params, num, dynamic) -> (records, normalised weights, ESS)
    e_step_builders = {"importance": build_importance_e_step}

    def batch_means(values, chains):
        """Covariance of the mean of ``values`` (draws × d, chain by chain), by batch means: each
        chain cut into ⌊√length⌋-long batches."""
        m = values.shape[0]
        length = m // chains
        size = max(1, math.isqrt(length))
        per = length // size
        means = values.reshape(chains, length, -1)[:, : per * size].reshape(chains * per, size, -1).mean(1)
        centred = means - means.mean(0)
        return size * (centred.T @ centred) / max(chains * per - 1, 1) / m

    def build_mc_error(traced):
        @partial(jax.jit, static_argnums=2)
        def mc_error(params, recs, chains, dynamic):
            """Monte Carlo s.e. of the M-step output θ⁽ᵗ⁺¹⁾ (delta method: θ⁽ᵗ⁺¹⁾ solves the mean
            complete-data score = 0, so its error is J⁻¹ × the error of that mean) and the
            batch-means ESS of the score (smallest over its components)."""
            a, kw = unpack(traced, dynamic)
            flat, unravel = ravel_pytree(params)
            ll = lambda f, r: record_loglik(unravel(f), r, a, kw)
            lam = jax.vmap(jax.grad(ll), in_axes=(None, 0))(flat, recs)
            info = -jax.hessian(lambda f: jnp.mean(jax.vmap(ll, in_axes=(None, 0))(f, recs)))(flat)
            cov = batch_means(lam, chains)
            inv = jnp.linalg.inv(info)
            se = jnp.sqrt(jnp.diag(inv @ cov @ inv.T))
            var = jnp.diag(cov)
            ess = jnp.min(jnp.where(var > 0, jnp.var(lam, 0) / jnp.where(var > 0, var, 1.0), jnp.inf))
            return unravel(se), jnp.minimum(ess, lam.shape[0])

        return mc_error

    def build_m_step(traced):
        def numeric_m_step(params, recs, w, dynamic):
            import optax

            a, kw = unpack(traced, dynamic)
            if traced:  # the supports (hence transforms) may depend on the traced arguments
                tr = handlers.trace(handlers.seed(handlers.substitute(model, data=params), random.key(0)))
                with allow_overflow():
                    tr = tr.get_trace(*a, **kw)
                sup = {k: tr[k]["fn"].support for k in params}
            else:
                sup = supports
            transforms = {k: biject_to(sup[k]) for k in params}
            to_phi = lambda p: {k: transforms[k].inv(v) for k, v in p.items()}
            to_theta = lambda f: {k: transforms[k](v) for k, v in f.items()}
            opt = optimizer or optax.adam(0.05)
            loss = lambda phi: -jnp.sum(w * jax.vmap(lambda r: record_loglik(to_theta(phi), r, a, kw))(recs))
            phi = to_phi(params)

            def step(carry, _):
                phi, state = carry
                grads = jax.grad(loss)(phi)
                updates, state = opt.update(grads, state, phi)
                return (optax.apply_updates(phi, updates), state), None

            (phi, _), _ = jax.lax.scan(step, (phi, opt.init(phi)), None, length=num_m_steps)
            return to_theta(phi)

        return jax.jit(numeric_m_step)

    key = None
    if args.key is not None:
        key = (model, tuple(privatized), tuple(latent), tuple(records), args.key)
        key += (jax.tree.structure(params), avals(jax.tree.leaves(params)))
    if mcmc:
        # the chains: started once (host-side checks of the release and of θ here), then carried
        rng_key, key_init = random.split(rng_key)
        kernel = em_kernel(model, "held", unknown_n=bool(size_sites))
        per_chain = jax.tree.map(lambda v: jnp.broadcast_to(v, (num_chains,) + jnp.shape(v)), params)
        states = kernel.init(random.split(key_init, num_chains), 0, per_chain, model_args, model_kwargs)
        states = _strongly_typed(states)  # as the E-step returns them: it compiles once, not twice
        tag = lambda name: None if key is None else (name,) + key
        chain_step = compiled(tag("mcem.mcmc_e_step"), build_mcmc_e_step, args.dynamic)
        mc_error = compiled(tag("mcem.mc_error"), build_mc_error, args.dynamic)

        def draw_mcmc(states, params, n):
            keep = -(-n // num_chains)
            burn = round(keep * BURN_IN / (1 - BURN_IN))
            states, recs, ok = chain_step(states, params, burn, keep)
            if not bool(ok):
                raise ValueError(
                    "mcem (e_step='mcmc'): the chain left the model's support (a non-finite log η(s | T) or "
                    f"θ outside its support) at θ = {jax.tree.map(np.asarray, params)}; check the release "
                    "against the mechanism and `init_params`."
                )
            m = keep * num_chains
            return states, recs, jnp.full(m, 1.0 / m, dtype=jnp.result_type(float))
    else:
        e_key = None if key is None else ("mcem.e_step", e_step) + key
        draw = compiled(e_key, e_step_builders[e_step], args.dynamic)
    if m_step:
        m_update = lambda params, recs, w: m_step(recs, w)
    else:
        m_key = None if key is None else ("mcem.m_step", optimizer, num_m_steps) + key
        m_update = compiled(m_key, build_m_step, args.dynamic)
    nan_se = jax.tree.map(lambda v: jnp.full(jnp.shape(v), jnp.nan, jnp.result_type(float)), params)
    history, ess_trace, sizes, se_trace = [], [], [], []
    for stage, (n, tol) in enumerate(zip(num_particles, tolerances), start=1):
        final = stage == len(num_particles)
        if not mcmc:
            # common random numbers within a stage: the stage's Monte Carlo EM map is then
            # deterministic, so the stopping rule sees its convergence rather than simulation noise
            rng_key, key = random.split(rng_key)
        noisy = False
        what = "draws" if mcmc else "particles"
        desc = f"MCEM stage {stage}/{len(num_particles)}, {int(n):,} {what}"
        with tqdm(total=max_iterations, desc=desc, unit="it", disable=not progress_bar, leave=False) as bar:
            for _ in range(max_iterations):
                if mcmc:
                    states, recs, w = draw_mcmc(states, params, int(n))
                else:
                    recs, w, ess = draw(key, params, int(n))
                new = {k: jnp.asarray(v) for k, v in m_update(params, recs, w).items()}
                change = max(float(jnp.max(jnp.abs(new[k] - params[k]))) for k in params)
                se = nan_se
                if mcmc:
                    se, ess = mc_error(new, recs, num_chains)
                    # the step is within the Monte Carlo noise of this many draws: more are needed
                    noisy = not final and all(
                        bool(jnp.all(jnp.abs(new[k] - params[k]) <= NOISE_Z * se[k])) for k in params
                    )
                params = new
                history.append(params)
                ess_trace.append(ess)
                sizes.append(int(w.shape[0]))
                se_trace.append(se)
                bar.update()
                bar.set_postfix_str(f"change {change:.3g} (tol {tol:.3g}), ESS {float(ess):,.0f}")
                if change < tol or noisy:
                    break
        capped = not (change < tol or noisy)
        if capped:
            last = "the final stage" if final else f"stage {stage}"
            noise = ""
            if mcmc:
                worst = max(float(jnp.max(v)) for v in jax.tree.leaves(se))
                noise = f" (Monte Carlo s.e. of the last step {worst:.3g}: a smaller change needs more draws)"
            warnings.warn(
                f"mcem: {last} ({int(n):,} {what}) reached max_iterations={max_iterations} with a last "
                f"change of {change:.3g} > tolerance {tol:.3g}{noise}; "
                + (
                    "the returned θ̂ is not converged: raise `max_iterations` or loosen `tolerances`."
                    if final
                    else "the next stage starts from an unconverged θ."
                ),
                ConvergenceWarning,
                stacklevel=2,
            )

    def louis(params, recs, w, a=model_args, kw=model_kwargs):
        """Observed score and information (4.6–4.7) from weighted record sets, and the per-record-set
        terms −∇² − ∇∇ᵀ whose weighted mean is the information's Monte Carlo part."""
        flat, unravel = ravel_pytree(params)
        ll = lambda f, r: record_loglik(unravel(f), r, a, kw)
        lam = jax.vmap(jax.grad(ll), in_axes=(None, 0))(flat, recs)
        hess = jax.vmap(jax.hessian(ll), in_axes=(None, 0))(flat, recs)
        score = w @ lam
        complete = -jnp.einsum("i,ijk->jk", w, hess)
        info = complete - jnp.einsum("i,ij,ik->jk", w, lam, lam) + jnp.outer(score, score)
        per = (-hess - jnp.einsum("ij,ik->ijk", lam, lam)).reshape(lam.shape[0], -1)
        return score, info, per, _em_rate(complete, complete - info)

    # Louis (4.6–4.7) at θ̂, with the last stage's particle size
    if mcmc:
        states, recs, w = draw_mcmc(states, params, int(num_particles[-1]))
        build_louis = lambda traced: jax.jit(lambda p, r, w, dyn: louis(p, r, w, *unpack(traced, dyn)))
        score, info, per, rate = compiled(tag("mcem.louis"), build_louis, args.dynamic)(params, recs, w)
    else:
        rng_key, key = random.split(rng_key)
        recs, w, _ = draw(key, params, int(num_particles[-1]))
        score, info, per, rate = louis(params, recs, w)
    unravel = ravel_pytree(params)[1]
    se_flat = jnp.sqrt(jnp.diag(jnp.linalg.inv(info)))
    # Monte Carlo error of the information: that of the weighted mean of −∇² − ∇∇ᵀ per record set
    # (the E[∇] E[∇]ᵀ term is second order at θ̂, where E[∇] ≈ 0); batch means for MCMC draws
    if mcmc:
        var = jnp.diag(batch_means(per, num_chains))
    else:
        var = jnp.sum(w[:, None] ** 2 * (per - w @ per) ** 2, 0)
    # EM's rate in [0, 1) (NaN when I_c is not positive definite); the tolerance met by a change c
    # bounds the distance to the fixed point, about c / (1 − rate), only when the rate is well below 1
    raw = float(rate)
    rate = np.clip(np.asarray(raw, info.dtype), 0.0, 1.0 - np.finfo(info.dtype).eps)
    distance = change / (1.0 - float(rate))
    if not capped and distance > DISTANCE_OVER_TOLERANCE * tol:
        if raw >= 1.0:  # EM does not contract at θ̂: a start far from the MLE, or a degenerate E-step
            implies = "is no evidence of convergence: EM does not contract at θ̂, which is not near the MLE"
        else:
            more = math.ceil(math.log(tol * (1.0 - raw) / change) / math.log(raw))
            implies = (
                f"implies a distance of about {distance:.3g} from the MLE: EM needs about {more:,} more "
                "iterations"
            )
        warnings.warn(
            f"mcem: the EM rate (the fraction of missing information) at θ̂ is {raw:.4g}, so the last "
            f"change of {change:.3g} (below the final tolerance {tol:.3g}) {implies}. Raise "
            "`max_iterations` and tighten `tolerances`, start closer to the MLE, or, with a rate near 1, "
            "use a stochastic EM or the posterior.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return MCEMResult(
        params,
        np.asarray(score),
        np.asarray(info),
        jax.tree.map(np.asarray, unravel(se_flat)),
        jax.tree.map(lambda *xs: jnp.stack(xs), *history),
        jnp.stack(ess_trace),
        jnp.asarray(sizes, dtype=jnp.int32),
        jax.tree.map(lambda *xs: jnp.stack(xs), *se_trace),
        np.asarray(jnp.sqrt(var)).reshape(info.shape),
        rate,
    )


def _em_rate(complete, missing):
    """The largest eigenvalue of I_c⁻¹ I_miss (EM's linear rate), from the symmetric form L⁻¹ I_miss L⁻ᵀ
    with I_c = L Lᵀ; NaN when I_c is not positive definite."""
    chol = jnp.linalg.cholesky(complete)
    half = jax.scipy.linalg.solve_triangular(chol, missing, lower=True)
    sym = jax.scipy.linalg.solve_triangular(chol, half.T, lower=True)
    return jnp.max(jnp.linalg.eigvalsh((sym + sym.T) / 2))


def _strongly_typed(tree):
    """``tree`` with no weakly typed leaves (PRNG keys kept): the chains' states of the MCMC E-step
    keep one type from call to call, so its compilation is reused."""
    is_key = lambda v: jax.dtypes.issubdtype(v.dtype, jax.dtypes.prng_key)
    return jax.tree.map(lambda v: v if is_key(v) else jnp.asarray(v, v.dtype), tree)


def is_mcem(rng_key, model, init_params: dict, *model_args, **kwargs) -> MCEMResult:
    """Deprecated alias of :func:`mcem` (with its default ``e_step="importance"``): the same
    arguments and result; it only adds a ``DeprecationWarning``."""
    warnings.warn(
        "`is_mcem` is deprecated and will be removed; use `dpjax.infer.mcem` (its default "
        "e_step='importance' is the same algorithm, with the same draws).",
        DeprecationWarning,
        stacklevel=2,
    )
    return mcem(rng_key, model, init_params, *model_args, **kwargs)
