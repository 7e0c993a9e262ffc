"""Normal records with unknown mean and sd; the curator releases the clamped, [0, 1]-scaled sum
and sum of squares with Laplace noise. With u = (clamp(x) - a) / (b - a) ∈ [0, 1], replacing one
record changes (Σu, Σu²) by at most 1 + 1, so the bounded L1 sensitivity is 2."""

from __future__ import annotations

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from ..mechanisms import LaplaceMechanism, clamp
from ..primitives import privatized

__all__ = ["clamped_normal", "naive_normal"]

SENSITIVITY = 2.0


def clamp_to_unit(x, lower, upper):
    """``x`` clamped to ``[lower, upper]`` and mapped affinely onto ``[0, 1]``."""
    return (clamp(x, lower, upper) - lower) / (upper - lower)


def clamped_normal(n, epsilon, release=None, *, lower=0.0, upper=100.0, prior_mean=40.0, prior_scale=20.0):
    """μ ~ N(prior_mean, prior_scale²), σ ~ HalfNormal(prior_scale), xᵢ ~ N(μ, σ²); released:
    (Σuᵢ, Σuᵢ²) + Laplace(2/ε) noise, uᵢ the clamped, scaled records (site ``summary``).

    >>> import jax, numpyro, dpjax.models as m
    >>> numpyro.infer.Predictive(m.clamped_normal, num_samples=2)(jax.random.key(0), 50, 1.0)["summary"].shape
    (2, 2)
    """
    mu = numpyro.sample("mu", dist.Normal(prior_mean, prior_scale))
    sigma = numpyro.sample("sigma", dist.HalfNormal(prior_scale))
    with numpyro.plate("people", n):
        x = numpyro.sample("x", dist.Normal(mu, sigma))
    statistic = lambda r: jnp.stack(
        [clamp_to_unit(r["x"], lower, upper), clamp_to_unit(r["x"], lower, upper) ** 2]
    )
    privatized(
        "summary", LaplaceMechanism(epsilon, SENSITIVITY), statistic, {"x": x}, plate="people", obs=release
    )


def naive_normal(n, release, *, lower=0.0, upper=100.0, prior_mean=40.0, prior_scale=20.0):
    """The analysis that ignores the noise: the release is taken as the exact (Σuᵢ, Σuᵢ²) and
    enters through the Normal likelihood of the sufficient statistics (clamping ignored too)."""
    mu = numpyro.sample("mu", dist.Normal(prior_mean, prior_scale))
    sigma = numpyro.sample("sigma", dist.HalfNormal(prior_scale))
    width = upper - lower
    s1 = lower * n + width * release[0]  # Σx and Σx² implied by the release
    s2 = lower**2 * n + 2 * lower * width * release[0] + width**2 * release[1]
    numpyro.factor("loglik", -n * jnp.log(sigma) - (s2 - 2 * mu * s1 + n * mu**2) / (2 * sigma**2))
