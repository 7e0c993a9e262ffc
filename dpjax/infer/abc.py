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
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax import lax, random
from numpyro import handlers
from tqdm.auto import tqdm

from .._validate import positive_int
from ..primitives import INFER_KEY, depends_on, record_statistics, simulate
from ._compile import SplitArgs, avals, compiled, memo, split_args
from .record_step import masked
from .samplers import count_true, fast_distribution, fast_sampling, uniform
from .spec import ModelSpec, model_spec, privatized_infos, prototype

__all__ = [
    "ABCResult",
    "ABCSampler",
    "ABCState",
    "ISResult",
    "SlowABCWarning",
    "abc_importance",
    "abc_step",
    "exact_abc",
    "exact_abc_sampler",
]


class ABCResult(NamedTuple):
    """- **samples** – ``{site: draws}`` of the θ sites, i.i.d. from the exact posterior.
    - **num_proposals** – prior-predictive simulations used.
    - **acceptance_rate**, **acceptance_se** – accepted / proposed and its binomial s.e.
    - **vectorized** – whether each batch was simulated under one key through a batch plate (else
      with one key per proposal)."""

    samples: dict
    num_proposals: int
    acceptance_rate: float
    acceptance_se: float
    vectorized: bool = False

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


class ABCState(NamedTuple):
    """The exact-ABC loop's state: the key, the buffer of accepted θ draws (one slot per sample), how
    many are filled, batches simulated and proposals accepted (beyond the buffer too)."""

    rng_key: jax.Array
    samples: dict
    count: jax.Array
    batches: jax.Array
    accepted: jax.Array


class PriorSpec(NamedTuple):
    """A prototype trace and what is read from it for one call (arrays: per call, never stored)."""

    trace: dict  # a prototype trace
    model: ModelSpec
    privatized: list
    theta: list
    max_log_eta: jax.Array
    placeholders: dict  # latent record values, to substitute when T is simulated directly


def prior_spec(model, model_args, model_kwargs, engine: str = "exact_abc") -> PriorSpec:
    """What the engines that simulate θ from its prior (exact ABC, importance ABC, PseudoMarginalABC)
    read from the model, with their refusals (a `numpyro.param`, no θ, an improper prior)."""
    tr = prototype(model, random.key(0), model_args, model_kwargs)  # copes with improper sites
    spec = model_spec(tr)
    params = [k for k, s in tr.items() if s["type"] == "param"]
    if params:
        raise ValueError(
            f"{engine} needs a prior over every parameter (θ is simulated from it); sites {params} are "
            "`numpyro.param`. Give them a prior with `numpyro.sample`, or for maximum likelihood use "
            "`mcem`."
        )
    if not spec.theta:
        raise ValueError(
            f"{engine} needs a prior over every parameter: the model has no latent sample site outside the "
            "records plate, so there is nothing to infer."
        )
    improper = [n for n in spec.theta if isinstance(tr[n]["fn"], dist.ImproperUniform)]
    if improper:
        raise ValueError(f"{engine} needs a proper prior; sites {improper} are improper.")
    privatized = [n for n, _ in spec.privatized]
    max_log_eta = sum(
        info.mechanism.max_log_density(jnp.shape(tr[n]["value"]))
        for n, info in zip(privatized, privatized_infos(tr, spec))
    )
    placeholders = {n: tr[n]["value"] for n in spec.latent_records}
    return PriorSpec(tr, spec, privatized, list(spec.theta), max_log_eta, placeholders)


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


# --- vectorised simulation: a whole batch of proposals under one key ---------------------------------
#
# The model runs once per batch inside `numpyro.plate(BATCH_PLATE, batch_size)` at a dim to the left of
# every plate and batch dim of its own, so each θ site draws all proposals with one key. The records are
# not sampled inside that run (the privatized sites read them along axis 0, which a leading batch dim
# would break): they are substituted by placeholders, as in the direct path, and drawn afterwards from
# their sites' batched distributions; T and log η are then computed per proposal with `vmap`. A model
# qualifies when (checked on a few proposals before the run) every site has the batch dim leading with the
# expected shapes, nothing but the privatized sites depends on the records, and each proposal's log
# densities and log η agree with the unbatched model's conditioned on that proposal's values.

