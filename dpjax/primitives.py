"""The ``privatized`` site: an ordinary observed NumPyro sample site whose distribution is the
release mechanism applied to ``T = Σᵢ t(recordᵢ)``, with dpjax metadata in ``infer=``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro import handlers
from numpyro.primitives import _PYRO_STACK

from .mechanisms import Mechanism
from .mechanisms.base import IntegerMechanism, concrete

__all__ = ["PrivatizedInfo", "SiteRoles", "privatized", "record_statistics", "simulate", "site_roles"]

INFER_KEY = "dpjax"


class PrivatizedInfo(NamedTuple):
    """What engines read from a privatized site's ``infer["dpjax"]``. ``record_values`` are the
    values passed as ``records=``, checked against the record sites' own values by
    :func:`site_roles` (engines re-read the sites, so a transformed value would change the model)."""

    mechanism: Mechanism
    statistic: Callable
    plate: str
    record_sites: tuple[str, ...]
    record_values: tuple = ()


def record_statistics(statistic, records):
    """Per-record statistics ``t(recordᵢ)`` stacked along axis 0 (vectorised over records)."""
    out = jax.vmap(statistic)(dict(records))
    if not isinstance(out, jax.Array):
        raise ValueError(
            f"`statistic` must return one array per record (e.g. jnp.stack([...])), got {type(out).__name__}."
        )
    return out.astype(jnp.result_type(float))


def _check_release(name, mechanism, per_record, total, obs):
    """Host-side checks of a concrete release and statistic that would otherwise give a silently
    wrong posterior: non-integer values for an integer mechanism, magnitudes the working float type
    cannot carry at the mechanism's noise scale, and noise scales outside its range. The checks that
    need the noise scale are skipped when the mechanism's parameters are traced (e.g. a mechanism
    built inside ``jax.vmap`` over a grid of ε): only the concrete release and statistic are checked."""
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
    # integer values are carried exactly while every partial sum of T stays below 2**24 in float32;
    # otherwise T and the release are rounded, and that error must be small against the noise
    integers = all(np.all(v == np.round(v)) for v in (t, *values.values()))
    release = np.abs(values.get("the release `obs`", 0.0))
    total_size = np.sum(np.abs(t), axis=0) if integers else np.abs(np.sum(t, axis=0))
    magnitude = float(max(np.max(total_size, initial=0.0), np.max(release, initial=0.0)))
    if dtype == np.float32 and magnitude > 0:
        spacing = float(np.spacing(np.float32(magnitude)))
        scale = float(np.min(np.asarray(mechanism.scale, float))) if known_scale else None
        carried = integers and magnitude < 2.0**24
        if not carried and (exact or (known_scale and spacing > scale / 100)):
            need = (
                "exact integers (float32 holds them only up to 2**24 = 16 777 216)"
                if exact
                else f"a spacing below 1/100 of the noise scale {scale:g}"
            )
            raise ValueError(
                f"privatized site {name!r}: the release or the statistic reaches {magnitude:.10g}, where "
                f"float32 (JAX's default) has spacing {spacing:g}, but this release needs {need}. "
                "Enable 64-bit floats before building the model: jax.config.update('jax_enable_x64', "
                "True) (or JAX_ENABLE_X64=1), or centre the statistic by a public offset."
            )
    if not known_scale or not mechanism.additive:
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


def privatized(
    name: str,
    mechanism: Mechanism,
    statistic: Callable[[dict], jax.Array],
    records: Mapping[str, jax.Array],
    *,
    plate: str,
    obs=None,
):
    """Declare a differentially private release of ``T = Σᵢ statistic(recordᵢ)``.

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
    :param plate: name of the records plate (the outermost plate of those sites).
    :param obs: the observed release, or ``None`` to simulate one.

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
    if not isinstance(plate, str):
        raise ValueError(f"`plate` must be the name of the records plate, got {plate!r}.")
    if not isinstance(records, Mapping) or not records:
        raise ValueError("`records` must be a non-empty dict {site_name: values}.")
    sizes = {k: (jnp.shape(v)[0] if jnp.ndim(v) else None) for k, v in records.items()}
    if None in sizes.values() or len(set(sizes.values())) != 1:
        raise ValueError(f"`records` values must share their leading (records) axis, got {sizes}.")
    per_record = record_statistics(statistic, records)
    total = jnp.sum(per_record, axis=0)
    mech_shape = np.shape(mechanism.scale)
    try:
        fits = np.broadcast_shapes(mech_shape, total.shape) == total.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"privatized site {name!r}: the mechanism's parameters have shape {mech_shape} but the "
            f"statistic T = Σ t(record) has shape {total.shape}; give one ε (or scale) per entry of T."
        )
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
        _check_release(name, mechanism, per_record, total, None if raw_obs is None else np.asarray(raw_obs))
    if _PYRO_STACK:
        _check_gradient_sampler(name, tuple(records), plate)
    info = PrivatizedInfo(mechanism, statistic, plate, tuple(records), tuple(records.values()))
    return numpyro.sample(name, mechanism(total), obs=obs, infer={INFER_KEY: info})


class SiteRoles(NamedTuple):
    """Static roles of a model's sites: the privatized sites with their metadata, the parameters
    θ (latent sites outside the records plate) and the latent and public record sites."""

    privatized: tuple[tuple[str, PrivatizedInfo], ...]
    theta: tuple[str, ...]
    latent_records: tuple[str, ...]
    public_records: tuple[str, ...]


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
    while isinstance(fn, _WRAPPERS):
        if isinstance(fn, dist.MaskedDistribution):
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
    theta = tuple(
        k for k, s in tr.items() if s["type"] == "sample" and not s["is_observed"] and k not in in_plate
    )
    public = tuple(k for k, s in in_plate.items() if s["is_observed"])
    for k in theta + latent_records + public:
        _check_unweighted(k, tr[k], privatized=False)
    return SiteRoles(privatized, theta, latent_records, public)


def simulate(rng_key, model, privatized_sites, model_args, model_kwargs, data=None):
    """``(trace, log_eta)``: one seeded run of ``model`` (conditioned on ``data``, e.g. θ) and
    log η(s_dp | T), the privatized sites' own log density at the release — the quantity exact
    ABC, pseudo-marginal ABC and IS-MCEM all weight by."""
    m = model if data is None else handlers.condition(model, data=data)
    tr = handlers.trace(handlers.seed(m, rng_key)).get_trace(*model_args, **model_kwargs)
    return tr, sum(jnp.sum(tr[n]["fn"].log_prob(tr[n]["value"])) for n in privatized_sites)
