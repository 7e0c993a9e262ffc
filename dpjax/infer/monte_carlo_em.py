"""Monte Carlo EM for privatized data (Gong, Algorithms 2–3, eqs. 4.2–4.7).

E-step (``e_step``): record sets drawn, or weighted, from p(records | s_dp, θ⁽ᵗ⁾). The importance
E-step (the only one so far) simulates the records from the model at θ⁽ᵗ⁾ and weights them by the
mechanism density, w̃ᵢ ∝ η(s_dp | Tᵢ) (the privatized sites' own log densities). M-step: a user's
closed form on the weighted records (exponential families, eq. 4.3), or any ``optax`` optimizer on
the weighted complete-data log-likelihood Q (eq. 4.5). At the end, the observed score and observed
Fisher information by Louis's formula (eqs. 4.6–4.7), with per-record-set gradients from JAX autodiff.
"""

from __future__ import annotations

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
from numpyro.infer.gibbs import prototype_trace
from tqdm.auto import tqdm

from ..primitives import simulate, site_roles
from .abc import _avals, _compiled, _positive_whole, _split_args
from .chains import check_init_params

__all__ = ["E_STEPS", "ConvergenceWarning", "MCEMResult", "is_mcem", "mcem"]

# the E-steps `mcem` accepts (an MCMC E-step, equally weighted draws of the records given the
# release, is planned): each gives (record sets, normalised weights, effective sample size)
E_STEPS = ("importance",)


class ConvergenceWarning(UserWarning):
    """An ``mcem`` stage stopped at ``max_iterations`` before meeting its tolerance."""