BATCH_PLATE = "_abc_batch"
CHECK_BATCH = 3  # proposals compared against the unbatched model before a vectorised run


class _NotVectorizable(Exception):
    """The model does not run correctly under the batch plate (the reason is the message)."""


def _batch_rank(tr) -> int:
    """The number of batch dims the model's own sites use (plates and distributions' batch shapes)."""
    rank = 0
    for s in tr.values():
        if s["type"] == "sample":
            dims = [-f.dim for f in s["cond_indep_stack"]]
            rank = max(rank, len(s["fn"].batch_shape), *dims)
    return rank


def _make_batch(model, simulator, spec: PriorSpec):
    """``batch(key, size, model_args, model_kwargs, placeholders) -> (trace, θ values, records, log η)``:
    ``size`` proposals under one key (θ values ``(size,) + shape``; ``records`` the latent record draws,
    empty with a ``simulator``). Raises ``_NotVectorizable`` where the shapes show that the model does not
    broadcast over a leading batch dim."""
    proto, theta, latent = spec.trace, spec.theta, spec.model.latent_records
    rank = _batch_rank(proto)
    sites = [k for k, s in proto.items() if s["type"] == "sample"]

    def expected(name, size):
        fn = proto[name]["fn"]
        return (size,) + (1,) * (rank - len(fn.batch_shape)) + tuple(fn.batch_shape), tuple(fn.event_shape)

    def leading(name, value, size):
        """``value`` (batch shape + event shape) as ``(size,) + the prototype value's shape``."""
        return jnp.reshape(value, (size,) + jnp.shape(proto[name]["value"]))

    def batched_model(size):
        def run(*args, **kwargs):
            with numpyro.plate(BATCH_PLATE, size, dim=-(rank + 1)):
                return model(*args, **kwargs)

        return run

    def batch(key, size, model_args, model_kwargs, placeholders):
        k_theta, k_rec = random.split(key)
        m = handlers.seed(handlers.substitute(fast_sampling(batched_model(size)), data=placeholders), k_theta)
        tr = handlers.trace(m).get_trace(*model_args, **model_kwargs)
        got = [k for k, s in tr.items() if s["type"] == "sample"]
        if got != sites:
            raise _NotVectorizable(f"the sample sites under the batch plate are {got}, not {sites}")
        for name in [*theta, *(latent if simulator is None else ())]:
            fn = tr[name]["fn"]
            shapes = tuple(fn.batch_shape), tuple(fn.event_shape)
            if shapes != expected(name, size):
                raise _NotVectorizable(
                    f"site {name!r} has batch and event shapes {shapes} under a batch plate of {size}, "
                    f"expected {expected(name, size)}"
                )
        for name in theta:
            if jnp.shape(tr[name]["value"]) != sum(expected(name, size), ()):
                raise _NotVectorizable(f"site {name!r} has value shape {jnp.shape(tr[name]['value'])}")
        params = {k: leading(k, tr[k]["value"], size) for k in theta}
        infos = {n: tr[n]["infer"][INFER_KEY] for n in spec.privatized}
        for n, info in infos.items():
            proto_info = proto[n]["infer"][INFER_KEY]
            if avals(jax.tree.leaves(info.mechanism)) != avals(jax.tree.leaves(proto_info.mechanism)):
                raise _NotVectorizable(
                    f"the mechanism of privatized site {n!r} changes under the batch plate"
                )
            if np.shape(info.active) != np.shape(proto_info.active):
                raise _NotVectorizable(f"the records plate of {n!r} changes under the batch plate")
        records = {}
        if simulator is None:
            for i, k in enumerate(latent):
                draw = fast_distribution(tr[k]["fn"]).sample(random.fold_in(k_rec, i))
                records[k] = leading(k, draw, size)
            log_eta = 0.0
            for n, info in infos.items():
                mine = {k: records[k] for k in info.record_sites if k in records}
                public = {k: tr[k]["value"] for k in info.record_sites if k not in records}
                obs, mech, stat, active = tr[n]["value"], info.mechanism, info.statistic, info.active

                def one(mine, public=public, obs=obs, mech=mech, stat=stat, active=active, info=info):
                    per = record_statistics(stat, {**mine, **public})
                    if active is not None:
                        per = masked(per, active)
                    return jnp.sum(mech(info.released(info.total(per))).log_prob(obs))

                log_eta = log_eta + jax.vmap(one)(mine)
        else:
            stats = jax.vmap(simulator)(random.split(k_rec, size), params)
            if set(stats) != set(spec.privatized):
                raise ValueError(
                    f"`simulator` must return T for exactly the sites {sorted(spec.privatized)}."
                )
            log_eta = 0.0
            for n, info in infos.items():
                t = jnp.asarray(stats[n], jnp.result_type(float))
                eta = jax.vmap(
                    lambda t, mech=info.mechanism, obs=tr[n]["value"]: jnp.sum(mech(t).log_prob(obs))
                )
                log_eta = log_eta + eta(t)
        return tr, params, records, jnp.broadcast_to(log_eta, (size,))

    return batch


