"""Pseudo-marginal ABC-MCMC with the privacy mechanism as kernel (beyond Gong's Algorithm 1).

The likelihood of the release, L(θ) = E_{T ~ f(·|θ)} η(s_dp | T), is estimated without bias by
the mean of η over ``num_simulations`` model simulations at θ. Random-walk Metropolis on
unconstrained θ that keeps the estimate of the current state (never re-estimates it) targets the
exact posterior (Andrieu & Roberts, 2009), and, unlike rejection ABC, does not starve when prior
and release conflict: it only needs the likelihood estimate near the posterior, not the evidence.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import random
from jax.flatten_util import ravel_pytree
from jax.scipy.special import logsumexp
from numpyro.distributions import biject_to

from .._validate import positive_int
from ..primitives import simulate
from .abc import prior_spec
from .chains import (
    PerChainKernel,
    check_init_params,
    draw_moments,
    flat_theta,
    records_hidden,
    report_at_end_of_warmup,
    report_now,
    report_poor_mixing,
)
from .mh import RWState, accept, adapt, init_rw, proposer
from .spec import ModelSpec

__all__ = [
    "PMCore",
    "PMState",
    "PseudoMarginalABC",
    "PseudoMarginalWarning",
    "build_kernel",
    "init",
    "refresh",
]

# Sherlock et al. (2015): with a noisy likelihood the optimal random-walk acceptance is ~0.07–0.15
TARGET_ACCEPT = 0.15
# the most efficient s.d. of the log-likelihood estimate is about 1.2 (Doucet et al., 2015), 1.8 for
# random-walk proposals (Sherlock et al., 2015); well above that chains stick after lucky
# overestimates, so the end-of-warmup check warns above MAX_LOG_LIK_SD and suggests m for TARGET_LOG_LIK_SD
TARGET_LOG_LIK_SD = 1.2
MAX_LOG_LIK_SD = 2.5
# the end-of-warmup check pools the simulations of (at most) this many final warmup proposals
CHECK_STEPS = 200


class PseudoMarginalWarning(UserWarning):
    """The log-likelihood estimate of a :class:`PseudoMarginalABC` chain is too noisy."""


class PMState(NamedTuple):
    """- **z** – θ (constrained) of the current state; **flat** – its unconstrained vector;
    - **log_prior** – log p(θ) + log |Jacobian| (+ log p(public records | θ));
    - **log_lik** – the current state's log likelihood *estimate*, kept until a move is accepted;
    - **log_lik_sd** – delta-method s.d. of ``log_lik`` from the same simulations,
      sqrt(var(w) / (m · mean(w)²)) for the m weights w = η(s_dp | T_j); it cannot exceed 1 (one
      simulation carries the whole estimate), is ``inf`` if every weight is zero and NaN for m = 1;
    - **warmup_log_lik_sd** – the same s.d. for m simulations, estimated from all simulations of the
      last ``CHECK_STEPS`` warmup proposals pooled (so it can exceed 1); frozen after warmup, NaN
      before the pooling starts. The end-of-warmup check warns when it exceeds ``MAX_LOG_LIK_SD``;
    - **accept_prob** – Metropolis acceptance probability of the last move; **mean_accept_prob** –
      its running mean (over warmup, then restarted for the sampling phase);
    - **i** – iterations done; **rw** – the random walk's adaptation (frozen after warmup);
    - **check_log_s1, check_log_s2, check_n** – log Σ w, log Σ w² and the number of the pooled
      warmup simulations behind ``warmup_log_lik_sd``;
    - **records** – one of the current estimate's simulated databases (latent record sites), drawn
      with probability ∝ its weight: with θ it is an exact draw of (θ, x) | s_dp, what the sibling
      blocks of ``numpyro.infer.Gibbs`` are conditioned on (and what ``refresh`` keeps);
    - **draw_moments** – running sums of the flat θ over the kept draws, for the chains' R̂ and ESS
      (:func:`dpjax.infer.chains.draw_moments`)."""

    z: dict
    flat: jax.Array
    log_prior: jax.Array
    log_lik: jax.Array
    log_lik_sd: jax.Array
    warmup_log_lik_sd: jax.Array
    accept_prob: jax.Array
    mean_accept_prob: jax.Array
    i: jax.Array
    rw: RWState
    check_log_s1: jax.Array
    check_log_s2: jax.Array
    check_n: jax.Array
    records: dict
    rng_key: jax.Array
    draw_moments: tuple = ()


def _log_lik_sd(log_w):
    """Delta-method s.d. of log(mean w), sqrt(var(w) / (m mean(w)²)), from log weights, stably."""
    m = log_w.shape[0]
    log_mean = logsumexp(log_w) - jnp.log(m)
    safe = jnp.where(jnp.isfinite(log_mean), log_mean, 0.0)
    rel_var = jnp.sum(jnp.expm1(log_w - safe) ** 2) / (m - 1) if m > 1 else jnp.nan
    sd = jnp.sqrt(rel_var / m)
    return jnp.where(log_mean == -jnp.inf, jnp.inf, sd)


def _pooled_sd(log_s1, log_s2, n, m):
    """s.d. of the log of a mean of m weights, from n pooled weights with log Σ w and log Σ w²."""
    n = jnp.maximum(n, 2.0)
    rel_var = n / (n - 1) * jnp.expm1(jnp.log(n) + log_s2 - 2 * log_s1)  # sample var(w) / mean(w)²
    sd = jnp.sqrt(jnp.maximum(rel_var, 0.0) / m)
    return jnp.where(log_s1 == -jnp.inf, jnp.inf, sd)


def _report_check(sd, num_simulations):
    """Host side of the end-of-warmup check: ``sd`` holds each checked chain's log-likelihood s.d."""
    worst = np.nanmax(sd) if not np.isnan(sd).all() else np.nan
    if not worst > MAX_LOG_LIK_SD:
        return
    per_chain = ", ".join(f"{v:.2g}" for v in sd)
    if np.isinf(worst):
        advice = (
            "every pooled simulation had zero mechanism density at the release, so the chain cannot move: "
            "check that the release is possible under the model, or raise num_simulations a lot"
        )
    else:
        m_new = math.ceil(num_simulations * (worst / TARGET_LOG_LIK_SD) ** 2)
        advice = f"try num_simulations={m_new:,} (s.d. ≈ {TARGET_LOG_LIK_SD} by the rule m · (s.d. / 1.2)²)"
    warnings.warn(
        f"PseudoMarginalABC: at the end of warmup the log-likelihood estimate from num_simulations="
        f"{num_simulations} has s.d. {per_chain} (per chain; pooled over the last warmup proposals), "
        f"above {MAX_LOG_LIK_SD} (efficient chains have about 1–1.8): the chain sticks after lucky "
        f"overestimates and its draws are not reliable; {advice}. Compare chains (r_hat) and the "
        "`log_lik_sd` extra field.",
        PseudoMarginalWarning,
        stacklevel=1,
    )


