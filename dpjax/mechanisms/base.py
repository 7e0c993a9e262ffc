"""What every release mechanism shares: the noise-adding interface, guarantees, validation.

All dpjax mechanisms add data-independent noise to a confidential statistic T, so the release
density is a function of the residual ``release - T`` alone. The record sweep relies on that: it
carries the residual instead of T, which keeps float32 sums accurate at census-scale n.

Curator side: ``mechanism.release`` of the floating-point mechanisms only *simulates* a release;
the integer mechanisms publish exactly with ``release(None, T)`` (see :class:`IntegerMechanism`).
"""

from __future__ import annotations

import random
import secrets
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.distributions import constraints

from . import exact

__all__ = [
    "Guarantee",
    "IntegerMechanism",
    "Mechanism",
    "check_key",
    "concrete",
    "host_rng",
    "integer",
    "pytree_mechanism",
]


class _Integer(constraints.Constraint):
    """All integers (NumPyro has only bounded or one-sided integer constraints)."""

    is_discrete = True

    def __call__(self, x):
        return x == jnp.floor(x)

    def feasible_like(self, prototype):
        return jnp.zeros_like(prototype)

    def tree_flatten(self):
        return (), ((), {})

    def __eq__(self, other):
        return isinstance(other, _Integer)


integer = _Integer()
"""Support of the integer-valued (discrete Laplace and discrete Gaussian) releases."""


def _nested(arr) -> tuple:
    """An array as nested tuples of floats (hashable, comparable; ``np.asarray`` restores it)."""
    return tuple(_nested(a) for a in arr) if np.ndim(arr) else float(arr)


def _entries(t) -> str:
    fmt = {"float_kind": "{:g}".format}
    return np.array2string(np.asarray(t), separator=", ", threshold=8, formatter=fmt)


class Guarantee(NamedTuple):
    """Privacy guarantee of one release: pure ``epsilon``-DP, ``(epsilon, delta)``-DP and/or
    ``rho``-zCDP. Entries that do not apply are ``None``.

    A mechanism with array-valued parameters releases each entry with its own budget: then
    ``epsilon_per_entry`` / ``rho_per_entry`` hold the per-entry values (nested tuples, shaped like
    the parameters) and ``epsilon`` / ``rho`` are the totals by basic composition (their sum).

    A mechanism built from traced parameters (inside ``jax.jit`` / ``jax.vmap``) has a traced
    guarantee: ``epsilon`` / ``rho`` are then JAX scalars and the per-entry values a JAX array.

    >>> import dpjax
    >>> g = dpjax.LaplaceMechanism(epsilon=[1.0, 2.0], sensitivity=1.0).guarantee
    >>> g.epsilon, g.epsilon_per_entry
    (3.0, (1.0, 2.0))
    >>> print(g)
    ε=3 (per entry [1, 2])
    """

    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None
    epsilon_per_entry: tuple | None = None
    rho_per_entry: tuple | None = None

    @classmethod
    def composed(cls, kind: str, per_entry, **others) -> Guarantee:
        """The guarantee of ``kind`` (``"epsilon"`` or ``"rho"``) from a scalar or per-entry array."""
        if not concrete(per_entry):
            arr = jnp.asarray(per_entry)
            if arr.ndim == 0:
                return cls(**{kind: arr}, **others)
            return cls(**{kind: arr.sum(), f"{kind}_per_entry": arr}, **others)
        arr = np.asarray(per_entry, dtype=float)
        if arr.ndim == 0:
            return cls(**{kind: float(arr)}, **others)
        return cls(**{kind: float(arr.sum()), f"{kind}_per_entry": _nested(arr)}, **others)

    def __str__(self):
        if not concrete(tuple(self)):
            return "a traced guarantee (its values are known only when the computation runs)"
        if any(np.ndim(v) for v in (self.epsilon, self.delta, self.rho) if v is not None):
            return repr(self)  # e.g. the stacked guarantees of a vmap over a grid of ε
        parts = []
        if self.epsilon is not None:
            each = f" (per entry {_entries(self.epsilon_per_entry)})" if self.epsilon_per_entry else ""
            parts.append(f"ε={self.epsilon:g}{each}" + (f", δ={self.delta:g}" if self.delta else ""))
        if self.rho is not None:
            each = f"; per entry {_entries(self.rho_per_entry)}" if self.rho_per_entry else ""
            parts.append(f"ρ={self.rho:g} (zCDP{each})")
        return "; ".join(parts) if parts else "no formal guarantee (noise scale given directly)"


