"""The ``privatized`` site: an ordinary observed NumPyro sample site whose distribution is the
release mechanism applied to ``T = Σᵢ t(recordᵢ)``, with dpjax metadata in ``infer=``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.extend.core import Var
from numpyro import handlers
from numpyro.primitives import _PYRO_STACK, Messenger

from ._validate import positive_int
from .mechanisms import Mechanism
from .mechanisms.base import IntegerMechanism, concrete

__all__ = [
    "PrivatizedInfo",
    "SiteRoles",
    "integer_statistics",
    "privatized",
    "record_statistics",
    "records_plate",
    "simulate",
    "site_roles",
]

INFER_KEY = "dpjax"
ACTIVE_KEY = "dpjax_active"  # infer flag of a record site masked by its records_plate's size
#: float32 must resolve a release to this fraction of its noise scale: a larger spacing lets round-off,
#: not the noise, decide the likelihood of a record move
NOISE_OVER_SPACING = 100


class PrivatizedInfo(NamedTuple):
    """What engines read from a privatized site's ``infer["dpjax"]``. ``record_values`` are the
    values passed as ``records=``, checked against the record sites' own values by
    :func:`site_roles` (engines re-read the sites, so a transformed value would change the model)."""

    mechanism: Mechanism
    statistic: Callable
    plate: str
    record_sites: tuple[str, ...]
    record_values: tuple = ()
    size: Any = None
    active: Any = None
    groups: Any = None  # int (n,): each record's unit, for a release of one T per unit (else None)
    num_groups: int | None = None  # G, static
    transform: Callable | None = None  # the released value as a function of the totals T (else T)

    def released(self, total):
        """What the mechanism adds its noise to: ``transform(T)``, or T itself."""
        if self.transform is None:
            return total
        return self.transform(total) if self.groups is None else jax.vmap(self.transform)(total)  # per unit

    @property
    def guarantee(self):
        """The privacy guarantee of the whole release. Without ``groups`` the mechanism's. With them each
        record feeds one unit's release, so by parallel composition the whole is as private as its least
        private unit: with per-unit budgets (parameters of shape (G, ...)), each unit's guarantee is the
        sum over its entries and the whole's the largest of them."""
        g = self.mechanism.guarantee
        if self.groups is None:
            return g
        per_unit = {}
        for kind in ("epsilon", "rho"):
            entries = getattr(g, f"{kind}_per_entry")
            if entries is None:
                continue
            # one budget per entry of the (G, ...) release: summed within a unit, the largest unit's overall
            if concrete(entries):
                values = np.asarray(entries, float).reshape(self.num_groups, -1).sum(1)
                per_unit[kind], per_unit[f"{kind}_per_entry"] = float(values.max()), tuple(values.tolist())
            else:
                values = jnp.reshape(entries, (self.num_groups, -1)).sum(1)
                per_unit[kind], per_unit[f"{kind}_per_entry"] = values.max(), values
        return g._replace(**per_unit)

    def total(self, per_record):
        """T from the per-record statistics (records along axis 0): their sum, or with ``groups`` the sum
        within each unit, shape (G, ...). The one place every engine adds records up."""
        if self.groups is None:
            return jnp.sum(per_record, axis=0)
        return jax.ops.segment_sum(per_record, self.groups, num_segments=self.num_groups)


class allow_overflow(Messenger):
    """Lets a records_plate take a size beyond its capacity (all slots active): for an engine's
    prototype trace, where n is a draw from its prior, before the engine starts n inside. With
    ``capacity``, records_plates hold that many slots instead: an engine simulating a few fresh
    records x* ~ f(·|θ) (the births of the unknown-n sampler) without a whole plate's worth."""

    def __init__(self, fn=None, capacity: int | None = None):
        self.capacity = capacity
        super().__init__(fn)


