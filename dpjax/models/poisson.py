"""A privatized Poisson count (Gong §5.1): θ ~ Gamma(α, β), s ~ Poisson(θ), release s + Laplace(1/ε)."""

import numpyro
import numpyro.distributions as dist

from ..mechanisms import LaplaceMechanism
from ..primitives import privatized

__all__ = ["poisson_count"]


def poisson_count(alpha, release=None, *, beta=1.0, epsilon=0.2):
    """One confidential count (a records plate of size 1) released by the ε-DP Laplace mechanism
    (sensitivity 1); sites ``theta``, ``s``, ``s_dp``. The seed uses ε = 0.2, s_dp = 37.4.

    >>> import jax, jax.numpy as jnp, dpjax
    >>> out = dpjax.infer.exact_abc(jax.random.key(0), dpjax.models.poisson_count, 25.0,
    ...                             jnp.array(37.4), num_samples=100)
    >>> out.samples["theta"].shape
    (100,)
    """
    theta = numpyro.sample("theta", dist.Gamma(alpha, beta))
    with numpyro.plate("count", 1):
        s = numpyro.sample("s", dist.Poisson(theta))
    mechanism = LaplaceMechanism(epsilon, 1.0)
    privatized("s_dp", mechanism, lambda r: r["s"], {"s": s}, plate="count", obs=release)
