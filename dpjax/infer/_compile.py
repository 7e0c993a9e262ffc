"""Compile once, for the convenience drivers (``exact_abc``, ``abc_importance``, ``mcem``): their jitted
functions are cached at module level, keyed by what fixes the traced program."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["CACHE", "SplitArgs", "avals", "compiled", "memo", "split_args"]

# Compile once: the engines' jitted functions are cached at module level, keyed by what fixes the
# traced program (the model, static settings, the structure / shapes / dtypes of the array arguments
# and the values of the non-array ones, e.g. plate sizes). Array leaves of the model arguments (the
# release, data) are traced arguments, so a new release value reuses the compilation.
CACHE_SIZE = 32
CACHE: OrderedDict = OrderedDict()
_UNTRACEABLE = object()  # cached marker: this key's model needs concrete array arguments
_TRACER_ERRORS = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerArrayConversionError,
    jax.errors.TracerBoolConversionError,
    jax.errors.TracerIntegerConversionError,
)


class SplitArgs(NamedTuple):
    """Model arguments split into traced array leaves and a hashable static remainder."""

    dynamic: list  # the array leaves, passed to the compiled function as arguments
    key: tuple | None  # the static part (None: not hashable, so not cacheable)
    rebuild: Callable  # dynamic leaves -> (model_args, model_kwargs)


def avals(leaves):
    return tuple((jnp.shape(x), jnp.result_type(x), getattr(x, "weak_type", False)) for x in leaves)


def split_args(model_args, model_kwargs) -> SplitArgs:
    leaves, treedef = jax.tree.flatten((tuple(model_args), dict(model_kwargs)))
    mask = tuple(isinstance(x, jax.Array | np.ndarray) for x in leaves)
    dynamic = [x for x, m in zip(leaves, mask) if m]
    static = [x for x, m in zip(leaves, mask) if not m]

    def rebuild(dyn):
        dyn, st = iter(dyn), iter(static)
        args, kwargs = jax.tree.unflatten(treedef, [next(dyn) if m else next(st) for m in mask])
        return args, kwargs

    key = (treedef, mask, tuple((type(x), x) for x in static), avals(dynamic))
    try:
        hash(key)
    except TypeError:
        key = None
    return SplitArgs(dynamic, key, rebuild)


def compiled(key, build, dynamic):
    """``call(*args)`` running ``build(traced=True)(*args, dynamic)``, the jitted function cached under
    ``key``. A model that needs concrete array arguments (a tracer error while compiling) falls back to
    ``build(traced=False)``, which closes over them and compiles per call, as before caching."""
    fn = None
    if key is not None:
        try:
            fn = CACHE.pop(key, None)
        except TypeError:  # an unhashable model, simulator, ...
            key = None
    if fn is _UNTRACEABLE:
        CACHE[key] = fn
        closed = build(traced=False)
        return lambda *a: closed(*a, ())
    if fn is None:
        fn = build(traced=True)
    if key is not None:
        CACHE[key] = fn
        while len(CACHE) > CACHE_SIZE:
            CACHE.popitem(last=False)
    state = {"fn": fn}

    def call(*a):
        try:
            return state["fn"](*a, dynamic)
        except _TRACER_ERRORS:
            if state["fn"] is not fn:
                raise
            if key is not None:
                CACHE[key] = _UNTRACEABLE
            state["fn"] = build(traced=False)  # ignores `dynamic`: closes over the arguments
            return state["fn"](*a, dynamic)

    return call


def memo(key, compute):
    """``compute()``, kept in the same cache under ``key`` (a host-side verdict that depends on what
    fixes the program, not on array values); not kept when ``key`` is None or unhashable."""
    try:
        if key is not None and key in CACHE:
            CACHE.move_to_end(key)
            return CACHE[key]
    except TypeError:  # an unhashable model, simulator, ...
        key = None
    value = compute()
    if key is not None:
        CACHE[key] = value
        while len(CACHE) > CACHE_SIZE:
            CACHE.popitem(last=False)
    return value
