"""Dirichlet records with the censored mean-log release of Guo, Barrientos & Peña (seed §3.1).

The curator releases S_L(D, a) = S₀(D, a) + Laplace(0, −d log(a) / (n ε₁)) per part, where
S₀(D, a) = n⁻¹ Σᵢ log max(xᵢ, a) (see :func:`dpjax.compositional.dpss`). As a record-additive
release this is T = Σᵢ t(xᵢ) with t(x) = log max(x, a) / n, whose L1 sensitivity under replacement
of one row is −d log(a) / n (:func:`dpjax.compositional.sensitivity`).
"""

from __future__ import annotations

import numbers

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ..compositional.data import check_threshold
from ..mechanisms import LaplaceMechanism
from ..mechanisms.base import concrete
from ..primitives import privatized, records_plate

__all__ = ["dirichlet_mean_log", "dirichlet_prior_p1"]


def dirichlet_prior_p1(d: int, concentration: float = 1.0, rate: float = 0.1):
    """Prior p1 of the seed (§3.3.1): αⱼ independent Gamma(1, 0.1) (shape, rate), event shape (d,).

    >>> dirichlet_prior_p1(3).event_shape
    (3,)
    """
    if isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 2:
        raise ValueError(f"`d` must be an int ≥ 2 (the number of parts), got {d!r}.")
    return dist.Gamma(concentration, rate).expand([int(d)]).to_event(1)


def num_parts(release, prior, d):
    """The number of parts d, from ``d``, the release or the prior (they must agree)."""
    found = {}
    if d is not None:
        if isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 2:
            raise ValueError(f"`d` must be an int ≥ 2 (the number of parts), got {d!r}.")
        found["d"] = int(d)
    if release is not None:
        shape = jnp.shape(release)
        if len(shape) != 1 or shape[0] < 2:
            raise ValueError(f"`release` must be one released S_L of shape (d,), d ≥ 2; got shape {shape}.")
        found["release"] = shape[0]
    if isinstance(prior, dist.Distribution):
        shape = prior.batch_shape + prior.event_shape
        if len(shape) != 1:
            raise ValueError(
                f"`prior` must be a distribution over α of shape (d,) (e.g. "
                f"dist.Gamma(1.0, 0.1).expand([d]).to_event(1)), got batch {prior.batch_shape}, "
                f"event {prior.event_shape}."
            )
        found["prior"] = shape[0]
    elif prior is not None:
        shape = jnp.shape(prior)
        if len(shape) != 2 or shape[0] < 1:
            raise ValueError(
                "`prior` must be a numpyro distribution over α (event shape (d,)) or an (m, d) array of "
                f"prior draws; got shape {shape}."
            )
        found["prior"] = shape[1]
    if not found:
        raise ValueError("Give `d` (the number of parts), a `release` or a `prior` to fix it.")
    if len(set(found.values())) != 1:
        raise ValueError(f"The number of parts disagrees: {found}.")
    return next(iter(found.values()))


def sample_alpha(prior, d):
    """The site ``alpha`` from a prior distribution, or from an (m, d) array of prior draws (an
    empirical prior: a uniform index site ``alpha_draw``, α deterministic)."""
    if prior is None:
        return numpyro.sample("alpha", dirichlet_prior_p1(d))
    if isinstance(prior, dist.Distribution):
        if prior.event_shape == ():
            prior = prior.to_event(1)
        return numpyro.sample("alpha", prior)
    draws = jnp.asarray(prior)
    idx = numpyro.sample("alpha_draw", dist.Categorical(logits=jnp.zeros(draws.shape[0])))
    return numpyro.deterministic("alpha", draws[idx])