class records_plate(numpyro.plate):
    """The records plate of a database whose size may be unknown: ``capacity`` record slots, of
    which the first ``size`` are records and the rest are masked out of every log density and of
    the statistics of the :func:`privatized` sites that name this plate.

    ``size`` is the value of a sample site (a latent n with a prior, for unbounded DP, where n
    itself is private and may be released noisily as one more privatized site whose per-record
    statistic is 1) or a constant. The same model then runs with n conditioned or fixed through
    :class:`~dpjax.infer.DataAugmentationKernel`, with n latent through
    :class:`~dpjax.infer.ReversibleJumpKernel`, and simulates (θ, n, records, releases) with
    ``Predictive`` or exact ABC.

    With ``size`` a vector of G sizes (one unknown n per unit: persons per block, firms per county,
    drawn in a plate of G units) the plate holds ``capacity`` slots per unit, unit g's in slots
    ``g·capacity …``, and every :func:`privatized` site naming it is released per unit (its ``groups``
    are the plate's ``units``). ``units`` (the unit of each slot) may index unit-level parameters in
    the records' law, e.g. ``dist.Bernoulli(p[people.units])``.

    >>> import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist, dpjax
    >>> def model(capacity, s_dp=None, n_dp=None):
    ...     p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    ...     n = numpyro.sample("n", dist.DiscreteUniform(1, capacity))
    ...     people = dpjax.records_plate("people", n, capacity)
    ...     with people:
    ...         x = numpyro.sample("x", dist.Bernoulli(p))
    ...     dpjax.privatized("count", dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0),
    ...                      lambda r: r["x"], {"x": x}, plate=people, obs=s_dp)
    ...     dpjax.privatized("n_dp", dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0),
    ...                      lambda r: jnp.ones(()), {"x": x}, plate=people, obs=n_dp)
    >>> draws = numpyro.infer.Predictive(model, num_samples=2)(jax.random.key(0), 60)
    >>> draws["x"].shape
    (2, 60)
    """

    def __init__(self, name: str, size, capacity: int, *, dim: int | None = None):
        capacity = positive_int(capacity, "capacity")  # the number of record slots (per unit)
        if jnp.ndim(size) > 1:
            raise ValueError(
                "`size` must be a scalar (the number of records) or a vector (the records of each unit), "
                f"got shape {jnp.shape(size)}."
            )
        overflow = [h for h in _PYRO_STACK if isinstance(h, allow_overflow)]
        capacity = next((h.capacity for h in overflow if h.capacity is not None), capacity)
        if concrete(size) and not overflow:
            value = np.asarray(size)
            if np.any(value != np.round(value)) or not np.all((0 <= value) & (value <= capacity)):
                raise ValueError(f"`size` must be whole numbers in [0, capacity={capacity}], got {value!r}.")
        slots = jnp.arange(int(capacity))
        # one size per unit: unit g's records in slots g·capacity … g·capacity + size[g] − 1 (unit-major)
        num_units = None if jnp.ndim(size) == 0 else int(jnp.shape(size)[0])
        super().__init__(name, int(capacity) * (num_units or 1), dim=dim)
        self.num_records = size
        self.num_units = num_units
        if num_units is None:
            self.units = None
            self.active = slots < size
        else:
            self.units = jnp.repeat(jnp.arange(num_units), int(capacity))
            self.active = (slots[None, :] < jnp.asarray(size)[:, None]).reshape(-1)

    def process_message(self, msg):
        super().process_message(msg)
        if msg["type"] == "sample" and any(f.name == self.name for f in msg["cond_indep_stack"]):
            mask = self.active.reshape((-1,) + (1,) * (-self.dim - 1))
            msg["fn"] = msg["fn"].mask(mask)
            msg["infer"] = {**(msg.get("infer") or {}), ACTIVE_KEY: True}


def record_statistics(statistic, records):
    """Per-record statistics ``t(recordᵢ)`` stacked along axis 0 (vectorised over records)."""
    out = jax.vmap(statistic)(dict(records))
    if not isinstance(out, jax.Array):
        raise ValueError(
            f"`statistic` must return one array per record (e.g. jnp.stack([...])), got {type(out).__name__}."
        )
    return out.astype(jnp.result_type(float))


