"""Effects of censoring the sufficient statistic (seed §3.1.1, Figure 1): the expected fraction of
censored entries and the bias of S₀(D, a) under Dirichlet(α); and the mean and covariance of S₀(D, a)
(:func:`censored_moments`), the CLT law of the censored statistic.

Each part is marginally xⱼ ~ Beta(αⱼ, βⱼ), βⱼ = α₀ − αⱼ, so P(xⱼ < a) = I_a(αⱼ, βⱼ) (regularised
incomplete beta) and the bias of E[log max(xⱼ, a)] over E[log xⱼ] = ψ(αⱼ) − ψ(α₀) is
∫₀ᵃ (log a − log x) Beta(x | αⱼ, βⱼ) dx > 0. With t = (x/a)^αⱼ and t = e^{−v} that integral is
a^αⱼ / (αⱼ² B(αⱼ, βⱼ)) · ∫₀^∞ v e^{−v} (1 − a e^{−v/αⱼ})^{βⱼ−1} dv, a smooth bounded integrand
against the weight v e^{−v}: generalised Gauss–Laguerre quadrature computes it accurately.

The covariance needs two parts at once. Write log max(xⱼ, a) = log xⱼ + cⱼ, cⱼ = (log a − log xⱼ)₊.
Given x_k, y = xⱼ / (1 − x_k) ~ Beta(αⱼ, α₀ − αⱼ − α_k) independently of x_k (neutrality of the
Dirichlet), so E[log xⱼ · c_k] and E[cⱼ c_k] are integrals over x_k < a of functions of x_k alone
(the second through the same tail integral of y at a / (1 − x_k)): the same quadrature, nested.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jax.scipy.special import betainc, betaln, digamma, polygamma
from scipy.special import roots_genlaguerre

from ..mechanisms.base import concrete
from .data import check_threshold

__all__ = ["CensoringDiagnostics", "censored_moments", "censoring_diagnostics", "plot_censoring"]

_NODES, _WEIGHTS = roots_genlaguerre(48, 1.0)  # ∫₀^∞ v e^{−v} h(v) dv ≈ Σ wₖ h(vₖ)

#: The α of the seed's simulation study (§4.1) with d = 3, used by :func:`plot_censoring`.
DEFAULT_ALPHAS = ((0.5, 0.5, 0.5), (2.2, 3.3, 4.4), (2.0, 20.0, 2.0))


class CensoringDiagnostics(NamedTuple):
    """Per part j (last axis) and averaged over the d parts, for threshold(s) a (leading axes):

    * ``censored_prob``: P(xᵢⱼ < a) = I_a(αⱼ, βⱼ); ``censored_fraction``: its mean over j, the
      expected proportion of censored entries (Figure 1a).
    * ``bias``: E[log x̃ᵢⱼ] − E[log xᵢⱼ] ≥ 0; ``mean_bias``: its mean over j (Figure 1b).
    * ``expected_log``: E[log xᵢⱼ] = ψ(αⱼ) − ψ(α₀) (uncensored); ``expected_censored_log``: E[S₀(D, a)].
    """

    censored_prob: jnp.ndarray
    censored_fraction: jnp.ndarray
    bias: jnp.ndarray
    mean_bias: jnp.ndarray
    expected_log: jnp.ndarray
    expected_censored_log: jnp.ndarray


def _check_alpha(alpha):
    if not concrete(alpha):
        return jnp.asarray(alpha)
    arr = np.asarray(alpha, dtype=float)
    if arr.ndim != 1 or arr.size < 2 or not np.all(np.isfinite(arr)) or not np.all(arr > 0):
        raise ValueError(f"`alpha` must be a 1-d array of d ≥ 2 positive finite numbers, got {alpha!r}.")
    return jnp.asarray(arr, dtype=jnp.result_type(float))


def _tail(p, q, t, h):
    """∫₀ᵗ (log t − log x) h(log x) Beta(x | p, q) dx for t < 1, elementwise over the broadcast shape
    of p, q and t (the nodes on a new last axis, where ``h`` sees log x: x itself underflows)."""
    p, q, t = (jnp.asarray(v)[..., None] for v in (p, q, t))
    log_x = jnp.log(t) - jnp.asarray(_NODES, dtype=p.dtype) / p
    log_pre = p * jnp.log(t) - 2.0 * jnp.log(p) - betaln(p, q)
    terms = jnp.asarray(_WEIGHTS, p.dtype) * (-jnp.expm1(log_x)) ** (q - 1.0) * h(log_x)
    return jnp.exp(log_pre[..., 0]) * jnp.sum(terms, -1)


def censoring_diagnostics(alpha, a) -> CensoringDiagnostics:
    """Expected censoring and bias of S₀(D, a) under Dirichlet(α) (seed §3.1.1).

    :param alpha: Dirichlet parameter, shape ``(d,)``, ``d ≥ 2``.
    :param a: threshold(s) in ``(0, 1)``, any shape; results get the shape of ``a`` plus ``(d,)``
        for the per-part fields.

    >>> import numpy as np
    >>> diag = censoring_diagnostics([2.2, 3.3, 4.4], np.array([1e-3, 1e-2, 1e-1]))
    >>> diag.censored_fraction.shape, bool(np.all(np.diff(np.asarray(diag.mean_bias)) > 0))
    ((3,), True)
    """
    alpha = _check_alpha(alpha)
    if concrete(a):
        for v in np.ravel(np.asarray(a, dtype=float)):
            check_threshold(v, alpha.shape[0], upper="1")
    a = jnp.asarray(a, dtype=alpha.dtype)[..., None]
    total = jnp.sum(alpha)
    beta = total - alpha
    prob = betainc(alpha, beta, a)
    bias = _tail(alpha, beta, a, jnp.ones_like)
    expected = digamma(alpha) - digamma(total)
    return CensoringDiagnostics(
        prob, prob.mean(-1), bias, bias.mean(-1), jnp.broadcast_to(expected, bias.shape), expected + bias
    )


def censored_moments(alpha, a, n: int = 1):
    """Mean and covariance of S₀(D, a), the mean of log max(xᵢ, a) over n rows xᵢ ~ Dirichlet(α)
    (covariance: that of one row over n). Jit-able and differentiable in α, for the CLT law of the
    released statistic with its censoring (``dp_approx(..., censored=True)``); the uncensored law is
    ψ(α) − ψ(α₀) and (diag ψ′(α) − ψ′(α₀) 𝟏𝟏ᵀ) / n.

    :param alpha: Dirichlet parameter, shape ``(d,)``, ``d ≥ 2``; ``a``: a threshold in (0, 1/d).

    >>> import numpy as np
    >>> mean, cov = censored_moments([0.5, 0.5, 0.5], 0.01)
    >>> bool(np.all(np.asarray(mean) > np.log(0.01))), cov.shape
    (True, (3, 3))
    """
    alpha = _check_alpha(alpha)
    d = alpha.shape[0]
    if concrete(a):
        check_threshold(float(a), d)
    a = jnp.asarray(a, alpha.dtype)
    total = jnp.sum(alpha)
    beta = total - alpha
    m = digamma(alpha) - digamma(total)
    e = _tail(alpha, beta, a, jnp.ones_like)  # E cⱼ
    eye = jnp.eye(d, dtype=bool)
    # E[log xⱼ · c_k] = E[log(1 − x_k) c_k] + E[log y] E[c_k]; on the diagonal E[log xⱼ · cⱼ]
    e_log_c = (
        _tail(alpha, beta, a, lambda log_x: jnp.log1p(-jnp.exp(log_x)))
        + (digamma(alpha)[:, None] - digamma(beta)[None, :]) * e[None, :]
    )
    e_log_c = jnp.where(eye, jnp.diag(_tail(alpha, beta, a, lambda log_x: log_x)), e_log_c)
    e_cc = jnp.diag(_tail(alpha, beta, a, lambda log_x: jnp.log(a) - log_x))  # E cⱼ²
    if d > 2:  # E[cⱼ c_k] = E[c_k · (tail of y at a / (1 − x_k))]; with d = 2 both cannot be below a < 1/2
        rest = jnp.where(eye, 1.0, total - alpha[:, None] - alpha[None, :])  # Beta(αⱼ, rest) is y's law
        inner = lambda log_x: _tail(
            alpha[:, None, None], rest[..., None], a / -jnp.expm1(log_x), jnp.ones_like
        )
        both = _tail(alpha[None, :], beta[None, :], a, inner)
        e_cc = jnp.where(eye, e_cc, both)
    cov_log_c = e_log_c - m[:, None] * e[None, :]  # Cov(log xⱼ, c_k)
    cov = (
        jnp.diag(polygamma(1, alpha))
        - polygamma(1, total)
        + cov_log_c
        + cov_log_c.T
        + e_cc
        - e[:, None] * e[None, :]
    )
    return m + e, cov / n


def plot_censoring(alphas=DEFAULT_ALPHAS, a_grid=None, *, figsize=(9.0, 3.6)):
    """The seed's Figure 1: (a) expected proportion of censored entries and (b) average bias of
    the censored statistic, as functions of the threshold a, one curve per α. Returns a matplotlib
    ``Figure`` (built without pyplot, so no global state changes).

    :param alphas: Dirichlet parameters to compare (each its own d).
    :param a_grid: thresholds (default: 60 log-spaced values from 1e-6 to 0.3).

    >>> fig = plot_censoring()
    >>> len(fig.axes)
    2
    """
    from matplotlib.figure import Figure

    a_grid = np.logspace(-6, np.log10(0.3), 60) if a_grid is None else np.asarray(a_grid, dtype=float)
    fig = Figure(figsize=figsize, layout="constrained")
    ax_frac, ax_bias = fig.subplots(1, 2)
    for alpha in alphas:
        diag = censoring_diagnostics(alpha, a_grid)
        label = "α = (" + ", ".join(f"{v:g}" for v in np.ravel(alpha)) + ")"
        ax_frac.plot(a_grid, np.asarray(diag.censored_fraction), label=label)
        ax_bias.plot(a_grid, np.asarray(diag.mean_bias), label=label)
    ax_frac.set(xscale="log", xlabel="threshold a", ylabel="expected proportion censored", title="(a)")
    ax_bias.set(
        xscale="log", yscale="log", xlabel="threshold a", ylabel="average bias of S₀(D, a)", title="(b)"
    )
    ax_frac.legend(fontsize="small")
    return fig
