"""Argument validators, one per concept, shared by every module: each returns the clean value or
raises a ``ValueError`` that names the argument and what was expected (before any tracing)."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["positive_int"]


def positive_int(value, name: str, *, minimum: int = 1) -> int:
    """``value`` as a Python int ≥ ``minimum`` (counts and sizes: they fix array shapes or loop lengths,
    so they are static). A whole float (``1e6``) is accepted; booleans, fractions, NaN/inf and strings
    are not.

    >>> positive_int(1e3, "num_samples")
    1000
    >>> positive_int(0, "num_chains")
    Traceback (most recent call last):
    ...
    ValueError: `num_chains` must be a positive integer, got 0.
    """
    whole = isinstance(value, numbers.Integral) or (
        isinstance(value, float | np.floating) and np.isfinite(value) and float(value).is_integer()
    )
    if isinstance(value, bool | np.bool_) or not whole or int(value) < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer ≥ {minimum}"
        raise ValueError(f"`{name}` must be {what}, got {value!r}.")
    return int(value)
