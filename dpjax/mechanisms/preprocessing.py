"""Curator-side preprocessing that bounds sensitivity: clamping and normalising to [-1, 1]
(Definition 5.1 of the data-augmentation seed)."""

import jax.numpy as jnp

__all__ = ["clamp", "normalize"]


def clamp(x, lower, upper):
    """Entrywise ``min(max(x, lower), upper)``.

    >>> float(clamp(12.0, -10.0, 10.0))
    10.0
    """
    return jnp.clip(x, lower, upper)


def normalize(x, lower, upper):
    """Clamp to ``[lower, upper]`` then map linearly onto ``[-1, 1]``:
    ``2 (clamp(x) - lower) / (upper - lower) - 1``.

    >>> float(normalize(0.0, -10.0, 10.0)), float(normalize(-50.0, -10.0, 10.0))
    (0.0, -1.0)
    """
    return 2.0 * (clamp(x, lower, upper) - lower) / (upper - lower) - 1.0
