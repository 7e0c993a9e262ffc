"""Gong §5.2 / Appendix F: 1978 earnings (in $1k) of the NSW job-training trial, treated vs control.

yᵢ | zᵢ ~ N(τ zᵢ + μ, σ_t² zᵢ + σ_c² (1 − zᵢ)); the curator releases the group means and sample
variances s = (ȳ_t, ȳ_c, s_t², s_c²) with Laplace noise. Earnings are clamped to [0, 100] and each
group has over 100 people, so the means have sensitivity 1 and the variances 100; budgets ε = 1/3
per mean and 100/6 per variance give Laplace scales (3, 3, 6, 6). s is sufficient, and by the
independence of the normal sample mean and variance the model draws s directly (Appendix F).
"""

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ..mechanisms import LaplaceMechanism
from ..primitives import privatized

__all__ = ["LALONDE_MECHANISM", "lalonde_summaries", "nsw_summaries"]

SUMMARIES = ("ybar_t", "ybar_c", "s2_t", "s2_c")
LALONDE_MECHANISM = LaplaceMechanism(
    sensitivity=jnp.array([1.0, 1.0, 100.0, 100.0]), scale=jnp.array([3.0, 3.0, 6.0, 6.0])
)


def nsw_summaries():
    """``(s, n_t, n_c)`` of the NSW experimental sample (``causaldata``'s ``nsw_mixtape``, 185
    treated and 260 control): s = (ȳ_t, ȳ_c, s_t², s_c²) of 1978 earnings in $1k."""
    try:
        from causaldata import nsw_mixtape
    except ImportError as err:  # optional: only the Lalonde example needs it
        raise ImportError("The Lalonde example needs `pip install causaldata`.") from err
    d = nsw_mixtape.load_pandas().data
    groups = [d.loc[d.treat == z, "re78"].to_numpy(np.float64) / 1000 for z in (1, 0)]
    s = [g.mean() for g in groups] + [g.var(ddof=1) for g in groups]
    return np.asarray(s), len(groups[0]), len(groups[1])


def lalonde_summaries(release=None, *, n_t=185, n_c=260, mechanism=LALONDE_MECHANISM):
    """Priors as in the seed's Appendix F: τ ~ N(0, 5), μ ~ N(4, 5), σ_t, σ_c ~ Gamma(2, rate 0.2)
    (N(m, s) with standard deviation s, as in Stan). Sites ``tau, mu, sigma_t, sigma_c``, the
    summaries ``ybar_t, ybar_c, s2_t, s2_c`` (a records plate of size 1) and the release ``s_dp``.

    For the confidential or the naive fit, condition the summaries on s (or on s_dp) and run NUTS:
    with T observed, the privatized site is constant in θ.

    >>> import jax, dpjax
    >>> from numpyro.infer import Predictive
    >>> sim = Predictive(dpjax.models.lalonde_summaries, num_samples=3)(jax.random.key(0))
    >>> sim["s_dp"].shape
    (3, 4)
    """
    tau = numpyro.sample("tau", dist.Normal(0.0, 5.0))
    mu = numpyro.sample("mu", dist.Normal(4.0, 5.0))
    sigma_t = numpyro.sample("sigma_t", dist.Gamma(2.0, 0.2))
    sigma_c = numpyro.sample("sigma_c", dist.Gamma(2.0, 0.2))
    with numpyro.plate("summary", 1):
        stats = {
            "ybar_t": numpyro.sample("ybar_t", dist.Normal(mu + tau, sigma_t / np.sqrt(n_t))),
            "ybar_c": numpyro.sample("ybar_c", dist.Normal(mu, sigma_c / np.sqrt(n_c))),
            # s² ~ σ² χ²_{n-1} / (n-1) = Gamma((n-1)/2, rate (n-1)/(2σ²))
            "s2_t": numpyro.sample("s2_t", dist.Gamma((n_t - 1) / 2, (n_t - 1) / (2 * sigma_t**2))),
            "s2_c": numpyro.sample("s2_c", dist.Gamma((n_c - 1) / 2, (n_c - 1) / (2 * sigma_c**2))),
        }
    statistic = lambda r: jnp.stack([r[k] for k in SUMMARIES], axis=-1)
    privatized("s_dp", mechanism, statistic, stats, plate="summary", obs=release)
