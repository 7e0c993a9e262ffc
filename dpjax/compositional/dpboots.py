"""Algorithm 2 of the compositional seed (DPBoots): the DP parametric bootstrap for Dirichlet(α)
from a released S_L(D, a), with its truncated-Laplace rejection step on Range(S₀) (seed §3.2).

Analyst side: everything here is post-processing of the release, so it costs no privacy budget.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax, random

from .._validate import positive_int
from ..infer.samplers import dirichlet
from ..mechanisms.base import check_key, concrete, positive
from .data import check_threshold
from .mle import mle_unchecked
from .release import censored_mean_log_unchecked

__all__ = ["DPBootsResult", "TruncatedDraw", "dpboots", "truncated_laplace_statistic"]


class TruncatedDraw(NamedTuple):
    """``value``: S̃₀ = S_L − ε in Range(S₀), or all-NaN if no candidate was accepted within the
    allowed tries; ``accepted``: whether one was; ``tries``: candidates drawn (the accepted one
    included)."""

    value: jnp.ndarray
    accepted: jnp.ndarray
    tries: jnp.ndarray


def _margin(dtype):
    return 16 * float(jnp.finfo(dtype).eps)


@functools.partial(jax.jit, static_argnames=("max_tries", "chunk"))
def _truncated(key, s, scale, max_tries, chunk):
    d = s.shape[-1]
    rounds = max(1, math.ceil(max_tries / chunk))
    margin = _margin(s.dtype)

    def cond(state):
        return ~state[2] & (state[3] < rounds)

    # Range(S₀) lies in the box (−∞, 0)ᵈ, so candidates come from the Laplace law truncated to the box
    # (exact, per part: below min(S_L, 0) an exponential tail, between S_L < 0 and 0 a truncated
    # exponential) and are kept if in the range: the same truncated law as plain rejection, but a part
    # of S_L above 0 no longer costs a factor ~exp(−S_Lⱼ/b) in acceptance
    p_left = jnp.where(s >= 0, 1.0, 1 / (2 - jnp.exp(jnp.minimum(s, 0) / scale)))
    right_cdf = -jnp.expm1(jnp.minimum(s, 0) / scale)  # 1 − exp(S_L/b): the exponential above S_L, cut at 0

    def body(state):
        key, val, done, r, tries = state
        key, k_side, k_u = random.split(key, 3)
        side = random.uniform(k_side, (chunk, d), s.dtype)
        u = random.uniform(k_u, (chunk, d), s.dtype)
        left = jnp.minimum(s, 0) + scale * jnp.log1p(-u)
        right = s - scale * jnp.log1p(-u * right_cdf)
        cand = jnp.where(side < p_left, left, right)
        ok = jnp.all(cand < 0, -1) & (jax.nn.logsumexp(cand, axis=-1) < -margin)
        i = jnp.argmax(ok)
        hit = jnp.any(ok)
        val = jnp.where(hit, cand[i], val)
        tries = (r * chunk + jnp.where(hit, i + 1, chunk)).astype(jnp.int32)  # argmax is int64 under x64
        return key, val, hit, r + 1, tries

    init = (key, jnp.full((d,), jnp.nan, s.dtype), jnp.bool_(False), jnp.int32(0), jnp.int32(0))
    _, val, done, _, tries = lax.while_loop(cond, body, init)
    return TruncatedDraw(jnp.where(done, val, jnp.nan), done, tries)


def truncated_laplace_statistic(rng_key, statistic, scale, *, max_tries: int = 4096, chunk: int = 64):
    """Steps i)–ii) of Algorithm 2: draw ε ~ Laplace(0, scale)ᵈ until S̃₀ = S_L − ε lies in
    Range(S₀) = {s ∈ (−∞, 0)ᵈ : Σⱼ exp(sⱼ) ≤ 1}, i.e. one draw of S_L − ε with ε from the Laplace law
    truncated to Range(Lap; S_L) (seed §3.2). Candidates are drawn ``chunk`` at a time, vectorised,
    from the Laplace law truncated to the box (−∞, 0)ᵈ that holds the range (exactly, part by part),
    so that a release with parts above 0 (small n ε₁) is not rejected ~exp(S_Lⱼ / scale) times more
    often: the accepted law is the same as plain rejection's.

    The accepted value satisfies ``logsumexp(S̃₀) < −16 eps`` (eps of the dtype): strictly inside
    the range, so the Dirichlet MLE exists and the check holds in any precision (this drops a
    sliver of relative width ~1e-6 next to the boundary, where the MLE does not exist). The draw
    is **never** outside the range: after ``max_tries`` candidates without success it is all-NaN
    with ``accepted=False``. Pure JAX (jit, vmap).

    >>> import jax, jax.numpy as jnp
    >>> t = truncated_laplace_statistic(jax.random.key(0), jnp.array([-1.0, -1.0, -1.5]), 0.5)
    >>> bool(t.accepted), bool(jnp.exp(t.value).sum() < 1)
    (True, True)
    """
    check_key(rng_key)
    s = jnp.asarray(statistic, dtype=jnp.result_type(statistic, float))
    if s.ndim != 1 or s.shape[0] < 2:
        raise ValueError(f"`statistic` must have shape (d,) with d ≥ 2, got shape {s.shape}.")
    scale = positive("scale", scale)
    max_tries = positive_int(max_tries, "max_tries")
    chunk = positive_int(chunk, "chunk")
    return _truncated(rng_key, s, scale, max_tries=max_tries, chunk=chunk)


@functools.partial(jax.jit, static_argnames=("n", "num_boot", "max_tries", "batch_size"))
def _core(rng_key, s, a, epsilon1, *, n, num_boot, max_tries, batch_size):
    """Compiled once per (n, num_boot, max_tries, batch_size, d, dtype): steps i)–v) for all draws."""
    d = s.shape[0]
    a_arr = jnp.asarray(a, dtype=s.dtype)
    scale = -d * jnp.log(a_arr) / (n * jnp.asarray(epsilon1, dtype=s.dtype))

    def one(key):
        k_noise, k_data = random.split(key)
        tr = _truncated(k_noise, s, scale, max_tries=max_tries, chunk=64)
        star = mle_unchecked(tr.value)
        safe = jnp.where(tr.accepted & jnp.all(star.alpha > 0), star.alpha, 1.0)  # stand-in, discarded
        x = dirichlet(k_data, safe, (n,))  # dpjax's sampler: 8–27× faster than jax.random.dirichlet here
        boot = mle_unchecked(censored_mean_log_unchecked(x, a_arr))
        ok = tr.accepted & star.converged
        draw = jnp.where(ok, boot.alpha, jnp.nan)
        return draw, star.alpha, tr.value, tr.accepted, tr.tries, ok & boot.converged

    batch = num_boot if batch_size is None else batch_size
    padded = -(-num_boot // batch) * batch  # a whole number of batches: one compiled body, no remainder
    keys = random.split(rng_key, padded).reshape(padded // batch, batch)
    out = lax.map(jax.vmap(one), keys)
    return *(v.reshape(padded, *v.shape[2:])[:num_boot] for v in out), scale


#: DPBoots refuses an interval when more than this share of its draws failed (NaN), and warns below it
MAX_FAILED_SHARE = 0.1


def _check_failed_draws(draws, n):
    """A draw fails (NaN) where an MLE does not exist or did not converge: at tiny n a bootstrap data set
    often has no MLE. The percentile interval of the others would then describe a selected subset."""
    failed = int(np.sum(np.any(np.isnan(draws), axis=1)))
    if not failed:
        return
    what = (
        f"{failed} of {draws.shape[0]} bootstrap draws failed (an MLE that does not exist or did not "
        f"converge, typical of small data sets: n = {n})"
    )
    if failed > MAX_FAILED_SHARE * draws.shape[0]:
        raise ValueError(
            f"{what}: the percentile interval of the rest would describe a selected subset, so DPBoots gives "
            "none here. Use the Bayesian methods (dp_mcmc), which need no MLE."
        )
    warnings.warn(f"{what}; the interval is that of the other draws.", UserWarning, stacklevel=3)


class DPBootsResult(NamedTuple):
    """Output of :func:`dpboots`.

    * ``draws``: the bootstrap draws α̃ (``(B, d)``), the approximation to the sampling law of
      MLE(S_L(D, a)); ``lower``/``upper``: the percentile interval at ``level`` per part.
    * ``estimate``: MLE(S_L(D, a)) if the release is inside Range(S₀), else NaN.
    * ``alpha_star``: α* = MLE(S̃₀) per draw; ``statistic_draws``: the S̃₀ (all in Range(S₀)).
    * ``accepted``, ``tries``: per draw, from the truncated-Laplace step; ``converged``: both MLEs
      of the draw converged.
    * ``laplace_scale``: −d log(a)/(n ε₁); ``level``: the interval's coverage level.
    """

    draws: jnp.ndarray
    lower: jnp.ndarray
    upper: jnp.ndarray
    estimate: jnp.ndarray
    alpha_star: jnp.ndarray
    statistic_draws: jnp.ndarray
    accepted: jnp.ndarray
    tries: jnp.ndarray
    converged: jnp.ndarray
    laplace_scale: jnp.ndarray
    level: float


def dpboots(
    rng_key,
    statistic,
    a,
    n: int,
    epsilon1,
    *,
    num_boot: int = 1000,
    level: float = 0.95,
    max_tries: int = 4096,
    batch_size: int | None = 128,
) -> DPBootsResult:
    """DPBoots (seed Algorithm 2): the DP parametric bootstrap of the Dirichlet MLE from the
    released S_L(D, a) = S₀(D, a) + Laplace(0, −d log(a)/(n ε₁)). For each of ``num_boot`` draws:

    i–ii) S̃₀ = S_L − ε with ε from the Laplace law truncated to {ε : S_L − ε ∈ Range(S₀)}
          (:func:`truncated_laplace_statistic`; never outside the range);
    iii)  α* = MLE(S̃₀);
    iv)   a data set D̃ of n rows from Dirichlet(α*);
    v)    α̃ = MLE(S₀(D̃, a)) — censored at the same a, as the seed's §3.2 prose says (its
          Algorithm 2 prints S₀(D̃), which would not reproduce the censoring).

    The percentile interval of the α̃ at ``level`` is returned with the draws. Post-processing of
    the release: no privacy cost. Pure JAX: jit with ``n``, ``num_boot``, ``max_tries`` and
    ``batch_size`` static, or vmap over releases. With concrete inputs, a draw that found no
    in-range S̃₀ within ``max_tries`` raises ``ValueError`` (under jit it is NaN and
    ``accepted=False``).

    :param statistic: one released S_L, shape ``(d,)``. For a split release pass each part's
        statistic with its own size n_l.
    :param a: the threshold used in the release, ``0 < a < 1/d``.
    :param n: the size of the data set behind ``statistic`` (public under bounded DP).
    :param epsilon1: the budget of the Laplace release.
    :param batch_size: draws computed at once (``lax.map``); memory grows as batch_size·n·d.

    >>> import jax, jax.numpy as jnp
    >>> from jax.scipy.special import digamma
    >>> alpha = jnp.array([2.2, 3.3, 4.4])
    >>> s_L = digamma(alpha) - digamma(alpha.sum())
    >>> res = dpboots(jax.random.key(0), s_L, 1e-3, 500, 1.0, num_boot=100)
    >>> res.draws.shape, bool(jnp.all((res.lower < alpha) & (alpha < res.upper)))
    ((100, 3), True)
    """
    check_key(rng_key)
    s = jnp.asarray(statistic, dtype=jnp.result_type(statistic, float))
    if s.ndim != 1 or s.shape[0] < 2:
        raise ValueError(f"`statistic` must be one released S_L of shape (d,), d ≥ 2; got shape {s.shape}.")
    if concrete(statistic) and not np.all(np.isfinite(np.asarray(statistic, dtype=float))):
        raise ValueError("`statistic` must be finite, got NaN or inf.")
    d = s.shape[0]
    a = check_threshold(a, d)
    n = positive_int(n, "n")
    epsilon1 = positive("epsilon1", epsilon1)
    num_boot = positive_int(num_boot, "num_boot")
    max_tries = positive_int(max_tries, "max_tries")
    if not (isinstance(level, float | int) and 0 < level < 1):
        raise ValueError(f"`level` must be a number in (0, 1), got {level!r}.")
    if batch_size is not None:
        batch_size = min(positive_int(batch_size, "batch_size"), num_boot)

    draws, alpha_star, s_tilde, accepted, tries, converged, scale = _core(
        rng_key, s, a, epsilon1, n=n, num_boot=num_boot, max_tries=max_tries, batch_size=batch_size
    )
    if concrete(accepted) and not bool(np.all(accepted)):
        raise ValueError(
            f"{int(np.sum(~np.asarray(accepted)))} of {num_boot} bootstrap draws found no S_L − ε in "
            f"Range(S₀) within max_tries = {max_tries} candidates: `statistic` = {np.asarray(s).tolist()} "
            f"is too far outside the range for its Laplace scale {float(scale):.4g}. Check that `a`, `n` "
            "and `epsilon1` are those of the release, or raise `max_tries`."
        )
    if concrete(draws):
        _check_failed_draws(np.asarray(draws), n)
    tail = (1.0 - level) / 2.0
    lower, upper = jnp.nanquantile(draws, jnp.asarray([tail, 1.0 - tail], dtype=s.dtype), axis=0)
    estimate = mle_unchecked(s).alpha
    return DPBootsResult(
        draws, lower, upper, estimate, alpha_star, s_tilde, accepted, tries, converged, scale, level
    )
