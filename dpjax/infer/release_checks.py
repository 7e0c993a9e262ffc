"""What a release and its mechanism may be, given the records' support: two checks every engine reads
(through :func:`dpjax.infer.spec.model_spec`), made once on the prototype trace before any draws.

Where every latent record site a statistic reads has a finite support (Bernoulli, Categorical, Binomial,
...), t(x) can be enumerated at each joint support value, per record, and with it

- the exact range of T = Σ t(xᵢ): a release beyond it by more than the noise could ever carry is flagged
  (:class:`ReleaseRangeWarning`: a wrong scale or sensitivity, a mean released as a sum, a wrong n);
- a lower bound on the statistic's sensitivity under either neighbour relation (add/remove one record:
  max ‖t(x)‖; replace one: max ‖t(x) − t(x′)‖): a mechanism declaring less is refused, since the
  guarantee it reports would overstate the privacy (``ValueError``).

Models whose records have unbounded support are not checked.
"""

from __future__ import annotations

import itertools
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ..mechanisms.base import concrete
from ..primitives import record_statistics

__all__ = ["OUT_OF_REACH_NATS", "ReleaseRangeWarning", "check_release"]

#: how far (in nats of η(s | T) below its peak) a release may lie from every value its statistic can take
#: before it is flagged: a release that far arises with probability about e⁻⁵⁰ (50 Laplace scales, 10 σ)
OUT_OF_REACH_NATS = 50.0
_MAX_COMBINATIONS = 10**7  # records × joint support values enumerated
_SLACK = 1e-6  # relative: a declared sensitivity this close to the bound is taken as equal (float error)


class ReleaseRangeWarning(UserWarning):
    """A release lies so far from every value its statistic can take that its noise cannot explain it."""


def check_release(name, info, tr):
    """Both checks for the privatized site ``name`` (``info`` its PrivatizedInfo) on the trace ``tr``."""
    mechanism = info.mechanism
    if not mechanism.additive or not concrete(tr[name]["value"], mechanism):
        return
    stats = support_statistics(info, tr)
    if stats is None:
        return
    _check_sensitivity(name, info, tr, stats)
    if info.active is None and info.transform is None:  # else the range depends on n, or on f
        _warn_out_of_reach(name, info, tr, stats)


def support_statistics(info, tr):
    """``t`` of each record at each joint support value of the latent record sites the statistic reads,
    ``(values, n, *stat_shape)`` (public record sites at their own values), or None where a site has no
    finite support, the records are traced, or the enumeration would be too large."""
    sites = info.record_sites
    latent = [k for k in sites if not tr[k]["is_observed"]]
    if not latent or not concrete([tr[k]["value"] for k in sites]):
        return None
    try:
        supports = [np.asarray(tr[k]["fn"].enumerate_support(expand=False)) for k in latent]
    except (NotImplementedError, AttributeError, TypeError, ValueError):
        return None
    n = np.shape(tr[latent[0]]["value"])[0]
    combos = list(itertools.product(*(range(len(v)) for v in supports)))
    if len(combos) * n > _MAX_COMBINATIONS:
        return None
    out = []
    for combo in combos:
        records = {k: tr[k]["value"] for k in sites}
        for k, values, j in zip(latent, supports, combo):
            records[k] = jnp.broadcast_to(values[j], np.shape(tr[k]["value"])).astype(tr[k]["value"].dtype)
        out.append(np.asarray(record_statistics(info.statistic, records), float))
    return np.stack(out)


def _warn_out_of_reach(name, info, tr, stats):
    """Warn where the release lies beyond every value of T by more than the noise could carry it. The
    release is public, so the message may show it."""
    mechanism, s = info.mechanism, np.asarray(tr[name]["value"], float)
    lo, hi = info.total(stats.min(0)), info.total(stats.max(0))
    nearest = np.clip(s, lo, hi)
    deficit = np.asarray(mechanism.log_noise_density(s - nearest) - mechanism.log_noise_density(0 * s))
    if np.all(deficit > -OUT_OF_REACH_NATS):
        return
    j = np.unravel_index(np.argmin(deficit), np.shape(deficit))
    where = f" (entry {j[0] if len(j) == 1 else j})" if np.ndim(s) else ""
    scale = np.broadcast_to(np.asarray(mechanism.scale, float), np.shape(s))[j]
    warnings.warn(
        f"privatized site {name!r}{where}: the release {float(s[j]):g} lies "
        f"{float(np.abs(s - nearest)[j] / scale):.4g} noise scales outside [{float(lo[j]):g}, "
        f"{float(hi[j]):g}], every value its statistic can take with these {stats.shape[1]} records "
        "(noise that large has probability below e^-50). Check the mechanism's scale and sensitivity, the "
        "number of records, and that the statistic is the released one (a sum, not a mean).",
        ReleaseRangeWarning,
        stacklevel=3,
    )


