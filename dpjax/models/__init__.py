"""The seeds' models, ready to use with dpjax engines."""

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

__all__ = [
    "LALONDE_MECHANISM",
    "clamped_normal",
    "clamped_regression",
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
]
