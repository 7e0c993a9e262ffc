"""The Laplace family: the continuous Laplace mechanism and the discrete Laplace (two-sided
geometric) mechanism, both pure ε-DP."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from jax import random
from numpyro.distributions import constraints
from numpyro.distributions.util import promote_shapes, validate_sample

from . import exact
from .base import (
    Guarantee,
    IntegerMechanism,
    Mechanism,
    array_module,
    concrete,
    integer,
    positive,
    positive_integer,
    pytree_mechanism,
)

__all__ = ["DiscreteLaplace", "DiscreteLaplaceMechanism", "LaplaceMechanism"]


def _scale_from(epsilon, sensitivity, scale):
    """Resolve ``scale`` from either ``scale`` or ``(epsilon, sensitivity)``."""
    if scale is not None:
        if epsilon is not None:
            raise ValueError("Give either `scale` or `epsilon` (with `sensitivity`), not both.")
        return positive("scale", scale), positive("sensitivity", sensitivity, allow_none=True)
    if epsilon is None or sensitivity is None:
        raise ValueError("Give `scale`, or both `epsilon` and `sensitivity`.")
    epsilon = positive("epsilon", epsilon)
    sensitivity = positive("sensitivity", sensitivity)
    xp = array_module(epsilon, sensitivity)
    return xp.asarray(sensitivity) / xp.asarray(epsilon), sensitivity


class _LaplaceLike(Mechanism):
    sensitivity_norm = 1  # Δ₁

    def __init__(self, epsilon=None, sensitivity=None, *, scale=None):
        scale, self.sensitivity = _scale_from(epsilon, sensitivity, scale)
        self.scale = float(scale) if concrete(scale) and np.ndim(scale) == 0 else scale

    @property
    def guarantee(self) -> Guarantee:
        """ε = Δ₁ / b. With array-valued parameters: per-entry ε_i = Δ_i / b_i (Δ_i the
        sensitivity of entry i) and the total Σ ε_i (basic composition; an upper bound whatever
        the entries' joint sensitivity)."""
        if self.sensitivity is None:
            return Guarantee()
        xp = array_module(self.sensitivity, self.scale)
        return Guarantee.composed("epsilon", xp.asarray(self.sensitivity) / xp.asarray(self.scale))


@pytree_mechanism(("scale", "sensitivity"))
class LaplaceMechanism(_LaplaceLike):
    """Laplace mechanism: ``release = T + Laplace(0, b)`` per entry, ``b = Δ₁ / ε``.

    :param epsilon: privacy-loss budget ε > 0 of the whole (vector) release; an array gives each
        entry its own budget (the guarantee then reports them and their sum).
    :param sensitivity: L1 sensitivity Δ₁ of the statistic (bounded or unbounded, as the curator
        declared it).
    :param scale: the Laplace scale ``b`` directly (then ε is reported only if ``sensitivity`` is
        also given).

    Traceable: ε (or the scale) may be a traced value, e.g.
    ``jax.vmap(lambda eps: LaplaceMechanism(epsilon=eps, sensitivity=1.0).log_density(s, T))``.

    :meth:`release` only *simulates* a release (float noise is not DP, Mironov 2012): publish
    integer statistics with :class:`DiscreteLaplaceMechanism` and ``release(None, T)``.

    >>> import dpjax
    >>> m = dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=2.0)
    >>> m.scale, m.guarantee.epsilon
    (4.0, 0.5)
    """

    def noise(self, loc):
        return dist.Laplace(loc, self.scale)

    def _accuracy(self, scale, alpha):
        return scale * math.log(1.0 / alpha)  # P(|noise| > a) = exp(−a / b)

    def _max_log_density_per_entry(self):
        xp = array_module(self.scale)
        return -xp.log(2.0 * xp.asarray(self.scale))


class DiscreteLaplace(dist.Distribution):
    """Discrete Laplace (two-sided geometric) distribution on ``loc + ℤ``:
    ``P(k) = tanh(1/(2 scale)) · exp(-|k - loc| / scale)``. ``loc`` must be an integer.

    Matches ``scipy.stats.dlaplace(a=1/scale, loc=loc)``.
    """

    arg_constraints = {"loc": integer, "scale": constraints.positive}
    support = integer
    pytree_data_fields = ("loc", "scale")

    def __init__(self, loc=0, scale=1.0, *, validate_args=None):
        self.loc, self.scale = promote_shapes(loc, scale)
        batch_shape = jnp.broadcast_shapes(jnp.shape(loc), jnp.shape(scale))
        super().__init__(batch_shape=batch_shape, validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        """Simulation-grade JAX sampler (traceable): float32 exponentials truncate the support
        (|k| ≤ ~16·scale) and round T above 2²⁴, so it is not exactly ε-DP. To publish, use
        :meth:`DiscreteLaplaceMechanism.release` with ``rng_key=None`` (exact)."""
        # difference of two geometric counts: floor(scale·E) is Geometric(1 - e^{-1/scale})
        shape = sample_shape + self.batch_shape
        e = random.exponential(key, (2,) + shape)
        geo = jnp.floor(self.scale * e)
        return self.loc + geo[0] - geo[1]

    @validate_sample
    def log_prob(self, value):
        a = 1.0 / self.scale
        return jnp.log(jnp.tanh(a / 2)) - a * jnp.abs(value - self.loc)

    @property
    def mean(self):
        return jnp.broadcast_to(self.loc, self.batch_shape)

    @property
    def variance(self):
        p = jnp.exp(-1.0 / self.scale)
        return jnp.broadcast_to(2 * p / (1 - p) ** 2, self.batch_shape)


@pytree_mechanism(("scale", "sensitivity", "_exact_inputs"))
class DiscreteLaplaceMechanism(_LaplaceLike, IntegerMechanism):
    """Discrete Laplace (two-sided geometric) mechanism for integer statistics: ε-DP with
    ``P(noise = k) ∝ exp(-ε |k| / Δ₁)`` (Ghosh, Roughgarden & Sundararajan 2012).

    :param epsilon: privacy-loss budget ε > 0.
    :param sensitivity: integer L1 sensitivity Δ₁ ≥ 1 (default 1).
    :param scale: ``Δ₁ / ε`` directly.

    ``release(None, T)`` publishes exactly: the noise scale is the rational
    ``Fraction(Δ₁) / Fraction(ε)`` (the floats as given, exactly) and the noise is drawn in
    integer arithmetic from a CSPRNG (:meth:`IntegerMechanism.release`). The densities and
    ``mechanism(T)`` accept a traced ε or scale; the exact ``release`` needs concrete ones.

    >>> import dpjax
    >>> dpjax.DiscreteLaplaceMechanism(epsilon=1.0).scale
    1.0
    """

    def __init__(self, epsilon=None, sensitivity=1, *, scale=None):
        if scale is None and sensitivity is not None:
            sensitivity = positive_integer("sensitivity", sensitivity)
        super().__init__(epsilon, sensitivity if scale is None else None, scale=scale)
        self._exact_inputs = (scale, None) if scale is not None else (sensitivity, epsilon)

    @functools.cached_property
    def _exact_params(self):
        """The exact rational scale(s): ``Fraction(scale)`` or ``Fraction(Δ₁) / Fraction(ε)``."""
        num, eps = self._exact_inputs
        num = _fractions(positive("scale", num))
        return num if eps is None else num / _fractions(positive("epsilon", eps))

    _exact_draw = staticmethod(exact.discrete_laplace)

    def noise(self, loc):
        return DiscreteLaplace(loc, self.scale)

    def _accuracy(self, scale, alpha):
        # P(|noise| > a) = 2 p^(a+1) / (1 + p), p = exp(−1/b), for integers a ≥ 0
        p = math.exp(-1.0 / scale)
        a = max(0, math.ceil(math.log(alpha * (1 + p) / 2) / math.log(p) - 1))
        while a > 0 and 2 * p**a / (1 + p) <= alpha:  # guard the rounding of the closed form
            a -= 1
        while 2 * p ** (a + 1) / (1 + p) > alpha:
            a += 1
        return float(a)

    def _max_log_density_per_entry(self):
        xp = array_module(self.scale)
        return xp.log(xp.tanh(0.5 / xp.asarray(self.scale)))


def _fractions(x):
    """Exact fractions of a float scalar or array (an ``object`` array for arrays)."""
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0:
        return Fraction(float(arr))
    return np.array([Fraction(v) for v in arr.ravel().tolist()], dtype=object).reshape(arr.shape)