def _check_release(name, mechanism, per_record, total, obs, groups=None, num_groups=None):
    """Host-side checks of a concrete release and statistic that would otherwise give a silently
    wrong posterior: non-integer values for an integer mechanism, magnitudes the working float type
    cannot carry at the mechanism's noise scale, and noise scales outside its range. The checks that
    need the noise scale are skipped when the mechanism's parameters are traced (e.g. a mechanism
    built inside ``jax.vmap`` over a grid of ε): only the concrete release and statistic are checked.
    With ``groups`` (a release per unit) the sums are each unit's: what a unit's total and its record
    updates carry."""
    dtype = np.dtype(total.dtype)
    known_scale = concrete(mechanism, mechanism.scale)
    exact = isinstance(mechanism, IntegerMechanism)
    t = np.asarray(per_record, dtype=float)
    values = {"the release `obs`": np.asarray(obs, float)} if obs is not None else {}
    if exact:
        values["the statistic T = Σ t(record)"] = t
        for what, v in values.items():
            if not np.all(v == np.round(v)):
                raise ValueError(
                    f"privatized site {name!r}: {what} has non-integer entries, but "
                    f"{type(mechanism).__name__} releases integers (T + integer noise); round or "
                    "scale the statistic inside `statistic`, or use a continuous mechanism."
                )
    # integer values are carried exactly while every partial sum of T stays below 2**24 in float32
    # (2**53 in float64); otherwise T and the release are rounded, and that error must be small against
    # the noise. The same rule in both widths: float64 only moves the limits.
    integers = all(np.all(v == np.round(v)) for v in (t, *values.values()))
    release = np.abs(values.get("the release `obs`", 0.0))
    if groups is not None:  # each unit's partial sums
        by_unit = np.zeros((num_groups,) + t.shape[1:])
        np.add.at(by_unit, np.asarray(groups), np.abs(t) if integers else t)
        total_size = np.abs(by_unit)
    else:
        total_size = np.sum(np.abs(t), axis=0) if integers else np.abs(np.sum(t, axis=0))
    magnitude = float(max(np.max(total_size, initial=0.0), np.max(release, initial=0.0)))
    if np.issubdtype(dtype, np.floating) and magnitude > 0:
        spacing = float(np.spacing(dtype.type(magnitude)))
        exact_limit = 2 ** (np.finfo(dtype).nmant + 1)
        scale = float(np.min(np.asarray(mechanism.scale, float))) if known_scale else None
        carried = integers and magnitude < exact_limit
        if not carried and (exact or (known_scale and spacing > scale / NOISE_OVER_SPACING)):
            need = (
                f"exact integers ({dtype.name} holds them only up to 2**{np.finfo(dtype).nmant + 1} = "
                f"{exact_limit:_})".replace("_", " ")
                if exact
                else f"a spacing below 1/{NOISE_OVER_SPACING} of the noise scale {scale:g}"
            )
            fix = (
                "Enable 64-bit floats before building the model: jax.config.update('jax_enable_x64', "
                "True) (or JAX_ENABLE_X64=1), or centre the statistic by a public offset."
                if dtype == np.float32
                else "Centre the statistic by a public offset (e.g. statistic=lambda r: r['x'] - c, with "
                "the release less n·c), or rescale it."
            )
            default = " (JAX's default)" if dtype == np.float32 else ""
            raise ValueError(
                f"privatized site {name!r}: the release or the statistic reaches {magnitude:.10g}, where "
                f"{dtype.name}{default} has spacing {spacing:g}, but this release needs {need}. {fix}"
            )
    if not known_scale or not mechanism.additive or not mechanism.unbounded_noise:
        return
    scale = np.asarray(mechanism.scale, float)
    # the density must stay finite at residuals from 0 up to the largest one an imputation can reach
    largest = np.full_like(scale, np.round(2 * magnitude) + 1.0)
    probe = np.stack([np.zeros_like(scale), np.maximum(np.round(scale), 1.0), largest])
    with np.errstate(all="ignore"), jax.ensure_compile_time_eval():  # concrete even inside a jit trace
        finite = np.all(np.isfinite(np.asarray(mechanism.log_noise_density(jnp.asarray(probe, dtype)))))
    if not finite:
        raise ValueError(
            f"privatized site {name!r}: the noise scale {mechanism.scale!r} is outside the range of "
            f"{dtype.name} (its log density overflows); enable 64-bit floats or rescale the statistic."
        )


