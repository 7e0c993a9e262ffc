"""Inference engines for privatized data."""

from .data_augmentation import DAState, DataAugmentationKernel
from .record_sweep import SweepResult, accept_records, record_sweep

__all__ = ["DAState", "DataAugmentationKernel", "SweepResult", "accept_records", "record_sweep"]
