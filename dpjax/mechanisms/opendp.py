"""The dpjax mechanism of an OpenDP measurement, to analyse a release published with OpenDP.

OpenDP is optional: ``pip install "dpjax[opendp]"`` (OpenDP ≥ 0.13, whose measurements record how
they were built).
"""

from __future__ import annotations

import math
import re

import numpy as np

from .base import Mechanism, positive, positive_integer
from .gaussian import DiscreteGaussianMechanism, GaussianMechanism
from .laplace import DiscreteLaplaceMechanism, LaplaceMechanism

__all__ = ["from_opendp"]

_NOISE = {"make_laplace": "laplace", "make_geometric": "laplace", "make_gaussian": "gaussian"}
_MEASURE = {"laplace": "MaxDivergence", "gaussian": "ZeroConcentratedDivergence"}
_HINTS = (
    ("composition", "it composes several releases: map each component measurement separately"),
    ("chain_pm", "it post-processes the noisy value: map the measurement before the post-processing"),
    ("_to_|fix_delta|approximate", "it converts the privacy measure: map the measurement before that"),
)
_SUPPORTED = (
    "dpjax maps Laplace/geometric noise under MaxDivergence (ε-DP) and Gaussian noise under "
    "ZeroConcentratedDivergence (ρ-zCDP) on integer or float scalars or vectors (make_laplace, "
    "make_geometric, make_gaussian, make_noise, then_*, optionally chained after a transformation)"
)