class PMCore(NamedTuple):
    """The static settings of one pseudo-marginal chain (built once, at the kernel's ``init``): the model,
    its :class:`~dpjax.infer.spec.ModelSpec`, ``num_simulations`` per likelihood estimate, ``unravel``
    (flat unconstrained θ → its sites, ``ravel_pytree``'s) and whether the state's ``z`` holds the
    selected simulation's records (as a block of ``numpyro.infer.Gibbs``)."""

    model: Callable
    spec: ModelSpec
    num_simulations: int
    unravel: Callable
    store_records: bool = False


def _latent(core):
    """The simulated records kept: only as a block of numpyro.infer.Gibbs (see `refresh`); standalone,
    carrying n records per chain would be pure cost."""
    return core.spec.latent_records if core.store_records else ()


def _transforms(core):
    return {k: biject_to(core.spec.supports[k]) for k in core.spec.theta}


def _weigh(core, key, theta, args, kwargs, records=None):
    """One simulation at θ (or the given records): its log weight, log p(θ) and its records."""
    data = theta if records is None else {**theta, **records}
    releases = [n for n, _ in core.spec.privatized]
    tr, log_eta = simulate(key, core.model, releases, args, kwargs, data=data)
    log_p = lambda sites: sum(jnp.sum(tr[n]["fn"].log_prob(tr[n]["value"])) for n in sites)
    # public data may depend on the simulated records: their density joins the weight
    return (
        log_eta + log_p(core.spec.observed),
        log_p(core.spec.theta),
        {k: tr[k]["value"] for k in _latent(core)},
    )


def _estimate(core, key, theta, args, kwargs, num=None):
    """log p(θ) terms, the per-simulation log weights log η(s_dp | T_j) (+ public data) and the
    simulated records (along axis 0)."""
    one = partial(_weigh, core, theta=theta, args=args, kwargs=kwargs)
    log_w, log_prior, records = jax.vmap(one)(random.split(key, num or core.num_simulations))
    return log_prior[0], log_w, records  # log p(θ): the same in all