def _check_batch(batch, model, simulator, spec: PriorSpec, model_args, model_kwargs):
    """Raise ``_NotVectorizable`` unless ``batch`` simulates the model's prior predictive: the draws of
    ``CHECK_BATCH`` proposals are scored by the batched trace and by the unbatched model conditioned on
    each proposal (θ and records), site by site, and nothing but the privatized sites reads the records."""
    key = random.key(0)
    outputs = lambda ph: batch(key, CHECK_BATCH, model_args, model_kwargs, ph)
    sites = [*spec.theta, *(spec.model.latent_records if simulator is None else ())]

    def reads_records(ph):
        tr, params, _, _ = outputs(ph)
        fns = [tr[k]["fn"] for k in spec.model.latent_records] if simulator is None else []
        mechs = [tr[n]["infer"][INFER_KEY].mechanism for n in spec.privatized]
        return params, fns, mechs

    if spec.placeholders and any(depends_on(reads_records, spec.placeholders)):
        raise _NotVectorizable(
            "θ, a record site's distribution or a mechanism depends on other record sites' values"
        )

    @jax.jit
    def scores(ph):
        tr, params, records, log_eta = outputs(ph)
        values = {**params, **records}
        got = {}
        for k in sites:
            fn = tr[k]["fn"]
            lp = fn.log_prob(jnp.reshape(values[k], fn.batch_shape + fn.event_shape))
            got[k] = jnp.reshape(lp, (CHECK_BATCH,) + tuple(spec.trace[k]["fn"].batch_shape))

        def reference(data):  # the unbatched model, conditioned on one proposal
            cond = data if simulator is None else {**data, **ph}
            ref, ref_eta = simulate(key, model, spec.privatized, model_args, model_kwargs, data=cond)
            return {k: ref[k]["fn"].log_prob(data[k]) for k in sites}, ref_eta

        want, ref_eta = jax.vmap(reference)(values)
        return got, want, log_eta, ref_eta

    got, want, log_eta, ref_eta = scores(spec.placeholders)
    for k in sites:
        if jnp.shape(got[k]) != jnp.shape(want[k]) or not np.allclose(got[k], want[k], rtol=1e-5, atol=1e-5):
            raise _NotVectorizable(
                f"site {k!r}: the batched log densities {np.asarray(got[k]).ravel()[:6]} differ from the "
                f"model's {np.asarray(want[k]).ravel()[:6]}"
            )
    if simulator is None and not np.allclose(log_eta, ref_eta, rtol=1e-5, atol=1e-5):
        raise _NotVectorizable(f"log η is {np.asarray(log_eta)} batched but {np.asarray(ref_eta)} unbatched")


