"""Dirichlet maximum likelihood from the mean-log sufficient statistic (seed §2.2, §3.2).

Given s = S₀(D) = n⁻¹ Σᵢ log xᵢ, the per-row log likelihood is
f(α) = (α − 1)·s − Σⱼ log Γ(αⱼ) + log Γ(α₀), α₀ = Σⱼ αⱼ: strictly concave in α (α is the
natural parameter of an exponential family), with a unique maximiser iff s is in the interior of
Range(S₀), i.e. Σⱼ exp(sⱼ) < 1. No library in dpjax's dependencies fits a Dirichlet from its
sufficient statistic (scipy's ``dirichlet`` has no ``fit``; TensorFlow Probability is not a
dependency), so it is done here: Newton's method with the diagonal-plus-rank-one Hessian of Minka
(2000, "Estimating a Dirichlet distribution", §1) and a backtracking line search that keeps α > 0
and f increasing, started from ψ(x) ≈ log(x − ½). The MLE does not depend on n.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.special import digamma, gammaln, polygamma

from ..mechanisms.base import concrete

__all__ = ["DirichletMLE", "dirichlet_fisher_information", "dirichlet_mle", "inv_digamma"]

_STEPS = 2.0 ** -np.arange(40)  # backtracking step lengths 1, 1/2, 1/4, ...


def inv_digamma(y, num_iter: int = 6):
    """The inverse of the digamma function ψ on (0, ∞): x with ψ(x) = y, by Newton's method from
    Minka's (2000, Appendix C) starting point. Elementwise, jit- and vmap-able.

    >>> import jax.numpy as jnp, numpy as np
    >>> from jax.scipy.special import digamma
    >>> np.asarray(inv_digamma(digamma(jnp.array([0.3, 2.0, 50.0]))), float).round(3).tolist()
    [0.3, 2.0, 50.0]
    """
    y = jnp.asarray(y, dtype=jnp.result_type(y, float))
    x = jnp.where(y >= -2.22, jnp.exp(y) + 0.5, -1.0 / (y - digamma(1.0)))

    def step(x, _):
        return x - (digamma(x) - y) / polygamma(1, x), None

    return lax.scan(step, x, None, length=num_iter)[0]


def dirichlet_fisher_information(alpha):
    """Per-observation Fisher information of Dirichlet(α): diag(ψ′(α)) − ψ′(α₀) 𝟏𝟏ᵀ, also the
    covariance of log x (seed §3.3.4). The MLE from n rows has asymptotic covariance I⁻¹/n.

    >>> np.asarray(dirichlet_fisher_information(jnp.array([1.0, 1.0])), float).round(4).tolist()
    [[1.0, -0.6449], [-0.6449, 1.0]]
    """
    alpha = jnp.asarray(alpha)
    return jnp.diag(polygamma(1, alpha)) - polygamma(1, alpha.sum())


class DirichletMLE(NamedTuple):
    """``alpha``: the MLE (NaN where the statistic is outside the interior of Range(S₀), possible
    only for traced input); ``converged``: the Newton iteration met its tolerance; ``num_iter``:
    Newton steps taken; ``grad_norm``: max-norm of the score ψ(α₀) − ψ(α) + s at ``alpha``."""

    alpha: jnp.ndarray
    converged: jnp.ndarray
    num_iter: jnp.ndarray
    grad_norm: jnp.ndarray


def _objective(alpha, s):
    return jnp.sum((alpha - 1.0) * s, -1) - jnp.sum(gammaln(alpha), -1) + gammaln(jnp.sum(alpha, -1))


def _mle_one(s, max_iter, rtol):
    dtype = s.dtype
    eps = jnp.finfo(dtype).eps
    d = s.shape[-1]
    ok = jnp.all(jnp.isfinite(s)) & (jax.nn.logsumexp(s) < 0)
    s_safe = jnp.where(ok, s, jnp.log(jnp.full_like(s, 0.5 / d)))
    q = jnp.sum(jnp.exp(s_safe))
    a0 = (d - q) / (2.0 * (1.0 - q))  # Σⱼ (αⱼ − ½)/(α₀ − ½) = q under ψ(x) ≈ log(x − ½)
    alpha0 = 0.5 + jnp.exp(s_safe) * (a0 - 0.5)
    steps = jnp.asarray(_STEPS, dtype=dtype)

    def grad(alpha):
        return s_safe - digamma(alpha) + digamma(jnp.sum(alpha))

    def cond(state):
        _, it, done = state
        return (it < max_iter) & ~done

    def body(state):
        alpha, it, _ = state
        g = grad(alpha)
        trig = polygamma(1, alpha)
        z = polygamma(1, jnp.sum(alpha))
        b = jnp.sum(g / trig) / (-1.0 / z + jnp.sum(1.0 / trig))  # Minka's H⁻¹g for H = −diag(ψ′) + z𝟏𝟏ᵀ
        delta = (g - b) / trig  # ascent direction −H⁻¹g
        decrement = jnp.sum(g * delta)
        f0 = _objective(alpha, s_safe)
        cands = alpha + steps[:, None] * delta
        f1 = _objective(jnp.where(cands > 0, cands, 1.0), s_safe)
        slack = 16 * eps * (1.0 + jnp.abs(f0))
        good = jnp.all(cands > 0, -1) & (f1 >= f0 + 1e-4 * steps * decrement - slack)
        k = jnp.argmax(good)
        moved = jnp.any(good)
        new = jnp.where(moved, cands[k], alpha)
        small = jnp.max(jnp.abs(new - alpha) / alpha) <= rtol
        return new, it + 1, small | ~moved

    alpha, it, done = lax.while_loop(cond, body, (alpha0, jnp.int32(0), jnp.bool_(False)))
    gnorm = jnp.max(jnp.abs(grad(alpha)))
    nan = jnp.full_like(alpha, jnp.nan)
    return DirichletMLE(jnp.where(ok, alpha, nan), done & ok, it, jnp.where(ok, gnorm, jnp.nan))


def dirichlet_mle(
    statistic, *, max_iter: int = 100, rtol: float | None = None, check: bool = True
) -> DirichletMLE:
    """The Dirichlet MLE of α from the mean-log statistic s = n⁻¹ Σᵢ log xᵢ (``MLE(·)`` of seed
    §3.2): the root of ψ(αⱼ) − ψ(α₀) = sⱼ. Batched over leading axes of ``statistic``; jit- and
    vmap-able.

    :param statistic: ``(..., d)``, ``d ≥ 2``. A concrete statistic outside the interior of
        Range(S₀) (Σⱼ exp(sⱼ) ≥ 1, where no MLE exists: the likelihood grows without bound as
        α → ∞ along a ray) raises ``ValueError``; a traced one gives NaN for that statistic.
    :param max_iter: Newton iterations at most (it typically needs fewer than 10).
    :param rtol: stop when no αⱼ moves by more than this relative amount; default √eps of the
        dtype (float32: 3.5e-4 — the last Newton step then leaves an error of order eps). Use
        x64 (``jax.config.update("jax_enable_x64", True)``) for more accurate fits near the
        boundary of the range, where α is large.
    :param check: ``False`` skips the checks of a concrete statistic (finite, inside Range(S₀)): a
        statistic outside the range gives NaN, as a traced one does (for a batch of noisy releases,
        some of which may fall outside).

    >>> import jax.numpy as jnp
    >>> from jax.scipy.special import digamma
    >>> alpha = jnp.array([2.2, 3.3, 4.4])
    >>> fit = dirichlet_mle(digamma(alpha) - digamma(alpha.sum()))
    >>> np.asarray(fit.alpha, float).round(3).tolist(), bool(fit.converged)
    ([2.2, 3.3, 4.4], True)
    """
    s = jnp.asarray(statistic, dtype=jnp.result_type(statistic, float))
    if s.ndim < 1 or s.shape[-1] < 2:
        raise ValueError(f"`statistic` must have shape (..., d) with d ≥ 2, got shape {s.shape}.")
    if check and concrete(statistic):
        arr = np.asarray(statistic, dtype=np.float64)
        if not np.all(np.isfinite(arr)):
            raise ValueError("`statistic` must be finite (a mean of logs of positive parts), got NaN or inf.")
        lse = np.logaddexp.reduce(arr, axis=-1)
        if np.any(lse >= 0):
            bad = np.asarray(arr.reshape(-1, arr.shape[-1])[np.argmax(lse.reshape(-1) >= 0)])
            raise ValueError(
                "`statistic` lies outside the interior of Range(S₀) = {s : sⱼ < 0, Σⱼ exp(sⱼ) < 1}, "
                f"where no Dirichlet MLE exists: Σⱼ exp(sⱼ) = {np.exp(bad).sum():.6g} for s = {bad.tolist()}."
            )
    return mle_unchecked(s, max_iter=max_iter, rtol=rtol)


def mle_unchecked(s, *, max_iter: int = 100, rtol: float | None = None) -> DirichletMLE:
    """:func:`dirichlet_mle` without the host checks (NaN outside the range), for use inside
    other compiled code."""
    s = jnp.asarray(s)
    if rtol is None:
        rtol = float(np.sqrt(np.finfo(s.dtype).eps))
    return _mle_compiled(s, max_iter=max_iter, rtol=rtol)


@functools.partial(jax.jit, static_argnames=("max_iter", "rtol"))
def _mle_compiled(s, *, max_iter, rtol):  # compiled once per shape, not at every eager call
    fit = jnp.vectorize(lambda v: _mle_one(v, max_iter, rtol), signature="(d)->(d),(),(),()")
    return DirichletMLE(*fit(s))