def _conditional_estimate(core, key, theta, records, args, kwargs):
    """log p(θ) and log weights of ``records`` (first) and of m − 1 fresh simulations at θ."""
    key_kept, key_fresh = random.split(key)  # (the kept simulation has nothing left to draw)
    log_w0, log_prior, _ = _weigh(core, key_kept, theta, args, kwargs, records=records)
    if core.num_simulations == 1:
        return log_prior, log_w0[None]
    _, log_w, _ = _estimate(core, key_fresh, theta, args, kwargs, num=core.num_simulations - 1)
    return log_prior, jnp.concatenate([log_w0[None], log_w])


def _select(key, log_w, records):
    """One simulated database, drawn with probability ∝ its weight (the first if all are 0)."""
    j = random.categorical(key, jnp.where(jnp.all(log_w == -jnp.inf), 0.0, log_w))
    return {k: v[j] for k, v in records.items()}


def _z(core, theta, records):
    return {**theta, **records} if core.store_records else dict(theta)


def _unravel(core, flat):
    phi = core.unravel(flat)
    transforms = _transforms(core)
    theta = {k: transforms[k](v) for k, v in phi.items()}
    log_jac = sum(jnp.sum(transforms[k].log_abs_det_jacobian(phi[k], theta[k])) for k in phi)
    return theta, log_jac


def init(core: PMCore, rng_key, init_params, args, kwargs) -> PMState:
    """One chain's start: θ from ``init_params`` (constrained) or a prior draw, its likelihood estimate,
    and a simulated database drawn ∝ its weight (or the records given in ``init_params``, kept)."""
    key_init, key_est, key_state = random.split(rng_key, 3)
    if init_params is None:  # a prior draw
        tr, _ = simulate(key_init, core.model, [n for n, _ in core.spec.privatized], args, kwargs)
        init_params = {k: tr[k]["value"] for k in core.spec.theta}
    transforms = _transforms(core)
    phi = {k: transforms[k].inv(jnp.asarray(init_params[k])) for k in core.spec.theta}
    flat, _ = ravel_pytree(phi)
    theta, log_jac = _unravel(core, flat)
    log_prior, log_w, sims = _estimate(core, key_est, theta, args, kwargs)
    latent = _latent(core)
    if latent and all(k in init_params for k in latent):  # given records: kept, as in refresh
        records = {k: jnp.asarray(init_params[k], sims[k].dtype) for k in latent}
        log_prior, log_w = _conditional_estimate(core, key_est, theta, records, args, kwargs)
    else:
        records = _select(random.fold_in(key_est, 1), log_w, sims)
    log_lik = logsumexp(log_w) - jnp.log(core.num_simulations)
    scalar = jnp.zeros_like(log_lik)
    zeros = jnp.zeros_like(flat_theta(theta, flat))
    return PMState(
        _z(core, theta, records), flat, log_prior + log_jac, log_lik, _log_lik_sd(log_w), scalar + jnp.nan,
        jnp.array(1.0), jnp.array(1.0), jnp.array(0), init_rw(flat.shape[0], flat.dtype, 0.5),
        scalar - jnp.inf, scalar - jnp.inf, scalar, records,
        key_state, (jnp.array(0, jnp.int32),) + (zeros,) * 5,
    )  # fmt: skip


