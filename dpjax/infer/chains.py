"""A base for dpjax's NumPyro kernels, written for one chain: with ``chain_method="vectorized"``
NumPyro passes a batch of keys to ``init``, and the one-chain functions are then vmapped."""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
from numpyro import handlers
from numpyro.infer.mcmc import MCMCKernel
from numpyro.util import is_prng_key

from ..mechanisms.base import check_key
from ._compile import UNTRACEABLE, avals, compiled, fingerprint, keep, split_args, with_static


def check_init_params(init_params, supports, allowed=None):
    """Host-side check of the initial values a user gives an engine, before anything is compiled.

    ``init_params`` maps site names to constrained initial values (``None``: nothing to check);
    ``supports`` maps site names to their supports (``numpyro.distributions.constraints``). Every
    site of ``init_params`` that has a support is checked, elementwise, and a ValueError names the
    site, its value and the support if any element is outside it (NaN included); a site of
    ``supports`` that ``init_params`` leaves out is not an error (engines that need every site say
    so themselves). Traced values (under ``jit``/``vmap``) cannot be checked on the host and are
    skipped. With ``allowed`` (the site names an engine accepts), names outside it raise a
    ValueError listing them and the accepted ones."""
    init_params = {} if init_params is None else init_params
    if allowed is not None:
        unknown = sorted(set(init_params) - set(allowed))
        if unknown:
            raise ValueError(
                f"`init_params` has unknown sites {unknown}; the sites it can give are {sorted(allowed)}."
            )
    for k, value in init_params.items():
        if k not in supports or isinstance(value, jax.core.Tracer):
            continue
        support = supports[k]
        ok = support.check(jnp.asarray(value, jnp.result_type(float)))
        if isinstance(ok, jax.core.Tracer):  # a support with traced bounds (under jit/vmap)
            continue
        if not np.all(np.asarray(ok)):
            raise ValueError(
                f"`init_params[{k!r}]` = {np.asarray(value).tolist()!r} is outside the support of site {k!r} "
                f"({support})."
            )


# set while a runner (run_chain) traces a kernel's iterations and checks the final state itself
_CHECKS_AT_END = contextvars.ContextVar("dpjax_checks_at_end", default=False)


@contextlib.contextmanager
def checks_at_end():
    """Within this block a :class:`PerChainKernel` skips its per-iteration host checks; the runner calls
    ``kernel.check_end(final_state)`` instead. Under an outer ``vmap`` the per-iteration check is a
    ``lax.cond`` turned ``select``, whose ``jax.debug.callback`` is unrolled over the batch: one host
    call per replicate per iteration, which doubled the cost of a study of unknown-n chains."""
    token = _CHECKS_AT_END.set(True)
    try:
        yield
    finally:
        _CHECKS_AT_END.reset(token)


def report_at_end_of_warmup(iteration, num_warmup, value, report):
    """Calls ``report(values)`` on the host with the chains' ``value`` after their last warmup iteration
    (``iteration == num_warmup - 1``): a ``lax.cond`` on one chain's counter (all chains share it)
    around a ``jax.debug.callback``, so NumPyro's vectorized chains call the host once. Under an outer
    ``vmap`` the ``cond`` is a ``select`` and the host is called every iteration; the host side then
    keeps the chains whose iteration ended warmup, and calls ``report`` only if there are any."""
    is_end = iteration == num_warmup - 1
    jax.lax.cond(
        jnp.reshape(is_end, -1)[0],
        lambda a: jax.debug.callback(partial(_report_ended, report), *a),
        lambda a: None,
        (is_end, value),
    )


def report_now(value, report):
    """``report(values)`` on the host with every chain's ``value`` (for ``check_end``)."""
    jax.debug.callback(partial(_report_ended, report), True, value)


def _report_ended(report, is_end, value):
    is_end, value = np.atleast_1d(np.asarray(is_end)), np.atleast_1d(np.asarray(value, dtype=float))
    if is_end.any():
        report(value[np.broadcast_to(is_end, value.shape)])