def integer_statistics(mechanism, per_record) -> jax.Array:
    """Whether the per-record statistics fit an integer mechanism (always True for the others): the
    traced form of ``privatized``'s host check, for engines whose records are traced (under jit/vmap a
    half-integer statistic would leave only moves that keep T an integer, freezing the chain)."""
    if not isinstance(mechanism, IntegerMechanism):
        return jnp.array(True)
    return jnp.all(per_record == jnp.round(per_record))


def _discrete_latent_records(record_sites, plate):
    """``(records, theta)``: this call's record sites that the enclosing trace holds as latent and
    discrete, and the other discrete latent sites outside ``plate`` traced so far. The record sites
    come before the release (their values are its arguments), so the trace already holds them."""
    traces = (getattr(h, "trace", None) for h in reversed(_PYRO_STACK) if isinstance(h, handlers.trace))
    tr = next(traces, None)
    if not tr:
        return [], []

    def discrete_latent(site):
        return site["type"] == "sample" and not site["is_observed"] and site["fn"].support.is_discrete

    records = [k for k in record_sites if k in tr and discrete_latent(tr[k])]
    theta = [
        k
        for k, s in tr.items()
        if k not in record_sites
        and discrete_latent(s)
        and all(f.name != plate for f in s.get("cond_indep_stack", ()))
    ]
    return records, theta


def _inside_initialize_model() -> bool:
    """Whether NumPyro's ``initialize_model`` is on the call stack: the set-up of NUTS, HMC, SA,
    BarkerMH, the ensemble samplers and the autoguides, which all treat a discrete latent site by
    enumeration. dpjax's own engines and ``Predictive`` trace the model without it (and the inner
    NUTS of DataAugmentationKernel sees the records conditioned, i.e. observed)."""
    from numpyro.infer.util import initialize_model

    code = getattr(initialize_model, "__code__", None)
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


def _check_gradient_sampler(name, record_sites, plate):
    """A clear error for discrete latent records under NUTS/HMC, where NumPyro would fail inside
    its enumeration machinery (or, with funsor installed, enumerate each record on its own, which the
    release's Σ over all records does not allow)."""
    records, theta = _discrete_latent_records(record_sites, plate)
    if not records or not _inside_initialize_model():
        return
    theta_note = (
        f"; the θ sites {theta} are discrete too, so pass `theta_update=` (an exact draw of θ given the "
        "records) in place of that NUTS step"
        if theta
        else "; for a discrete θ pass `theta_update=` (an exact draw of θ given the records)"
    )
    raise ValueError(
        f"privatized site {name!r}: the record sites {records} are discrete latent sites, which "
        "NUTS/HMC (and NumPyro's other samplers and autoguides built on `initialize_model`) cannot "
        "update: they have no gradient, and they cannot be enumerated one by one because the release "
        "depends on all of them through T = Σ t(record). Impute them with "
        "MCMC(dpjax.infer.DataAugmentationKernel(model), ...), which updates the records exactly and θ "
        f"given the records with an inner NUTS{theta_note}; or use dpjax.infer.exact_abc."
    )


def _check_groups(name, groups, num_groups, n, obs, active):
    """``(groups, G)`` of a grouped release, checked (``ValueError`` naming the argument), or ``(None,
    None)``."""
    if groups is None:
        if num_groups is not None:
            raise ValueError(f"privatized site {name!r}: `num_groups` without `groups`.")
        return None, None
    if active is not None:
        raise ValueError(
            f"privatized site {name!r}: a release per unit (`groups`) with one unknown n for all units is "
            "not supported yet; give the records plate a known size, or one size per unit "
            "(dpjax.records_plate(name, n, capacity) with n of shape (G,): the units are then the plate's)."
        )
    groups = jnp.asarray(groups)
    if groups.shape != (n,) or not jnp.issubdtype(groups.dtype, jnp.integer):
        raise ValueError(
            f"privatized site {name!r}: `groups` must be an int array of shape ({n},), one unit per record; "
            f"got {groups.dtype} of shape {groups.shape}."
        )
    if num_groups is None:
        if obs is not None:
            num_groups = int(np.shape(obs)[0]) if np.ndim(obs) else None
        elif concrete(groups):
            num_groups = int(np.max(np.asarray(groups))) + 1
        if num_groups is None:
            raise ValueError(
                f"privatized site {name!r}: give `num_groups` (G) or a release `obs` of shape (G, ...)."
            )
    if not isinstance(num_groups, (int, np.integer)) or num_groups < 1:
        raise ValueError(f"privatized site {name!r}: `num_groups` must be an int ≥ 1, got {num_groups!r}.")
    if concrete(groups) and not np.all((np.asarray(groups) >= 0) & (np.asarray(groups) < num_groups)):
        raise ValueError(f"privatized site {name!r}: `groups` must lie in 0 .. {num_groups - 1}.")
    return groups, int(num_groups)


