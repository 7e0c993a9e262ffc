"""What every release mechanism shares: the noise-adding interface, guarantees, validation.

All dpjax mechanisms add data-independent noise to a confidential statistic T, so the release
density is a function of the residual ``release - T`` alone. The record sweep relies on that: it
carries the residual instead of T, which keeps float32 sums accurate at census-scale n.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from numpyro.distributions import constraints

__all__ = ["Guarantee", "IntegerMechanism", "Mechanism", "integer"]


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


class Guarantee(NamedTuple):
    """Privacy guarantee of one release: pure ``epsilon``-DP, ``(epsilon, delta)``-DP and/or
    ``rho``-zCDP. Entries that do not apply are ``None``."""

    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None

    def __str__(self):
        parts = []
        if self.epsilon is not None:
            parts.append(f"ε={self.epsilon:g}" + (f", δ={self.delta:g}" if self.delta else ""))
        if self.rho is not None:
            parts.append(f"ρ={self.rho:g} (zCDP)")
        return "; ".join(parts) if parts else "no formal guarantee (noise scale given directly)"


def positive(name: str, value, *, allow_none: bool = False):
    """Validate a positive finite scalar or array parameter before any tracing."""
    if value is None:
        if allow_none:
            return None
        raise ValueError(f"`{name}` is required.")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be a positive number, got {value!r}.") from None
    if arr.size == 0 or not np.all(np.isfinite(arr)) or not np.all(arr > 0):
        raise ValueError(f"`{name}` must be positive and finite, got {value!r}.")
    return float(arr) if arr.ndim == 0 else arr


def scalar_of(value):
    """The single value of an all-equal parameter, else ``None`` (for guarantee reporting)."""
    arr = np.asarray(value, dtype=float)
    return float(arr.flat[0]) if np.all(arr == arr.flat[0]) else None


class Mechanism:
    """A noise-adding release mechanism ``release = T + noise``.

    Subclasses define :meth:`noise` (the noise law, centred at a location) and the guarantee.
    Conditioned on the confidential statistic ``T`` the mechanism is a NumPyro distribution over
    the release: ``mechanism(T)``; entries of a vector statistic get independent noise.
    """

    #: Per-entry noise scale (the Laplace ``b`` or the Gaussian ``sigma``), scalar or array.
    scale: float | np.ndarray

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
        """Elementwise log density of the noise at ``residual = release - T``."""
        return self.noise(jnp.zeros_like(residual)).log_prob(residual)

    def log_density(self, release, statistic):
        """Elementwise log density ``log η(release | T)``."""
        return self.log_noise_density(jnp.asarray(release) - jnp.asarray(statistic))

    def release(self, rng_key, statistic):
        """Simulate a curator's release of ``statistic`` (one independent noise draw per entry).

        >>> import jax, dpjax
        >>> s = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0).release(jax.random.key(0), 10.0)
        """
        statistic = jnp.asarray(statistic, dtype=jnp.result_type(float))
        return self.noise(statistic).sample(rng_key)

    def max_log_density(self, shape=()) -> float:
        """The maximum over releases of ``log η(release | T)`` for a release of ``shape``
        (the constant of exact rejection ABC: accept with ``η(s|T) / max η``)."""
        per_entry = np.broadcast_to(np.asarray(self._max_log_density_per_entry()), shape)
        return float(np.sum(per_entry))

    def _max_log_density_per_entry(self):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}(scale={self.scale!r}; {self.guarantee})"


class IntegerMechanism(Mechanism):
    """A mechanism for integer statistics: the statistic is rounded and the release is an integer."""

    def release(self, rng_key, statistic):
        statistic = jnp.asarray(statistic)
        if statistic.dtype.kind == "f":
            statistic = jnp.round(statistic)
        return self.noise(statistic.astype(jnp.result_type(float))).sample(rng_key)
