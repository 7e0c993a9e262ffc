"""Helpers shared by the oracles of :mod:`dpjax.testing`."""

from __future__ import annotations

import jax
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


def release_sites(model, release: dict, model_args: tuple):
    """``({keyword: site}, the model's privatized sites, its spec)`` for simulation checks (SBC, coverage):
    the release keywords resolved (one keyword, mapped to None, names the one privatized site) and checked,
    the spec read from a trace with a release drawn from the prior predictive observed."""
    from ..infer.spec import model_spec, prototype
    from ..primitives import INFER_KEY

    key = jax.random.key(0)
    prior = prototype(model, key, model_args, dict.fromkeys(release))
    releases = [k for k, s in prior.items() if s["type"] == "sample" and INFER_KEY in (s.get("infer") or {})]
    if len(release) == 1 and None in release.values():
        if len(releases) != 1:
            raise ValueError(
                f"release: the model has {len(releases)} privatized sites {releases}; map each model keyword "
                "to its site, {keyword: site}"
            )
        release = {next(iter(release)): releases[0]}
    bad = sorted(s for s in release.values() if s not in prior or prior[s]["type"] != "sample")
    if bad:
        raise ValueError(
            f"release: {bad} are not sample sites of the model (not privatized sites, nor observed data); "
            f"its releases are {releases}"
        )
    spec = model_spec(prototype(model, key, model_args, {kw: prior[s]["value"] for kw, s in release.items()}))
    return release, releases, spec
