"""Monte Carlo error diagnostics used to judge samplers against exact answers."""

from __future__ import annotations

import numpy as np
from numpyro.diagnostics import effective_sample_size

__all__ = ["mcse_z"]


def mcse_z(draws, exact: float) -> tuple[float, float]:
    """z-score of the Monte Carlo mean of ``draws`` against an exact expectation.

    ``z = (mean - exact) / MCSE`` with ``MCSE = sd / sqrt(ESS)`` and the multi-chain ESS of
    NumPyro (draws shaped ``(chains, samples)``). Returns ``(z, ess)``; ``|z| < 4`` passes.

    >>> import numpy as np
    >>> z, ess = mcse_z(np.random.default_rng(0).normal(size=(4, 1000)), 0.0)
    >>> abs(z) < 4
    True
    """
    draws = np.asarray(draws, dtype=float)
    if draws.ndim != 2 or draws.shape[1] < 4:
        raise ValueError(f"`draws` must have shape (chains, samples), got {draws.shape}.")
    ess = float(effective_sample_size(draws))
    mcse = draws.std() / np.sqrt(ess)
    return float((draws.mean() - exact) / mcse), ess
