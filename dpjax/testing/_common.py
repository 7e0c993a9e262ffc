"""Helpers shared by the oracles of :mod:`dpjax.testing`."""

from __future__ import annotations

import numpy as np

from ..mechanisms import Mechanism


def as_pairs(releases, mechanisms) -> list[tuple[np.ndarray, Mechanism]]:
    """``[(release, mechanism), ...]`` from one mechanism and its release, or matching sequences."""
    if isinstance(mechanisms, Mechanism):
        return [(np.asarray(releases, float), mechanisms)]
    mechanisms = list(mechanisms)
    try:
        releases = list(releases)
    except TypeError:  # one scalar release
        releases = [releases]
    if len(mechanisms) != len(releases) or not all(isinstance(m, Mechanism) for m in mechanisms):
        raise ValueError(
            "`mechanisms` must be a Mechanism or a sequence of them, one per entry of `releases`."
        )
    return [(np.asarray(s, float), m) for s, m in zip(releases, mechanisms)]


def log_eta(pairs, statistics) -> np.ndarray:
    """Σⱼ log ηⱼ(sⱼ | Tⱼ) at each candidate: ``statistics[j]`` holds Tⱼ along axis 0."""
    total = 0.0
    for (s, mech), t in zip(pairs, statistics):
        t = np.asarray(t, float)
        ld = np.asarray(mech.log_density(s, t), float)
        total = total + ld.reshape(t.shape[0], -1).sum(1)
    return total


def rising(x, k: int):
    """x (x + 1) ⋯ (x + k − 1)."""
    out = np.ones_like(np.asarray(x, float))
    for j in range(k):
        out = out * (x + j)
    return out


def check_orders(orders) -> tuple[int, ...]:
    """The moment orders as a tuple of non-negative ints."""
    orders = tuple(orders)
    if not all(isinstance(k, int | np.integer) and k >= 0 for k in orders):
        raise ValueError(f"`orders` must be non-negative ints, got {orders!r}.")
    return orders