def traced(tree) -> bool:
    """Whether any leaf of ``tree`` is a tracer (values under the caller's jit/vmap)."""
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(tree))


def first_key(rng_key):
    """One key of ``rng_key`` or of a batch of chain keys."""
    return rng_key if is_prng_key(rng_key) else rng_key[0]


class PerChainKernel(MCMCKernel):
    """Subclasses define ``_sample_one(state, model_args, model_kwargs, shared)`` and
    ``_refresh_one(state, model_args, model_kwargs)`` and, in ``init``, return
    ``self._start(rng_key, init_one, init_params, model_args, model_kwargs, settings)`` with
    ``init_one(rng_key, init_params, *, model_args, model_kwargs) -> state``.

    NumPyro 0.22's block protocol (so the kernels nest in ``numpyro.infer.Gibbs``): ``refresh`` runs
    ``_refresh_one`` per chain, ``get_constrain_fn`` is the identity (``z`` holds constrained values)
    and subclasses define ``wrap_model``."""

    _sample_fn = None
    _refresh_fn = None
    _args = None  # the model arguments' split at the last `init` (dpjax.infer._compile.split_args)
    _baked = None  # their static part, once a compiled step has kept it (jit_model_args=True)
    _traced_init = False  # whether `init` saw traced array arguments (under the caller's jit/vmap)

    def _start(self, rng_key, init_one, init_params, model_args, model_kwargs, settings=()):
        """``init_one(rng_key, init_params, *, model_args, model_kwargs)`` per chain, compiled once per
        kernel, ``settings`` (what else fixes the program) and the arguments' static part: a new run
        with new arrays of the same shapes (a new release) compiles nothing. With a batch of keys,
        ``init_params`` holds one value per chain along a leading axis, as ``numpyro.infer.MCMC`` gives
        them."""
        check_key(rng_key, batched=True)
        split = split_args(model_args, model_kwargs)
        # the static part only: the kernel keeps no traced value (NumPyro's rule for its kernels)
        self._args = split._replace(dynamic=None)
        self._traced_init = traced(split.dynamic)
        if self._baked is not None and self._baked != (split.static, fingerprint(self._static_part())):
            raise ValueError(
                "This kernel's compiled step keeps the model's non-array arguments (plate sizes, Python "
                "numbers) and what they fix (the sites' supports) at their values in its first run with "
                "`MCMC(..., jit_model_args=True)`, and they changed: build a new MCMC and kernel for "
                "them, or pass what changes between runs as arrays (jnp.asarray) that no support reads."
            )
        batched = not is_prng_key(rng_key)
        if batched and init_params is not None:
            chains = rng_key.shape[0]
            wrong = {k: jnp.shape(v) for k, v in init_params.items() if jnp.shape(v)[:1] != (chains,)}
            if wrong:
                raise ValueError(
                    f"`init_params` must hold one value per chain along a leading axis of {chains} (as "
                    f"numpyro.infer.MCMC gives them), got shapes {wrong}."
                )

        def build(traced, jit=True):
            def start(key, params, dynamic):
                args, kwargs = split.rebuild(dynamic) if traced else (model_args, model_kwargs)
                return init_one(key, params, model_args=args, model_kwargs=kwargs)

            if batched:
                start = jax.vmap(start, in_axes=(0, None if init_params is None else 0, None))
            # one program: run op by op, a start costs hundreds of small compilations (seconds)
            return jax.jit(start) if jit else start

        if batched:
            self._sample_fn = jax.vmap(self._sample_one, in_axes=(0, None, None, None))
            self._refresh_fn = jax.vmap(self._refresh_one, in_axes=(0, None, None))
        else:
            self._sample_fn, self._refresh_fn = self._sample_one, self._refresh_one
        if self._traced_init or traced((rng_key, init_params)):
            return build(traced=False, jit=False)(rng_key, init_params, ())  # the caller compiles it
        params = jax.tree.flatten(init_params)
        key = ("start", self, settings, split.key, jnp.shape(rng_key), params[1], avals(params[0]))
        state = compiled(key, build, split.dynamic)(rng_key, init_params)
        if self._kept_tracers():  # an inner kernel kept a traced argument: close over them instead
            keep(key, UNTRACEABLE)
            state = build(traced=False)(rng_key, init_params, ())
        return state

    def _kept_tracers(self) -> bool:
        """Whether the inner kernel (``_inner``, if any) kept a traced value from ``init``: NumPyro's HMC
        keeps θ's support transforms, traced where a model argument sets them."""
        inner = getattr(self, "_inner", None)
        return inner is not None and traced(vars(inner))

    def _concrete_args(self, model_args, model_kwargs):
        """The model's arguments with the static ones at the values ``init`` saw where they come
        traced (``jit_model_args=True``); those and the spec are remembered then, so that a later
        ``init`` refuses other values."""
        args, kwargs, replaced = with_static(self._args, model_args, model_kwargs)
        if replaced or (traced((args, kwargs)) and not self._traced_init):
            # a compiled step outlives this `init` (jit_model_args=True): it keeps what init saw
            self._baked = (self._args.static, fingerprint(self._static_part()))
        return args, kwargs

    def _static_part(self):
        """What the compiled step reads from ``init``'s concrete trace (the model's spec)."""
        return getattr(self, "_spec", None)

    def sample(self, state, model_args, model_kwargs):
        if self._sample_fn is None:
            raise RuntimeError("Call `init` before `sample`.")
        args, kwargs = self._concrete_args(model_args, {} if model_kwargs is None else model_kwargs)
        new = self._sample_fn(state, args, kwargs, self._shared(state))
        if not _CHECKS_AT_END.get():
            self._check_step(state, new)
            if hasattr(new, "valid"):  # every engine whose state has a `valid` flag
                report_left_support(state.valid, new.valid)
        return new

    def _shared(self, state):
        """What the chains of a batch share this iteration, decided from all of them (``state`` holds
        one row per chain when batched): the last argument of ``_sample_one``, not mapped over chains."""
        return ()

    def _check_step(self, state, new):
        """Host warnings after one iteration of all chains (a ``lax.cond``-guarded ``jax.debug.callback``,
        so the host is called only when there is something to say)."""

    def check_end(self, state):
        """The same warnings once, from the final state of a run (for runners that vmap the chain)."""

    def refresh(self, state, model_args, model_kwargs):
        """Recompute what ``state`` caches from ``(model_args, model_kwargs)`` (for a block of
        ``numpyro.infer.Gibbs``, the values of the sibling blocks' sites), per chain."""
        if self._refresh_fn is None:
            raise RuntimeError("Call `init` before `refresh`.")
        args, kwargs = self._concrete_args(model_args, {} if model_kwargs is None else model_kwargs)
        return self._refresh_fn(state, args, kwargs)

    def _refresh_one(self, state, model_args, model_kwargs):
        raise NotImplementedError

    def get_constrain_fn(self, model_args, model_kwargs):
        """Identity: ``state.z`` already holds constrained values."""
        return _identity

    def postprocess_fn(self, model_args, model_kwargs):
        return _identity  # z already holds constrained values


