"""``ModelSpec``: what a model tells every engine, read once from a prototype trace outside any vmap.

It is static: names, roles, supports, the size site and its bounds, and for each privatized site its
statistic and record sites. It holds no arrays and no mechanisms: a mechanism's parameters (an ε that a
study vmaps over), a release and a records plate's active slots are read from the trace of each step,
so a traced value never outlives the trace that made it (NumPyro's rule for ``prototype_trace``:
store only static metadata derived from it).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.gibbs import prototype_trace

from ..mechanisms.base import concrete
from ..primitives import INFER_KEY, record_statistics, site_roles
from .release_checks import check_release

__all__ = ["ModelSpec", "Release", "model_spec", "privatized_infos", "prototype"]


def prototype(model, rng_key, model_args, model_kwargs):
    """NumPyro's prototype trace of ``model`` (``numpyro.infer.gibbs.prototype_trace``), the first trace
    every engine reads, with NumPyro's bare assertion on an empty plate turned into a ``ValueError``."""
    try:
        return prototype_trace(model, rng_key, model_args, model_kwargs)
    except AssertionError as e:
        if "size of plate should be positive" not in str(e):
            raise
        raise ValueError(
            "A plate of the model has size 0: a release of no records says nothing about θ, and there are no "
            "records to impute. Check the model's arguments (`MCMC.run(rng_key, *model_args)` passes them "
            "in order); for an n that may be 0, size the records with dpjax.records_plate(name, n, capacity)."
        ) from None


class Release(NamedTuple):
    """A privatized site as every engine sees it statically (its statistic t and mechanism, which may
    close over traced values, are read with :func:`privatized_infos` from the trace of each step)."""

    record_sites: tuple[str, ...]  # the record sites its statistic reads
    counts_records: bool = False  # t ≡ 1: a noisy n


class ModelSpec(NamedTuple):
    """The static description of a model with ``dpjax.privatized`` sites.

    - **privatized** – ``((site, Release), ...)`` in model order.
    - **theta** – the parameters: latent sample sites outside the records plate (n aside).
    - **latent_records**, **public_records** – the record sites inside the records plate.
    - **observed** – every observed sample site but the releases (public records and public data).
    - **supports** – the support of each θ site and of n.
    - **discrete_records** – every latent record site is discrete (a proposal can repeat its record).
    - **size** – the latent site sizing a :class:`~dpjax.records_plate` (an unknown n), else None;
      **size_bounds** – (its lowest value, the plate's capacity); **size_release** – the index in
      ``privatized`` of a noisy n (a release whose statistic counts records), else None;
      **size_units** – G where n is one size per unit (shape (G,); ``size_bounds`` then hold per unit),
      else 0.
    """

    privatized: tuple
    theta: tuple[str, ...]
    latent_records: tuple[str, ...]
    public_records: tuple[str, ...]
    supports: dict
    discrete_records: bool
    observed: tuple[str, ...] = ()
    size: str | None = None
    size_bounds: tuple[int, int] = (0, 0)
    size_release: int | None = None
    size_units: int = 0

    @property
    def size_sites(self) -> tuple[str, ...]:
        """``(n's site,)`` with an unknown n, else ``()``."""
        return () if self.size is None else (self.size,)

    @property
    def hidden(self) -> tuple[str, ...]:
        """The sites a posterior of θ leaves out: the releases and the records."""
        return tuple(n for n, _ in self.privatized) + self.latent_records + self.public_records


def model_spec(tr) -> ModelSpec:
    """The :class:`ModelSpec` of a prototype trace, with the records plate validated
    (:func:`dpjax.primitives.site_roles`) and an unknown n's bounds checked."""
    roles = site_roles(tr)
    for name, info in roles.privatized:
        check_release(name, info, tr)  # the release's range, the declared sensitivity
    privatized = tuple((name, Release(info.record_sites)) for name, info in roles.privatized)
    supports = {k: tr[k]["fn"].support for k in roles.theta}
    discrete = bool(roles.latent_records) and all(
        tr[k]["fn"].support.is_discrete for k in roles.latent_records
    )
    names = {n for n, _ in privatized}
    observed = tuple(
        k for k, s in tr.items() if s["type"] == "sample" and s["is_observed"] and k not in names
    )
    spec = ModelSpec(
        privatized, roles.theta, roles.latent_records, roles.public_records, supports, discrete, observed
    )
    if roles.size is None:
        return spec
    size = roles.size
    units = int(np.size(tr[size]["value"])) if np.ndim(tr[size]["value"]) else 0
    capacity = int(roles.privatized[0][1].active.shape[0]) // max(units, 1)  # slots per unit
    support = tr[size]["fn"].support
    lower = getattr(support, "lower_bound", 0)
    lower = int(np.min(lower)) if concrete(lower) else 0
    if lower < 0:
        raise ValueError(
            f"The prior of {size!r}, the number of records, has support from {lower}: a size cannot be "
            f"negative. Give {size!r} a prior on whole numbers from 0 (e.g. DiscreteUniform(1, capacity))."
        )
    if lower > capacity:
        raise ValueError(f"The prior of {size!r} starts at {lower}, beyond the capacity {capacity}.")
    privatized = tuple(
        (name, Release(info.record_sites, _counts_records(info.statistic, tr, info.record_sites)))
        for name, info in roles.privatized
    )
    counted = [i for i, (_, release) in enumerate(privatized) if release.counts_records]
    return spec._replace(
        privatized=privatized,
        supports={**supports, size: support},
        size=size,
        size_bounds=(lower, capacity),
        size_release=counted[-1] if counted else None,
        size_units=units,
    )


def privatized_infos(tr, spec: ModelSpec) -> tuple:
    """Each privatized site's :class:`~dpjax.primitives.PrivatizedInfo` (statistic, mechanism, active
    slots), read from a trace of the step that uses them."""
    return tuple(tr[name]["infer"][INFER_KEY] for name, _ in spec.privatized)


def _counts_records(statistic, tr, record_sites) -> bool:
    """Whether the per-record statistic is 1 for every record (a noisy n), probed on concrete records
    of the same shapes (all 0, all 1, all ½): the trace's records are tracers when ``init`` runs
    under ``jit``/``vmap`` (a study), and the chain must still start at the noisy n there."""
    records = {k: tr[k]["value"] for k in record_sites}
    with jax.ensure_compile_time_eval():
        for fill in (0.0, 1.0, 0.5):
            probe = {k: jnp.full(jnp.shape(v), fill).astype(jnp.result_type(v)) for k, v in records.items()}
            t = record_statistics(statistic, probe)
            if t.ndim != 1 or not np.all(np.asarray(t) == 1):
                return False
    return True