def privatized(
    name: str,
    mechanism: Mechanism,
    statistic: Callable[[dict], jax.Array],
    records: Mapping[str, jax.Array],
    *,
    plate: str,
    obs=None,
    groups=None,
    num_groups: int | None = None,
    transform: Callable | None = None,
):
    """Declare a differentially private release of ``T = Σᵢ statistic(recordᵢ)``, or of one such total
    per unit: ``T_g = Σ_{i in unit g} statistic(recordᵢ)`` with ``groups``.

    Inside a NumPyro model this is an observed sample site ``name`` with distribution
    ``mechanism(T)``; with ``obs=None`` it simulates a release (so the same model generates
    synthetic studies with :class:`numpyro.infer.Predictive`). dpjax engines find the site by its
    ``infer["dpjax"]`` metadata.

    :param name: site name.
    :param mechanism: a :class:`dpjax.mechanisms.Mechanism` (how the curator added noise).
    :param statistic: per-record statistic ``t(record) -> array``; ``record`` is a dict with
        one record's value of each entry of ``records``.
    :param records: the record sites the statistic reads, ``{site_name: value}`` with the records
        along axis 0 (latent ones are imputed; observed ones are public).
    :param plate: the records plate (the outermost plate of those sites): its name, or the
        :class:`records_plate` itself when the database's size is a site (or is padded).
    :param obs: the observed release, or ``None`` to simulate one.
    :param groups: for one release per unit (per block, county or stratum; per record for local DP): a
        public int array ``(n,)`` giving each record's unit in ``0 .. G−1``. The release then has shape
        ``(G, *shape of t)``, the mechanism adds its noise to each unit's total, and a record update
        touches its unit's total only. Each record feeds one unit's release, so the guarantee of the
        whole release is that of its least private unit (parallel composition; ``PrivatizedInfo.guarantee``).
        Mechanism parameters of the release's shape ``(G, ...)`` give each unit its own budget.
    :param num_groups: G; default ``obs.shape[0]``, or ``max(groups) + 1`` when ``obs`` is None.
    :param transform: for a release of a known function of the totals (a mean, a variance, a ratio): the
        mechanism adds its noise to ``transform(T)``, e.g. ``lambda T: T[0] / T[1]`` for a mean with
        ``statistic=lambda r: jnp.stack([r["x"], 1.0])``. The record updates still move the totals T
        (O(dim T) each); ``sensitivity`` is that of the released value (``(b − a) / n`` for the mean
        of n values clamped to [a, b] with n public).

    >>> import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist, dpjax
    >>> def model(n, s_dp=None):
    ...     p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    ...     with numpyro.plate("people", n):
    ...         x = numpyro.sample("x", dist.Bernoulli(p))
    ...     dpjax.privatized("count", dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0),
    ...                      lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)
    >>> s = numpyro.infer.Predictive(model, num_samples=1)(jax.random.key(0), 50)["count"]
    """
    if not isinstance(name, str):
        raise ValueError(f"`name` must be a string, got {name!r}.")
    if not isinstance(mechanism, Mechanism):
        raise ValueError(f"`mechanism` must be a dpjax Mechanism, got {type(mechanism).__name__}.")
    if not callable(statistic):
        raise ValueError("`statistic` must be a callable t(record) -> array.")
    size = active = units = num_units = None
    if isinstance(plate, records_plate):
        units, num_units = plate.units, plate.num_units
        plate, size, active = plate.name, plate.num_records, plate.active
    if not isinstance(plate, str):
        raise ValueError(f"`plate` must be the name of the records plate or a records_plate, got {plate!r}.")
    if not isinstance(records, Mapping) or not records:
        raise ValueError("`records` must be a non-empty dict {site_name: values}.")
    sizes = {k: (jnp.shape(v)[0] if jnp.ndim(v) else None) for k, v in records.items()}
    if None in sizes.values() or len(set(sizes.values())) != 1:
        raise ValueError(f"`records` values must share their leading (records) axis, got {sizes}.")
    n_records = next(iter(sizes.values()))
    if units is not None:  # one size per unit: the release is per unit, its units the plate's
        if groups is not None or num_groups is not None:
            raise ValueError(
                f"privatized site {name!r}: the records plate has one size per unit, so the release is one "
                "total per unit of the plate (its `units`); drop `groups` and `num_groups`."
            )
        groups, num_groups = units, num_units
    unknown_total = active if units is None else None  # one unknown n for all units: refused there
    groups, num_groups = _check_groups(name, groups, num_groups, n_records, obs, unknown_total)
    if transform is not None and (active is not None or not callable(transform)):
        raise ValueError(
            f"privatized site {name!r}: `transform` must be a callable of the totals T, and is not supported "
            "yet with an unknown n (a records_plate)."
        )
    if groups is not None and not mechanism.additive:
        raise ValueError(
            f"privatized site {name!r}: a release per unit (`groups`) needs an additive mechanism (noise "
            f"added to each unit's total), got {type(mechanism).__name__}."
        )
    try:
        per_record = record_statistics(statistic, records)
    except KeyError as e:
        raise ValueError(
            f"privatized site {name!r}: `statistic` reads the field {e.args[0]!r}, which is not in `records` "
            f"(fields {sorted(records)}); pass every record site the statistic reads, e.g. "
            f"records={{{e.args[0]!r}: ...}}."
        ) from None
    if active is not None:
        if per_record.shape[0] != active.shape[0]:
            raise ValueError(
                f"privatized site {name!r}: `records` have {per_record.shape[0]} rows but the records_plate "
                f"{plate!r} has capacity {active.shape[0]}."
            )
        # the slots beyond the size are no records: they add nothing to T
        per_record = jnp.where(active.reshape((-1,) + (1,) * (per_record.ndim - 1)), per_record, 0.0)
    sites = tuple(records)
    info = PrivatizedInfo(
        mechanism,
        statistic,
        plate,
        sites,
        tuple(records.values()),
        size,
        active,
        groups,
        num_groups,
        transform,
    )
    total = info.released(info.total(per_record))
    try:
        mechanism.check_release_shape(total.shape, "the statistic T = Σ t(record)")
    except ValueError as e:
        raise ValueError(f"privatized site {name!r}: {e}") from None
    raw_obs = obs
    if obs is not None:
        if concrete(obs) and not np.all(np.isfinite(np.asarray(obs, dtype=float))):
            raise ValueError(f"privatized site {name!r}: the release `obs` has NaN or inf entries.")
        obs = jnp.asarray(obs, dtype=total.dtype)
        if obs.shape != total.shape:
            raise ValueError(
                f"privatized site {name!r}: the release `obs` has shape {obs.shape} but the "
                f"statistic T = Σ t(record) has shape {total.shape}."
            )
    if concrete(per_record, raw_obs):
        # check the value as given, before float32 rounding can hide a non-integer or a too-large release
        per_value = per_record if transform is None else total[None]  # the released value's own scale
        release = None if raw_obs is None else np.asarray(raw_obs)
        per_unit = (groups, num_groups) if transform is None and concrete(groups) else (None, None)
        _check_release(name, mechanism, per_value, total, release, *per_unit)
    if _PYRO_STACK:
        _check_gradient_sampler(name, tuple(records), plate)
    return numpyro.sample(name, mechanism(total), obs=obs, infer={INFER_KEY: info})