def _identity(z):
    return z


def _blocked(model, hidden, *args, **kwargs):
    # the hidden record sites still draw values, from a key taken from the caller's seed handler
    # (block stops their messages before they reach it), or a fixed one where there is none (ArviZ's
    # log-likelihood pass, `numpyro.infer.log_likelihood`): no visible site depends on the records
    # (dpjax.infer.rules.check_records_feed_only_releases), so their values change nothing it reads
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "outside of seed handler"
        key = numpyro.prng_key()
    seeded = handlers.seed(model, rng_seed=jax.random.key(0) if key is None else key)
    with handlers.block(hide=hidden):
        return seeded(*args, **kwargs)


def records_hidden(model, roles):
    """``model`` with its record and privatized sites blocked: what the kernels expose as
    ``.model``, so ``Predictive`` and ``az.from_numpyro`` see θ (and public data outside the
    records plate) only; the likelihood of the release itself is intractable."""
    hidden = [n for n, _ in roles.privatized] + list(roles.latent_records + roles.public_records)
    return partial(_blocked, model, hidden)


# Above this split-free R̂ of a θ coordinate over the second half of warmup, the chains disagree: a
# conservative bar (the usual 1.01–1.05 is for the kept draws; warmup halves are short and adapting).
SLOW_RHAT = 1.2
#: least warmup for the check (its second half gives each chain's mean and variance)
SLOW_MIN_WARMUP = 100


