"""Exact answers to check an inference engine against, and the MCSE z-test that compares them.

An engine's draws of θ given a release are right when their mean agrees with the exact posterior
mean E[θ | s] within Monte Carlo error. The oracles here compute E[θᵏ | s] without sampling, for
the small models on which every dpjax engine is tested:

* **Enumeration over the confidential statistic** T = Σᵢ t(xᵢ): ``p(T | s) ∝ p(T) ∏ⱼ ηⱼ(sⱼ | T)``
  (:func:`statistic_posterior`), and ``E[θᵏ | s] = Σ_T p(T | s) E[θᵏ | T]`` where θ | T is
  conjugate: Beta–Bernoulli counts (:func:`beta_bernoulli_count_moments`, with a known or an
  unknown number of records, :func:`beta_bernoulli_unknown_n`) and Gamma–Poisson sums
  (:func:`gamma_poisson_sum_moments`).
* **Quadrature** over a continuous T: Normal records with a noisy sum
  (:func:`normal_sum_moments`; the closed form :func:`normal_sum_gaussian_posterior` for Gaussian noise).
* **Enumeration over the records** of any small model with discrete records and a grid (or the
  support) of a scalar θ: :func:`release_log_likelihood` gives ``log p(s | θ)`` with the records
  summed out; add the log prior and take moments with :func:`grid_moments`.

**Simulation-based calibration** where no exact answer exists: :func:`sbc` runs an engine on releases
simulated from the prior predictive, as one vmapped study, and tests the ranks of the true θ among its
draws for uniformity (:func:`rank_ecdf_test`). For estimators with standard errors (MCEM),
:func:`wald_coverage` checks the coverage of their Wald intervals on releases simulated at a fixed θ.

The z-test: :func:`mcse_z_test` (``z = (mean − exact) / MCSE``, MCSE from NumPyro's multi-chain
effective sample size); :func:`mcse` and :func:`mcse_z` are those of :mod:`dpjax.diagnostics`.

The mechanisms' log densities are evaluated by JAX in its default float width (float32 unless
``JAX_ENABLE_X64``); the sums and quadratures are in float64.
"""

from ..diagnostics import mcse, mcse_z
from .coverage import CoverageResult, coverage_test, wald_coverage
from .enumeration import (
    beta_bernoulli_count_moments,
    beta_bernoulli_unknown_n,
    gamma_poisson_sum_moments,
    release_log_likelihood,
    statistic_posterior,
)
from .quadrature import grid_moments, grid_posterior, normal_sum_gaussian_posterior, normal_sum_moments
from .sbc import ECDFTest, SBCResult, rank_ecdf_test, sbc
from .ztest import ZTest, mcse_z_test

__all__ = [
    "CoverageResult",
    "coverage_test",
    "wald_coverage",
    "ECDFTest",
    "SBCResult",
    "rank_ecdf_test",
    "sbc",
    "ZTest",
    "beta_bernoulli_count_moments",
    "beta_bernoulli_unknown_n",
    "gamma_poisson_sum_moments",
    "grid_moments",
    "grid_posterior",
    "mcse",
    "mcse_z",
    "mcse_z_test",
    "normal_sum_gaussian_posterior",
    "normal_sum_moments",
    "release_log_likelihood",
    "statistic_posterior",
]
