"""Naive-Bayes log-linear model of the data-augmentation seed (§4, Appendix S-4).

Records are (class y, features x₁..x_K); the release is every class-by-level count
nᵢⱼᵏ = #(y = i, x_k = j) with Laplace noise. Under bounded DP (neighbours differ by one
*replaced* record) one record moves, in each of the K feature tables, one unit of count out of
one cell and into another, so the L1 sensitivity is 2K.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from ..mechanisms import LaplaceMechanism
from ..primitives import privatized

__all__ = ["naive_bayes", "naive_bayes_counts", "naive_bayes_sensitivity", "naive_bayes_update"]


def naive_bayes_sensitivity(num_features: int) -> int:
    """Bounded-DP L1 sensitivity of the K feature-by-class count tables: ``2K``."""
    return 2 * num_features


def naive_bayes_counts(num_classes: int, num_levels: int):
    """Per-record statistic ``t(record)``: the (K, I, J) indicator table of (x_k, y)."""

    def statistic(record):
        y = jax.nn.one_hot(record["y"], num_classes)
        x = jax.nn.one_hot(record["x"], num_levels)
        return x[:, None, :] * y[None, :, None]

    return statistic


def naive_bayes(
    num_records: int,
    epsilon: float,
    release=None,
    *,
    num_classes: int = 5,
    num_features: int = 5,
    num_levels: int = 3,
    alpha: float = 2.0,
):
    """p ~ Dir(α), q_{k,i,·} ~ Dir(α); yᵢ ~ Cat(p), x_{ik} | yᵢ ~ Cat(q_{k,yᵢ,·}); the counts
    nᵢⱼᵏ released with Laplace(2K/ε) noise (sites ``p``, ``q``, ``y``, ``x``, ``counts``).

    >>> import jax, numpyro, dpjax.models as m
    >>> sim = numpyro.infer.Predictive(m.naive_bayes, num_samples=1)(jax.random.key(0), 100, 1.0)
    >>> sim["counts"].shape
    (1, 5, 5, 3)
    """
    p = numpyro.sample("p", dist.Dirichlet(jnp.full(num_classes, alpha)))
    q = numpyro.sample("q", dist.Dirichlet(jnp.full((num_features, num_classes, num_levels), alpha)))
    with numpyro.plate("records", num_records):
        y = numpyro.sample("y", dist.Categorical(p))
        x = numpyro.sample("x", dist.Categorical(jnp.swapaxes(q[:, y, :], 0, 1)).to_event(1))
    mechanism = LaplaceMechanism(epsilon, naive_bayes_sensitivity(num_features))
    privatized(
        "counts",
        mechanism,
        naive_bayes_counts(num_classes, num_levels),
        {"y": y, "x": x},
        plate="records",
        obs=release,
    )


def naive_bayes_update(alpha: float = 2.0):
    """Exact conjugate θ | records for :func:`naive_bayes` (Dirichlet posteriors)."""

    def update(rng_key, records, params):
        num_features, num_classes, num_levels = params["q"].shape
        counts = jax.vmap(naive_bayes_counts(num_classes, num_levels))(records).sum(0)
        class_counts = counts[0].sum(-1)
        k1, k2 = jax.random.split(rng_key)
        return {
            "p": dist.Dirichlet(alpha + class_counts).sample(k1),
            "q": dist.Dirichlet(alpha + counts).sample(k2),
        }

    return update
