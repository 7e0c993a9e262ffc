"""dpjax: exact inference from differentially private releases, as a NumPyro extension."""

from . import compositional, infer, mechanisms, models, studies, synthetic, testing
from .mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    RandomizedResponseMechanism,
    clamp,
    normalize,
)
from .primitives import privatized, records_plate

__version__ = "0.1.0"

__all__ = [
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "Mechanism",
    "RandomizedResponseMechanism",
    "clamp",
    "compositional",
    "infer",
    "mechanisms",
    "models",
    "studies",
    "synthetic",
    "testing",
    "normalize",
    "privatized",
    "records_plate",
]