def _vectorizable(batch, model, simulator, spec: PriorSpec, args: SplitArgs, model_args, model_kwargs):
    """None if ``batch`` simulates the model's prior predictive, else the reason why not. The verdict
    is cached with the compiled functions (it depends on the model's structure, not on array values)."""
    key = None
    if args.key is not None:
        structure = jax.tree.structure(spec.placeholders), avals(jax.tree.leaves(spec.placeholders))
        key = ("exact_abc/vectorizable", model, simulator, args.key, structure)

    def verdict():
        try:
            _check_batch(batch, model, simulator, spec, model_args, model_kwargs)
            return None
        except Exception as e:  # noqa: BLE001 - any failure under the batch plate means: not vectorisable
            return str(e) if isinstance(e, _NotVectorizable) else f"{type(e).__name__}: {e}"

    return memo(key, verdict)


# exact_abc without `max_seconds` warns once its projected run time passes this many seconds, the
# rate being measured over at least RATE_WINDOW_SECONDS after the first (compiling) call
SLOW_RUN_SECONDS = 300.0
RATE_WINDOW_SECONDS = 0.5


class SlowABCWarning(UserWarning):
    """``exact_abc`` projects to run for a long time without a ``max_seconds`` cap."""


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


def abc_step(draw, num_samples: int, batch_size: int, max_log_eta):
    """One batch of exact ABC as a pure step ``ABCState -> ABCState``: ``draw(key) -> (θ values, log η)``
    simulates ``batch_size`` proposals; each is accepted with probability η(s | T) / max η (Gong,
    Algorithm 1) and stored in the next free slot of the buffer (beyond ``num_samples``: counted only)."""

    def step(state: ABCState) -> ABCState:
        key, k_sim, k_acc = random.split(state.rng_key, 3)
        values, log_eta = draw(k_sim)
        accept = jnp.log(uniform(k_acc, (batch_size,))) < log_eta - max_log_eta
        slot = jnp.where(accept, state.count + count_true(accept) - 1, num_samples)  # out of range: dropped
        buffer = jax.tree.map(lambda b, v: b.at[slot].set(v, mode="drop"), state.samples, values)
        n_acc = jnp.sum(accept)
        return ABCState(key, buffer, state.count + n_acc, state.batches + 1, state.accepted + n_acc)

    return step


class ABCSampler(NamedTuple):
    """Exact ABC as pure functions of the model arguments, which may be traced (``jit``, ``vmap``, a
    :func:`dpjax.studies.run_study` cell): ``init(rng_key, model_args, model_kwargs) -> ABCState``,
    ``step(state, model_args, model_kwargs) -> ABCState`` (one batch) and ``run(rng_key, model_args,
    model_kwargs) -> ABCState`` (batches until ``num_samples`` are accepted or ``max_batches`` are
    spent; then ``state.count < num_samples``: check it)."""

    init: Callable
    step: Callable
    run: Callable


