"""The MCSE z-test of an engine's draws against an exact expectation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..diagnostics import mcse

__all__ = ["ZTest", "mcse_z_test"]


@dataclass(frozen=True)
class ZTest:
    """The verdict of :func:`mcse_z_test`; its truth value is ``passed``, so ``assert mcse_z_test(...)``
    fails with the numbers in the message.

    Attributes:
        z: ``(mean − exact) / mcse``.
        ess: the multi-chain effective sample size.
        mcse: the Monte Carlo standard error of ``mean``.
        mean: the mean of the draws.
        exact: the exact value tested.
        z_max: the threshold on ``|z|``.
        min_ess: the least ESS at which the MCSE is trusted.
    """

    z: float
    ess: float
    mcse: float
    mean: float
    exact: float
    z_max: float
    min_ess: float

    @property
    def passed(self) -> bool:
        """``|z| < z_max`` and ``ess >= min_ess`` (False for a NaN z)."""
        return bool(abs(self.z) < self.z_max and self.ess >= self.min_ess)

    def __bool__(self) -> bool:
        return self.passed


def mcse_z_test(draws: ArrayLike, exact: float, *, z_max: float = 4.0, min_ess: float = 100.0) -> ZTest:
    """The MCSE z-test of an engine's draws against an exact posterior expectation.

    Never raises on a failed test: it returns the verdict, a :class:`ZTest` whose truth value is
    ``passed`` (``|z| < z_max`` and ESS ≥ ``min_ess``), so a test writes
    ``assert mcse_z_test(draws, exact)``. With z_max = 4 a correct engine fails about once in
    16 000 runs; test E[θ²] too (``draws**2`` against the exact second moment) to check the spread.
    Below ``min_ess`` the MCSE itself is too uncertain to judge by.

    Args:
        draws: ``(chains, draws)`` draws of a scalar (e.g. ``mcmc.get_samples(group_by_chain=True)["p"]``;
            one chain: ``draws[None]``).
        exact: the exact expectation of that scalar.
        z_max: the threshold on ``|z|``.
        min_ess: the least multi-chain effective sample size accepted.

    Returns:
        The :class:`ZTest` (z, ess, mcse, mean, …, ``passed``).

    Example:
        >>> import numpy as np
        >>> from dpjax.testing import mcse_z_test
        >>> draws = np.random.default_rng(0).normal(size=(4, 1000))
        >>> bool(mcse_z_test(draws, 0.0)), bool(mcse_z_test(draws, 0.2))
        (True, False)
    """
    with np.errstate(divide="ignore", invalid="ignore"):  # NaN or frozen draws: a NaN ESS and z fail
        error, ess = mcse(draws)
        mean = float(np.mean(np.asarray(draws, float)))
        z = np.float64(mean - float(exact)) / np.float64(error)
    return ZTest(float(z), ess, error, mean, float(exact), float(z_max), float(min_ess))