# After warmup, over the draws kept so far (≥ 2 vectorized chains): R̂ above this, or an ESS (all chains
# together) below that, and a θ site mixes too slowly for its summary to be trusted (Vehtari et al. 2021
# ask R̂ < 1.01 and ESS > 100 per chain of rank-normalised split R̂; these are looser, for a warning).
POOR_RHAT, POOR_ESS = 1.05, 100


class SlowMixingWarning(UserWarning):
    """The chains disagree about a θ site (R̂), or move so slowly that their draws hold few independent
    ones (ESS): at the end of warmup, and after it each time the kept draws double."""


class InvalidChainWarning(UserWarning):
    """A chain left the model's support while sampling: its θ draws are NaN from there on (an integer
    n keeps its value in ``MCMC.get_samples()``; :func:`~dpjax.infer.run_chain` returns it as NaN)."""


def warn_invalid(valid):
    """Host side: an :class:`InvalidChainWarning` if any chain's ``valid`` flag is False."""
    valid = np.atleast_1d(np.asarray(valid, bool))
    if valid.all():
        return
    warnings.warn(
        f"{int((~valid).sum())} of {valid.size} chains left the model's support while sampling: a "
        "non-finite log density of the release, or a θ outside its support or NaN (in float32, often "
        "records far beyond their statistic's bounds, where a θ-step loses its precision). Their θ draws "
        "are NaN from there on (an integer n keeps its value: mask it with the `valid` field, as "
        "run_chain and the studies do). Try 64-bit floats (JAX_ENABLE_X64=1), or "
        "a prior that keeps the records in range.",
        InvalidChainWarning,
        stacklevel=2,
    )


def report_left_support(valid, new_valid):
    """:func:`warn_invalid` from inside the compiled chains, with the host called only at the iteration
    where a chain's ``valid`` turns False (one ``lax.cond`` on all chains at once)."""
    left = jnp.any(valid & ~new_valid)
    jax.lax.cond(left, lambda v: jax.debug.callback(warn_invalid, v), lambda v: None, new_valid)


def flat_theta(theta, like):
    """θ's values raveled into one vector of ``like``'s dtype, sites in sorted order whatever the dict's
    (:func:`_coordinate_names` names them so); ``like`` itself when θ is empty."""
    return jnp.concatenate([jnp.ravel(theta[k]).astype(like.dtype) for k in sorted(theta)]) if theta else like