def exact_abc_sampler(
    model, *, num_samples: int, batch_size: int = 10_000, max_batches: int = 1_000, simulator=None
) -> ABCSampler:
    """The pure core of :func:`exact_abc` (one key per proposal, under ``vmap``), for running it
    inside compiled code: many releases at once, or the cells of a simulation study. The model's
    refusals (a ``numpyro.param``, an improper prior) are raised when the functions are traced.

    >>> import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist, dpjax
    >>> def model(release=None):
    ...     theta = numpyro.sample("theta", dist.Gamma(25.0, 1.0))
    ...     with numpyro.plate("count", 1):
    ...         s = numpyro.sample("s", dist.Poisson(theta))
    ...     dpjax.privatized("s_dp", dpjax.LaplaceMechanism(epsilon=0.2, sensitivity=1.0),
    ...                      lambda r: r["s"], {"s": s}, plate="count", obs=release)
    >>> abc = dpjax.infer.exact_abc_sampler(model, num_samples=200, batch_size=1_000)
    >>> run = jax.jit(jax.vmap(lambda k, s: abc.run(k, (s,), {})))
    >>> states = run(jax.random.split(jax.random.key(0), 3), jnp.array([20.0, 25.0, 30.0]))
    >>> states.samples["theta"].shape, bool((states.count >= 200).all())
    ((3, 200), True)
    """
    num_samples = positive_int(num_samples, "num_samples")
    batch_size = positive_int(batch_size, "batch_size")
    max_batches = positive_int(max_batches, "max_batches")

    def parts(model_args, model_kwargs):
        spec = prior_spec(model, model_args, model_kwargs)
        if spec.model.size is not None and simulator is None:  # an unknown n: its draws are posterior draws
            spec = spec._replace(theta=[*spec.theta, spec.model.size])
        return spec, _make_one(model, simulator, spec.privatized, spec.theta)

    def init(rng_key, model_args, model_kwargs=None):
        model_kwargs = {} if model_kwargs is None else model_kwargs
        spec, one = parts(model_args, model_kwargs)
        proto = jax.eval_shape(lambda: one(random.key(0), model_args, model_kwargs, spec.placeholders)[0])
        buffer = jax.tree.map(lambda v: jnp.zeros((num_samples,) + v.shape, v.dtype), proto)
        zero = jnp.zeros((), jax.dtypes.canonicalize_dtype(jnp.int_))
        return ABCState(rng_key, buffer, zero, zero, zero)

    def step(state, model_args, model_kwargs=None):
        model_kwargs = {} if model_kwargs is None else model_kwargs
        spec, one = parts(model_args, model_kwargs)
        sim = lambda k: one(k, model_args, model_kwargs, spec.placeholders)
        draw = lambda k: jax.vmap(sim)(random.split(k, batch_size))
        return abc_step(draw, num_samples, batch_size, spec.max_log_eta)(state)

    def run(rng_key, model_args, model_kwargs=None):
        going = lambda state: (state.count < num_samples) & (state.batches < max_batches)
        body = lambda state: step(state, model_args, model_kwargs)
        return lax.while_loop(going, body, init(rng_key, model_args, model_kwargs))

    return ABCSampler(init, step, run)


