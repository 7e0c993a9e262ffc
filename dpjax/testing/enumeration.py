"""Exact posteriors by enumeration: over the confidential statistic T (conjugate θ | T) and over
the records of a small model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain, combinations
from math import comb

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import betaln, gammaln, logsumexp

from ..mechanisms import Mechanism
from ._common import as_pairs, check_orders, log_eta, rising

__all__ = [
    "beta_bernoulli_count_moments",
    "beta_bernoulli_unknown_n",
    "gamma_poisson_sum_moments",
    "release_log_likelihood",
    "statistic_posterior",
]

#: posterior mass allowed in the top quarter of a truncated support (else it is extended or refused)
TAIL_MASS = 1e-12


def statistic_posterior(
    support: ArrayLike, log_prior: ArrayLike, releases: ArrayLike, mechanisms: Mechanism | Sequence[Mechanism]
) -> np.ndarray:
    """Posterior pmf of the confidential statistic T given its releases, by enumeration.

    ``p(T = t | s) ∝ p(T = t) ∏ⱼ ηⱼ(sⱼ | t)``: each release sⱼ is T plus the noise of mechanism j.

    Args:
        support: the values T can take, along axis 0 (``(M,)``, or ``(M, d)`` for a vector T).
        log_prior: ``(M,)`` log prior (predictive) pmf of T at ``support``, up to a constant; −inf allowed.
        releases: the release of T, or a sequence of releases of the same T (one per mechanism).
        mechanisms: a :class:`~dpjax.Mechanism`, or a sequence of them matching ``releases``.

    Returns:
        The ``(M,)`` posterior pmf of T on ``support`` (sums to 1).

    Example:
        >>> import numpy as np, dpjax
        >>> from dpjax.testing import statistic_posterior
        >>> mech = dpjax.DiscreteLaplaceMechanism(epsilon=1.0)
        >>> w = statistic_posterior(np.arange(4), np.zeros(4), 1.0, mech)  # T uniform on 0..3, s = 1
        >>> round(float(w.sum()), 6), int(np.argmax(w))
        (1.0, 1)
    """
    pairs = as_pairs(releases, mechanisms)
    support = np.asarray(support, float)
    log_w = np.asarray(log_prior, float) + log_eta(pairs, [support] * len(pairs))
    return np.exp(log_w - logsumexp(log_w))


def _beta_bernoulli(n_values, log_eta_t, a, b, orders):
    """Rows n of ``log p(T = t, s | n)`` for T ~ BetaBinomial(n, a, b), and E[pᵏ | T = t, n]."""
    n = np.asarray(n_values)[:, None]
    t = np.arange(len(log_eta_t))[None, :]
    ok = t <= n
    nn, tt = np.where(ok, n, 0), np.where(ok, t, 0)
    log_prior = gammaln(nn + 1) - gammaln(tt + 1) - gammaln(nn - tt + 1) + betaln(a + tt, b + nn - tt)
    log_joint = np.where(ok, log_prior - betaln(a, b) + log_eta_t[None, :], -np.inf)
    return log_joint, [rising(a + t, k) / rising(a + b + n, k) for k in orders]


def beta_bernoulli_count_moments(
    n: int,
    releases: ArrayLike,
    mechanisms: Mechanism | Sequence[Mechanism],
    *,
    a: float = 1.0,
    b: float = 1.0,
    orders: Sequence[int] = (1, 2),
) -> tuple[float, ...]:
    """Exact posterior moments of p for n Bernoulli(p) records, p ~ Beta(a, b), given noisy counts.

    Sums over the count T = Σᵢ xᵢ ~ BetaBinomial(n, a, b), with ``p | T ~ Beta(a + T, b + n − T)``.

    Args:
        n: the number of records.
        releases: the release of the count, or several releases of it (one per mechanism).
        mechanisms: a :class:`~dpjax.Mechanism`, or a sequence of them matching ``releases``.
        a: the Beta prior's first shape.
        b: the Beta prior's second shape.
        orders: the moments wanted, k for E[pᵏ | releases].

    Returns:
        ``(E[p^k] for k in orders)`` as floats.

    Example:
        With almost no noise the answer is the Beta posterior given the count: (1 + 7) / (2 + 10).

        >>> import dpjax
        >>> from dpjax.testing import beta_bernoulli_count_moments
        >>> m1, m2 = beta_bernoulli_count_moments(10, 7.0, dpjax.DiscreteLaplaceMechanism(epsilon=30.0))
        >>> round(m1, 6)
        0.666667
    """
    pairs, orders = as_pairs(releases, mechanisms), check_orders(orders)
    log_joint, cond = _beta_bernoulli([n], log_eta(pairs, [np.arange(n + 1.0)] * len(pairs)), a, b, orders)
    w = np.exp(log_joint - logsumexp(log_joint))
    return tuple(float(np.sum(w * c)) for c in cond)


def beta_bernoulli_unknown_n(
    count_release: ArrayLike,
    count_mechanism: Mechanism,
    size_release: ArrayLike | None,
    size_mechanism: Mechanism | None,
    log_prior_n: Callable[[int], float] | Sequence[float],
    n_max: int,
    *,
    a: float = 1.0,
    b: float = 1.0,
    orders: Sequence[int] = (1, 2),
) -> tuple[np.ndarray, tuple[float, ...]]:
    """Exact posterior of (n, p) for an unknown number n of Bernoulli(p) records, p ~ Beta(a, b).

    The model of a :func:`dpjax.records_plate` sized by a latent n: a noisy count of the ones and,
    unless ``size_release`` is None, a noisy n (Awan, Barrientos & Ju). Double enumeration over
    n ≤ ``n_max`` and the count T ≤ n.

    Args:
        count_release: the release of the count T.
        count_mechanism: its mechanism.
        size_release: the release of n, or None when n is not released.
        size_mechanism: its mechanism (ignored when ``size_release`` is None).
        log_prior_n: the log prior of n, a function of n or a sequence over 0..n_max; −inf allowed.
            Its mass beyond ``n_max`` must be negligible (or nil).
        n_max: the largest n summed over.
        a: the Beta prior's first shape.
        b: the Beta prior's second shape.
        orders: the moments wanted, k for E[pᵏ | releases].

    Returns:
        ``(pmf of n on 0..n_max, (E[p^k] for k in orders))``.

    Example:
        >>> import numpy as np, dpjax
        >>> from dpjax.testing import beta_bernoulli_unknown_n
        >>> lap = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
        >>> pmf, (m1, m2) = beta_bernoulli_unknown_n(6.0, lap, 20.0, lap, lambda m: 0.0 if m else -np.inf, 40)
        >>> pmf.shape, bool(abs(pmf @ np.arange(41) - 20) < 1)
        ((41,), True)
    """
    orders = check_orders(orders)
    n = np.arange(n_max + 1)
    log_prior = np.array([log_prior_n(m) for m in n] if callable(log_prior_n) else log_prior_n, float)
    if log_prior.shape != n.shape:
        raise ValueError(f"`log_prior_n` as a sequence must have n_max + 1 = {n_max + 1} entries.")
    log_eta_t = log_eta(as_pairs(count_release, count_mechanism), [n.astype(float)])
    log_joint, cond = _beta_bernoulli(n, log_eta_t, a, b, orders)
    log_joint = log_joint + log_prior[:, None]
    if size_release is not None:
        log_joint = log_joint + log_eta(as_pairs(size_release, size_mechanism), [n.astype(float)])[:, None]
    w = np.exp(log_joint - logsumexp(log_joint))
    return w.sum(1), tuple(float(np.sum(w * c)) for c in cond)


def gamma_poisson_sum_moments(
    n: int,
    releases: ArrayLike,
    mechanisms: Mechanism | Sequence[Mechanism],
    *,
    shape: float,
    rate: float,
    t_max: int | None = None,
    orders: Sequence[int] = (1, 2),
) -> tuple[float, ...]:
    """Exact posterior moments of λ for n Poisson(λ) records, λ ~ Gamma(shape, rate), given noisy sums.

    Sums over T = Σᵢ xᵢ, negative binomial a priori, with ``λ | T ~ Gamma(shape + T, rate + n)``.

    Args:
        n: the number of records.
        releases: the release of T, or several releases of it (one per mechanism).
        mechanisms: a :class:`~dpjax.Mechanism`, or a sequence of them matching ``releases``.
        shape: the Gamma prior's shape.
        rate: the Gamma prior's rate.
        t_max: the sum runs over T in 0..t_max. None: doubled from ``2 max(releases) + 64`` until the
            posterior mass of the top quarter of the range is below 1e-12.
        orders: the moments wanted, k for E[λᵏ | releases].

    Returns:
        ``(E[λ^k] for k in orders)`` as floats.

    Raises:
        ValueError: a given ``t_max`` leaves more than 1e-12 of the posterior mass in its top quarter.

    Example:
        With almost no noise: the Gamma(2 + 9, 1 + 3) posterior mean 11 / 4.

        >>> import dpjax
        >>> from dpjax.testing import gamma_poisson_sum_moments
        >>> mech = dpjax.DiscreteLaplaceMechanism(epsilon=30.0)
        >>> round(gamma_poisson_sum_moments(3, 9.0, mech, shape=2.0, rate=1.0)[0], 6)
        2.75
    """
    pairs, orders = as_pairs(releases, mechanisms), check_orders(orders)
    auto = t_max is None
    t_max = int(2 * max(float(np.max(s)) for s, _ in pairs) + 64) if auto else int(t_max)
    while True:
        t = np.arange(max(t_max, 0) + 1.0)
        log_w = gammaln(t + shape) - gammaln(t + 1) + t * np.log(n / (n + rate))
        log_w = log_w + log_eta(pairs, [t] * len(pairs))
        w = np.exp(log_w - logsumexp(log_w))
        if w[(3 * len(t)) // 4 :].sum() < TAIL_MASS:
            return tuple(float(w @ (rising(shape + t, k) / (rate + n) ** k)) for k in orders)
        if not auto or t_max > 2**26:
            raise ValueError(
                f"t_max = {t_max} leaves {w[(3 * len(t)) // 4 :].sum():.2g} of the mass in its top quarter."
            )
        t_max *= 2


def release_log_likelihood(
    log_pmf: ArrayLike,
    n: int,
    releases: ArrayLike | Sequence[ArrayLike],
    mechanisms: Mechanism | Sequence[Mechanism],
    statistics: ArrayLike | Sequence[ArrayLike],
    *,
    max_configurations: int = 2_000_000,
) -> np.ndarray:
    """``log p(releases | θ)`` with n i.i.d. discrete records summed out, by enumerating the records.

    The records take V values; the enumeration runs over the C(n + V − 1, V − 1) multisets of n
    records (weighted by their multinomial counts), each giving Tⱼ = Σᵢ tⱼ(xᵢ) for every release j.

    Args:
        log_pmf: ``(G, V)`` log pmf of one record at each of G values of θ (a grid, or θ's support):
            ``log_pmf[g, v] = log p(x = value v | θ_g)``; −inf allowed.
        n: the number of records.
        releases: the release, or a sequence of releases (each of its own statistic).
        mechanisms: a :class:`~dpjax.Mechanism`, or a sequence matching ``releases``.
        statistics: the per-record statistic t(value v) of each release: a ``(V,)`` (or ``(V, d)``
            for a vector release) array, or a sequence of them matching ``releases``.
        max_configurations: refuse (ValueError) more multisets than this.

    Returns:
        The ``(G,)`` log likelihood of the releases at each θ.

    Example:
        Two Bernoulli(θ) records and a noisy count, against the sum over the count:

        >>> import numpy as np, dpjax
        >>> from scipy import stats
        >>> from dpjax.testing import release_log_likelihood
        >>> theta, mech = np.array([0.2, 0.7]), dpjax.DiscreteLaplaceMechanism(epsilon=1.0)
        >>> log_pmf = np.log(np.stack([1 - theta, theta], axis=1))  # values 0 and 1
        >>> got = release_log_likelihood(log_pmf, 2, 1.0, mech, np.array([0.0, 1.0]))
        >>> eta = np.exp(np.asarray(mech.log_density(1.0, np.arange(3.0))))
        >>> want = np.log(stats.binom.pmf(np.arange(3), 2, theta[:, None]) @ eta)
        >>> bool(np.allclose(got, want))
        True
    """
    pairs = as_pairs(releases, mechanisms)
    stats = [statistics] if isinstance(mechanisms, Mechanism) else list(statistics)
    log_pmf = np.atleast_2d(np.asarray(log_pmf, float))
    g, v = log_pmf.shape
    if len(stats) != len(pairs) or any(np.shape(t)[0] != v for t in stats):
        raise ValueError(
            f"`statistics` must give one (V,) or (V, d) array per release, V = {v} record values."
        )
    m = comb(n + v - 1, v - 1)
    if m > max_configurations:
        raise ValueError(f"{m} multisets of {n} records with {v} values exceed max_configurations.")
    bars = np.fromiter(chain.from_iterable(combinations(range(n + v - 1), v - 1)), int, count=m * (v - 1))
    edges = np.concatenate([np.full((m, 1), -1), bars.reshape(m, v - 1), np.full((m, 1), n + v - 1)], 1)
    counts = np.diff(edges, axis=1) - 1  # (M, V) record counts of each multiset
    log_c = gammaln(n + 1) - gammaln(counts + 1).sum(1)  # log multinomial coefficient
    log_c = log_c + log_eta(pairs, [counts @ np.asarray(t, float) for t in stats])
    big = 1e250 / max(n, 1)  # stands for −inf: 0 · big = 0 where −inf would give nan
    safe = np.maximum(log_pmf, -big)
    out = np.empty(g)
    step = max(1, 10_000_000 // m)
    for i in range(0, g, step):
        out[i : i + step] = logsumexp(log_c[None, :] + safe[i : i + step] @ counts.T, axis=1)
    return np.where(out < -big / 2, -np.inf, out)
