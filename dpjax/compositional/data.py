"""Input validation shared by the compositional module, and the ATUS loader.

All checks run on the host before anything is traced; a traced argument (inside ``jax.jit`` /
``jax.vmap``) cannot be inspected and is passed through unchecked, as in :mod:`dpjax.mechanisms`.
"""

from __future__ import annotations

import csv
import math
import os

import jax.numpy as jnp
import numpy as np

from ..mechanisms.base import concrete

__all__ = ["ATUS_PARTS", "check_compositions", "check_threshold", "check_thresholds", "load_atus"]

#: Column names of the ATUS files (the three parts of the day, in order).
ATUS_PARTS = ("PERSONAL.CARE", "EATING.AND.DRINKING", "OTHER")

#: Tolerance on |Σⱼ xᵢⱼ − 1| for a row to count as a composition (float32 rounding is ~1e-7).
ROW_SUM_TOL = 1e-5


def check_compositions(x, name: str = "x", *, allow_zeros: bool = True, tol: float = ROW_SUM_TOL):
    """Validate an ``(n, d)`` array of compositions (rows on the simplex) and return it as a JAX
    float array. Needs ``n ≥ 1``, ``d ≥ 2``, finite entries ``≥ 0`` (``> 0`` unless
    ``allow_zeros``; zeros are fine where the statistic censors them) and rows summing to one
    within ``tol``. Rows are never renormalised silently. A traced ``x`` is returned unchecked.

    >>> check_compositions([[0.2, 0.8], [0.5, 0.5]]).shape
    (2, 2)
    """
    if not concrete(x):
        return jnp.asarray(x)
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"`{name}` must be an (n, d) array of compositions, got a {type(x).__name__}."
        ) from None
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise ValueError(
            f"`{name}` must be an (n, d) array of compositions (one row per record), got shape {arr.shape}."
        )
    if arr.shape[1] < 2:
        raise ValueError(
            f"`{name}` must have d ≥ 2 parts per composition (a 1-part composition is the constant 1), "
            f"got d = {arr.shape[1]}."
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"`{name}` must be finite, got NaN or inf.")
    # the messages name no row, entry or count: x may be the confidential data (curator side)
    if np.any(arr < 0) if allow_zeros else np.any(arr <= 0):
        want = "≥ 0" if allow_zeros else "> 0 (the uncensored log statistic needs positive parts)"
        raise ValueError(f"`{name}` entries must be {want}; some are not.")
    if np.any(np.abs(arr.sum(axis=1) - 1.0) > tol):
        raise ValueError(
            f"`{name}` rows must sum to one (compositions; tolerance {tol:g}); some rows do not. "
            "Normalise them yourself if that is intended."
        )
    return jnp.asarray(arr, dtype=jnp.result_type(float))


def check_threshold(a, d: int, name: str = "a", *, upper: str = "1/d"):
    """Validate a censoring threshold: a finite scalar with ``0 < a < 1/d`` (``upper="1/d"``) or
    ``0 < a < 1`` (``upper="1"``). A traced ``a`` is returned unchecked.

    >>> check_threshold(0.01, 3)
    0.01
    """
    if not concrete(a):
        return a
    try:
        val = float(np.asarray(a, dtype=float))
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be a number in (0, {upper}), got {a!r}.") from None
    hi = 1.0 / d if upper == "1/d" else 1.0
    if not (math.isfinite(val) and 0 < val < hi):
        why = f" = {hi:g} for d = {d}" if upper == "1/d" else ""
        raise ValueError(f"`{name}` must satisfy 0 < {name} < {upper}{why}, got {a!r}.")
    return val


def check_thresholds(thresholds, d: int) -> np.ndarray:
    """Validate the candidate thresholds ``a₁ > a₂ > … > a_M`` (strictly decreasing, each in
    ``(0, 1/d)``) and return them as a float array. They must be concrete (they are public).

    >>> check_thresholds([0.1, 0.01, 0.001], 3).tolist()
    [0.1, 0.01, 0.001]
    """
    if not concrete(thresholds):
        raise ValueError("`thresholds` must be concrete (public, fixed before the release), not traced.")
    try:
        arr = np.asarray(thresholds, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"`thresholds` must be a 1-d array of numbers, got {thresholds!r}.") from None
    if arr.ndim != 1 or arr.size < 1:
        raise ValueError(f"`thresholds` must be a non-empty 1-d array (a₁ > … > a_M), got shape {arr.shape}.")
    for m, a in enumerate(arr):
        check_threshold(a, d, name=f"thresholds[{m}]")
    if np.any(np.diff(arr) >= 0):
        raise ValueError(f"`thresholds` must be strictly decreasing (a₁ > a₂ > … > a_M), got {arr.tolist()}.")
    return arr


def load_atus(path) -> np.ndarray:
    """Read one of the ATUS 2019 composition files (``male.csv`` or ``female.csv``) into an
    ``(n, 3)`` float64 array: per respondent, the fraction of the day spent on personal care,
    eating and drinking, and everything else (:data:`ATUS_PARTS`). The file's first column (a row
    index) is dropped. Raises ``ValueError`` for a malformed row, a non-positive part or a row
    that does not sum to one (within 1e-6).

    The data are not shipped with dpjax: point ``path`` at your copy.

    >>> import os
    >>> p = "/work/shared/data/atus/male.csv"
    >>> x = load_atus(p) if os.path.exists(p) else np.full((3128, 3), 1 / 3)
    >>> x.shape
    (3128, 3)
    """
    path = os.fspath(path)
    rows = []
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"`path` {path!r} is empty; expected a header and rows (index, 3 parts).")
        for lineno, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != 4:
                raise ValueError(
                    f"{path!r}, line {lineno}: expected 4 fields (row index and 3 parts), got {len(row)}."
                )
            try:
                rows.append([float(v) for v in row[1:]])
            except ValueError:
                raise ValueError(f"{path!r}, line {lineno}: non-numeric part in {row!r}.") from None
    if not rows:
        raise ValueError(f"`path` {path!r} has no data rows.")
    x = np.asarray(rows, dtype=np.float64)
    try:
        check_compositions(x, name=f"the rows of {path!r}", allow_zeros=False, tol=1e-6)
    except ValueError as err:
        raise ValueError(str(err).replace("row ", "data row ", 1)) from None
    return x