def from_opendp(measurement, sensitivity=None) -> Mechanism:
    """The dpjax mechanism that adds the same noise as an OpenDP ``measurement``.

    ============================  ====================  =============================================
    OpenDP measurement            input (atom/vector)   dpjax mechanism
    ============================  ====================  =============================================
    Laplace, ``MaxDivergence``    integers              ``DiscreteLaplaceMechanism(scale=scale)``
    Laplace, ``MaxDivergence``    floats                ``LaplaceMechanism(scale=scale)``
    Gaussian, zCDP                integers              ``DiscreteGaussianMechanism(sigma=scale)``
    Gaussian, zCDP                floats                ``GaussianMechanism(sigma=scale)``
    ============================  ====================  =============================================

    Laplace means ``make_laplace``, ``make_geometric`` (without ``bounds``, which censor the
    release) or ``make_noise`` with ``MaxDivergence``; Gaussian ``make_gaussian`` or ``make_noise``
    with ``ZeroConcentratedDivergence``; also their ``then_*`` forms, a chain ``t >> m`` (the
    statistic is then ``t(data)``) and a context-API ``Query`` (resolved). On floats OpenDP
    samples on a lattice of spacing ``2**k`` (the input is rounded to it); dpjax models the noise
    as continuous, accurate when the spacing is far below the scale (the default ``k`` is the
    finest; a ``k`` with spacing above ``scale / 1000`` is refused).

    :param measurement: an ``opendp.mod.Measurement`` (or ``opendp.context.Query``).
    :param sensitivity: the distance between neighbouring inputs in the measurement's own input
        metric (OpenDP's ``d_in``). For a noise measurement alone that is the L1 (Laplace) or L2
        (Gaussian) sensitivity of the statistic the noise is added to. For a chain ``t >> m`` (and a
        context-API query) it is the privacy unit on the data set, e.g. 1 for one record added or
        removed under the symmetric distance; the statistic's sensitivity is then ``t``'s stability
        map of it (``t.map(d_in)``: 10 for a sum of values clamped to [0, 10]). Default: the query's
        privacy unit for a query, else 1. The dpjax guarantee is checked against OpenDP's privacy map
        of the whole measurement, ``measurement.map(d_in)``.
    :raises ValueError: for a measurement dpjax does not map (naming why).
    :raises ImportError: when OpenDP is not installed.

    >>> import opendp.prelude as dp
    >>> from dpjax.mechanisms import from_opendp
    >>> dp.enable_features("contrib")
    >>> meas = dp.m.make_laplace(dp.atom_domain(T=int), dp.absolute_distance(T=int), scale=2.0)
    >>> mech = from_opendp(meas)
    >>> type(mech).__name__, mech.scale, mech.guarantee.epsilon, meas.map(1)
    ('DiscreteLaplaceMechanism', 2.0, 0.5, 0.5)
    """
    try:
        from opendp.context import Query
        from opendp.mod import Measurement
    except ImportError:
        raise ImportError('from_opendp needs OpenDP: pip install "dpjax[opendp]"') from None
    if np.ndim(sensitivity):
        raise ValueError(f"`sensitivity` must be a scalar (OpenDP's d_in), got {sensitivity!r}.")
    unit = 1
    if isinstance(measurement, Query):
        unit = getattr(measurement, "_d_in", None) or unit  # the context's privacy unit
        measurement = measurement.resolve()
    if not isinstance(measurement, Measurement):
        raise ValueError(f"from_opendp needs an OpenDP Measurement, got {type(measurement).__name__}.")
    whole, d_in = measurement, _distance(measurement, unit if sensitivity is None else sensitivity)
    d_stat = d_in  # in the noise measurement's input metric: the chain's transformations map it
    spec = getattr(measurement, "__opendp_dict__", None) or {}
    while spec.get("__function__") == "make_chain_mt":  # t >> m: the noise is m's, on t's output
        d_stat = spec["__kwargs__"]["transformation0"].map(d_stat)
        measurement = spec["__kwargs__"]["measurement1"]
        spec = getattr(measurement, "__opendp_dict__", None) or {}
    fn, kw, measure = spec.get("__function__"), spec.get("__kwargs__", {}), str(measurement.output_measure)
    noise = {v: k for k, v in _MEASURE.items()}.get(measure) if fn == "make_noise" else _NOISE.get(fn)
    if not noise or measure != _MEASURE[noise] or kw.get("bounds") is not None:
        why = next((h for key, h in _HINTS if re.search(key, str(fn))), None)
        why = why or ("it censors the release to `bounds`" if kw.get("bounds") is not None else None)
        name = f"`{fn}`" if fn else "an unrecorded constructor (OpenDP < 0.13?)"
        raise ValueError(
            f"from_opendp cannot map a measurement built by {name} with output measure {measure}"
            f"{': ' + why if why else ''}. {_SUPPORTED}."
        )
    match = re.fullmatch(r"(?:Vec<)?([iuf])(?:\d+|size)>?", str(measurement.input_domain.carrier_type))
    if not match or not re.match(r"(Vector|Atom)Domain", str(measurement.input_domain)):
        raise ValueError(
            f"from_opendp cannot map the input domain {measurement.input_domain}: "
            "only atom or vector domains of integers or floats."
        )
    integer, scale = match[1] != "f", positive("scale", float(kw["scale"]))
    if not integer and kw.get("k") is not None and 2.0 ** kw["k"] > scale / 1000:
        raise ValueError(
            f"from_opendp cannot map a float {noise} measurement on the lattice of spacing 2**{kw['k']} "
            f"(not far below the scale {scale:g}): dpjax models float noise as continuous. Leave `k` "
            "at its default (the finest lattice)."
        )
    d_stat = float(d_stat)
    if noise == "laplace" and integer:
        mech = DiscreteLaplaceMechanism(scale=scale)  # ignores `sensitivity` given `scale`: set it
        mech.sensitivity = positive_integer("sensitivity", d_stat)
    elif noise == "laplace":
        mech = LaplaceMechanism(scale=scale, sensitivity=d_stat)
    else:
        mech = (DiscreteGaussianMechanism if integer else GaussianMechanism)(sigma=scale, sensitivity=d_stat)
    ours = mech.guarantee.epsilon if noise == "laplace" else mech.guarantee.rho
    theirs = float(whole.map(d_in))
    if not math.isclose(ours, theirs, rel_tol=1e-5):  # OpenDP rounds its map upwards, in float
        kind = "ε" if noise == "laplace" else "ρ"
        chained = (
            f" (the statistic's sensitivity {d_stat:g}, from the chain's stability map)"
            if whole is not measurement
            else ""
        )
        raise ValueError(
            f"OpenDP's privacy map gives {kind}={theirs:.10g} at d_in={d_in}, but dpjax's "
            f"{type(mech).__name__} "
            f"with scale {scale:g} at sensitivity {d_stat:g}{chained} gives {kind}={ours:.10g}: the "
            "measurement does not add plain noise of that scale to the statistic (a float lattice of "
            "spacing 2**k not far below the scale rounds the input, or a transformation in the chain "
            "changes more than its stability map says)."
        )
    return mech


def _distance(measurement, value):
    """``value`` as a distance of the measurement's input metric (an int for integer metrics)."""
    value = positive("sensitivity", value)
    if str(measurement.input_metric.distance_type)[0] in "iu":
        return int(positive_integer("sensitivity", value))
    return float(value)