def _coordinate_names(theta_sites, z, chains):
    """The θ site of each coordinate of :func:`flat_theta` (``z``: the sites' values, chains on axis 0)."""
    return [k for k in sorted(theta_sites) for _ in range(int(np.size(z[k]) // chains))]


def warmup_moments(moments, theta, iteration, num_warmup):
    """Welford's running (count, mean, M2) of the flat θ over the second half of warmup (iterations
    ``num_warmup // 2 .. num_warmup − 1``); unchanged outside it. O(dim θ) per iteration."""
    count, mean, m2 = moments
    inside = (iteration >= num_warmup // 2) & (iteration < num_warmup)
    x = flat_theta(theta, mean)
    new_count = count + 1
    delta = x - mean
    new_mean = mean + delta / new_count
    new_m2 = m2 + delta * (x - new_mean)
    return (
        jnp.where(inside, new_count, count),
        jnp.where(inside, new_mean, mean),
        jnp.where(inside, new_m2, m2),
    )


def draw_moments(moments, theta, iteration, num_warmup):
    """Running sums of the flat θ over the kept draws (iterations from ``num_warmup`` on), each draw taken
    less the first kept one (so float32 loses nothing to a large mean): ``(count, first, Σd, Σd²,
    Σ dₜdₜ₋₁, last d)``, for the chains' R̂ and a lag-1 ESS (:func:`mixing`). O(dim θ) per iteration."""
    count, first, s1, s2, lag, last = moments
    x = flat_theta(theta, first)
    first = jnp.where(count == 0, x, first)
    d = x - first
    kept = iteration >= num_warmup
    new = (count + 1, first, s1 + d, s2 + d * d, lag + jnp.where(count > 0, d * last, 0), d)
    return tuple(jnp.where(kept, a, b) for a, b in zip(new, (count, first, s1, s2, lag, last)))


def _rhat(within, between, n):
    """Classic R̂ per coordinate and var⁺, from the mean within-chain variance W (divisor n − 1), the
    variance of the chain means (B / n) and n draws per chain. A coordinate constant in every chain
    counts as mixed (1); one constant within chains whose values differ has R̂ = ∞."""
    var_plus = (n - 1) / n * within + between
    with np.errstate(divide="ignore", invalid="ignore"):
        rhat = np.where(within > 0, np.sqrt(var_plus / within), np.where(between > 0, np.inf, 1.0))
    return rhat, var_plus


def mixing(count, first, s1, s2, lag, last):
    """Host side: R̂ (classic, not split) and the ESS of all chains together per θ coordinate, from
    :func:`draw_moments` of ≥ 2 chains (rows): the combined-chain estimator of Stan and Vehtari et al.
    (2021, eq. 10–11), ρ = 1 − (W − mean lag-1 autocovariance) / var⁺, with ESS = M·N·(1 − ρ)/(1 + ρ)
    (the autocorrelations after lag 1 taken as an AR(1)'s, ρᵗ: exact for an AR(1) chain, optimistic where
    they decay slower; chains stuck apart raise var⁺, so ρ, and lower the ESS). A coordinate constant in
    every chain counts as mixed; one constant within chains whose values differ has R̂ = ∞ and ESS 0."""
    n = float(np.asarray(count).reshape(-1)[0])
    first, s1, s2, lag, last = (np.asarray(a, float) for a in (first, s1, s2, lag, last))
    chains = first.shape[0]
    d_bar = s1 / n
    var = np.maximum(s2 / n - d_bar**2, 0.0)  # per chain, divisor n
    # Σₜ₌₂ⁿ (dₜ − d̄)(dₜ₋₁ − d̄) / n, with d₁ = 0: Σₜ₌₂ dₜ = Σd, Σₜ₌₂ dₜ₋₁ = Σd − dₙ
    auto = (lag - d_bar * (2 * s1 - last) + (n - 1) * d_bar**2) / n
    within = var.mean(0) * n / (n - 1)
    rhat, var_plus = _rhat(within, (first + d_bar).var(0, ddof=1), n)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.clip(1 - (within - auto.mean(0)) / var_plus, -1.0, 1.0)
        ess = np.where(var_plus > 0, chains * n * (1 - rho) / (1 + rho), chains * n)
    return rhat, np.minimum(ess, chains * n)


def report_poor_mixing(moments, num_warmup, z, theta_sites):
    """After warmup, each time a chain's kept draws reach ``max(num_warmup, SLOW_MIN_WARMUP)·2ʲ`` (the end
    of a run whose ``num_samples`` is such a multiple; NumPyro's ``MCMC`` does not tell a kernel how long
    its run is), a :class:`SlowMixingWarning` naming the θ sites whose R̂ over those draws exceeds
    ``POOR_RHAT`` or whose ESS is below ``POOR_ESS``. Only for a batch of ≥ 2 chains."""
    count = moments[0]
    if jnp.ndim(count) != 1 or count.shape[0] < 2 or not theta_sites:
        return
    names = _coordinate_names(theta_sites, z, count.shape[0])
    base = max(num_warmup, SLOW_MIN_WARMUP)
    doubled = count[0] // base
    at = (count[0] % base == 0) & (doubled > 0) & ((doubled & (doubled - 1)) == 0)
    jax.lax.cond(at, lambda a: jax.debug.callback(partial(_report_poor, names), *a), lambda a: None, moments)


def _report_poor(names, *moments):
    rhat, ess = mixing(*moments)
    poor = (rhat > POOR_RHAT) | (ess < POOR_ESS)
    if not poor.any():
        return
    sites = list(dict.fromkeys(n for n, p in zip(names, poor) if p))
    chains, n = np.shape(moments[1])[0], int(np.asarray(moments[0]).reshape(-1)[0])
    why = []
    if (rhat > POOR_RHAT).any():
        why.append(f"R̂ up to {float(rhat.max()):.3g} (above {POOR_RHAT}: the chains disagree)")
    if (ess < POOR_ESS).any():
        why.append(
            f"ESS down to {float(ess.min()):.0f} (below {POOR_ESS}: too few independent draws for a summary)"
        )
    warnings.warn(
        f"After {n} kept draws in each of {chains} chains, θ site(s) {sites} mix slowly: "
        f"{' and '.join(why)}. "
        "Run more draws (or more chains), or make the sampler mix: non-centred moves "
        "(dpjax.infer.noncentred) where the release pins the imputed records; record_sweeps=k where the "
        "records' acceptance (extra field record_accept_rate) is a few percent.",
        SlowMixingWarning,
        stacklevel=1,
    )


def report_slow_mixing(iteration, num_warmup, moments, z, theta_sites):
    """At the chains' last warmup iteration, the host's R̂ per θ coordinate from ``moments`` (one row per
    chain); a :class:`SlowMixingWarning` naming the θ sites (of ``z``, chains along axis 0) above
    ``SLOW_RHAT``. Only for a batch of ≥ 2 chains and ``num_warmup ≥ SLOW_MIN_WARMUP``."""
    if num_warmup < SLOW_MIN_WARMUP or jnp.ndim(iteration) != 1 or iteration.shape[0] < 2 or not theta_sites:
        return
    names = _coordinate_names(theta_sites, z, iteration.shape[0])
    is_end = iteration == num_warmup - 1
    jax.lax.cond(
        is_end[0],
        lambda a: jax.debug.callback(partial(_report_rhat, names), *a),
        lambda a: None,
        (is_end, *moments),
    )


def _report_rhat(names, is_end, count, mean, m2):
    is_end = np.asarray(is_end)
    if not is_end.all():
        return
    count, mean, m2 = np.asarray(count, float), np.asarray(mean, float), np.asarray(m2, float)
    m = count[0]
    if m < 2:
        return
    rhat, _ = _rhat((m2 / (m - 1)).mean(0), mean.var(0, ddof=1), m)
    slow = rhat > SLOW_RHAT
    if not slow.any():
        return
    sites = list(dict.fromkeys(n for n, s in zip(names, slow) if s))
    worst = float(rhat.max())
    warnings.warn(
        f"At the end of warmup the {mean.shape[0]} chains disagree about θ site(s) {sites} (R̂ up to "
        f"{worst:.3g} over the second half of warmup, above {SLOW_RHAT}): the sampler mixes slowly there, "
        "and the draws may not represent the posterior yet. Run a longer warmup and more draws, compare "
        "r_hat and ess in the summary, or check whether the release pins the imputed records so tightly "
        "that θ cannot move (non-centred moves, dpjax.infer.noncentred, help where the release is weak; "
        "where the records' acceptance, extra field record_accept_rate, is a few percent, "
        "record_sweeps=k moves them k times as often per θ-step).",
        SlowMixingWarning,
        stacklevel=1,
    )
