"""The seeds' models, ready to use with dpjax engines."""

from .dirichlet import dirichlet_mean_log, dirichlet_prior_p1
from .lalonde import LALONDE_MECHANISM, lalonde_summaries, nsw_summaries
from .loglinear import naive_bayes, naive_bayes_counts, naive_bayes_sensitivity, naive_bayes_update
from .normal import clamped_normal, naive_normal
from .poisson import poisson_count
from .regression import (
    clamped_regression,
    regression_sensitivity,
    regression_statistic,
    regression_update,
)
from .unknown_n_regression import (
    SEED_UNKNOWN_N_TRUTH,
    unknown_n_regression,
    unknown_n_regression_m_step,
    unknown_n_regression_ridge_surrogate,
    unknown_n_regression_sensitivity,
    unknown_n_regression_statistic,
    unknown_n_regression_update,
)

__all__ = [
    "LALONDE_MECHANISM",
    "SEED_UNKNOWN_N_TRUTH",
    "clamped_normal",
    "clamped_regression",
    "dirichlet_mean_log",
    "dirichlet_prior_p1",
    "lalonde_summaries",
    "naive_bayes",
    "naive_bayes_counts",
    "naive_bayes_sensitivity",
    "naive_bayes_update",
    "naive_normal",
    "nsw_summaries",
    "poisson_count",
    "regression_sensitivity",
    "regression_statistic",
    "regression_update",
    "unknown_n_regression",
    "unknown_n_regression_m_step",
    "unknown_n_regression_ridge_surrogate",
    "unknown_n_regression_sensitivity",
    "unknown_n_regression_statistic",
    "unknown_n_regression_update",
]