def _check_sensitivity(name, info, tr, stats):
    """Refuse a declared sensitivity below the least the released value can have under either neighbour
    relation. ``stats``: t per support value and record. Without a transform the bounds are exact over
    the support: add/remove max ‖t(x)‖, replace-one max ‖t(x) − t(x′)‖ (per record, so public record
    sites count at their own values). With a transform, a lower bound at the prototype's records D: the
    largest change of f(T) from removing one record or setting it to another support value."""
    mechanism = info.mechanism
    declared, norm = getattr(mechanism, "sensitivity", None), mechanism.sensitivity_norm
    if declared is None or norm is None or not concrete(declared, mechanism.scale):
        return
    declared = np.asarray(declared, float)
    # one norm over the whole release where one sensitivity and one scale calibrate it; else entry by entry
    per_entry = np.ndim(declared) > 0 or np.ndim(mechanism.scale) > 0
    if info.transform is None:
        event_ndim = stats.ndim - 2
        bounds = [_largest(stats, norm, per_entry, event_ndim), _replace_bound(stats, norm, per_entry)]
    else:
        changes = _transformed_changes(info, tr, stats)
        bounds = [_largest(c, norm, per_entry, changes[0].ndim - 1) for c in changes]
    least = np.minimum(*bounds)
    short = declared < least * (1 - _SLACK)
    if not np.any(short):
        return
    j = np.unravel_index(np.argmax(least - declared), np.shape(short))
    where = f" (entry {j[0] if len(j) == 1 else j})" if np.ndim(short) else ""
    raise ValueError(
        f"privatized site {name!r}{where}: {type(mechanism).__name__} declares sensitivity "
        f"{float(np.broadcast_to(declared, np.shape(short))[j]):g}, but the records' support lets one record "
        f"move the released value by {float(np.asarray(least)[j]):.6g} ({'L1' if norm == 1 else 'L2'}) or "
        "more, whether neighbours add or remove a record or replace one, so the guarantee it reports would "
        "overstate the privacy. Declare the sensitivity of the released value "
        "(docs: sensitivity), or clamp the records in the statistic to the range the curator used."
    )


def _transformed_changes(info, tr, stats):
    """f(T′) − f(T) at the prototype's records D, for T′ of D less one record and of D with one record
    set to each support value (lower bounds of the two relations' sensitivities of f(T)); with a release
    per unit, T is the record's unit's total."""
    current = np.asarray(record_statistics(info.statistic, {k: tr[k]["value"] for k in info.record_sites}))
    totals = np.asarray(info.total(current), float)
    grouped = info.groups is not None
    own = totals[np.asarray(info.groups)] if grouped else np.broadcast_to(totals, current.shape)
    f = jax.vmap(info.transform)
    base = np.asarray(f(own), float)  # (n, *released shape)

    def change(new):  # f at totals of shape (..., n, *T's shape), less f at the record's own total
        out = np.asarray(f(np.reshape(new, (-1,) + own.shape[1:])), float)
        return out.reshape(np.shape(new)[: np.ndim(new) - own.ndim + 1] + out.shape[1:]) - base

    return [change(own - current), change((own - current)[None] + stats)]  # removed; set to each value


def _replace_bound(stats, norm, per_entry):
    """max over records and pairs of support values of ‖t(x) − t(x′)‖ (per entry: |·|); past the
    enumeration budget, the largest per-entry range, a lower bound of the norm."""
    event_ndim = stats.ndim - 2
    if np.all(stats == stats[:, :1]):  # t does not depend on the record's public sites: one record
        stats = stats[:, :1]
    if stats.shape[0] ** 2 * stats[0].size <= _MAX_COMBINATIONS:
        return _largest(stats[:, None] - stats[None, :], norm, per_entry, event_ndim)
    ranges = _largest(stats.max(0) - stats.min(0), norm, True, event_ndim)
    return ranges if per_entry else ranges.max()


def _largest(changes, norm, per_entry, event_ndim):
    """The largest change over every axis but the released value's own (its last ``event_ndim``): the
    norm of the change, or per entry its absolute value."""
    flat = changes.reshape((-1,) + changes.shape[changes.ndim - event_ndim :])
    if per_entry or event_ndim == 0:
        return np.abs(flat).max(0)
    return np.linalg.norm(flat.reshape(flat.shape[0], -1), ord=norm, axis=1).max()
