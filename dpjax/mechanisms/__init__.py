"""Release mechanisms as NumPyro distributions over the release given the confidential statistic.

Curator side: ``DiscreteLaplaceMechanism`` and ``DiscreteGaussianMechanism`` publish exactly with
``mech.release(None, T)`` (integer arithmetic and a CSPRNG, :mod:`dpjax.mechanisms.exact`); the
floating-point mechanisms' ``release`` and all the distributions' ``sample`` only simulate.
"""

from .base import Guarantee, Mechanism, integer
from .gaussian import (
    DiscreteGaussian,
    DiscreteGaussianMechanism,
    GaussianMechanism,
    analytic_gaussian_sigma,
)
from .laplace import DiscreteLaplace, DiscreteLaplaceMechanism, LaplaceMechanism
from .opendp import from_opendp
from .preprocessing import clamp, normalize
from .randomized_response import RandomizedResponseMechanism

__all__ = [
    "DiscreteGaussian",
    "DiscreteGaussianMechanism",
    "DiscreteLaplace",
    "DiscreteLaplaceMechanism",
    "GaussianMechanism",
    "Guarantee",
    "LaplaceMechanism",
    "Mechanism",
    "RandomizedResponseMechanism",
    "analytic_gaussian_sigma",
    "clamp",
    "from_opendp",
    "integer",
    "normalize",
]