class SiteRoles(NamedTuple):
    """Static roles of a model's sites: the privatized sites with their metadata, the parameters
    θ (latent sites outside the records plate) and the latent and public record sites."""

    privatized: tuple[tuple[str, PrivatizedInfo], ...]
    theta: tuple[str, ...]
    latent_records: tuple[str, ...]
    public_records: tuple[str, ...]
    size: str | None = None  # the latent site that sizes the records_plate (unknown n)


_WRAPPERS = (dist.MaskedDistribution, dist.ExpandedDistribution, dist.Independent)


def _check_unweighted(name, site, privatized=True):
    """The one site-handler rule of every engine: a scale (``handlers.scale``, a subsampled plate)
    or a mask (``handlers.mask``, ``fn.mask(...)``) on a site the engines read would be honoured by
    some (NumPyro's log density in the θ-step) and ignored by others (simulation in ABC and the
    record sweep's proposals, the exact η(s | T) of a release), so both are refused."""
    what = f"privatized site {name!r}" if privatized else f"site {name!r}"
    why = (
        "dpjax engines use the release's exact likelihood η(s | T) and do not reweight it"
        if privatized
        else "dpjax engines also simulate θ and the records from their distributions, which a scale or "
        "mask does not change, so the engines would disagree"
    )
    scale = site.get("scale")
    if scale is not None and not (concrete(scale) and np.all(np.asarray(scale) == 1)):
        shown = np.asarray(scale).tolist() if concrete(scale) else "a traced value"
        raise ValueError(
            f"{what} is under a likelihood scale ({shown}; from numpyro.handlers.scale or a subsampled "
            f"plate): {why}. Remove the scale around it (a tempered / power likelihood will come through "
            "an explicit argument)."
        )
    fn = site["fn"]
    own_mask = bool((site.get("infer") or {}).get(ACTIVE_KEY))  # a records_plate's: slots beyond n
    while isinstance(fn, _WRAPPERS):
        if isinstance(fn, dist.MaskedDistribution) and own_mask:
            own_mask = False
        elif isinstance(fn, dist.MaskedDistribution):
            mask = fn._mask
            if not (concrete(mask) and np.all(np.asarray(mask))):
                shown = np.asarray(mask).tolist() if concrete(mask) else "a traced value"
                raise ValueError(
                    f"{what} is masked (mask {shown}; from numpyro.handlers.mask or fn.mask(...)): {why}. "
                    "Remove the mask around it, or leave what it hides out of the model."
                )
        fn = fn.base_dist