def concrete(*values) -> bool:
    """Whether every leaf of ``values`` is concrete (no JAX tracer), so it can be checked on the host."""
    return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(values))


def array_module(*values):
    """``numpy`` for concrete values (host float64 arithmetic), ``jax.numpy`` for traced ones."""
    return np if concrete(*values) else jnp


def positive(name: str, value, *, allow_none: bool = False):
    """Validate a positive finite scalar or array parameter.

    A traced value (a mechanism built inside ``jax.jit`` / ``jax.vmap``, e.g. over a grid of ε)
    cannot be checked on the host: it is returned unchecked as a float JAX array, and an invalid
    traced value (ε ≤ 0, NaN) gives NaN or infinite densities instead of an error. Validate a
    grid before tracing over it.
    """
    if value is None:
        if allow_none:
            return None
        raise ValueError(f"`{name}` is required.")
    if not concrete(value):
        return jnp.asarray(value, dtype=jnp.result_type(float))
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be a positive number, got {value!r}.") from None
    if arr.size == 0 or not np.all(np.isfinite(arr)) or not np.all(arr > 0):
        raise ValueError(f"`{name}` must be positive and finite, got {value!r}.")
    return float(arr) if arr.ndim == 0 else arr


def positive_integer(name: str, value):
    """Validate a positive integer-valued scalar or array (the sensitivity of an integer statistic)."""
    arr = positive(name, value)
    if not concrete(arr):  # traced: unchecked, like `positive`
        return arr
    if not np.all(np.asarray(arr) == np.floor(arr)):
        raise ValueError(
            f"`{name}` must be an integer ≥ 1 for an integer-valued statistic (changing one record "
            f"changes an integer statistic by an integer), got {value!r}."
        )
    return arr


def check_key(rng_key, *, allow_none: bool = False, batched: bool = False):
    """Raise ``ValueError`` naming ``rng_key`` unless it is one JAX PRNG key (typed or legacy) or,
    with ``batched``, also a 1-d batch of them (one per chain)."""
    if rng_key is None and allow_none:
        return
    dtype, shape = getattr(rng_key, "dtype", None), getattr(rng_key, "shape", None)
    if dtype is not None:
        ndims = (0, 1) if batched else (0,)
        if jnp.issubdtype(dtype, jax.dtypes.prng_key) and len(shape) in ndims:
            return
        if dtype == np.uint32 and len(shape) >= 1 and len(shape) - 1 in ndims:  # jax.random.PRNGKey
            return
    hint = " or None (the operating system's CSPRNG, for a real publication)" if allow_none else ""
    raise ValueError(
        f"`rng_key` must be a JAX PRNG key, e.g. jax.random.key(0) or jax.random.PRNGKey(0){hint}; "
        f"got {rng_key!r}."
    )


def pytree_mechanism(data_fields, aux_fields=()):
    """Class decorator registering a :class:`Mechanism` subclass as a JAX pytree.

    ``data_fields`` name the attributes that may be traced (ε-derived scales, sensitivities,
    normalizers: the pytree's leaves); ``aux_fields`` the static, hashable ones (always concrete).
    Unflattening sets the attributes on a bare instance (no ``__init__``), so traced leaves are
    never validated; cached properties (e.g. the exact rational parameters) are recomputed lazily.
    """
    data_fields, aux_fields = tuple(data_fields), tuple(aux_fields)

    def register(cls):
        def flatten(self):
            return tuple(getattr(self, f) for f in data_fields), tuple(getattr(self, f) for f in aux_fields)

        def unflatten(aux, children):
            obj = object.__new__(cls)
            for f, v in zip(data_fields + aux_fields, tuple(children) + tuple(aux)):
                setattr(obj, f, v)
            return obj

        jax.tree_util.register_pytree_node(cls, flatten, unflatten)
        return cls

    return register


