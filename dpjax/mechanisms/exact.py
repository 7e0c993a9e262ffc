"""Exact samplers for the integer mechanisms, in integer arithmetic on the host.

These are the constructions of Canonne, Kamath & Steinke (2020), "The discrete Gaussian for
differential privacy", Section 5: every random choice is a uniform integer from ``rng.randrange``
and every probability is a ratio of integers, so the output law is *exactly* the discrete Laplace
or discrete Gaussian pmf (unbounded support, no floating-point rounding). ``rng`` is any object
with a ``randrange`` method: ``secrets.SystemRandom()`` for a real publication, or a seeded
``random.Random`` for a reproducible simulation.

>>> import random
>>> from fractions import Fraction
>>> rng = random.Random(0)
>>> draws = [discrete_laplace(Fraction(1, 2), rng) for _ in range(5)]
>>> all(isinstance(d, int) for d in draws)
True
>>> discrete_gaussian(Fraction(9, 4), random.Random(1)) in range(-100, 101)
True
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np

__all__ = [
    "add_integers",
    "bernoulli",
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_laplace",
    "integer_array",
]

_INT64 = np.iinfo(np.int64)


def _ratio(x, name: str) -> tuple[int, int]:
    """``(numerator, denominator)`` of a non-negative rational given as int, Fraction or float."""
    q = Fraction(x)
    if q < 0:
        raise ValueError(f"`{name}` must be non-negative, got {x!r}.")
    return q.numerator, q.denominator


def bernoulli(p, rng) -> int:
    """One draw of Bernoulli(p) for a rational ``p`` in [0, 1]: ``1`` with probability exactly p.

    >>> import random
    >>> bernoulli(Fraction(1, 3), random.Random(0)) in (0, 1)
    True
    """
    n, d = _ratio(p, "p")
    if n > d:
        raise ValueError(f"`p` must be in [0, 1], got {p!r}.")
    return int(rng.randrange(d) < n)


def _bernoulli_exp_le1(n: int, d: int, rng) -> int:
    """Bernoulli(exp(-n/d)) for 0 ≤ n ≤ d: count K while Bernoulli(γ/K) succeeds; K odd ⇒ 1."""
    k = 1
    while rng.randrange(d * k) < n:
        k += 1
    return k & 1


def _bernoulli_exp(n: int, d: int, rng) -> int:
    """Bernoulli(exp(-n/d)) for n, d ≥ 0 integers (Algorithm 1 with the γ > 1 split)."""
    whole, n = divmod(n, d)
    for _ in range(whole):  # exp(-γ) = exp(-1)^⌊γ⌋ · exp(-(γ - ⌊γ⌋)); stops at the first failure
        if not _bernoulli_exp_le1(1, 1, rng):
            return 0
    return _bernoulli_exp_le1(n, d, rng)


def bernoulli_exp(gamma, rng) -> int:
    """One draw of Bernoulli(exp(-γ)) for a rational ``γ ≥ 0`` (CKS 2020, Algorithm 1).

    >>> import random
    >>> rng = random.Random(0)
    >>> freq = sum(bernoulli_exp(Fraction(5, 2), rng) for _ in range(20000)) / 20000
    >>> abs(freq - math.exp(-2.5)) < 0.01
    True
    """
    return _bernoulli_exp(*_ratio(gamma, "gamma"), rng)


def _discrete_laplace_attempt(t: int, s: int, rng) -> int | None:
    """One round of CKS 2020, Algorithm 2 for scale ``t/s``: a draw, or ``None`` (rejected)."""
    u = rng.randrange(t)
    if not _bernoulli_exp(u, t, rng):
        return None
    v = 0
    while _bernoulli_exp_le1(1, 1, rng):
        v += 1
    y = (u + t * v) // s  # u + t·v is geometric: P(x) ∝ exp(-x / t)
    negative = rng.randrange(2)
    if negative and not y:
        return None
    return -y if negative else y


def _discrete_laplace(t: int, s: int, rng) -> int:
    """Discrete Laplace with scale ``t/s``: P(k) ∝ exp(-|k| s / t) (CKS 2020, Algorithm 2)."""
    while (y := _discrete_laplace_attempt(t, s, rng)) is None:
        pass
    return y


def discrete_laplace(scale, rng) -> int:
    """One draw from the discrete Laplace law ``P(k) = tanh(1/(2 scale)) exp(-|k| / scale)``,
    ``k ∈ ℤ``, for a rational ``scale > 0`` (CKS 2020, Algorithm 2).

    >>> import random
    >>> isinstance(discrete_laplace(Fraction(10), random.Random(0)), int)
    True
    """
    t, s = _ratio(scale, "scale")
    if t == 0:
        raise ValueError(f"`scale` must be positive, got {scale!r}.")
    return _discrete_laplace(t, s, rng)


def discrete_gaussian(sigma2, rng) -> int:
    """One draw from the discrete Gaussian ``P(k) ∝ exp(-k² / (2σ²))``, ``k ∈ ℤ``, for a rational
    variance parameter ``σ² > 0`` (CKS 2020, Algorithm 3: rejection from a discrete Laplace).

    >>> import random
    >>> isinstance(discrete_gaussian(Fraction(1, 4), random.Random(0)), int)
    True
    """
    a, b = _ratio(sigma2, "sigma2")  # σ² = a / b
    if a == 0:
        raise ValueError(f"`sigma2` must be positive, got {sigma2!r}.")
    t = math.isqrt(a // b) + 1  # ⌊σ⌋ + 1
    while (y := _discrete_gaussian_attempt(a, b, t, rng)) is None:
        pass
    return y


def _discrete_gaussian_attempt(a: int, b: int, t: int, rng) -> int | None:
    """One round of CKS 2020, Algorithm 3 for σ² = a/b and t = ⌊σ⌋ + 1: a draw, or ``None``."""
    y = _discrete_laplace(t, 1, rng)
    # accept with exp(-(|y| - σ²/t)² / (2σ²)) = exp(-(|y| b t - a)² / (2 a b t²))
    return y if _bernoulli_exp((abs(y) * b * t - a) ** 2, 2 * a * b * t * t, rng) else None


def _as_int(x, name: str) -> int:
    """One exact Python int from an integral number; ``ValueError`` otherwise."""
    if isinstance(x, numbers.Integral):
        return int(x)
    if isinstance(x, numbers.Real) and math.isfinite(x) and x == math.floor(x):
        return int(x)
    raise ValueError(f"`{name}` must be integer-valued (finite integers); an entry is not.")


def integer_array(value, name: str = "statistic") -> np.ndarray:
    """``value`` as an exact integer array: ``int64``, or ``object`` ints beyond the int64 range.

    Accepts Python ints of any size, integer arrays, and float arrays whose entries are exact
    integers; a non-integer, NaN or infinite entry raises ``ValueError`` naming ``name``.

    >>> integer_array([3, 4.0]).tolist(), integer_array(2**70).dtype
    ([3, 4], dtype('O'))
    """
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError, OverflowError) as err:
        raise ValueError(f"`{name}` must be an array of integers, got a {type(value).__name__}.") from err
    kind = arr.dtype.kind
    if kind in "biu":
        if kind != "u" or arr.size == 0 or arr.max() <= _INT64.max:
            return arr.astype(np.int64)
    elif kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"`{name}` must be finite; it has NaN or inf entries.")
        if not np.all(arr == np.floor(arr)):
            raise ValueError(
                f"`{name}` must be integer-valued for an integer mechanism; it has non-integer entries. "
                "Round or cast it yourself if that is intended (the release does not round silently)."
            )
        if np.all(np.abs(arr) < 2.0**63):
            return arr.astype(np.int64)
    elif kind != "O":
        raise ValueError(f"`{name}` must be an array of integers, got dtype {arr.dtype}.")
    ints = [_as_int(x, name) for x in arr.ravel().tolist()]
    return _pack(ints, arr.shape)


def _pack(ints: list[int], shape) -> np.ndarray:
    dtype = np.int64 if all(_INT64.min <= v <= _INT64.max for v in ints) else object
    out = np.empty(len(ints), dtype=dtype)
    out[:] = ints
    return out.reshape(shape)


def add_integers(values: np.ndarray, noise: list[int]) -> np.ndarray:
    """``values + noise`` exactly (Python-int arithmetic), as ``int64`` or ``object`` ints.

    >>> add_integers(np.array([2**62, 1]), [2**62, -1])
    array([9223372036854775808, 0], dtype=object)
    """
    return _pack([t + z for t, z in zip(values.ravel().tolist(), noise)], values.shape)
