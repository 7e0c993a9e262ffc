"""Dirichlet methods for compositional data under differential privacy (Guo, Barrientos & Peña).

Curator side (:mod:`.release`): the censored statistic S₀(D, a), its sensitivity, the threshold score and
Algorithm 1 (DPss). Frequentist side: the Dirichlet MLE from a mean-log statistic (:mod:`.mle`) and the
DP parametric bootstrap, Algorithm 2 (DPBoots, :mod:`.dpboots`). The censoring diagnostics of §3.1.1 and
the censored statistic's mean and covariance are in :mod:`.diagnostics`; :func:`load_atus` reads the
ATUS time-use compositions. Bayesian side (:mod:`.bayes`): DPMCMC, DPreMCMC, DPABC (with dpjax's exact
ABC beside it), DPapprox and the priors p1–p5.
"""

from .bayes import (
    DirichletPriors,
    GammaMarginal,
    ReplicatesDriftWarning,
    ToleranceABCResult,
    dirichlet_replicates,
    dp_abc,
    dp_abc_exact,
    dp_approx,
    dp_approx_model,
    dp_mcmc,
    dp_remcmc,
    elicit_priors,
    fit_gamma,
    gamma_copula_prior,
    gamma_icdf,
    laplace_scale,
    prior_p5,
    record_acceptance_bound,
)
from .data import ATUS_PARTS, load_atus
from .diagnostics import CensoringDiagnostics, censored_moments, censoring_diagnostics, plot_censoring
from .dpboots import DPBootsResult, TruncatedDraw, dpboots, truncated_laplace_statistic
from .mle import DirichletMLE, dirichlet_fisher_information, dirichlet_mle, inv_digamma
from .release import (
    SCORE_SENSITIVITY,
    DPssRelease,
    censored_mean_log,
    dpss,
    geometric_quantile,
    in_range,
    mean_log,
    release_score,
    score,
    select_threshold,
    sensitivity,
)

__all__ = [
    "ATUS_PARTS",
    "DirichletPriors",
    "GammaMarginal",
    "ReplicatesDriftWarning",
    "ToleranceABCResult",
    "dirichlet_replicates",
    "dp_abc",
    "dp_abc_exact",
    "dp_approx",
    "dp_approx_model",
    "dp_mcmc",
    "dp_remcmc",
    "elicit_priors",
    "fit_gamma",
    "gamma_copula_prior",
    "gamma_icdf",
    "laplace_scale",
    "prior_p5",
    "record_acceptance_bound",
    "CensoringDiagnostics",
    "DPBootsResult",
    "DPssRelease",
    "DirichletMLE",
    "SCORE_SENSITIVITY",
    "TruncatedDraw",
    "censored_mean_log",
    "censored_moments",
    "censoring_diagnostics",
    "dirichlet_fisher_information",
    "dirichlet_mle",
    "dpboots",
    "dpss",
    "geometric_quantile",
    "in_range",
    "inv_digamma",
    "load_atus",
    "mean_log",
    "plot_censoring",
    "release_score",
    "score",
    "select_threshold",
    "sensitivity",
    "truncated_laplace_statistic",
]
