"""Curator side of the compositional seed (Guo, Barrientos & Peña, §3.1): the censored sufficient
statistic S₀(D, a), its sensitivity, the threshold score and Algorithm 1 (DPss).

Neighbouring data sets are of the same size n and differ in one row (bounded DP, seed §2.1), so n
is public. Exactness: the score release :func:`release_score` is exactly ε₂-DP (integer counts plus
discrete Laplace noise drawn in integer arithmetic by :mod:`dpjax.mechanisms.exact`). The Laplace
release of the float statistic S₀(D, a) in :func:`dpss` is **simulation-only**: floating-point
Laplace noise is not differentially private (Mironov 2012); see :meth:`dpjax.Mechanism.release`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jax import random

from .._validate import positive_int
from ..mechanisms import DiscreteLaplaceMechanism, LaplaceMechanism
from ..mechanisms.base import check_key, concrete, positive
from .data import check_compositions, check_threshold, check_thresholds

__all__ = [
    "SCORE_SENSITIVITY",
    "DPssRelease",
    "censored_mean_log",
    "dpss",
    "geometric_quantile",
    "in_range",
    "mean_log",
    "release_score",
    "score",
    "select_threshold",
    "sensitivity",
]

#: L1 sensitivity of Score(D) under replacement of one row (seed §3.1.2: GS(Score) = 2): the
#: replaced row leaves one bin sₘ and may enter another.
SCORE_SENSITIVITY = 2


def _log(v):
    return math.log(float(v)) if concrete(v) else jnp.log(v)


def sensitivity(a, d: int, n: int):
    """L1 global sensitivity of S₀(D, a) under bounded DP (one row replaced, n fixed):
    ``Δ = −d log(a) / n``.

    The seed (§3.1) states the bound GS(S₀) ≤ −2 n⁻¹ d log a, but every release it defines — §3.1
    (S_L = S₀ + Laplace(0, −d log(a)/(n ε₁))), Algorithm 1, Algorithm 2 and eqs. (2)–(6) — uses the
    Laplace scale −d log(a)/(n ε₁), i.e. Δ = −d log(a)/n. That tighter value is a valid bound: each
    log x̃ᵢⱼ lies in [log a, 0], so replacing row i moves each of the d means by at most −log(a)/n
    (the factor 2 of §3.1 is the triangle inequality |u − v| ≤ |u| + |v|, loose for same-sign
    u, v). It is nearly attained: two rows spread over complementary halves of the parts give
    (d log(1/a) − k log k − (d − k) log(d − k)) / n with k = ⌊d/2⌋.

    >>> round(sensitivity(0.01, 3, 1000), 6)
    0.013816
    """
    d = positive_int(d, "d", minimum=2)
    n = positive_int(n, "n")
    a = check_threshold(a, d)
    return -d * _log(a) / n


def mean_log(x):
    """The uncensored sufficient statistic S₀(D) = n⁻¹ Σᵢ log xᵢ (per part), seed §2.2.
    Entries must be strictly positive.

    >>> import numpy as np
    >>> np.asarray(mean_log(np.array([[0.5, 0.5], [0.25, 0.75]])), float).round(4).tolist()
    [-1.0397, -0.4904]
    """
    x = check_compositions(x, allow_zeros=False)
    return jnp.mean(jnp.log(x), axis=0)


def censored_mean_log(x, a):
    """The censored statistic S₀(D, a) = n⁻¹ Σᵢ log max(xᵢ, a) (per part), seed §3.1.

    :param x: ``(n, d)`` compositions, ``d ≥ 2``; zero parts are allowed (they are censored).
    :param a: threshold, ``0 < a < 1/d``.
    :returns: the ``(d,)`` statistic; each entry lies in ``[log a, 0)``.

    >>> import numpy as np
    >>> np.asarray(censored_mean_log(np.array([[0.0, 1.0], [0.5, 0.5]]), 0.01), float).round(4).tolist()
    [-2.6492, -0.3466]
    """
    x = check_compositions(x)
    a = check_threshold(a, x.shape[1])
    return censored_mean_log_unchecked(x, a)


def censored_mean_log_unchecked(x, a):
    """:func:`censored_mean_log` without the checks of ``x`` and ``a`` (jit- and vmap-able, batched)."""
    return jnp.mean(jnp.log(jnp.maximum(x, a)), axis=-2)


def in_range(s):
    """Whether ``s`` lies in Range(S₀) = {s ∈ (−∞, 0)ᵈ : Σⱼ exp(sⱼ) ≤ 1} (seed §3.2), the set of
    mean-log statistics of data on the simplex (Jensen: exp(mean log xⱼ) ≤ mean xⱼ). Batched over
    leading axes. The Dirichlet MLE exists only in its interior (Σⱼ exp(sⱼ) < 1).

    Note that the *censored* statistic S₀(D, a) can leave this set (by at most (d − 1)a in
    Σⱼ exp(sⱼ)) when nearly every row has the same censored parts.

    >>> in_range(jnp.log(jnp.array([0.3, 0.6]))).item(), in_range(jnp.array([-0.1, -0.1])).item()
    (True, False)
    """
    s = jnp.asarray(s)
    return jnp.all(s < 0, axis=-1) & (jnp.sum(jnp.exp(s), axis=-1) <= 1)


def score(x, thresholds):
    """Score(D) = (s₁, …, s_M) of seed §3.1.2: sₘ = uₘ − uₘ₋₁ with uₘ the number of rows with no
    part below aₘ (uncensored at aₘ), u₀ = 0. Integer counts (int32); L1 sensitivity
    :data:`SCORE_SENSITIVITY` = 2 under replacement.

    :param thresholds: candidates ``a₁ > a₂ > … > a_M``, each in ``(0, 1/d)``.

    >>> import numpy as np
    >>> x = np.array([[0.5, 0.5], [0.05, 0.95], [0.005, 0.995], [0.0, 1.0]])
    >>> score(x, [0.1, 0.01, 0.001]).tolist()
    [1, 1, 1]
    """
    x = check_compositions(x)
    thr = check_thresholds(thresholds, x.shape[1])
    return _score(x, thr)


def _score(x, thr):
    row_min = jnp.min(x, axis=-1)
    u = jnp.sum(row_min[..., :, None] >= jnp.asarray(thr, dtype=x.dtype), axis=-2, dtype=jnp.int32)
    return jnp.diff(u, prepend=0)


def geometric_quantile(epsilon2, level: float = 0.95):
    """The half-width ``k`` of the central ``level`` interval of the score noise
    TwoSidedGeometric(t), ``t = exp(−ε₂/2)`` (seed §3.1.2): ``ε_{0.025} = −k`` is the largest
    integer with ``P(ε ≤ ε_{0.025}) ≤ 0.025`` (for ``level = 0.95``), and ``ε_{0.975} = k`` by
    symmetry. Uses ``P(ε ≤ −k) = tᵏ/(1 + t)`` for ``k ≥ 1``.

    >>> int(geometric_quantile(1.0))
    7
    """
    tail = (1.0 - level) / 2.0
    if concrete(epsilon2):
        eps = positive("epsilon2", epsilon2)
        t = math.exp(-eps / 2.0)  # 0.0 at ε₂ ≳ 1 490: log t is −ε₂/2, not log(0)
        k = math.ceil(math.log(tail * (1.0 + t)) / (-eps / 2.0))
        while k > 1 and t ** (k - 1) / (1.0 + t) <= tail:  # guard against rounding in the ceil
            k -= 1
        return max(k, 1)
    log_t = -jnp.asarray(epsilon2) / 2.0
    return jnp.maximum(jnp.ceil(jnp.log(tail * (1.0 + jnp.exp(log_t))) / log_t), 1.0).astype(jnp.int32)


def select_threshold(score_release, thresholds, n: int, epsilon2):
    """The selection rule A(S_G(D)) of seed §3.1.2, as printed in its display: with
    ``k = geometric_quantile(ε₂)`` (so ``s_{G,m} + k`` is the upper end of the 95 % interval of sₘ),

    * ``a₁`` if ``s_{G,1} + k ≥ 0.99 n``;
    * otherwise ``max 𝒜_{2:M}``, 𝒜_{2:M} = {aₘ : s_{G,m} + k ≥ 0.01 n, m ≥ 2}, i.e. the largest such
      threshold (the first in the list), if 𝒜_{2:M} is non-empty;
    * otherwise ``a_M``.

    (The seed's prose differs from its display: it speaks of the *smallest* aₘ in 𝒜 and of falling
    back to a₁. dpjax follows the display.) Returns the 0-based index of the chosen threshold.

    >>> import jax.numpy as jnp
    >>> int(select_threshold(jnp.array([50, 45, 3]), [0.1, 0.01, 0.001], 100, 4.0))
    1
    """
    thr = check_thresholds(thresholds, 2) if concrete(thresholds) else thresholds
    n = positive_int(n, "n")
    m = len(thr)
    s = jnp.asarray(score_release)
    if s.shape[-1:] != (m,):
        raise ValueError(f"`score_release` must have {m} entries (one per threshold), got shape {s.shape}.")
    if m == 1:
        return jnp.zeros(s.shape[:-1], dtype=jnp.int32)
    upper = s + geometric_quantile(epsilon2)
    first = upper[..., 0] >= 0.99 * n
    cand = upper[..., 1:] >= 0.01 * n
    idx = jnp.where(first, 0, jnp.where(jnp.any(cand, axis=-1), 1 + jnp.argmax(cand, axis=-1), m - 1))
    return idx.astype(jnp.int32)


def release_score(rng_key, x, thresholds, epsilon2):
    """Release S_G(D) = Score(D) + TwoSidedGeometric(exp(−ε₂/2)) noise **exactly** (ε₂-DP): the
    counts are integers and the noise is drawn on the host in integer arithmetic by
    :class:`dpjax.DiscreteLaplaceMechanism` (sensitivity 2, scale 2/ε₂). Not traceable.

    :param rng_key: ``None`` for a real publication (the operating system's CSPRNG); a JAX key
        gives a reproducible simulation (anyone holding the key can recompute the noise).
    :returns: an ``int64`` NumPy array of M noisy counts.

    >>> import jax, numpy as np
    >>> x = np.array([[0.5, 0.5], [0.05, 0.95]])
    >>> release_score(jax.random.key(0), x, [0.1, 0.01], 1.0).shape
    (2,)
    """
    check_key(rng_key, allow_none=True)
    x = check_compositions(x)
    if not concrete(x):
        raise ValueError("`release_score` runs exactly on the host: `x` must be concrete, not traced.")
    thr = check_thresholds(thresholds, x.shape[1])
    mech = DiscreteLaplaceMechanism(epsilon=epsilon2, sensitivity=SCORE_SENSITIVITY)
    return mech.release(rng_key, np.asarray(_score(x, thr)))


class DPssRelease(NamedTuple):
    """What Algorithm 1 (DPss) publishes, plus its bookkeeping.

    * ``statistic``: S_L(D, a), shape ``(d,)``; with a split, ``(2, d)`` = (S_L(D₁, a), S_L(D₂, a)).
    * ``threshold``: the selected a = A(S_G(D)); ``threshold_index`` its 0-based index.
    * ``score``: the released noisy score S_G(D) (M integers).
    * ``sizes``: ``(n,)`` or ``(n₁, n₂)``; ``laplace_scale``: −d log(a)/(n_l ε₁) per released part.
    * ``epsilon1``, ``epsilon2``: the budgets; ``epsilon`` = ε₁ + ε₂ is the total (Theorem 1).
    """

    statistic: jnp.ndarray
    threshold: jnp.ndarray
    threshold_index: jnp.ndarray
    score: jnp.ndarray
    sizes: tuple
    laplace_scale: jnp.ndarray
    epsilon1: float
    epsilon2: float

    @property
    def epsilon(self):
        """Total budget ε₁ + ε₂ of the release (seed Theorem 1: sequential composition)."""
        return self.epsilon1 + self.epsilon2


def dpss(
    rng_key, x, thresholds, epsilon1, epsilon2, *, n1: int = 0, exact_score: bool = False
) -> DPssRelease:
    """SIMULATION ONLY. Algorithm 1 (DPss) of the seed: select the censoring threshold with the
    ε₂-DP noisy score and release S_L(D, a) = S₀(D, a) + Laplace(0, −d log(a)/(n ε₁)) per part — or,
    with ``n1 > 0``,
    split D uniformly at random into D₁ (n₁ rows) and D₂ (n₂ = n − n₁ rows) and release
    S_L(D₁, a) and S_L(D₂, a). (ε₁ + ε₂)-DP (Theorem 1; the split halves are disjoint, so the
    two Laplace releases cost ε₁ together by parallel composition).

    With a split, each part's Laplace scale is −d log(a)/(n_l ε₁) with its own size n_l, as the
    sensitivity of S₀(D_l, a) requires (and as the seed's eq. (4) has it). Algorithm 1 as printed
    writes n there, which would under-noise the parts.

    **Simulation only.** The Laplace noise on the float statistic is drawn in floating point, which
    is not differentially private (Mironov 2012). With ``exact_score=False`` (default) the whole
    function is a pure JAX simulation (jit: mark ``n1`` and ``exact_score`` static; vmap over keys
    or data sets). With ``exact_score=True`` the score noise is drawn exactly on the host
    (:func:`release_score`, seeded from ``rng_key``): not traceable, and the Laplace step is still
    simulation-only. To publish the score alone, use :func:`release_score` with ``rng_key=None``.

    :param rng_key: a JAX PRNG key.
    :param x: ``(n, d)`` compositions (rows on the simplex; zero parts allowed).
    :param thresholds: candidates ``a₁ > … > a_M`` in ``(0, 1/d)``, public.
    :param epsilon1: budget of the Laplace release(s); ``epsilon2``: budget of the score.
    :param n1: size of D₁ (0: no split); ``0 ≤ n1 < n``.

    >>> import jax
    >>> x = np.random.default_rng(1).dirichlet([2.0, 3.0, 4.0], size=500)
    >>> rel = dpss(jax.random.key(2), x, [0.1, 0.01, 0.001], 0.5, 1.5)
    >>> rel.statistic.shape, rel.sizes, rel.epsilon
    ((3,), (500,), 2.0)
    >>> dpss(jax.random.key(2), x, [0.1, 0.01], 0.5, 1.5, n1=100).statistic.shape
    (2, 3)
    """
    if rng_key is None:
        raise ValueError(
            "dpss is a simulation and cannot publish (rng_key=None asks for a publication): its Laplace "
            "step adds floating-point noise to a float statistic, which is not differentially private "
            "(Mironov 2012). Publish the threshold score alone with release_score(None, ...) (exact, "
            "operating-system randomness); pass a JAX key to simulate DPss."
        )
    check_key(rng_key)
    x = check_compositions(x)
    n, d = x.shape
    thr = check_thresholds(thresholds, d)
    epsilon1 = positive("epsilon1", epsilon1)
    epsilon2 = positive("epsilon2", epsilon2)
    if isinstance(n1, bool) or not isinstance(n1, int | np.integer) or not 0 <= n1 < n:
        raise ValueError(f"`n1` must be an int with 0 ≤ n1 < n = {n} (0: no split), got {n1!r}.")
    n1 = int(n1)
    k_score, k_split, k_lap = random.split(rng_key, 3)

    counts = _score(x, thr)
    if exact_score:
        score_release = jnp.asarray(release_score(k_score, x, thr, epsilon2), dtype=jnp.int32)
    else:
        mech = DiscreteLaplaceMechanism(epsilon=epsilon2, sensitivity=SCORE_SENSITIVITY)
        score_release = jnp.round(mech(counts).sample(k_score)).astype(jnp.int32)
    idx = select_threshold(score_release, thr, n, epsilon2)
    a = jnp.asarray(thr, dtype=x.dtype)[idx]

    if n1 == 0:
        parts, sizes = [x], (n,)
    else:
        perm = random.permutation(k_split, n)
        parts, sizes = [x[perm[:n1]], x[perm[n1:]]], (n1, n - n1)
    keys = random.split(k_lap, len(parts))
    stats, scales = [], []
    for key, part, size in zip(keys, parts, sizes):
        mech = LaplaceMechanism(epsilon=epsilon1, sensitivity=-d * jnp.log(a) / size)
        stats.append(mech.release(key, censored_mean_log_unchecked(part, a)))
        scales.append(jnp.asarray(mech.scale))
    if n1 == 0:
        statistic, scale = stats[0], scales[0]
    else:
        statistic, scale = jnp.stack(stats), jnp.stack(scales)
    return DPssRelease(statistic, a, idx, score_release, sizes, scale, epsilon1, epsilon2)