def exact_abc(
    rng_key,
    model,
    *model_args,
    num_samples: int,
    batch_size: int = 100_000,
    max_proposals: int = 10**9,
    max_seconds: float | None = None,
    simulator=None,
    vectorize: bool | None = None,
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
    records are never simulated. Every θ site needs a proper prior (no ``numpyro.param``). With an
    unknown n (a :func:`dpjax.records_plate` sized by a latent site) ``samples`` holds n's draws too.

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
    if vectorize not in (None, True, False):
        raise ValueError(f"`vectorize` must be None (automatic), True or False, got {vectorize!r}.")
    max_proposals = positive_int(max_proposals, "max_proposals")
    spec = prior_spec(model, model_args, model_kwargs)
    if (
        spec.model.size is not None and simulator is None
    ):  # an unknown n: its accepted draws are posterior draws
        spec = spec._replace(theta=[*spec.theta, spec.model.size])
    privatized, theta, max_log_eta = spec.privatized, spec.theta, spec.max_log_eta
    one = _make_one(model, simulator, privatized, theta)
    args = split_args(model_args, model_kwargs)
    proto, _ = one(random.key(0), model_args, model_kwargs, spec.placeholders)
    max_batches = -(-max_proposals // batch_size)  # a Python int: never overflows, never traced
    batch = None
    if vectorize is not False:
        batch = _make_batch(model, simulator, spec)
        reason = _vectorizable(batch, model, simulator, spec, args, model_args, model_kwargs)
        if reason is not None:
            if vectorize:
                raise ValueError(
                    "exact_abc(vectorize=True): the model cannot be simulated a batch at a time under a "
                    f"leading `numpyro.plate` ({reason}). Make every site broadcast over a leading batch "
                    "dim (index from the right, e.g. `x[..., i]`, `jnp.sum(x, -1)`), or pass "
                    "`vectorize=None` / `False` to simulate one proposal per key."
                )
            batch = None
    vectorized = batch is not None

    def build(traced):
        def run(carry, batch_limit, placeholders, max_log_eta, dynamic):
            a, kw = args.rebuild(dynamic) if traced else (model_args, model_kwargs)
            sim = lambda k: one(k, a, kw, placeholders)
            if vectorized:  # the whole batch under one key
                draw = lambda k: batch(k, batch_size, a, kw, placeholders)[1::2]
            else:  # one key per proposal
                draw = lambda k: jax.vmap(sim)(random.split(k, batch_size))
            body = abc_step(draw, num_samples, batch_size, max_log_eta)

            # one compiled loop; the host only checks the clock between calls
            going = lambda state: (state.count < num_samples) & (state.batches < batch_limit)
            return lax.while_loop(going, body, carry)

        return jax.jit(run)

    key = None
    if args.key is not None:
        structure = jax.tree.structure(spec.placeholders), avals(jax.tree.leaves(spec.placeholders))
        key = ("exact_abc", model, simulator, tuple(privatized), tuple(theta), num_samples, batch_size)
        key += (vectorized,)
        key += (args.key, structure, avals([max_log_eta]))
    loop = compiled(key, build, args.dynamic)
    run = lambda carry, limit: loop(carry, limit, spec.placeholders, max_log_eta)

    buffer = jax.tree.map(lambda v: jnp.zeros((num_samples,) + jnp.shape(v), jnp.result_type(v)), proto)
    # strongly typed, as the loop returns it (one compilation); canonical: no int64 request under x32
    zero = jnp.zeros((), jax.dtypes.canonicalize_dtype(jnp.int_))
    carry = ABCState(rng_key, buffer, zero, zero, zero)
    start, chunk, calls, warned = time.perf_counter(), 1, 0, max_seconds is not None
    bar = tqdm(total=num_samples, desc="exact ABC", unit="draw", disable=not progress_bar, leave=False)
    while True:
        tic = time.perf_counter()
        batches_before = int(carry.batches)
        carry = run(carry, jnp.asarray(min(batches_before + chunk, max_batches)))
        count, batches = int(carry.count), int(carry.batches)
        calls += 1
        bar.update(min(count, num_samples) - bar.n)
        bar.set_postfix_str(f"acceptance {int(carry.accepted) / (batches * batch_size):.3g}")
        now = time.perf_counter()
        out_of_time = max_seconds is not None and now - start > max_seconds
        if count >= num_samples or batches >= max_batches or out_of_time:
            break
        if calls == 1:  # the first call compiles: measure the rate from the second on
            t_rate, b_rate = now, batches
        elif not warned and now - t_rate >= RATE_WINDOW_SECONDS and batches > b_rate:
            warned = _warn_if_slow(
                (now - t_rate) / (batches - b_rate), batches, max_batches, batch_size,
                count, num_samples, int(carry.accepted), max_proposals,
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
    return ABCResult(buffer, proposals, rate, se, vectorized)


def abc_importance(rng_key, model, proposal, *model_args, num_samples: int, **model_kwargs) -> ISResult:
    """Importance-sampling ABC (Gong, eq. 3.3): θᵢ ~ g, T from the model given θᵢ, weights
    ∝ p(θᵢ) η(s_dp | Tᵢ) / g(θᵢ). ``proposal`` is ``{site: numpyro Distribution}`` for every θ site
    (a proposal closer to the posterior than the prior rescues prior–data conflict). A ``ValueError``
    if every weight is zero or NaN (an impossible release, or a proposal off the prior's support);
    NaN weights among finite ones count as zero, with a warning.
    """
    if not (isinstance(num_samples, int) and num_samples > 0):
        raise ValueError(f"`num_samples` must be a positive int, got {num_samples!r}.")
    spec = prior_spec(model, model_args, model_kwargs, engine="abc_importance")
    privatized, theta = spec.privatized, spec.theta
    if set(proposal) != set(theta):
        raise ValueError(f"`proposal` must give a distribution for exactly the sites {sorted(theta)}.")
    draw = lambda key, g: {k: g[k].sample(random.fold_in(key, i)) for i, k in enumerate(sorted(g))}
    args = split_args(model_args, model_kwargs)
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
        key += (prop_tree, avals(prop_leaves))
    values, log_w = compiled(key, build, args.dynamic)(random.split(rng_key, num_samples), prop_leaves)
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