def site_roles(tr) -> SiteRoles:
    """Roles of a model trace's sites for every dpjax engine, with the records plate validated."""
    privatized = tuple(
        (name, site["infer"][INFER_KEY])
        for name, site in tr.items()
        if site["type"] == "sample" and INFER_KEY in (site.get("infer") or {})
    )
    if not privatized:
        raise ValueError("The model has no dpjax.privatized(...) site.")
    for name, _ in privatized:
        if not tr[name]["is_observed"]:
            raise ValueError(f"privatized site {name!r} needs the observed release: pass `obs=`.")
        _check_unweighted(name, tr[name])
    plates = {info.plate for _, info in privatized}
    if len(plates) != 1:
        raise ValueError(f"All privatized sites must share one records plate, got {sorted(plates)}.")
    plate = plates.pop()
    known = [k for k, s in tr.items() if s["type"] == "plate"]
    if plate not in known:
        raise ValueError(f"Records plate {plate!r} is not a plate of the model; plates: {known}.")
    size = tr[plate]["args"][0]
    if concrete(size) and not (
        np.ndim(size) == 0 and np.issubdtype(np.asarray(size).dtype, np.integer) and size >= 1
    ):
        got = f"an array of dtype {size.dtype}" if hasattr(size, "dtype") else f"a {type(size).__name__}"
        raise ValueError(
            f"Records plate {plate!r} has a size that is not a positive integer (got {got}): a plate's size "
            "is the number of records. Check the order of the model's arguments (`MCMC.run(rng_key, "
            "*model_args)` passes them in order) and pass n as an int."
        )
    subsample = tr[plate]["args"][1] if len(tr[plate]["args"]) > 1 else None
    if subsample is not None and subsample != size:
        raise ValueError(
            f"Records plate {plate!r} is subsampled ({subsample} of {size}); the release depends on every "
            "record through T = Σ t(record), so dpjax engines need the whole plate: drop `subsample_size`."
        )
    names = {name for name, _ in privatized}
    in_plate = {}
    for name, site in tr.items():
        if site["type"] != "sample" or name in names:
            continue
        frame = next((f for f in site["cond_indep_stack"] if f.name == plate), None)
        if frame is None:
            continue
        if frame.dim != -len(site["fn"].batch_shape) or jnp.shape(site["value"])[0] != size:
            raise ValueError(
                f"Site {name!r}: the records plate {plate!r} must be its outermost batch "
                "dimension (records along axis 0)."
            )
        in_plate[name] = site
    for pname, info in privatized:
        missing = [k for k in info.record_sites if k not in in_plate]
        if missing:
            raise ValueError(
                f"privatized site {pname!r}: records {missing} are not sample sites inside plate {plate!r}."
            )
        derived = [k for k, v in zip(info.record_sites, info.record_values) if v is not in_plate[k]["value"]]
        if derived:
            k = derived[0]
            raise ValueError(
                f"privatized site {pname!r}: records[{k!r}] is not the value of sample site {k!r} "
                f"(a transformed value such as 2 * {k} or jnp.clip({k}, ...)); every engine re-reads the "
                f"site, so pass the site's own value, records={{{k!r}: {k}}}, and put the transformation "
                f"in `statistic`, e.g. statistic=lambda r: 2 * r[{k!r}]."
            )
    latent_records = tuple(k for k, s in in_plate.items() if not s["is_observed"])
    if not latent_records:
        raise ValueError(f"Plate {plate!r} has no latent record sites to impute.")
    size = _size_site(tr, privatized[0][1].size)
    theta = tuple(
        k
        for k, s in tr.items()
        if s["type"] == "sample" and not s["is_observed"] and k not in in_plate and k != size
    )
    public = tuple(k for k, s in in_plate.items() if s["is_observed"])
    if size is not None and public:
        raise ValueError(
            f"The records plate {plate!r} is sized by the latent site {size!r}, so its records cannot be "
            f"observed: {list(public)} are public record sites. Condition {size!r} (a known n) or make "
            "every record site latent."
        )
    for k in theta + latent_records + public:
        _check_unweighted(k, tr[k], privatized=False)
    return SiteRoles(privatized, theta, latent_records, public, size)