def build_kernel(core: PMCore, num_warmup: int):
    """``step(state, args, kwargs) -> PMState``: one pseudo-marginal Metropolis move of (θ, the selected
    simulation); the random walk adapts, and the warmup check pools its simulations, in the first
    ``num_warmup`` iterations."""
    m = core.num_simulations

    def step(state, args, kwargs):
        key, k_prop, k_est, k_acc = random.split(state.rng_key, 4)
        prop = proposer(state.rw)(k_prop, state.flat)
        theta, log_jac = _unravel(core, prop)
        log_prior, log_w, sims = _estimate(core, k_est, theta, args, kwargs)
        # (θ', the selected simulation) goes with the proposal: an MH move on the extended target
        records = _select(random.fold_in(k_est, 1), log_w, sims)
        log_lik = logsumexp(log_w) - jnp.log(m)
        log_alpha = log_prior + log_jac + log_lik - state.log_prior - state.log_lik
        proposal = (records, theta, prop, log_prior + log_jac, log_lik, _log_lik_sd(log_w))
        theta_now = {k: state.z[k] for k in core.spec.theta}
        current = (state.records, theta_now, state.flat, state.log_prior, state.log_lik, state.log_lik_sd)
        (records, theta, flat, log_prior, log_lik, log_lik_sd), info = accept(
            k_acc, log_alpha, proposal, current
        )
        rate = info.accept_prob
        # running mean of the acceptance probability, restarted when sampling begins
        n_mean = jnp.where(state.i < num_warmup, state.i, state.i - num_warmup) + 1.0
        mean_rate = state.mean_accept_prob + (rate - state.mean_accept_prob) / n_mean
        # pool the proposals' simulations over the last CHECK_STEPS warmup steps
        pool = (state.i >= num_warmup - CHECK_STEPS) & (state.i < num_warmup)
        s1 = jnp.where(pool, jnp.logaddexp(state.check_log_s1, logsumexp(log_w)), state.check_log_s1)
        s2 = jnp.where(pool, jnp.logaddexp(state.check_log_s2, logsumexp(2 * log_w)), state.check_log_s2)
        n = state.check_n + jnp.where(pool, m, 0)
        pooled = _pooled_sd(s1, s2, n, m)
        return state._replace(
            z=_z(core, theta, records),
            records=records,
            flat=flat,
            log_prior=log_prior,
            log_lik=log_lik,
            log_lik_sd=log_lik_sd,
            warmup_log_lik_sd=jnp.where(pool, pooled, state.warmup_log_lik_sd),
            accept_prob=rate,
            mean_accept_prob=mean_rate,
            check_log_s1=s1,
            check_log_s2=s2,
            check_n=n,
            i=state.i + 1,
            rw=adapt(state.rw, flat, rate, TARGET_ACCEPT, learn=state.i < num_warmup),
            rng_key=key,
            draw_moments=draw_moments(state.draw_moments, theta, state.i, num_warmup),
        )

    return step


def refresh(core: PMCore, state: PMState, args, kwargs) -> PMState:
    """Pseudo-marginal within Gibbs: when the values the model is conditioned on change (a sibling block
    moved), the cached log p(θ) and likelihood estimate are stale. This keeps θ and ``state.records``
    (the selected simulation) and draws the other ``num_simulations`` − 1 simulations afresh from the
    model at θ under the new conditioning, then re-estimates. That is the exact conditional of the other
    simulations in the pseudo-marginal extended target (the one whose (θ, selected records) marginal is
    p(θ, x | s_dp, siblings)), so the composite chain stays exact. Re-estimating from m entirely fresh
    simulations instead (Monte Carlo within Metropolis) would not be. It advances ``rng_key`` and the
    estimate, not θ or the records."""
    key, k_est = random.split(state.rng_key)
    theta, log_jac = _unravel(core, state.flat)
    log_prior, log_w = _conditional_estimate(core, k_est, theta, state.records, args, kwargs)
    return state._replace(
        log_prior=log_prior + log_jac,
        log_lik=logsumexp(log_w) - jnp.log(core.num_simulations),
        log_lik_sd=_log_lik_sd(log_w),
        rng_key=key,
    )