class Mechanism:
    """A noise-adding release mechanism ``release = T + noise``.

    Subclasses define :meth:`noise` (the noise law, centred at a location) and the guarantee.
    Conditioned on the confidential statistic ``T`` the mechanism is a NumPyro distribution over
    the release: ``mechanism(T)``; entries of a vector statistic get independent noise.

    The built-in mechanisms are JAX pytrees whose privacy parameters may be traced: build them
    inside ``jax.jit`` / ``jax.vmap`` (e.g. over a grid of ε, one compilation for all) and the
    densities, ``mechanism(T)`` and ``guarantee`` are traced too. Only concrete parameters are
    validated; the host-only parts (the exact integer ``release``, the analytic Gaussian
    calibration from ``(epsilon, delta)``) raise ``ValueError`` for traced parameters.
    """

    #: Per-entry noise scale (the Laplace ``b`` or the Gaussian ``sigma``), scalar or array.
    scale: float | np.ndarray
    #: Whether η(s | T) depends on s − T only (noise added to T): the record sweep then carries the
    #: residual s − T and evaluates ``log_noise_density`` (the fast path). A truncated or censored
    #: mechanism sets False and defines ``noise(T)`` as the release law given T; every engine then
    #: evaluates ``log_density(s, T)``.
    additive: bool = True
    #: Whether every residual has a finite noise density (False for randomized response, whose release
    #: and statistic are both categories): ``privatized`` then probes the density's float range.
    unbounded_noise: bool = True
    #: The norm ``sensitivity`` is taken in (1: L1, Laplace noise; 2: L2, Gaussian noise); None where the
    #: mechanism has no sensitivity. The support check of ``dpjax.infer`` reads it.
    sensitivity_norm: int | None = None

    def noise(self, loc):
        """Per-entry NumPyro distribution of the release given ``T = loc``; batch shape =
        ``shape(loc)`` broadcast with the scale."""
        raise NotImplementedError

    @property
    def guarantee(self) -> Guarantee:
        """The privacy guarantee of one release under the declared sensitivity."""
        raise NotImplementedError

    @property
    def epsilon(self) -> float | None:
        """Pure-DP ``epsilon`` of the mechanism (``None`` when it is not pure DP). By the seed's
        Proposition 3.1 the record-sweep acceptance probability never drops below ``exp(-ε)``."""
        g = self.guarantee
        return g.epsilon if g.delta is None else None

    def __call__(self, statistic, event_dim: int | None = None):
        """The release distribution given the confidential statistic ``T``.

        ``event_dim`` trailing dimensions of ``T`` form one release (default: all of them).

        >>> import jax.numpy as jnp, dpjax
        >>> d = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0)(jnp.array([3.0, 4.0]))
        >>> d.event_shape
        (2,)
        """
        statistic = jnp.asarray(statistic)
        event_dim = statistic.ndim if event_dim is None else event_dim
        d = self.noise(statistic)
        return d.to_event(event_dim) if event_dim else d

    def log_noise_density(self, residual):
        """Elementwise log density of the noise at ``residual = release - T`` (additive
        mechanisms only)."""
        if not self.additive:
            raise ValueError(
                f"{type(self).__name__} is not additive (η(s | T) is not a function of s − T): "
                "use log_density(release, T)."
            )
        return self.noise(jnp.zeros_like(residual)).log_prob(residual)

    def log_density(self, release, statistic):
        """Elementwise log density ``log η(release | T)``."""
        if not self.additive:
            return self.noise(jnp.asarray(statistic)).log_prob(jnp.asarray(release))
        return self.log_noise_density(jnp.asarray(release) - jnp.asarray(statistic))

    def release(self, rng_key, statistic):
        """SIMULATE a curator's release of ``statistic`` (one independent noise draw per entry),
        for simulation studies and tests. Traceable (jit, vmap).

        **Not for publishing.** Floating-point noise is not differentially private: the set of
        representable outputs depends on ``T`` (Mironov 2012), e.g. 89% of float32 Laplace
        releases of T = 0 can never be produced from T = 1, which reveals T. To publish, use an
        integer statistic with :class:`~dpjax.DiscreteLaplaceMechanism` or
        :class:`~dpjax.DiscreteGaussianMechanism` and ``release(None, T)`` (exact, CSPRNG).

        >>> import jax, dpjax
        >>> s = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0).release(jax.random.key(0), 10.0)
        """
        check_key(rng_key)
        statistic = jnp.asarray(statistic, dtype=jnp.result_type(float))
        return self.noise(statistic).sample(rng_key)

    def check_release_shape(self, shape, what="the statistic T") -> None:
        """Raise a ValueError unless the mechanism's parameters are a scalar (one budget for every
        entry, reported once per entry) or have ``shape`` (one budget per entry): parameters that
        broadcast from another shape, e.g. ε of shape (1,) over a 3-vector, would release three entries
        under a guarantee that counts one."""
        params = np.shape(self.scale)
        if params not in ((), tuple(shape)):
            raise ValueError(
                f"The mechanism's parameters have shape {params} but {what} has shape {tuple(shape)}: give "
                "one ε (or scale) for the whole release, or one per entry of T, so that the guarantee counts "
                "every entry released."
            )

    def max_log_density(self, shape=()) -> float:
        """The maximum over releases of ``log η(release | T)`` for a release of ``shape``
        (the constant of exact rejection ABC: accept with ``η(s|T) / max η``). A traced scalar
        for traced parameters."""
        per_entry = self._max_log_density_per_entry()
        xp = array_module(per_entry)
        per_entry = xp.asarray(per_entry)
        try:
            per_entry = xp.broadcast_to(per_entry, shape)
        except ValueError:
            raise ValueError(
                f"The mechanism's parameters have shape {per_entry.shape}, which does not broadcast "
                f"to the release shape {shape!r}."
            ) from None
        return float(np.sum(per_entry)) if xp is np else jnp.sum(per_entry)

    def _max_log_density_per_entry(self):
        raise NotImplementedError

    def accuracy(self, alpha: float = 0.05):
        """How far the release strays from the statistic: the smallest ``a`` with
        P(|release − T| ≤ a) ≥ 1 − ``alpha`` for each entry (per entry, not jointly; a union bound gives
        the joint level: ``alpha / size`` each). Exact for every built-in mechanism; for an integer
        mechanism ``a`` is an integer. OpenDP's ``*_scale_to_accuracy`` give the same interval as an
        open one, |error| < a′ (for integers a = ⌈a′⌉ − 1). Needs concrete parameters.

        >>> import dpjax
        >>> round(dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0).accuracy(0.05), 4)  # b·ln(1/α)
        2.9957
        >>> dpjax.DiscreteGaussianMechanism(sigma=1.0).accuracy(0.05)
        2.0
        """
        if not (isinstance(alpha, (int, float, np.floating)) and 0 < alpha < 1):
            raise ValueError(f"`alpha` must be a probability in (0, 1), got {alpha!r}.")
        if not concrete(self):
            raise ValueError("`accuracy` needs concrete privacy parameters, not traced ones (jit / vmap).")
        scale = np.asarray(self.scale, dtype=float)
        out = np.vectorize(lambda b: float(self._accuracy(float(b), float(alpha))))(scale)
        return float(out) if out.ndim == 0 else out

    def _accuracy(self, scale: float, alpha: float) -> float:
        """:meth:`accuracy` of one entry of noise scale ``scale``."""
        raise ValueError(
            f"{type(self).__name__} defines no `accuracy`: simulate its noise (`release`) and take quantiles."
        )

    def __repr__(self):
        return f"{type(self).__name__}(scale={self.scale!r}; {self.guarantee})"


