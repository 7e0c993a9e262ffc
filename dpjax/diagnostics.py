"""Monte Carlo error diagnostics used to judge samplers against exact answers."""

from __future__ import annotations

import numpy as np
from numpyro.diagnostics import effective_sample_size

__all__ = ["mcse", "mcse_z"]


def mcse(draws) -> tuple[float, float]:
    """Monte Carlo standard error of the mean of ``draws`` (shaped ``(chains, samples)``) and the
    multi-chain effective sample size: ``(sd / sqrt(ESS), ESS)``."""
    draws = np.asarray(draws, dtype=float)
    if draws.ndim != 2 or draws.shape[1] < 4:
        raise ValueError(f"`draws` must have shape (chains, samples), got {draws.shape}.")
    ess = float(effective_sample_size(draws))
    return float(draws.std() / np.sqrt(ess)), ess


def mcse_z(draws, exact: float) -> tuple[float, float]:
    """z-score of the Monte Carlo mean of ``draws`` against an exact expectation.

    ``z = (mean - exact) / MCSE`` with ``MCSE = sd / sqrt(ESS)`` and the multi-chain ESS of
    NumPyro (draws shaped ``(chains, samples)``). Returns ``(z, ess)``; ``|z| < 4`` passes.

    >>> import numpy as np
    >>> z, ess = mcse_z(np.random.default_rng(0).normal(size=(4, 1000)), 0.0)
    >>> abs(z) < 4
    True
    """
    error, ess = mcse(draws)
    return float((np.mean(draws) - exact) / error), ess