class PseudoMarginalABC(PerChainKernel):
    """Exact-posterior MCMC for a privatized model, by pseudo-marginal Metropolis.

    Each step proposes θ' by an adaptive Gaussian random walk on the unconstrained scale and
    simulates ``num_simulations`` confidential data sets from the model at θ' (``vmap``); the mean
    of their mechanism densities η(s_dp | T) is an unbiased likelihood estimate. Use it with
    ``numpyro.infer.MCMC`` like any NumPyro kernel. More simulations per step make the estimate less
    noisy, so the chain sticks less after a lucky overestimate, at proportional cost; aim for a
    log-likelihood estimate with s.d. of about 1–1.8 at the posterior. The state's ``log_lik_sd``
    (collected by default, shown in the progress bar and in ArviZ's ``sample_stats``) reports the
    s.d. of the current estimate; at the end of warmup a :class:`PseudoMarginalWarning` with a
    suggested ``num_simulations`` is issued when the s.d. pooled over the last warmup proposals
    exceeds ``MAX_LOG_LIK_SD`` (2.5). θ must be continuous (use ``exact_abc`` for discrete θ).
    With ``MCMC(..., jit_model_args=True)``, a new release of the same shape reuses the compiled
    sampling loop (only ``init``'s eager traces of the model run again).

    It can be a block of ``numpyro.infer.Gibbs`` that owns θ *and* the latent record sites (the
    state keeps one simulated database, drawn ∝ its weight), e.g.
    ``Gibbs([(PseudoMarginalABC(model), ["p", "x"]), (NUTS(model), ["q"])])``; see :meth:`refresh`
    for why that stays exact.

    >>> import jax, jax.numpy as jnp, numpyro, dpjax
    >>> from numpyro.infer import MCMC
    >>> kernel = dpjax.infer.PseudoMarginalABC(dpjax.models.poisson_count, num_simulations=32)
    >>> mcmc = MCMC(kernel, num_warmup=500, num_samples=1000, progress_bar=False)
    >>> mcmc.run(jax.random.key(0), 2.0, jnp.array(37.4))
    >>> mcmc.get_samples()["theta"].shape
    (1000,)
    """

    sample_field = "z"

    def __init__(self, model, num_simulations: int = 64):
        num_simulations = positive_int(num_simulations, "num_simulations")
        self._model = model
        self._num_simulations = int(num_simulations)
        self._store_records = False

    @property
    def model(self):
        """The model with records and releases hidden (after ``init``), for ``az.from_numpyro``."""
        spec = getattr(self, "_spec", None)
        return self._model if spec is None else records_hidden(self._model, spec)

    @property
    def default_fields(self):
        return ("z", "accept_prob", "log_lik_sd")

    def get_diagnostics_str(self, state):
        return (
            f"acc. prob {float(state.mean_accept_prob):.2f}, step {float(jnp.exp(state.rw.log_step)):.2g}, "
            f"log-lik sd {float(state.log_lik_sd):.2f}"
        )

    # NumPyro 0.22's block protocol (`refresh`, `get_constrain_fn` of PerChainKernel)
    def wrap_model(self, wrapper):
        """A new kernel with the same ``num_simulations`` on ``wrapper(model)``, as
        ``numpyro.infer.Gibbs`` makes its blocks. The copy puts ``state.records`` in ``z``: in a
        composite the latent records are sites of this block, and its siblings are conditioned on
        them."""
        kernel = type(self)(wrapper(self._model), self._num_simulations)
        kernel._store_records = True
        return kernel

    def _refresh_one(self, state, args, kwargs):
        """Pseudo-marginal within Gibbs (:func:`refresh`): θ and the selected simulation kept, the other
        simulations redrawn under the new conditioning, the estimate recomputed."""
        return refresh(self._core, state, args, kwargs)

    def init(self, rng_key, num_warmup, init_params, model_args, model_kwargs):
        model_kwargs = {} if model_kwargs is None else dict(model_kwargs)
        spec = prior_spec(self._model, model_args, model_kwargs, engine="PseudoMarginalABC")
        theta, tr = spec.theta, spec.trace
        discrete = [k for k in theta if tr[k]["fn"].support.is_discrete]
        if discrete:
            raise ValueError(
                f"PseudoMarginalABC moves θ by a random walk on the unconstrained scale, so every θ site "
                f"needs a continuous prior; sites {discrete} are discrete. Use `exact_abc` (any proper "
                "prior), or DataAugmentationKernel with a `theta_update` that draws θ exactly."
            )
        if init_params is not None:
            # numpyro.infer.Gibbs gives every site of the block: θ and the latent records
            supports = {k: tr[k]["fn"].support for k in theta}
            check_init_params(init_params, supports, allowed=list(theta) + list(spec.model.latent_records))
            missing = sorted(set(theta) - set(init_params))
            if missing:
                raise ValueError(f"`init_params` must give every θ site {sorted(theta)}; missing {missing}.")
        self._num_warmup = int(num_warmup)
        self._spec = spec.model
        # the flat θ's layout (static: shapes and dtypes), on the host before any vmap over chains
        start = {k: biject_to(spec.model.supports[k]).inv(jnp.asarray(tr[k]["value"])) for k in theta}
        _, unravel = ravel_pytree(start)
        self._core = PMCore(self._model, spec.model, self._num_simulations, unravel, self._store_records)

        def init_one(key, params, *, model_args, model_kwargs):
            return init(self._core, key, params, args=model_args, kwargs=model_kwargs)

        return self._start(rng_key, init_one, init_params, model_args, model_kwargs, (self._num_simulations,))

    def _check_step(self, state, new):
        if self._num_warmup > 0:
            report_at_end_of_warmup(state.i, self._num_warmup, new.warmup_log_lik_sd, self._report)
        report_poor_mixing(new.draw_moments, self._num_warmup, new.z, self._spec.theta)

    def check_end(self, state):
        if self._num_warmup > 0:  # warmup_log_lik_sd keeps its end-of-warmup value
            report_now(state.warmup_log_lik_sd, self._report)

    def _report(self, sd):
        _report_check(sd, num_simulations=self._num_simulations)

    def _sample_one(self, state, args, kwargs, shared=()):
        return build_kernel(self._core, self._num_warmup)(state, args, kwargs)
