"""Monte Carlo error diagnostics: MCSE z-tests that judge samplers against exact answers, and nested R̂
for many short chains."""

from __future__ import annotations

import numpy as np
from numpyro.diagnostics import effective_sample_size

__all__ = ["mcse", "mcse_z", "nested_rhat"]


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


def nested_rhat(draws, num_superchains: int) -> np.ndarray:
    """Nested R̂ (Margossian, Hoffman, Sountsov, Riou-Durand, Vehtari & Gelman 2024) of many short chains.

    ``draws`` is shaped ``(chains, samples, *shape)`` (``mcmc.get_samples(group_by_chain=True)[site]``)
    with the chains in ``num_superchains`` equal groups, superchain after superchain (chains
    ``k·M … k·M + M − 1`` form superchain k), the chains of a superchain started at one point
    (:func:`dpjax.infer.superchain_init`). Returns an array of ``shape``: √(1 + B/W), B the variance of the
    superchains' means, W the mean over superchains of the variance of their chains' means plus their
    chains' mean within-chain variance (0 for one draw per chain), as the ``posterior`` R package computes
    it. It tends to 1 as the chains forget their starts; the paper judges it against 1 + δ with δ small
    (0.01 for a strict check, as for R̂).

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> mixed = rng.normal(size=(64, 10))
    >>> bool(nested_rhat(mixed, num_superchains=8) < 1.01)
    True
    >>> stuck = mixed + np.repeat(rng.normal(size=8), 8)[:, None]  # each superchain where it began
    >>> bool(nested_rhat(stuck, num_superchains=8) > 1.1)
    True
    """
    draws = np.asarray(draws, dtype=float)
    if draws.ndim < 2:
        raise ValueError(f"`draws` must have shape (chains, samples, ...), got {draws.shape}.")
    chains, samples = draws.shape[:2]
    whole = isinstance(num_superchains, int | np.integer) and not isinstance(num_superchains, bool)
    if not whole or num_superchains < 2 or chains % num_superchains:
        raise ValueError(
            f"`num_superchains` must be an int >= 2 dividing the {chains} chains, got {num_superchains!r}."
        )
    per = draws.reshape(num_superchains, chains // num_superchains, samples, *draws.shape[2:])
    chain_means = per.mean(2)
    within = per.var(2, ddof=1).mean(1) if samples > 1 else 0.0
    between_chains = chain_means.var(1, ddof=1) if per.shape[1] > 1 else 0.0
    between_superchains = chain_means.mean(1).var(0, ddof=1)
    return np.sqrt(1 + between_superchains / np.mean(within + between_chains, axis=0))