def depends_on(fn, arg) -> list[bool]:
    """For each output leaf of ``fn(arg)``: whether it depends on ``arg`` (a conservative data-flow
    pass over the jaxpr: an equation with any dependent input makes all its outputs dependent)."""
    jaxpr = jax.make_jaxpr(lambda a: [jnp.asarray(x) for x in jax.tree.leaves(fn(a))])(arg).jaxpr
    hit = set(jaxpr.invars)
    for eqn in jaxpr.eqns:
        if any(isinstance(v, Var) and v in hit for v in eqn.invars):
            hit.update(eqn.outvars)
    return [isinstance(v, Var) and v in hit for v in jaxpr.outvars]


def _size_site(tr, size):
    """The latent sample site whose value sizes the records plate, or None (a constant or observed
    size, or a size given as a model argument: then the active slots are fixed)."""
    if size is None:
        return None
    name = next((k for k, s in tr.items() if s["type"] == "sample" and s["value"] is size), None)
    if name is None or tr[name]["is_observed"]:
        return None
    fn = tr[name]["fn"]
    if not fn.support.is_discrete or fn.event_shape or fn.batch_shape != jnp.shape(size):
        raise ValueError(
            f"Site {name!r} sizes the records plate, so it must be a discrete prior on whole numbers "
            f"(e.g. dist.DiscreteUniform(1, capacity), dist.Poisson(rate)), a scalar site or one size per "
            f"unit in a plate of units (batch shape (G,), sizes independent given θ), got {fn}."
        )
    return name


def simulate(rng_key, model, privatized_sites, model_args, model_kwargs, data=None):
    """``(trace, log_eta)``: one seeded run of ``model`` (conditioned on ``data``, e.g. θ) and
    log η(s_dp | T), the privatized sites' own log density at the release — the quantity exact
    ABC, pseudo-marginal ABC and IS-MCEM all weight by."""
    m = model if data is None else handlers.condition(model, data=data)
    tr = handlers.trace(handlers.seed(m, rng_key)).get_trace(*model_args, **model_kwargs)
    return tr, sum(jnp.sum(tr[n]["fn"].log_prob(tr[n]["value"])) for n in privatized_sites)
