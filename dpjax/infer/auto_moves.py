"""``noncentred_moves="auto"``: keep the non-centred θ-moves only where they pay, judged by a short
timed pilot before the run.

The moves raise the effective sample size (ESS) per draw when the release is weak against the data
(10–100× on the clamped regression), but each costs an O(n) pass over the records, so where θ
already mixes (the Beta–Bernoulli count, the log-linear model) they lower ESS per second. Neither
side can be read off the model: the gain depends on the release and the data, the cost on the
hardware. The pilot runs a few chains of both variants from the same states (after a burn-in with
the moves) and measures both: the ESS per draw of every unconstrained θ coordinate (the minimum;
where neither variant reaches an ESS of 20, the ratio of their mean squared jumps, to which the
ESS of a slowly mixing chain is proportional), and the seconds per iteration (the fastest of up to
eight timed stages, interleaved). The moves stay on only when the estimated ESS per second is at
least ``SPEEDUP_TO_KEEP`` times plain DA's: a short pilot's estimates are noisy, and the margin
keeps them from choosing the slower variant.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import random
from jax.flatten_util import ravel_pytree
from numpyro.diagnostics import effective_sample_size
from numpyro.distributions import biject_to

from . import da_core

__all__ = [
    "BURN_IN_STAGES",
    "MIN_WARMUP",
    "MovesPilot",
    "SPEEDUP_TO_KEEP",
    "pilot",
    "pilot_length",
    "pilot_moves",
]

#: estimated ESS/s of DA + moves over plain DA needed to keep the moves
SPEEDUP_TO_KEEP = 1.5
PILOT_CHAINS = 4
BURN_IN_STAGES = 2  # stages of burn-in (with the moves), over which the pilot's samplers adapt
_MAX_LENGTH = 50  # iterations per pilot stage; five stages in all
MIN_WARMUP = 1000  # shorter runs keep the moves (the structural default) without a pilot
_MAX_REPEATS = 8  # timed stages per variant: the fastest one counts; more of them for a quick model
_MIN_TIMING_SECONDS = 0.5
_RESOLVED_ESS = 20.0  # below this total ESS a pilot's estimate is mostly noise
_DECISIONS: OrderedDict = OrderedDict()  # one decision per model, settings and data (see `fingerprint`)


class MovesPilot(NamedTuple):
    """What the pilot measured (plain DA first, then DA + moves) and what it chose."""

    num_moves: int
    ess_per_draw: tuple[float, float]
    gain_per_draw: float  # ESS ratio, or mean-squared-jump ratio when neither ESS is resolved
    seconds_per_iteration: tuple[float, float]
    speedup: float  # estimated ESS/s with the moves over ESS/s of plain DA
    seconds: float  # wall time of the pilot, compilation included


def pilot_length(num_warmup: int) -> int:
    """Iterations per pilot stage: a thirtieth of the warmup (at most 50), so its six stages (two
    of burn-in, two timed per variant; more timed ones only while it has taken under half a
    second) cost a fifth of it; 0 (no pilot) for a warmup under ``MIN_WARMUP`` iterations, where
    the pilot's extra compilation would weigh too much against a short run."""
    return min(_MAX_LENGTH, num_warmup // 30) if num_warmup >= MIN_WARMUP else 0


def _timed(run, states, use_moves):
    start = time.perf_counter()
    out = jax.block_until_ready(run(states, use_moves))
    return out, time.perf_counter() - start


def _mixing(draws):
    """Per coordinate: ESS and mean squared jump; ``draws`` is (iterations, chains, dim)."""
    x = np.moveaxis(np.asarray(draws, np.float64), 0, 1)  # (chains, iterations, dim)
    # a coordinate that never moved has no variance (NaN ESS): count it as one draw
    ess = np.nan_to_num(np.asarray(effective_sample_size(x), np.float64), nan=1.0)
    return np.maximum(ess, 1.0), np.mean(np.diff(x, axis=1) ** 2, axis=(0, 1)), x


def _gain_per_draw(plain, moves) -> tuple[float, float, float]:
    """(ESS per draw of plain DA, of DA + moves, estimated gain of the moves per draw)."""
    if not (np.all(np.isfinite(plain)) and np.all(np.isfinite(moves))):
        return 0.0, 0.0, 0.0  # an invalid pilot chain: keep plain DA, whose `valid` flag reports it
    (ess_p, jump_p, x_p), (ess_m, jump_m, x_m) = _mixing(plain), _mixing(moves)
    size = x_p.shape[0] * x_p.shape[1]
    if max(ess_p.min(), ess_m.min()) >= _RESOLVED_ESS:
        gain = ess_m.min() / ess_p.min()
    else:  # both too slow for a short pilot's ESS: for a slowly mixing chain ESS ∝ mean squared jump
        var = np.var(np.concatenate([x_p, x_m]), axis=(0, 1)) + 1e-300
        gain = np.min(jump_m / var) / max(np.min(jump_p / var), 1e-300)
    return float(ess_p.min() / size), float(ess_m.min() / size), float(gain)


def pilot_moves(run, states, num_moves: int) -> MovesPilot:
    """Choose between ``num_moves`` non-centred moves and none.

    ``run(states, use_moves) -> (states, draws)`` runs a fixed number of iterations of a batch of
    chains (jitted; ``use_moves`` a traced bool, so one compilation serves both variants) and
    returns the unconstrained θ draws, (iterations, chains, dim).
    """
    start = time.perf_counter()
    burnt = states
    for _ in range(BURN_IN_STAGES):  # the first compiles; the moves reach the bulk fastest
        burnt, _ = jax.block_until_ready(run(burnt, True))
    current, draws, times = {False: burnt, True: burnt}, {False: [], True: []}, {False: [], True: []}
    for repeat in range(_MAX_REPEATS):  # interleaved, so a busy spell slows both alike
        for use_moves in (False, True):
            (current[use_moves], stage), elapsed = _timed(run, current[use_moves], use_moves)
            times[use_moves].append(elapsed)
            if repeat < 2:
                draws[use_moves].append(stage)
        if repeat >= 1 and time.perf_counter() - start > _MIN_TIMING_SECONDS:
            break
    *ess, gain = _gain_per_draw(*(np.concatenate(draws[v]) for v in (False, True)))
    seconds = [min(times[v]) / draws[v][0].shape[0] for v in (False, True)]
    speedup = gain * seconds[0] / seconds[1]
    chosen = num_moves if speedup >= SPEEDUP_TO_KEEP else 0
    return MovesPilot(chosen, tuple(ess), gain, tuple(seconds), speedup, time.perf_counter() - start)


def fingerprint(*parts):
    """A hashable summary of concrete model arguments (shapes, dtypes and values), or None when
    any is traced (then no pilot can run)."""
    out = []
    for leaf in jax.tree.leaves(parts):
        if isinstance(leaf, jax.core.Tracer):
            return None
        if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
            a = np.asarray(leaf)
            out.append((a.shape, str(a.dtype), hash(a.tobytes())))
        else:
            out.append(repr(leaf))
    return (jax.tree.structure(parts), tuple(out))


def remembered(key, decide):
    """``decide()`` once per ``key`` (LRU of 64), so the same model, settings and data get the same
    choice (and the same draws for the same key) however noisy the machine's timings."""
    if key in _DECISIONS:
        _DECISIONS.move_to_end(key)
        return _DECISIONS[key]
    result = _DECISIONS[key] = decide()
    if len(_DECISIONS) > 64:
        _DECISIONS.popitem(last=False)
    return result


def pilot(core: da_core.Core, init_params, *, num_warmup: int, model_args, model_kwargs) -> MovesPilot | None:
    """``noncentred_moves="auto"``: time both variants of the data-augmentation step
    (:func:`dpjax.infer.da_core.build_kernel` with and without the moves) on a few short chains; None
    (moves kept) when the warmup is too short for a pilot or the model arguments are traced (under
    ``jit``/``vmap``). One decision per model, settings and data (:func:`remembered`)."""
    length = pilot_length(num_warmup)
    data = fingerprint(model_args, model_kwargs, init_params)
    if not length or data is None:
        return None
    settings = (core.model, core.theta_update, type(core.inner), num_warmup, jnp.result_type(float))
    spec = core.spec

    def flat_theta(z):
        return ravel_pytree({k: biject_to(spec.supports[k]).inv(z[k]) for k in spec.theta})[0]

    # its adaptation (inner NUTS, move steps) ends with its burn-in, so the timed stages see tuned
    # samplers, as the run will after its warmup
    burn_in = BURN_IN_STAGES * length
    step = da_core.build_kernel(core)

    def run(states, use_moves):
        one = partial(step, model_args=model_args, model_kwargs=model_kwargs, num_warmup=burn_in)
        one = partial(one, use_moves=use_moves)  # one switch for all the pilot's chains, not vmapped

        def body(states, _):
            states = jax.vmap(one)(states)
            return states, jax.vmap(flat_theta)(states.z)

        return jax.lax.scan(body, states, None, length=length)

    def start(key, params):
        return da_core.init(
            core, key, params, num_warmup=burn_in, model_args=model_args, model_kwargs=model_kwargs
        )

    def decide():
        # its own fixed keys: the choice depends on the model, settings and data only, and is
        # made eagerly even when `init` is traced (chain_method="parallel" runs it under pmap)
        with jax.ensure_compile_time_eval():
            keys = random.split(random.key(0), PILOT_CHAINS)
            starts = jax.jit(jax.vmap(start, in_axes=(0, None)))(keys, init_params)
            return pilot_moves(jax.jit(run), starts, core.num_moves)

    return remembered((settings, data), decide)
