"""k-ary randomized response (Warner 1965; the k-RR of Kairouz, Oh & Viswanath 2014): local differential
privacy for one categorical value, pure ε-DP."""

from __future__ import annotations

from fractions import Fraction

import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from jax import random
from numpyro.distributions import constraints

from . import exact
from .base import (
    Guarantee,
    IntegerMechanism,
    array_module,
    check_key,
    concrete,
    host_rng,
    positive,
    pytree_mechanism,
)

__all__ = ["RandomizedResponse", "RandomizedResponseMechanism"]


class RandomizedResponse(dist.Distribution):
    """The release of k-ary randomized response given the category ``loc``: ``loc`` with probability
    e^``log_keep``, each other category of 0 … k−1 with e^``log_other``. Values are floats (as the
    statistic T of :func:`dpjax.privatized`) holding whole categories."""

    support = constraints.real  # the categories 0 … k−1, as floats; others have density 0
    pytree_data_fields = ("loc", "log_keep", "log_other")
    pytree_aux_fields = ("num_categories",)

    def __init__(self, loc, log_keep, log_other, num_categories, *, validate_args=None):
        self.loc, self.log_keep, self.log_other = jnp.asarray(loc), log_keep, log_other
        self.num_categories = num_categories
        super().__init__(batch_shape=jnp.shape(loc), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        """Simulation-grade (a float categorical draw); publish with the mechanism's exact ``release``."""
        logits = jnp.where(
            jnp.arange(self.num_categories) == self.loc[..., None], self.log_keep, self.log_other
        )
        draw = random.categorical(key, logits, shape=sample_shape + self.batch_shape)
        return draw.astype(jnp.result_type(self.loc, float))

    def log_prob(self, value):
        value = jnp.asarray(value)
        category = (value == jnp.round(value)) & (value >= 0) & (value < self.num_categories)
        return jnp.where(value == self.loc, self.log_keep, jnp.where(category, self.log_other, -jnp.inf))


@pytree_mechanism(("_eps",), ("num_categories",))
class RandomizedResponseMechanism(IntegerMechanism):
    """k-ary randomized response: a category T ∈ {0, …, k−1} is released as itself with probability
    e^ε / (e^ε + k − 1), else as each other category with probability 1 / (e^ε + k − 1). ε-DP for one
    value (any two values are neighbours): local DP when each record's value is released on its own, with
    :func:`dpjax.privatized`'s ``groups`` giving each record its own unit (``groups=jnp.arange(n)``).

    :param epsilon: the privacy-loss budget ε > 0 of one release.
    :param num_categories: k ≥ 2; the statistic is the category, an integer in 0 … k−1.

    ``release(None, T)`` publishes exactly: each entry is drawn by rejection from the uniform category
    with the acceptance e^(−ε) of Canonne, Kamath & Steinke's exact Bernoulli (integer arithmetic, the
    operating system's randomness). ``mechanism(T)`` is the NumPyro distribution of the release.

    >>> import dpjax
    >>> rr = dpjax.RandomizedResponseMechanism(epsilon=1.0, num_categories=2)
    >>> round(float(rr.keep_probability), 4)  # e / (e + 1)
    0.7311
    >>> rr.guarantee.epsilon
    1.0
    """

    def __init__(self, epsilon, num_categories: int):
        self._eps = positive("epsilon", epsilon)  # `epsilon` is the base class's property
        if np.ndim(self._eps):
            raise ValueError("`epsilon` must be one number (one budget for every value released).")
        if isinstance(num_categories, bool) or not isinstance(num_categories, (int, np.integer)):
            raise ValueError(f"`num_categories` must be an int ≥ 2, got {num_categories!r}.")
        if num_categories < 2:
            raise ValueError(f"`num_categories` must be an int ≥ 2, got {num_categories!r}.")
        self.num_categories = int(num_categories)

    #: the spacing of the released values (categories), where the other mechanisms have a noise scale
    scale = 1.0
    unbounded_noise = False

    @property
    def keep_probability(self):
        """P(release = T) = e^ε / (e^ε + k − 1)."""
        xp = array_module(self._eps)
        return 1.0 / (1.0 + (self.num_categories - 1) * xp.exp(-xp.asarray(self._eps)))

    @property
    def guarantee(self) -> Guarantee:
        """ε-DP for one released value (the log ratio of its release probabilities is at most ε)."""
        return Guarantee.composed("epsilon", self._eps)

    def _log_probs(self):
        log_keep = jnp.log(self.keep_probability)
        return log_keep, log_keep - jnp.asarray(self._eps)  # P(each other category) = P(keep)·e^(−ε)

    def noise(self, loc):
        log_keep, log_other = self._log_probs()
        return RandomizedResponse(loc, log_keep, log_other, self.num_categories)

    def log_noise_density(self, residual):
        """log η at ``residual = release − T``: a function of whether the release kept T, for a release
        and a T that are both categories (``privatized`` checks the release; T is the model's)."""
        r = jnp.asarray(residual)
        log_keep, log_other = self._log_probs()
        valid = (r == jnp.round(r)) & (jnp.abs(r) < self.num_categories)
        return jnp.where(r == 0, log_keep, jnp.where(valid, log_other, -jnp.inf))

    def _max_log_density_per_entry(self):
        return array_module(self._eps).log(self.keep_probability)

    def _accuracy(self, scale, alpha):
        return 0.0 if float(self.keep_probability) >= 1 - alpha else float(self.num_categories - 1)

    def release(self, rng_key, statistic):
        """Release each category exactly (see the class docstring); ``rng_key=None`` for a real
        publication (the operating system's CSPRNG), a JAX key for a reproducible simulation."""
        check_key(rng_key, allow_none=True)
        if not concrete(self, statistic):
            raise ValueError("randomized response's exact `release` runs on the host: give concrete values.")
        values = exact.integer_array(statistic, "statistic")
        k = self.num_categories
        if np.any((values < 0) | (values >= k)):
            raise ValueError(
                f"randomized response releases categories 0 … {k - 1}; the statistic has others."
            )
        rng, gamma = host_rng(rng_key), Fraction(float(self._eps))
        out = []
        for t in values.ravel().tolist():
            while True:  # proposal: a uniform category; accept T always, any other with probability e^(−ε)
                c = rng.randrange(k)
                if c == t or exact.bernoulli_exp(gamma, rng):
                    out.append(c)
                    break
        return np.asarray(out, dtype=np.int64).reshape(values.shape)