def host_rng(rng_key):
    """``secrets.SystemRandom()`` for ``None``; else ``random.Random`` seeded from the key's bits."""
    if rng_key is None:
        return secrets.SystemRandom()
    if not concrete(rng_key):
        raise ValueError(_NOT_TRACEABLE)
    bits = np.asarray(jax.random.bits(rng_key, (4,), jnp.uint32))
    return random.Random(int.from_bytes(bits.astype("<u4").tobytes(), "little"))


_NOT_TRACEABLE = (
    "An integer mechanism's `release` runs exactly on the host and cannot be traced (jit / vmap); "
    "to simulate releases inside a transformation use the distribution, `mechanism(T).sample(key)`."
)


_PARAMS_NOT_TRACEABLE = (
    "An integer mechanism's exact `release` needs concrete privacy parameters (it draws the noise "
    "with exact rational arithmetic on the host), but this mechanism was built from traced values "
    "(inside jax.jit / jax.vmap / jax.grad). Build it from concrete numbers to publish; to simulate "
    "releases inside a transformation use the distribution, `mechanism(T).sample(key)`."
)


class IntegerMechanism(Mechanism):
    """A mechanism for integer statistics whose release is ``T`` plus exact integer noise."""

    #: Exact noise parameter(s) of :meth:`_exact_draw` (e.g. a ``Fraction``), scalar or object array.
    _exact_params: object

    @staticmethod
    def _exact_draw(param, rng) -> int:
        """One exact noise draw (a Python int) for parameter ``param`` from ``rng.randrange``."""
        raise NotImplementedError

    def log_density(self, release, statistic):
        """Elementwise log pmf ``log η(release | T)``. Concrete integer-valued inputs (e.g. the
        int64 output of :meth:`release`) are subtracted exactly on the host first, so a release at
        T = 2⁶² gets the density of its residual, not of a float32 rounding of it.

        >>> import dpjax
        >>> m = dpjax.DiscreteLaplaceMechanism(epsilon=1.0)
        >>> round(float(m.log_density(2**62 + 3, 2**62)), 4)
        -3.7719
        """
        if concrete(release, statistic):
            try:
                r, t = exact.integer_array(release, "release"), exact.integer_array(statistic, "statistic")
            except ValueError:  # not integers: the JAX path gives -inf off the support
                pass
            else:
                residual = np.asarray(r, dtype=object) - np.asarray(t, dtype=object)
                return self.log_noise_density(jnp.asarray(np.asarray(residual, dtype=float)))
        return super().log_density(release, statistic)

    def release(self, rng_key, statistic):
        """Release ``statistic + noise`` with noise drawn *exactly* on the host (integer and
        rational arithmetic, Canonne, Kamath & Steinke 2020; see :mod:`dpjax.mechanisms.exact`).

        :param rng_key: ``None`` for a real publication: the noise then comes from the operating
            system's CSPRNG (``secrets.SystemRandom``). A JAX key seeds a ``random.Random`` from
            the key's bits: the same key gives the same release (reproducible simulation), but
            anyone holding the key can recompute the noise, so never publish with one.
        :param statistic: the confidential integer statistic: Python ints (any size), integer
            arrays, or float arrays whose entries are exact integers (float32 holds integers
            exactly only up to 2²⁴: pass large counts as integers). Anything else (a non-integer,
            NaN or inf) raises ``ValueError``.
        :returns: a NumPy ``int64`` array shaped like the statistic broadcast with the mechanism's
            parameters (``object`` ints where a value exceeds int64). The sum is exact.

        Runs in Python, not under ``jax.jit`` / ``jax.vmap``; to simulate releases inside a
        transformation use the NumPyro distribution ``mechanism(T).sample(key)`` (float
        arithmetic, simulation-grade only).

        >>> import jax, dpjax
        >>> mech = dpjax.DiscreteLaplaceMechanism(epsilon=1.0)
        >>> s = mech.release(None, [123_456_789, 5])   # a real publication (CSPRNG noise)
        >>> s.dtype, s.shape
        (dtype('int64'), (2,))
        >>> a = mech.release(jax.random.key(0), 10)   # a reproducible simulated release
        >>> bool(a == mech.release(jax.random.key(0), 10))
        True
        """
        check_key(rng_key, allow_none=True)
        if not concrete(self):
            raise ValueError(_PARAMS_NOT_TRACEABLE)
        if not concrete(statistic):
            raise ValueError(_NOT_TRACEABLE)
        values = exact.integer_array(statistic, "statistic")
        params = np.asarray(self._exact_params, dtype=object)
        if values.shape and params.shape:
            self.check_release_shape(values.shape, "`statistic`")
        shape = params.shape or values.shape
        rng, draw = host_rng(rng_key), self._exact_draw
        flat = np.broadcast_to(params, shape).ravel().tolist()
        noise = [draw(p, rng) for p in flat]
        return exact.add_integers(np.broadcast_to(values, shape), noise)
