"""Exact ABC for privatized data (Gong, Algorithm 1 and eq. 3.3).

When the ABC kernel is the privacy mechanism itself, rejection ABC is exact: simulate θ from the
prior and the confidential data from the model, and accept with probability
η(s_dp | T) / max η. The same NumPyro model that the DataAugmentationKernel uses serves here: the
observed privatized sites' log densities of a prior-predictive trace *are* log η(s_dp | T).
"""

from __future__ import annotations

import math
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from jax import lax, random
from numpyro import handlers
from numpyro.infer.gibbs import prototype_trace
from tqdm.auto import tqdm

from ..primitives import INFER_KEY, SiteRoles, simulate, site_roles

__all__ = ["ABCResult", "ISResult", "SlowABCWarning", "abc_importance", "exact_abc"]


class ABCResult(NamedTuple):
    """- **samples** – ``{site: draws}`` of the θ sites, i.i.d. from the exact posterior.
    - **num_proposals** – prior-predictive simulations used.
    - **acceptance_rate**, **acceptance_se** – accepted / proposed and its binomial s.e."""

    samples: dict
    num_proposals: int
    acceptance_rate: float
    acceptance_se: float

    def to_arviz(self):
        """An ``arviz.InferenceData`` with one chain of the draws."""
        import arviz as az

        return az.from_dict(posterior={k: np.asarray(v)[None] for k, v in self.samples.items()})


class ISResult(NamedTuple):
    """Weighted draws of eq. (3.3): ``samples`` from the proposal, normalised ``weights`` and
    the effective sample size ``ess = 1 / Σ wᵢ²``."""

    samples: dict
    weights: jax.Array
    ess: float


class _Spec(NamedTuple):
    trace: dict  # a prototype trace
    roles: SiteRoles
    privatized: list
    theta: list
    max_log_eta: jax.Array
    placeholders: dict  # latent record values, to substitute when T is simulated directly


def _spec(model, model_args, model_kwargs, engine: str = "exact_abc") -> _Spec:
    tr = prototype_trace(model, random.key(0), model_args, model_kwargs)  # copes with improper sites
    roles = site_roles(tr)
    params = [k for k, s in tr.items() if s["type"] == "param"]
    if params:
        raise ValueError(
            f"{engine} needs a prior over every parameter (θ is simulated from it); sites {params} are "
            "`numpyro.param`. Give them a prior with `numpyro.sample`, or for maximum likelihood use "
            "`mcem`."
        )
    if not roles.theta:
        raise ValueError(
            f"{engine} needs a prior over every parameter: the model has no latent sample site outside the "
            "records plate, so there is nothing to infer."
        )
    improper = [n for n in roles.theta if isinstance(tr[n]["fn"], dist.ImproperUniform)]
    if improper:
        raise ValueError(f"{engine} needs a proper prior; sites {improper} are improper.")
    max_log_eta = sum(
        info.mechanism.max_log_density(jnp.shape(tr[n]["value"])) for n, info in roles.privatized
    )
    placeholders = {n: tr[n]["value"] for n in roles.latent_records}
    return _Spec(tr, roles, [n for n, _ in roles.privatized], list(roles.theta), max_log_eta, placeholders)


# Compile once: the engines' jitted functions are cached at module level, keyed by what fixes the
# traced program (the model, static settings, the structure / shapes / dtypes of the array arguments
# and the values of the non-array ones, e.g. plate sizes). Array leaves of the model arguments (the
# release, data) are traced arguments, so a new release value reuses the compilation.
CACHE_SIZE = 32
_CACHE: OrderedDict = OrderedDict()
_UNTRACEABLE = object()  # cached marker: this key's model needs concrete array arguments
_TRACER_ERRORS = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerArrayConversionError,
    jax.errors.TracerBoolConversionError,
    jax.errors.TracerIntegerConversionError,
)