def dirichlet_mean_log(
    n,
    a,
    epsilon1,
    release=None,
    *,
    d: int | None = None,
    prior=None,
    capacity: int | None = None,
    normaliser: float | None = None,
    n_epsilon=None,
    n_release=None,
):
    """α ~ ``prior`` (default p1: αⱼ ~ Gamma(1, 0.1)); records xᵢ ~ Dirichlet(α), i = 1..n (site
    ``x`` in plate ``records``); released (site ``s_L``) the censored mean-log statistic
    S₀(D, a) + Laplace(0, −d log(a) / (n ε₁)) per part, as T = Σᵢ log max(xᵢ, a) / n.

    :param n: the number of records: an int (bounded DP, n public), or with ``capacity`` the value
        of a sample site (an unknown n, for :class:`~dpjax.infer.ReversibleJumpKernel`).
    :param a: the censoring threshold, ``0 < a < 1/d`` (public).
    :param epsilon1: the budget of the Laplace release.
    :param release: the released S_L, shape ``(d,)``; ``None`` simulates one.
    :param d: the number of parts, if neither ``release`` nor ``prior`` fixes it.
    :param prior: a numpyro distribution over α with event shape ``(d,)``, or an ``(m, d)`` array of
        prior draws (an empirical prior, e.g. the DPBoots draws p2 or the draws p5: then α is
        chosen by a discrete index site ``alpha_draw``, usable by ABC, not by NUTS).
    :param capacity: size the records with :func:`dpjax.records_plate` ``("records", n, capacity)``
        (padded, masked slots beyond n).
    :param normaliser: the public divisor of the statistic (default ``n``). With a latent n the
        statistic cannot divide by n (it would not be record-additive), so a public value is needed:
        then T = Σᵢ log max(xᵢ, a) / normaliser, and the Laplace scale −d log(a) / (normaliser ε₁)
        bounds the change from replacing, adding or removing one row.
    :param n_epsilon: with an unknown n, also release n + Laplace(1/n_epsilon) (site ``n_dp``,
        per-record statistic 1) with the observed value ``n_release``.

    >>> import jax, numpyro
    >>> draws = numpyro.infer.Predictive(dirichlet_mean_log, num_samples=2)(jax.random.key(0), 50, 0.01,
    ...                                                                      1.0, d=3)
    >>> draws["x"].shape, draws["s_L"].shape
    ((2, 50, 3), (2, 3))
    """
    d = num_parts(release, prior, d)
    a = check_threshold(a, d)
    if capacity is None:
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(
                f"`n` must be an int ≥ 1 (the public number of records), got {n!r}; for an unknown n "
                "give `capacity` and a public `normaliser`."
            )
    elif normaliser is None and (isinstance(n, bool) or not isinstance(n, numbers.Integral)):
        raise ValueError(
            "With `capacity` and an n that is not a plain int (e.g. a latent sample site), give a public "
            "`normaliser` for the statistic: Σᵢ log max(xᵢ, a) / n is not additive over records when n "
            "itself changes."
        )
    if normaliser is None:
        normaliser = float(np.asarray(n)) if concrete(n) else n
    elif concrete(normaliser) and not (np.isfinite(float(normaliser)) and float(normaliser) > 0):
        raise ValueError(f"`normaliser` must be a positive number, got {normaliser!r}.")
    if n_epsilon is not None and capacity is None:
        raise ValueError("`n_epsilon` (a noisy n) needs an unknown n: give `capacity`.")
    alpha = sample_alpha(prior, d)
    plate = "records" if capacity is None else records_plate("records", n, capacity)
    with numpyro.plate("records", n) if capacity is None else plate:
        x = numpyro.sample("x", dist.Dirichlet(alpha))
    mechanism = LaplaceMechanism(epsilon=epsilon1, sensitivity=-d * jnp.log(a) / normaliser)
    statistic = lambda r: jnp.log(jnp.maximum(r["x"], a)) / normaliser
    privatized("s_L", mechanism, statistic, {"x": x}, plate=plate, obs=release)
    if n_epsilon is not None:
        n_mech = LaplaceMechanism(epsilon=n_epsilon, sensitivity=1.0)
        privatized("n_dp", n_mech, lambda r: jnp.ones(()), {"x": x}, plate=plate, obs=n_release)
    return x
