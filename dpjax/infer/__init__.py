"""Inference engines for privatized data."""

from .abc import ABCResult, ISResult, SlowABCWarning, abc_importance, exact_abc
from .data_augmentation import DAState, DataAugmentationKernel
from .mcem import ConvergenceWarning, MCEMResult, is_mcem
from .noncentred import register_noise_representation
from .pseudo_marginal import PMState, PseudoMarginalABC, PseudoMarginalWarning
from .record_sweep import SweepResult, accept_records, record_sweep
from .replicates import run_chain

__all__ = [
    "ABCResult",
    "ConvergenceWarning",
    "DAState",
    "DataAugmentationKernel",
    "ISResult",
    "MCEMResult",
    "PMState",
    "PseudoMarginalABC",
    "PseudoMarginalWarning",
    "SlowABCWarning",
    "SweepResult",
    "abc_importance",
    "accept_records",
    "exact_abc",
    "is_mcem",
    "record_sweep",
    "register_noise_representation",
    "run_chain",
]