class _Args(NamedTuple):
    """Model arguments split into traced array leaves and a hashable static remainder."""

    dynamic: list  # the array leaves, passed to the compiled function as arguments
    key: tuple | None  # the static part (None: not hashable, so not cacheable)
    rebuild: Callable  # dynamic leaves -> (model_args, model_kwargs)


def _avals(leaves):
    return tuple((jnp.shape(x), jnp.result_type(x), getattr(x, "weak_type", False)) for x in leaves)


def _split_args(model_args, model_kwargs) -> _Args:
    leaves, treedef = jax.tree.flatten((tuple(model_args), dict(model_kwargs)))
    mask = tuple(isinstance(x, jax.Array | np.ndarray) for x in leaves)
    dynamic = [x for x, m in zip(leaves, mask) if m]
    static = [x for x, m in zip(leaves, mask) if not m]

    def rebuild(dyn):
        dyn, st = iter(dyn), iter(static)
        args, kwargs = jax.tree.unflatten(treedef, [next(dyn) if m else next(st) for m in mask])
        return args, kwargs

    key = (treedef, mask, tuple((type(x), x) for x in static), _avals(dynamic))
    try:
        hash(key)
    except TypeError:
        key = None
    return _Args(dynamic, key, rebuild)


def _compiled(key, build, dynamic):
    """``call(*args)`` running ``build(traced=True)(*args, dynamic)``, the jitted function cached under
    ``key``. A model that needs concrete array arguments (a tracer error while compiling) falls back to
    ``build(traced=False)``, which closes over them and compiles per call, as before caching."""
    fn = None
    if key is not None:
        try:
            fn = _CACHE.pop(key, None)
        except TypeError:  # an unhashable model, simulator, ...
            key = None
    if fn is _UNTRACEABLE:
        _CACHE[key] = fn
        closed = build(traced=False)
        return lambda *a: closed(*a, ())
    if fn is None:
        fn = build(traced=True)
    if key is not None:
        _CACHE[key] = fn
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    state = {"fn": fn}

    def call(*a):
        try:
            return state["fn"](*a, dynamic)
        except _TRACER_ERRORS:
            if state["fn"] is not fn:
                raise
            if key is not None:
                _CACHE[key] = _UNTRACEABLE
            state["fn"] = build(traced=False)  # ignores `dynamic`: closes over the arguments
            return state["fn"](*a, dynamic)

    return call


def _make_one(model, simulator, privatized, theta):
    """``one(key, model_args, model_kwargs, placeholders) -> (θ values, log η)``: one proposal."""
    if simulator is None:

        def one(key, model_args, model_kwargs, placeholders):
            tr, log_eta = simulate(key, model, privatized, model_args, model_kwargs)
            return {k: tr[k]["value"] for k in theta}, log_eta

        return one
    return _direct(model, simulator, privatized, theta)


def _direct(model, simulator, privatized, theta):
    """θ from the prior (records substituted by placeholders, never sampled), T from the user."""

    def one(key, model_args, model_kwargs, placeholders):
        k_theta, k_stat = random.split(key)
        m = handlers.seed(handlers.substitute(model, data=placeholders), k_theta)
        tr = handlers.trace(m).get_trace(*model_args, **model_kwargs)
        params = {k: tr[k]["value"] for k in theta}
        stats = simulator(k_stat, params)
        if set(stats) != set(privatized):
            raise ValueError(f"`simulator` must return T for exactly the sites {sorted(privatized)}.")
        log_eta = sum(
            jnp.sum(
                tr[n]["infer"][INFER_KEY]
                .mechanism(jnp.asarray(stats[n], jnp.result_type(float)))
                .log_prob(tr[n]["value"])
            )
            for n in privatized
        )
        return params, log_eta

    return one


# exact_abc without `max_seconds` warns once its projected run time passes this many seconds, the
# rate being measured over at least RATE_WINDOW_SECONDS after the first (compiling) call
SLOW_RUN_SECONDS = 300.0
RATE_WINDOW_SECONDS = 0.5


