"""Inference engines for privatized data."""

from .abc import ABCResult, ISResult, abc_importance, exact_abc
from .data_augmentation import DAState, DataAugmentationKernel
from .mcem import MCEMResult, is_mcem
from .pseudo_marginal import PMState, PseudoMarginalABC
from .record_sweep import SweepResult, accept_records, record_sweep
from .replicates import run_chain

__all__ = [
    "ABCResult",
    "DAState",
    "DataAugmentationKernel",
    "ISResult",
    "MCEMResult",
    "PMState",
    "PseudoMarginalABC",
    "SweepResult",
    "abc_importance",
    "accept_records",
    "exact_abc",
    "is_mcem",
    "record_sweep",
    "run_chain",
]
