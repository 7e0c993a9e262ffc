"""Bayesian-nonparametric synthetic data (Lazzarini): Pitman–Yor predictive release, its
instance-level privacy accounting, inference from the released data, the histogram baselines
and utility metrics."""

from .baselines import BaselineRelease, dirichlet_multinomial, perturbed_histogram, smoothed_histogram
from .inference import (
    discovery_probability,
    empirical_bayes_theta,
    log_eppf,
    log_factorial_coefficients,
    new_values_law,
    posterior_predictive,
)
from .pitman_yor import (
    Partition,
    SyntheticRelease,
    UrnDraw,
    check_pitman_yor,
    log_predictive_density,
    partition,
    predictive_release,
    predictive_urn,
    sample_pitman_yor,
)
from .privacy import (
    DeltaEstimate,
    admissible_theta,
    delta_tilde,
    density_ratios,
    max_release_size,
    negative_sigma_epsilon,
)
from .utility import kde_l2, summary, wasserstein1

__all__ = [
    "BaselineRelease",
    "DeltaEstimate",
    "Partition",
    "SyntheticRelease",
    "UrnDraw",
    "admissible_theta",
    "check_pitman_yor",
    "delta_tilde",
    "density_ratios",
    "dirichlet_multinomial",
    "discovery_probability",
    "empirical_bayes_theta",
    "kde_l2",
    "log_eppf",
    "log_factorial_coefficients",
    "log_predictive_density",
    "max_release_size",
    "negative_sigma_epsilon",
    "new_values_law",
    "partition",
    "perturbed_histogram",
    "posterior_predictive",
    "predictive_release",
    "predictive_urn",
    "sample_pitman_yor",
    "smoothed_histogram",
    "summary",
    "wasserstein1",
]
