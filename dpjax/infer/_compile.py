"""Compile once, for the convenience drivers (``exact_abc``, ``abc_importance``, ``mcem``): their jitted
functions are cached at module level, keyed by what fixes the traced program."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "CACHE",
    "UNTRACEABLE",
    "SplitArgs",
    "avals",
    "compiled",
    "fingerprint",
    "keep",
    "memo",
    "split_args",
    "with_static",
]

# Compile once: the engines' jitted functions are cached at module level, keyed by what fixes the
# traced program (the model, static settings, the structure / shapes / dtypes of the array arguments
# and the values of the non-array ones, e.g. plate sizes). Array leaves of the model arguments (the
# release, data) are traced arguments, so a new release value reuses the compilation.
CACHE_SIZE = 32
CACHE: OrderedDict = OrderedDict()
UNTRACEABLE = object()  # cached marker: this key's model needs concrete array arguments
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
    static: list  # the other leaves (plate sizes, flags), in order


def avals(leaves):
    return tuple((jnp.shape(x), jnp.result_type(x), getattr(x, "weak_type", False)) for x in leaves)


def fingerprint(tree):
    """A hashable summary of ``tree``: its structure, and each leaf's shape, dtype and value (arrays)
    or repr (anything else)."""
    leaves, treedef = jax.tree.flatten(tree)
    out = []
    for leaf in leaves:
        if isinstance(leaf, jax.Array | np.ndarray | np.generic):
            a = np.asarray(leaf)
            out.append((a.shape, str(a.dtype), a.tobytes()))
        else:
            out.append(repr(leaf))
    return treedef, tuple(out)


def split_args(model_args, model_kwargs) -> SplitArgs:
    leaves, treedef = jax.tree.flatten((tuple(model_args), dict(model_kwargs)))
    # numpy float scalars are data (a release read from a numpy array), not structure: traced, so a new
    # value reuses the compilation; Python numbers and numpy ints stay static (plate sizes, budgets)
    mask = tuple(isinstance(x, jax.Array | np.ndarray | np.floating) for x in leaves)
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
    return SplitArgs(dynamic, key, rebuild, static)


def with_static(split: SplitArgs, model_args, model_kwargs):
    """``(model_args, model_kwargs)`` with each traced leaf that ``split`` holds as static (a Python
    number when it was made) back at that value, and whether any was: NumPyro's
    ``MCMC(..., jit_model_args=True)`` passes every argument traced, plate sizes included."""
    leaves, treedef = jax.tree.flatten((tuple(model_args), dict(model_kwargs)))
    if split.key is None or treedef != split.key[0]:
        return model_args, model_kwargs, False
    static, out, replaced = iter(split.static), [], False
    for leaf, is_array in zip(leaves, split.key[1]):
        if not is_array:
            value = next(static)
            if isinstance(leaf, jax.core.Tracer):
                leaf, replaced = value, True
        out.append(leaf)
    args, kwargs = jax.tree.unflatten(treedef, out)
    return args, kwargs, replaced


def compiled(key, build, dynamic):
    """``call(*args)`` running ``build(traced=True)(*args, dynamic)``, the jitted function cached under
    ``key``. A model that needs concrete array arguments (a tracer error while compiling) falls back to
    ``build(traced=False)``, which closes over them and compiles per call, as before caching."""
    fn = memo(key, lambda: build(traced=True))
    if fn is UNTRACEABLE:
        closed = build(traced=False)
        return lambda *a: closed(*a, ())
    state = {"fn": fn}

    def call(*a):
        try:
            return state["fn"](*a, dynamic)
        except _TRACER_ERRORS:
            if state["fn"] is not fn:
                raise
            keep(key, UNTRACEABLE)
            state["fn"] = build(traced=False)  # ignores `dynamic`: closes over the arguments
            return state["fn"](*a, dynamic)

    return call


def memo(key, compute):
    """``compute()``, kept in the cache under ``key`` (least recently used first out); not kept when
    ``key`` is None or unhashable (an unhashable model, simulator, ...)."""
    try:
        hit = key is not None and key in CACHE
    except TypeError:
        return compute()
    if hit:
        CACHE.move_to_end(key)
        return CACHE[key]
    value = compute()
    keep(key, value)
    return value


def keep(key, value):
    if key is None:
        return
    try:
        CACHE[key] = value
    except TypeError:
        return
    CACHE.move_to_end(key)
    while len(CACHE) > CACHE_SIZE:
        CACHE.popitem(last=False)