class SlowABCWarning(UserWarning):
    """``exact_abc`` projects to run for a long time without a ``max_seconds`` cap."""


def _positive_whole(value, name):
    """``value`` as a Python int ≥ 1; a ValueError naming ``name`` for 0, negatives, NaN/inf, fractions."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"`{name}` must be a positive integer, got {value!r}.")
    if isinstance(value, float | np.floating) and not (np.isfinite(value) and float(value).is_integer()):
        raise ValueError(f"`{name}` must be a positive integer, got {value!r}.")
    value = int(value)
    if value < 1:
        raise ValueError(f"`{name}` must be a positive integer, got {value!r}.")
    return value


def _warn_if_slow(sec_per_batch, batches, max_batches, batch_size, count, num_samples, accepted, cap):
    """Warn (once) if the rest of an ``exact_abc`` run projects past ``SLOW_RUN_SECONDS``; True if it did."""
    remaining = max_batches - batches  # the most that max_proposals still allows
    if accepted > 0:  # the batches the acceptance rate so far needs for the missing draws
        remaining = min(remaining, math.ceil((num_samples - count) * batches / accepted))
    projected = remaining * sec_per_batch
    if projected <= SLOW_RUN_SECONDS:
        return False
    rate = accepted / (batches * batch_size)
    warnings.warn(
        f"exact_abc projects to run about {projected / 60:,.0f} more minutes ({count:,} of {num_samples:,} "
        f"draws after {batches * batch_size:,} proposals, acceptance rate {rate:.3g}, "
        f"{batch_size / sec_per_batch:,.0f} proposals/s, max_proposals={cap:,}). Pass `max_seconds` to cap "
        "the run, or consider `PseudoMarginalABC` or `abc_importance`.",
        SlowABCWarning,
        stacklevel=3,
    )
    return True


def exact_abc(
    rng_key,
    model,
    *model_args,
    num_samples: int,
    batch_size: int = 100_000,
    max_proposals: int = 10**9,
    max_seconds: float | None = None,
    simulator=None,
    progress_bar: bool = True,
    **model_kwargs,
) -> ABCResult:
    """Rejection ABC with the mechanism as kernel (Gong, Algorithm 1): exact posterior draws.

    Proposals are simulated ``batch_size`` at a time with ``vmap`` inside one compiled
    ``lax.while_loop`` until ``num_samples`` are accepted; the run stops with a ``RuntimeError``
    reporting the acceptance rate once ``max_proposals`` is reached or ``max_seconds`` have passed
    (the clock is checked between compiled calls of a fraction of a second each). ``max_proposals`` is
    a positive whole number (any size; proposals come in whole batches). Without ``max_seconds``, a
    :class:`SlowABCWarning` is issued once the run projects past ``SLOW_RUN_SECONDS`` (5 min) from its
    measured speed and acceptance rate. ``simulator(rng_key, params) -> {privatized site: T}`` draws
    the confidential statistic directly (e.g. a Binomial count for n Bernoulli records), so the
    records are never simulated. Every θ site needs a proper prior (no ``numpyro.param``).

    >>> import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist, dpjax
    >>> def model(release=None):
    ...     theta = numpyro.sample("theta", dist.Gamma(25.0, 1.0))
    ...     with numpyro.plate("count", 1):
    ...         s = numpyro.sample("s", dist.Poisson(theta))
    ...     dpjax.privatized("s_dp", dpjax.LaplaceMechanism(epsilon=0.2, sensitivity=1.0),
    ...                      lambda r: r["s"], {"s": s}, plate="count", obs=release)
    >>> out = dpjax.infer.exact_abc(jax.random.key(0), model, jnp.array(37.4), num_samples=1000)
    >>> out.samples["theta"].shape
    (1000,)
    """
    if not (isinstance(num_samples, int) and num_samples > 0):
        raise ValueError(f"`num_samples` must be a positive int, got {num_samples!r}.")
    if not (isinstance(batch_size, int) and batch_size > 0):
        raise ValueError(f"`batch_size` must be a positive int, got {batch_size!r}.")
    if max_seconds is not None and not max_seconds > 0:
        raise ValueError(f"`max_seconds` must be positive or None, got {max_seconds!r}.")
    max_proposals = _positive_whole(max_proposals, "max_proposals")
    spec = _spec(model, model_args, model_kwargs)
    privatized, theta, max_log_eta = spec.privatized, spec.theta, spec.max_log_eta
    one = _make_one(model, simulator, privatized, theta)
    args = _split_args(model_args, model_kwargs)
    proto, _ = one(random.key(0), model_args, model_kwargs, spec.placeholders)
    max_batches = -(-max_proposals // batch_size)  # a Python int: never overflows, never traced

    def build(traced):
        def run(carry, batch_limit, placeholders, max_log_eta, dynamic):
            a, kw = args.rebuild(dynamic) if traced else (model_args, model_kwargs)
            sim = lambda k: one(k, a, kw, placeholders)

            def body(carry):
                key, buffer, count, batches, accepted_total = carry
                key, k_sim, k_acc = random.split(key, 3)
                values, log_eta = jax.vmap(sim)(random.split(k_sim, batch_size))
                accept = jnp.log(random.uniform(k_acc, (batch_size,))) < log_eta - max_log_eta
                slot = jnp.where(accept, count + jnp.cumsum(accept) - 1, num_samples)  # out of range: dropped
                buffer = jax.tree.map(lambda b, v: b.at[slot].set(v, mode="drop"), buffer, values)
                n_acc = jnp.sum(accept)
                return key, buffer, count + n_acc, batches + 1, accepted_total + n_acc

            # one compiled loop; the host only checks the clock between calls
            return lax.while_loop(lambda c: (c[2] < num_samples) & (c[3] < batch_limit), body, carry)

        return jax.jit(run)

    key = None
    if args.key is not None:
        structure = jax.tree.structure(spec.placeholders), _avals(jax.tree.leaves(spec.placeholders))
        key = ("exact_abc", model, simulator, tuple(privatized), tuple(theta), num_samples, batch_size)
        key += (args.key, structure, _avals([max_log_eta]))
    compiled = _compiled(key, build, args.dynamic)
    run = lambda carry, limit: compiled(carry, limit, spec.placeholders, max_log_eta)

    buffer = jax.tree.map(lambda v: jnp.zeros((num_samples,) + jnp.shape(v), jnp.result_type(v)), proto)
    carry = (rng_key, buffer, jnp.array(0), jnp.array(0), jnp.array(0))
    start, chunk, calls, warned = time.perf_counter(), 1, 0, max_seconds is not None
    bar = tqdm(total=num_samples, desc="exact ABC", unit="draw", disable=not progress_bar, leave=False)
    while True:
        tic = time.perf_counter()
        batches_before = int(carry[3])
        carry = run(carry, jnp.asarray(min(batches_before + chunk, max_batches)))
        count, batches = int(carry[2]), int(carry[3])
        calls += 1
        bar.update(min(count, num_samples) - bar.n)
        bar.set_postfix_str(f"acceptance {int(carry[4]) / (batches * batch_size):.3g}")
        now = time.perf_counter()
        out_of_time = max_seconds is not None and now - start > max_seconds
        if count >= num_samples or batches >= max_batches or out_of_time:
            break
        if calls == 1:  # the first call compiles: measure the rate from the second on
            t_rate, b_rate = now, batches
        elif not warned and now - t_rate >= RATE_WINDOW_SECONDS and batches > b_rate:
            warned = _warn_if_slow(
                (now - t_rate) / (batches - b_rate), batches, max_batches, batch_size,
                count, num_samples, int(carry[4]), max_proposals,
            )  # fmt: skip
        if now - tic < 0.25:  # grow calls until each takes a fraction of a second
            chunk *= 2
    bar.close()
    _, buffer, count, batches, accepted = carry
    proposals = int(batches) * batch_size
    rate = int(accepted) / proposals
    se = float(np.sqrt(rate * (1 - rate) / proposals))
    if int(count) < num_samples:
        cap = f"max_seconds={max_seconds}" if out_of_time else f"max_proposals={max_proposals:,}"
        raise RuntimeError(
            f"exact_abc reached {cap} after {proposals:,} proposals (made in batches of {batch_size:,}) "
            f"with {int(count):,} of {num_samples:,} draws accepted (acceptance rate {rate:.3g} ± {se:.2g}); "
            "raise the cap, use `PseudoMarginalABC` (MCMC, no starvation), or the importance-sampling form "
            "`abc_importance` with a proposal closer to the posterior."
        )
    return ABCResult(buffer, proposals, rate, se)


def abc_importance(rng_key, model, proposal, *model_args, num_samples: int, **model_kwargs) -> ISResult:
    """Importance-sampling ABC (Gong, eq. 3.3): θᵢ ~ g, T from the model given θᵢ, weights
    ∝ p(θᵢ) η(s_dp | Tᵢ) / g(θᵢ). ``proposal`` is ``{site: numpyro Distribution}`` for every θ site
    (a proposal closer to the posterior than the prior rescues prior–data conflict). A ``ValueError``
    if every weight is zero or NaN (an impossible release, or a proposal off the prior's support);
    NaN weights among finite ones count as zero, with a warning.
    """
    if not (isinstance(num_samples, int) and num_samples > 0):
        raise ValueError(f"`num_samples` must be a positive int, got {num_samples!r}.")
    spec = _spec(model, model_args, model_kwargs, engine="abc_importance")
    privatized, theta = spec.privatized, spec.theta
    if set(proposal) != set(theta):
        raise ValueError(f"`proposal` must give a distribution for exactly the sites {sorted(theta)}.")
    draw = lambda key, g: {k: g[k].sample(random.fold_in(key, i)) for i, k in enumerate(sorted(g))}
    args = _split_args(model_args, model_kwargs)
    prop_leaves, prop_tree = jax.tree.flatten(dict(proposal))

    def build(traced):
        def weights(keys, prop_leaves, dynamic):
            a, kw = args.rebuild(dynamic) if traced else (model_args, model_kwargs)
            g = jax.tree.unflatten(prop_tree, prop_leaves) if traced else proposal

            def weight(key):
                values = draw(key, g)
                tr, log_eta = simulate(key, model, privatized, a, kw, data=values)
                log_prior = sum(jnp.sum(tr[k]["fn"].log_prob(values[k])) for k in theta)
                log_g = sum(jnp.sum(g[k].log_prob(values[k])) for k in theta)
                return values, log_eta + log_prior - log_g

            return jax.vmap(weight)(keys)

        return jax.jit(weights)

    key = None
    if args.key is not None:
        key = ("abc_importance", model, tuple(privatized), tuple(theta), num_samples, args.key)
        key += (prop_tree, _avals(prop_leaves))
    values, log_w = _compiled(key, build, args.dynamic)(random.split(rng_key, num_samples), prop_leaves)
    nan = int(jnp.sum(jnp.isnan(log_w)))
    if not bool(jnp.any(jnp.isfinite(log_w))):
        raise ValueError(
            f"abc_importance: every importance weight is zero or NaN ({nan:,} NaN of {num_samples:,}): "
            "no simulated statistic can produce the release (e.g. a non-integer release for a discrete "
            "mechanism, or a release outside the mechanism's range), or `proposal` puts no mass where the "
            "prior does."
        )
    if nan:
        warnings.warn(
            f"abc_importance: {nan:,} of {num_samples:,} log weights are NaN; they count as zero weight.",
            stacklevel=2,
        )
        log_w = jnp.where(jnp.isnan(log_w), -jnp.inf, log_w)
    w = jax.nn.softmax(log_w)
    return ISResult(values, w, float(1.0 / jnp.sum(w**2)))