class MCEMResult(NamedTuple):
    """- **params** – the MLE θ̂; **score** and **information** – observed score and observed
    Fisher information at θ̂ (Louis), flattened in ``ravel_pytree`` order of ``params``;
    **std_errors** – ``sqrt(diag(information⁻¹))`` per site;
    **history** – θ after each iteration, ``{site: array of shape (num_iterations, *site_shape)}``
    (row t is the M-step of iteration t; the starting value is not included, the last row is
    ``params``); **ess** – the E-step's effective sample size per iteration (importance
    sampling: eq. 4.4), shape ``(num_iterations,)``; **num_particles** – N per iteration, shape
    ``(num_iterations,)``.

    All fields are arrays (a pytree), so results of a study can be stacked with ``jax.tree.map``
    (histories of equal length, e.g. by padding, for the per-iteration fields)."""

    params: dict
    score: np.ndarray
    information: np.ndarray
    std_errors: dict
    history: dict
    ess: jax.Array
    num_particles: jax.Array

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
    num_particles: Sequence[int] = (1_000, 100_000, 1_000_000),
    tolerances: Sequence[float] = (1e-3, 1e-4, 1e-5),
    max_iterations: int = 200,
    m_step: Callable | None = None,
    optimizer=None,
    num_m_steps: int = 200,
    progress_bar: bool = True,
    **model_kwargs,
) -> MCEMResult:
    """Maximum likelihood for θ from a privatized release by Monte Carlo EM, with Louis's observed
    information.

    ``e_step`` chooses how the records given the release are drawn at θ⁽ᵗ⁾ (one of
    :data:`E_STEPS`): ``"importance"`` (Gong, Algorithm 2) simulates N record sets from the model
    at θ⁽ᵗ⁾ and weights them by the mechanism density η(s_dp | T). Runs stage k with
    ``num_particles[k]`` record sets (common random numbers within the stage) until the max-norm
    change of θ is below ``tolerances[k]`` (the seed's stopping rule, Appendix E), then the next
    stage from there. ``m_step(records, weights) -> params`` gives a closed-form M-step; otherwise
    ``optimizer`` (default ``optax.adam(0.05)``) takes ``num_m_steps`` steps on the weighted
    log-likelihood in unconstrained space. ``init_params`` are constrained θ values; the prior
    sites of the model are ignored (likelihood inference). A progress bar (``progress_bar=False``
    silences it) shows the stage, its particle count, the iteration and the last change; a stage
    that reaches ``max_iterations`` before its tolerance issues a :class:`ConvergenceWarning`.
    """
    if not isinstance(e_step, str) or e_step not in E_STEPS:
        raise ValueError(f"`e_step` must be one of {list(E_STEPS)}, got {e_step!r}.")
    num_particles, tolerances = tuple(num_particles), tuple(tolerances)
    if len(num_particles) != len(tolerances) or not num_particles:
        raise ValueError("`num_particles` and `tolerances` must be non-empty and of equal length.")
    num_particles = tuple(_positive_whole(n, "num_particles") for n in num_particles)
    if any(not (np.isfinite(t) and t > 0) for t in tolerances):
        raise ValueError(f"`tolerances` must be positive and finite, got {tolerances!r}.")
    for name, value in (("max_iterations", max_iterations), ("num_m_steps", num_m_steps)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"`{name}` must be a positive int, got {value!r}.")
    params = {k: jnp.asarray(v, dtype=jnp.result_type(float)) for k, v in init_params.items()}
    tr = prototype_trace(model, random.key(0), model_args, model_kwargs)
    roles = site_roles(tr)
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
    privatized = [n for n, _ in roles.privatized]
    latent, records = roles.latent_records, roles.latent_records + roles.public_records

    args = _split_args(model_args, model_kwargs)

    def simulate_records(key, params, a, kw):
        tr, log_eta = simulate(key, model, privatized, a, kw, data=params)
        return {k: tr[k]["value"] for k in latent}, log_eta

    def record_loglik(params, recs, a=model_args, kw=model_kwargs):
        """log p(records | θ): the record sites' densities, privatized sites excluded."""
        tr = handlers.trace(handlers.condition(model, data={**params, **recs})).get_trace(*a, **kw)
        return sum(jnp.sum(tr[k]["fn"].log_prob(tr[k]["value"])) for k in records)

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

    # build(traced) -> jitted (key, params, num, dynamic) -> (records, normalised weights, ESS)
    e_step_builders = {"importance": build_importance_e_step}

    def build_m_step(traced):
        def numeric_m_step(params, recs, w, dynamic):
            import optax

            a, kw = unpack(traced, dynamic)
            if traced:  # the supports (hence transforms) may depend on the traced arguments
                tr = handlers.trace(handlers.seed(handlers.substitute(model, data=params), random.key(0)))
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
        key += (jax.tree.structure(params), _avals(jax.tree.leaves(params)))
    e_key = None if key is None else ("mcem.e_step", e_step) + key
    draw = _compiled(e_key, e_step_builders[e_step], args.dynamic)
    if m_step:
        m_update = lambda params, recs, w: m_step(recs, w)
    else:
        m_key = None if key is None else ("mcem.m_step", optimizer, num_m_steps) + key
        m_update = _compiled(m_key, build_m_step, args.dynamic)
    history, ess_trace, sizes = [], [], []
    for stage, (n, tol) in enumerate(zip(num_particles, tolerances), start=1):
        # common random numbers within a stage: the stage's Monte Carlo EM map is then
        # deterministic, so the stopping rule sees its convergence rather than simulation noise
        rng_key, key = random.split(rng_key)
        desc = f"MCEM stage {stage}/{len(num_particles)}, {int(n):,} particles"
        with tqdm(total=max_iterations, desc=desc, unit="it", disable=not progress_bar, leave=False) as bar:
            for _ in range(max_iterations):
                recs, w, ess = draw(key, params, int(n))
                new = {k: jnp.asarray(v) for k, v in m_update(params, recs, w).items()}
                change = max(float(jnp.max(jnp.abs(new[k] - params[k]))) for k in params)
                params = new
                history.append(params)
                ess_trace.append(ess)
                sizes.append(int(n))
                bar.update()
                bar.set_postfix_str(f"change {change:.3g} (tol {tol:.3g}), ESS {float(ess):,.0f}")
                if change < tol:
                    break
        if not change < tol:
            last = "the final stage" if stage == len(num_particles) else f"stage {stage}"
            warnings.warn(
                f"mcem: {last} ({int(n):,} particles) reached max_iterations={max_iterations} with a last "
                f"change of {change:.3g} > tolerance {tol:.3g}; "
                + (
                    "the returned θ̂ is not converged: raise `max_iterations` or loosen `tolerances`."
                    if stage == len(num_particles)
                    else "the next stage starts from an unconverged θ."
                ),
                ConvergenceWarning,
                stacklevel=2,
            )

    # Louis (4.6–4.7) at θ̂, with the last stage's particle size
    rng_key, key = random.split(rng_key)
    recs, w, _ = draw(key, params, int(num_particles[-1]))
    flat, unravel = ravel_pytree(params)
    ll = lambda f, r: record_loglik(unravel(f), r)
    lam = jax.vmap(jax.grad(ll), in_axes=(None, 0))(flat, recs)
    hess = jax.vmap(jax.hessian(ll), in_axes=(None, 0))(flat, recs)
    score = w @ lam
    info = (
        -jnp.einsum("i,ijk->jk", w, hess) - jnp.einsum("i,ij,ik->jk", w, lam, lam) + jnp.outer(score, score)
    )
    se_flat = jnp.sqrt(jnp.diag(jnp.linalg.inv(info)))
    return MCEMResult(
        params,
        np.asarray(score),
        np.asarray(info),
        jax.tree.map(np.asarray, unravel(se_flat)),
        jax.tree.map(lambda *xs: jnp.stack(xs), *history),
        jnp.stack(ess_trace),
        jnp.asarray(sizes, dtype=jnp.int32),
    )


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
