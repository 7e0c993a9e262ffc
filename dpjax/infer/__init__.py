"""Inference engines for privatized data."""

from .abc import (
    ABCResult,
    ABCSampler,
    ABCState,
    ISResult,
    SlowABCWarning,
    abc_importance,
    exact_abc,
    exact_abc_sampler,
)
from .birth_death import BirthDeathResult, birth_death
from .chains import InvalidChainWarning, SlowMixingWarning
from .data_augmentation import DAInfo, DAState, DataAugmentationKernel, RoundOffWarning, StickyRecordsWarning
from .em_core import MCEMSampler, MCEMState, mcem_sampler
from .monte_carlo_em import ConvergenceWarning, MCEMResult, is_mcem, mcem
from .noncentred import register_noise_representation
from .pseudo_marginal import PMState, PseudoMarginalABC, PseudoMarginalWarning
from .record_sweep import SlowBackendWarning, SweepResult, accept_records, record_sweep
from .release_checks import ReleaseRangeWarning
from .replicates import run_chain
from .reversible_jump import CapacityWarning, ReversibleJumpKernel, RidgeSurrogate
from .soma import SomaResult, place_records, soma_sweep
from .stochastic_em import StochasticEMResult, m_step_update, stochastic_em
from .superchains import superchain_init

__all__ = [
    "ABCResult",
    "BirthDeathResult",
    "CapacityWarning",
    "ReversibleJumpKernel",
    "RidgeSurrogate",
    "birth_death",
    "ConvergenceWarning",
    "DAInfo",
    "DAState",
    "DataAugmentationKernel",
    "ISResult",
    "InvalidChainWarning",
    "MCEMResult",
    "PMState",
    "PseudoMarginalABC",
    "PseudoMarginalWarning",
    "ReleaseRangeWarning",
    "RoundOffWarning",
    "SlowABCWarning",
    "SlowBackendWarning",
    "SlowMixingWarning",
    "StickyRecordsWarning",
    "SweepResult",
    "abc_importance",
    "accept_records",
    "exact_abc",
    "exact_abc_sampler",
    "ABCSampler",
    "ABCState",
    "is_mcem",
    "mcem",
    "mcem_sampler",
    "MCEMSampler",
    "MCEMState",
    "record_sweep",
    "soma_sweep",
    "SomaResult",
    "StochasticEMResult",
    "m_step_update",
    "stochastic_em",
    "superchain_init",
    "place_records",
    "register_noise_representation",
    "run_chain",
]
