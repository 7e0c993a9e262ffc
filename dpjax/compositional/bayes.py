"""Bayesian methods of the compositional seed (Guo, Barrientos & Peña, §3.3): DPMCMC, DPreMCMC,
DPABC (the seed's tolerance ABC and dpjax's exact ABC beside it), DPapprox, and the priors p1–p5.

Every method reads the same release S_L(D, a) = S₀(D, a) + Laplace(0, −d log(a) / (n ε₁)) per part
(:func:`dpjax.compositional.dpss`). Which posterior each one targets:

* :func:`dp_mcmc` (DPMCMC): the exact posterior π(α | S_L) of eq. (2), by
  :class:`~dpjax.infer.DataAugmentationKernel` on :func:`dpjax.models.dirichlet_mean_log`.
* :func:`dp_abc_exact`: the same exact posterior by rejection ABC whose kernel is the Laplace
  mechanism itself (:func:`dpjax.infer.exact_abc`): no tolerance.
* :func:`dp_abc` (DPABC, seed §3.3.3): rejection ABC with an L2 tolerance δ set so that a stated
  fraction of proposals is kept (Pritchard et al. 1999). It is approximate: it targets
  π(α | ‖S_L(D̃) − s_L‖₂ < δ), which is wider than π(α | S_L) for any δ > 0.
* :func:`dp_approx` (DPapprox, §3.3.4): S₀(D) ~ N(μ_α, Σ_α / n) (central limit theorem, censoring
  ignored) with the Laplace noise as a scale mixture of normals; Bernstein & Sheldon's Gibbs step
  draws S₀ and the mixing variances exactly, NUTS draws α (``numpyro.infer.HMCGibbs``).
* :func:`dp_remcmc` (DPreMCMC, eq. (5)): b records whose Dirichlet densities are raised to the
  power n₂/b, by the same data-augmentation kernel (see :func:`dirichlet_replicates`).

Priors (Table 1): p1 (:func:`dpjax.models.dirichlet_prior_p1`, Gamma(1, 0.1) per part); from a
first release S_L(D₁, a), :func:`elicit_priors` gives p2 (DPBoots draws), p3 (independent Gamma
fits to them) and p4 (a Gaussian copula with those Gamma marginals); :func:`prior_p5` gives draws of
p5 (the DPMCMC posterior of D₁). p2 and p5 are sets of draws: ABC uses them as empirical priors.

Many data sets: :func:`dp_mcmc`, :func:`dp_remcmc` and :func:`dp_approx` each build a
``numpyro.infer.MCMC`` and compile its chain on every call (about 6 s for :func:`dp_mcmc` at n = 20
on a 2-core CPU). Under NumPyro 0.22 JAX's caches also keep every such compiled loop for the rest of
the process (its sampling loop takes a fresh ``jax.jit`` wrapper as a static argument): about 1 000
memory maps per :func:`dp_mcmc` call against Linux's default limit of 65 530, so a loop of ~60 calls
fails with LLVM's "Cannot allocate memory". ``jax.clear_caches()`` between calls frees them. For a
simulation study, ``jax.vmap`` :func:`dpjax.infer.run_chain` over the data sets instead, which compiles
once per cell (as :func:`dpjax.reproduce.compositional.run_methods` does).
"""

from __future__ import annotations

import functools
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax import lax, random
from jax.scipy.special import digamma, gammainc, gammaln, ndtri, polygamma
from numpyro.infer import MCMC, NUTS, HMCGibbs, init_to_median
from scipy import special as sp
from scipy import stats

from .._validate import positive_int
from ..infer import DataAugmentationKernel, exact_abc
from ..infer.samplers import log_gamma
from ..mechanisms import LaplaceMechanism
from ..mechanisms.base import check_key, concrete, positive
from ..models.dirichlet import dirichlet_mean_log, num_parts, sample_alpha
from ..primitives import privatized
from .data import check_compositions, check_threshold
from .diagnostics import censored_moments
from .dpboots import dpboots

__all__ = [
    "DirichletPriors",
    "GammaMarginal",
    "ReplicatesDriftWarning",
    "ToleranceABCResult",
    "dirichlet_replicates",
    "dp_abc",
    "dp_abc_exact",
    "dp_approx",
    "dp_approx_model",
    "dp_mcmc",
    "dp_remcmc",
    "elicit_priors",
    "fit_gamma",
    "gamma_copula_prior",
    "gamma_icdf",
    "laplace_scale",
    "prior_p5",
    "record_acceptance_bound",
]


# ------------------------------------------------------------------ checks
def _check_release(release, d=None):
    if not concrete(release):
        return jnp.asarray(release)
    arr = np.asarray(release, dtype=float)
    if arr.ndim != 1 or arr.shape[0] < 2:
        raise ValueError(f"`release` must be one released S_L of shape (d,), d ≥ 2; got shape {arr.shape}.")
    if d is not None and arr.shape[0] != d:
        raise ValueError(f"`release` has {arr.shape[0]} parts but the prior has {d}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError("`release` must be finite, got NaN or inf.")
    return jnp.asarray(release, dtype=jnp.result_type(float))


def _check_common(release, n, a, epsilon1, prior):
    d = num_parts(release, prior, None)
    release = _check_release(release, d)
    n = positive_int(n, "n")
    a = check_threshold(a, d)
    epsilon1 = positive("epsilon1", epsilon1)
    return release, n, a, epsilon1, d


def laplace_scale(a, d: int, n: int, epsilon1):
    """The Laplace scale −d log(a) / (n ε₁) of the release (seed §3.1).

    >>> round(laplace_scale(0.01, 3, 30, 1.0), 4)
    0.4605
    """
    a = check_threshold(a, d)
    return -d * float(np.log(a)) / (positive_int(n, "n") * positive("epsilon1", epsilon1))


def record_acceptance_bound(epsilon1):
    """The lower bound e^{−ε₁} on every record-update acceptance probability of DPMCMC (Ju et al.,
    Theorem 3.1): one record moves T = S₀(D, a) by at most its sensitivity −d log(a)/n in L1.

    >>> round(record_acceptance_bound(1.0), 4)
    0.3679
    """
    return float(np.exp(-positive("epsilon1", epsilon1)))


# ------------------------------------------------------------------ DPMCMC
def dp_mcmc(
    rng_key,
    release,
    *,
    n: int,
    a,
    epsilon1,
    prior=None,
    num_warmup: int = 1000,
    num_samples: int = 1000,
    num_chains: int = 1,
    chain_method: str = "vectorized",
    max_tree_depth: int = 5,
    init_records=None,
    noncentred_moves: int | str = "auto",
    progress_bar: bool = False,
) -> MCMC:
    """DPMCMC (seed §3.3.2): exact draws from π(α | S_L(D, a) = s_L) of eq. (2) by data
    augmentation (Ju et al.): each iteration draws α | D by NUTS on the Dirichlet likelihood of the
    imputed records and then sweeps the n records with proposals xᵢ* ~ Dirichlet(α), accepted with
    probability min(1, η(s_L | T*) / η(s_L | T)) (O(d) per record).

    :param release: the released S_L, shape ``(d,)``.
    :param n: the public number of rows; ``a``: the threshold; ``epsilon1``: the Laplace budget.
    :param prior: a distribution over α with event shape ``(d,)`` (default p1; p3 and p4 from
        :func:`elicit_priors`).
    :param max_tree_depth: of the inner NUTS over α (α | D is nearly Gaussian on the log scale).
    :param init_records: optional ``(n, d)`` starting records (e.g. the confidential data in a
        check of the ε → ∞ limit), the same for every chain. Where one record moves S₀ by far more
        than the noise (ε₁ in the thousands at n = 30) record moves are essentially never accepted:
        unless the non-centred moves carry the records with α, the kernel raises
        :class:`~dpjax.infer.StickyRecordsWarning`, and the draws are those of α | the starting
        records. There :func:`dp_approx` with ``censored=True`` gives the CLT posterior given the
        release itself.
    :param noncentred_moves: random-walk α-moves per iteration with the records held as
        Wilson–Hilferty noise (:mod:`dpjax.infer.noncentred`; exact). ``"auto"`` (default): 5, kept
        after warmup only where a trial in it finds they pay (:mod:`dpjax.infer.auto_moves`).
        Without them (``0``, the seed's algorithm) α crawls along its scale where the release pins
        only its ratios: at n = 1 000, ε₁ = 0.375 the ESS of α was 3–4 per 4 000 draws against ~880.
    :returns: the ``numpyro.infer.MCMC`` object; ``get_samples()["alpha"]`` are the draws and
        ``get_extra_fields()["record_accept_rate"]`` the mean record acceptance of each sweep
        (never below :func:`record_acceptance_bound`).

    >>> import jax, jax.numpy as jnp
    >>> mcmc = dp_mcmc(  # doctest: +SKIP
    ...     jax.random.key(0), jnp.array([-1.5, -1.1, -0.9]), n=20, a=0.01, epsilon1=1.0,
    ...                num_warmup=50, num_samples=50)
    >>> mcmc.get_samples()["alpha"].shape  # doctest: +SKIP
    (50, 3)
    """
    check_key(rng_key)
    release, n, a, epsilon1, d = _check_common(release, n, a, epsilon1, prior)
    _check_gradient_prior(prior)
    num_chains = positive_int(num_chains, "num_chains")
    init_params = None
    if init_records is not None:
        x0 = np.asarray(init_records, dtype=float)
        if x0.shape != (n, d):
            raise ValueError(f"`init_records` must have shape (n, d) = {(n, d)}, got {x0.shape}.")
        # Dirichlet records: every part > 0 (the density is 0 on the faces) and rows on the simplex
        x0 = check_compositions(x0, "init_records", allow_zeros=False)
        init_params = {"x": x0}
    init_params = _per_chain(init_params, num_chains)
    kernel = DataAugmentationKernel(
        NUTS(dirichlet_mean_log, max_tree_depth=max_tree_depth), noncentred_moves=noncentred_moves
    )
    mcmc = MCMC(
        kernel,
        num_warmup=positive_int(num_warmup, "num_warmup", minimum=0),
        num_samples=positive_int(num_samples, "num_samples"),
        num_chains=num_chains,
        chain_method=chain_method,
        progress_bar=progress_bar,
    )
    mcmc.run(rng_key, n, a, epsilon1, release, prior=prior, init_params=init_params)
    return mcmc


def _per_chain(init_params, num_chains):
    """``init_params`` with one value per chain along a leading axis, as ``numpyro.infer.MCMC`` wants
    them when ``num_chains > 1`` (vectorized chains included)."""
    if init_params is None or num_chains == 1:
        return init_params
    return {k: jnp.broadcast_to(v, (num_chains,) + jnp.shape(v)) for k, v in init_params.items()}


def _check_gradient_prior(prior):
    if prior is not None and not isinstance(prior, dist.Distribution):
        raise ValueError(
            "This method updates α by NUTS, so `prior` must be a numpyro distribution with a density "
            "(p1, p3 or p4); a set of prior draws (p2, p5) can only be used by the ABC methods."
        )


def prior_p5(rng_key, release1, *, n1: int, a, epsilon1, num_samples: int = 2000, **kwargs):
    """Draws of prior p5 (seed §3.3.1): the DPMCMC posterior π(α | S_L(D₁, a) = s_L⁽¹⁾) under p1,
    an ``(num_samples · num_chains, d)`` array (flattened over chains), for use as the empirical prior
    of :func:`dp_abc` or :func:`dp_abc_exact` on the second release. ``kwargs`` go to
    :func:`dp_mcmc`."""
    mcmc = dp_mcmc(rng_key, release1, n=n1, a=a, epsilon1=epsilon1, num_samples=num_samples, **kwargs)
    return mcmc.get_samples()["alpha"]


# ------------------------------------------------------------------ priors p2–p4
def fit_gamma(draws) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-likelihood Gamma (shape, rate) per column of ``draws`` (``(m, d)``, positive): the
    root of log k − ψ(k) = log mean − mean log (Minka's start, Newton), rate = k / mean.

    >>> import numpy as np
    >>> k, r = fit_gamma(np.random.default_rng(0).gamma(3.0, 1 / 2.0, size=(20000, 1)))
    >>> np.round(k, 1).tolist(), np.round(r, 1).tolist()
    ([3.0], [2.0])
    """
    x = np.asarray(draws, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"`draws` must be an (m, d) array with m ≥ 2, got shape {x.shape}.")
    x = x[np.all(np.isfinite(x), axis=1)]
    if x.shape[0] < 2 or np.any(x <= 0):
        raise ValueError("`draws` must hold at least two rows of finite, positive values.")
    mean = x.mean(0)
    c = np.log(mean) - np.log(x).mean(0)
    if np.any(c <= 0):
        raise ValueError("A column of `draws` is constant: no Gamma fit exists.")
    k = (3 - c + np.sqrt((c - 3) ** 2 + 24 * c)) / (12 * c)
    for _ in range(50):
        g = np.log(k) - sp.digamma(k) - c
        step = g / (1 / k - sp.polygamma(1, k))
        k_new = np.where(k - step > 0, k - step, k / 2)
        if np.all(np.abs(k_new - k) <= 1e-12 * k):
            k = k_new
            break
        k = k_new
    return k, k / mean


def gamma_icdf(concentration, q):
    """The Gamma(concentration, 1) quantile function (JAX has no ``gammaincinv`` without
    TensorFlow Probability): Newton's method on log x from the Wilson–Hilferty start, steps clamped
    to ±1 in log x. Batched, jit-able; relative error ~1e-5 in float32.

    >>> round(float(gamma_icdf(2.5, 0.3)), 3)  # scipy.stats.gamma.ppf(0.3, 2.5) = 1.49995
    1.5
    """
    k, q = jnp.broadcast_arrays(jnp.asarray(concentration, jnp.result_type(float)), jnp.asarray(q))
    q = q.astype(k.dtype)
    tiny = jnp.finfo(k.dtype).tiny
    z = ndtri(q)
    wh = k * (1 - 1 / (9 * k) + z / (3 * jnp.sqrt(k))) ** 3
    small = jnp.exp((jnp.log(q) + gammaln(k + 1)) / k)  # P(k, x) ≈ x^k / Γ(k + 1) for small x
    x0 = jnp.where((wh > 0) & (k >= 1), wh, jnp.maximum(small, tiny))
    lgk = gammaln(k)

    def body(_, y):
        x = jnp.exp(y)
        f = gammainc(k, x) - q
        dens = jnp.exp(k * y - x - lgk)  # d P(k, e^y) / dy
        step = jnp.clip(f / jnp.maximum(dens, tiny), -1.0, 1.0)
        return y - step

    return jnp.exp(lax.fori_loop(0, 40, body, jnp.log(x0)))


class GammaMarginal(dist.Gamma):
    """``dist.Gamma`` with an ``icdf`` (:func:`gamma_icdf`), so that ``dist.GaussianCopula`` can sample
    it without TensorFlow Probability."""

    def icdf(self, q):
        return gamma_icdf(self.concentration, q) / self.rate


def gamma_copula_prior(concentration, rate, correlation):
    """Prior p4 (seed §3.3.1): a Gaussian copula with correlation matrix ``correlation`` and
    marginals αⱼ ~ Gamma(concentrationⱼ, rateⱼ). A numpyro distribution with event shape (d,).

    >>> import jax, jax.numpy as jnp
    >>> p4 = gamma_copula_prior(jnp.array([3.0, 4.0]), jnp.array([1.0, 1.0]), jnp.array([[1, .5], [.5, 1]]))
    >>> p4.sample(jax.random.key(0), (5,)).shape
    (5, 2)
    """
    k = jnp.asarray(concentration, jnp.result_type(float))
    r = jnp.asarray(rate, jnp.result_type(float))
    corr = jnp.asarray(correlation, jnp.result_type(float))
    if k.ndim != 1 or r.shape != k.shape or corr.shape != (k.shape[0], k.shape[0]):
        raise ValueError(
            f"Need (d,) shapes and rates and a (d, d) correlation; got {k.shape}, {r.shape}, {corr.shape}."
        )
    if concrete(k, r, corr):
        c = np.asarray(corr, float)
        if not (np.all(np.asarray(k) > 0) and np.all(np.asarray(r) > 0)):
            raise ValueError("Gamma shapes and rates must be positive.")
        if not (np.allclose(c, c.T) and np.allclose(np.diag(c), 1) and np.all(np.linalg.eigvalsh(c) > 0)):
            raise ValueError("`correlation` must be a symmetric positive-definite matrix with unit diagonal.")
    return dist.GaussianCopula(GammaMarginal(k, r), correlation_matrix=corr)


class DirichletPriors(NamedTuple):
    """Priors elicited from a first release S_L(D₁, a) (seed §3.3.1, Table 1).

    * ``p2``: the DPBoots draws (``(B, d)``), i.e. draws from p2 (an empirical prior for ABC);
    * ``p3``: independent Gamma(v̂ⱼ, ŵⱼ), the maximum-likelihood fits to the p2 draws;
    * ``p4``: the Gaussian copula with those marginals and the correlation of the normal scores
      Φ⁻¹(F̂ⱼ(αⱼ)) of the p2 draws;
    * ``shape``, ``rate``, ``correlation``: v̂, ŵ and the copula's correlation matrix.
    """

    p2: jax.Array
    p3: dist.Distribution
    p4: dist.Distribution
    shape: np.ndarray
    rate: np.ndarray
    correlation: np.ndarray


def elicit_priors(rng_key, release1, *, n1: int, a, epsilon1, num_boot: int = 2000) -> DirichletPriors:
    """p2, p3 and p4 of the seed from the first-part release S_L(D₁, a) = ``release1`` of n₁ rows.

    >>> import jax, jax.numpy as jnp
    >>> pri = elicit_priors(jax.random.key(0), jnp.array([-1.6, -1.1, -0.9]), n1=250, a=0.01, epsilon1=1.0,
    ...                     num_boot=200)
    >>> pri.p2.shape, pri.p4.event_shape
    ((200, 3), (3,))
    """
    check_key(rng_key)
    release1, n1, a, epsilon1, d = _check_common(release1, n1, a, epsilon1, None)
    boot = dpboots(rng_key, release1, a, n1, epsilon1, num_boot=positive_int(num_boot, "num_boot"))
    draws = np.asarray(boot.draws, float)
    draws = draws[np.all(np.isfinite(draws) & (draws > 0), axis=1)]
    if draws.shape[0] < max(10, num_boot // 2):
        raise ValueError(
            f"Only {draws.shape[0]} of {num_boot} DPBoots draws are usable (the MLE did not converge); "
            "the release is too noisy to elicit p2–p4 from."
        )
    shape, rate = fit_gamma(draws)
    u = stats.gamma.cdf(draws, shape, scale=1 / rate)
    z = stats.norm.ppf(np.clip(u, 1e-6, 1 - 1e-6))
    corr = np.corrcoef(z, rowvar=False)
    p3 = dist.Gamma(jnp.asarray(shape, jnp.result_type(float)), jnp.asarray(rate, jnp.result_type(float)))
    p4 = gamma_copula_prior(shape, rate, corr)
    return DirichletPriors(jnp.asarray(draws, jnp.result_type(float)), p3.to_event(1), p4, shape, rate, corr)


# ------------------------------------------------------------------ DPABC
class ToleranceABCResult(NamedTuple):
    """Output of :func:`dp_abc`: ``samples`` (``{"alpha": (k, d)}``, the k accepted draws),
    ``delta`` (the tolerance: the k-th smallest distance), ``distances`` (of the accepted draws),
    ``num_proposals`` and the ``acceptance_rate`` k / num_proposals."""

    samples: dict
    delta: jax.Array
    distances: jax.Array
    num_proposals: int
    acceptance_rate: float


def _draw_alpha(key, prior, d):
    if prior is None:
        return random.gamma(key, 1.0, (d,)) / 0.1
    if isinstance(prior, dist.Distribution):
        return prior.sample(key).reshape(d)
    return prior[random.randint(key, (), 0, prior.shape[0])]


@functools.partial(jax.jit, static_argnames=("n", "d", "num_batches", "batch_size", "keep"))
def _tolerance_core(key, release, prior, a, scale, *, n, d, num_batches, batch_size, keep):
    def batch(k):
        k_a, k_x, k_e = random.split(k, 3)
        alpha = jax.vmap(lambda k: _draw_alpha(k, prior, d))(random.split(k_a, batch_size))
        # a batch's data sets in one call of the whole-array Gamma sampler, on the log scale
        # (jax.random.dirichlet per proposal: 106 s against 5.0 s for 10⁴ data sets of 2 646 rows)
        log_g = log_gamma(k_x, alpha[:, None, :].astype(release.dtype), (batch_size, n, d))
        log_x = jax.nn.log_softmax(log_g, axis=-1)
        noise = scale * random.laplace(k_e, (batch_size, d), release.dtype)
        s = jnp.mean(jnp.maximum(log_x, jnp.log(a)), axis=1) + noise
        return alpha, jnp.linalg.norm(s - release, axis=-1)

    alpha, dist_ = lax.map(batch, random.split(key, num_batches))
    alpha, dist_ = alpha.reshape(-1, d), dist_.reshape(-1)
    dist_ = jnp.where(jnp.isfinite(dist_), dist_, jnp.inf)
    neg, idx = lax.top_k(-dist_, keep)
    return alpha[idx], -neg


def dp_abc(
    rng_key,
    release,
    *,
    n: int,
    a,
    epsilon1,
    prior=None,
    num_proposals: int = 100_000,
    acceptance_rate: float = 0.1,
    batch_size: int = 1000,
) -> ToleranceABCResult:
    """DPABC as in the seed (§3.3.3): α̃ ~ prior, D̃ = n rows from Dirichlet(α̃), S_L(D̃, a) =
    S₀(D̃, a) + Laplace(0, −d log(a)/(n ε₁)); keep α̃ when ‖S_L(D̃, a) − s_L‖₂ < δ, with δ set so that a
    fraction ``acceptance_rate`` of the ``num_proposals`` proposals is kept (Pritchard et al.; the
    seed uses 0.1): the k = round(rate · N) nearest proposals, δ their largest distance.

    **Approximate**: it targets π(α | ‖S_L(D̃) − s_L‖₂ < δ), wider than π(α | S_L) for δ > 0. With
    the privacy mechanism as the ABC kernel the tolerance is unnecessary and the draws are exact:
    :func:`dp_abc_exact`. For model (4) pass the second release with n = n₂ and a prior from
    :func:`elicit_priors` or :func:`prior_p5` (a distribution or an ``(m, d)`` array of draws).

    >>> import jax, jax.numpy as jnp
    >>> out = dp_abc(jax.random.key(0), jnp.array([-1.6, -1.1, -0.9]), n=30, a=0.01, epsilon1=1.0,
    ...              num_proposals=2000)
    >>> out.samples["alpha"].shape, out.acceptance_rate
    ((200, 3), 0.1)
    """
    check_key(rng_key)
    release, n, a, epsilon1, d = _check_common(release, n, a, epsilon1, prior)
    num_proposals = positive_int(num_proposals, "num_proposals")
    batch_size = min(positive_int(batch_size, "batch_size"), num_proposals)
    if not (isinstance(acceptance_rate, float | int) and 0 < acceptance_rate <= 1):
        raise ValueError(f"`acceptance_rate` must be a number in (0, 1], got {acceptance_rate!r}.")
    if num_proposals % batch_size:
        raise ValueError(
            f"`num_proposals` ({num_proposals}) must be a multiple of `batch_size` ({batch_size})."
        )
    keep = int(round(acceptance_rate * num_proposals))
    if keep < 1:
        raise ValueError(
            f"acceptance_rate · num_proposals = {acceptance_rate * num_proposals:g} keeps no draw."
        )
    if prior is not None and not isinstance(prior, dist.Distribution):
        prior = jnp.asarray(prior, release.dtype)
    scale = jnp.asarray(laplace_scale(a, d, n, epsilon1), release.dtype)
    alpha, dists = _tolerance_core(
        rng_key,
        release,
        prior,
        jnp.asarray(a, release.dtype),
        scale,
        n=n,
        d=d,
        num_batches=num_proposals // batch_size,
        batch_size=batch_size,
        keep=keep,
    )
    return ToleranceABCResult({"alpha": alpha}, dists[-1], dists, num_proposals, keep / num_proposals)


def dp_abc_exact(rng_key, release, *, n: int, a, epsilon1, prior=None, num_samples: int = 1000, **kwargs):
    """Exact ABC on the DPMCMC model (:func:`dpjax.infer.exact_abc` on
    :func:`dpjax.models.dirichlet_mean_log`): α̃ ~ prior, D̃ ~ Dirichlet(α̃)ⁿ, accepted with probability
    η(s_L | S₀(D̃, a)) / max η, the Laplace density itself as the ABC kernel. The accepted α̃ are
    i.i.d. draws of π(α | S_L = s_L), the target of :func:`dp_mcmc`, with no tolerance. ``prior`` may be
    an ``(m, d)`` array of draws (p2, p5); ``kwargs`` go to ``exact_abc`` (``batch_size``,
    ``max_seconds``, ``progress_bar``, ...). Returns its :class:`~dpjax.infer.ABCResult` with
    ``samples["alpha"]``.

    >>> import jax, jax.numpy as jnp
    >>> out = dp_abc_exact(  # doctest: +SKIP
    ...     jax.random.key(0), jnp.array([-1.6, -1.1, -0.9]), n=30, a=0.01, epsilon1=1.0,
    ...                    num_samples=100, batch_size=2000, progress_bar=False)
    >>> out.samples["alpha"].shape  # doctest: +SKIP
    (100, 3)
    """
    check_key(rng_key)
    release, n, a, epsilon1, d = _check_common(release, n, a, epsilon1, prior)
    draws = None
    if prior is not None and not isinstance(prior, dist.Distribution):
        prior = draws = jnp.asarray(prior, release.dtype)
    out = exact_abc(
        rng_key, dirichlet_mean_log, n, a, epsilon1, release, prior=prior, num_samples=num_samples, **kwargs
    )
    if draws is not None:
        out = out._replace(samples={"alpha": draws[out.samples["alpha_draw"]]})
    return out


# ------------------------------------------------------------------ DPapprox
def _moments(alpha, n):
    """Mean μ_α and covariance Σ_α / n of the CLT law of S₀(D) (seed §3.3.4)."""
    alpha0 = jnp.sum(alpha, -1)
    mu = digamma(alpha) - digamma(alpha0)[..., None]
    cov = jnp.diag(polygamma(1, alpha)) - polygamma(1, alpha0) * jnp.ones((alpha.shape[-1],) * 2)
    return mu, cov / n


def dp_approx_model(
    n, a, epsilon1, release=None, *, prior=None, d: int | None = None, censored: bool = False
):
    """Model (6) of the seed with Bernstein & Sheldon's augmentation: α ~ prior; S₀ ~ N(μ_α, Σ_α / n)
    (site ``s0``; μ_α = ψ(α) − ψ(α₀), Σ_α = diag ψ′(α) − ψ′(α₀) 𝟏𝟏ᵀ, the CLT for a mean of n rows —
    the seed writes Σ_α, the law of one row); vⱼ ~ Exponential(rate 1/(2b²)) (site ``v``) and
    s_Lⱼ ~ N(S₀ⱼ, vⱼ), which integrates to s_L = S₀ + Laplace(0, b), b = −d log(a)/(n ε₁). The
    censoring at a is ignored (as in the seed) unless ``censored=True``: then μ_α and Σ_α are the
    mean and covariance of log max(x, a) (:func:`~dpjax.compositional.censored_moments`).

    >>> import jax, numpyro
    >>> numpyro.infer.Predictive(dp_approx_model, num_samples=2)(jax.random.key(0), 100, 0.01, 1.0,
    ...                                                          d=3)["s_L"].shape
    (2, 3)
    """
    d = num_parts(release, prior, d)
    alpha = sample_alpha(prior, d)
    mu, cov = _law(n, a, censored)(alpha)
    s0 = numpyro.sample("s0", dist.MultivariateNormal(mu, covariance_matrix=cov))
    b = laplace_scale(a, d, n, epsilon1)
    v = numpyro.sample("v", dist.Exponential(1.0 / (2 * b**2)).expand([d]).to_event(1))
    numpyro.sample("s_L", dist.Normal(s0, jnp.sqrt(v)).to_event(1), obs=release)


def _law(n, a, censored):
    """α ↦ (mean, covariance) of the CLT law of S₀(D, a), with or without its censoring."""
    return (lambda alpha: censored_moments(alpha, a, n)) if censored else (lambda alpha: _moments(alpha, n))


def _inverse_gaussian(key, mean, shape):
    """Michael, Schucany & Haas (1976), in a form without cancellation for large mean."""
    k_n, k_u = random.split(key)
    y = random.normal(k_n, mean.shape, mean.dtype) ** 2
    t = mean * y / (2 * shape)
    x = mean / (1 + t + jnp.sqrt(t * t + 2 * t))
    u = random.uniform(k_u, mean.shape, mean.dtype)
    return jnp.where(u <= mean / (mean + x), x, mean * mean / x)


def _approx_gibbs(release, law, b):
    """Bernstein & Sheldon's exact draws: 1/vⱼ | S₀ ~ InverseGaussian(1/(b|s_Lⱼ − S₀ⱼ|), 1/b²)
    (Park & Casella), then S₀ | α, v, s_L ~ N (conjugate)."""

    def gibbs_fn(rng_key, gibbs_sites, hmc_sites):
        k_v, k_s = random.split(rng_key)
        alpha, s0 = hmc_sites["alpha"], gibbs_sites["s0"]
        r = jnp.maximum(jnp.abs(release - s0), jnp.finfo(s0.dtype).tiny)
        v = 1.0 / _inverse_gaussian(k_v, 1.0 / (b * r), jnp.full_like(r, 1.0 / b**2))
        mu, cov = law(alpha)
        total = cov + jnp.diag(v)
        mean = mu + cov @ jnp.linalg.solve(total, release - mu)
        post = cov - cov @ jnp.linalg.solve(total, cov)
        post = (post + post.T) / 2 + 1e-12 * jnp.eye(r.shape[0]) * jnp.trace(cov)
        s0 = mean + jnp.linalg.cholesky(post) @ random.normal(k_s, r.shape, r.dtype)
        return {"s0": s0, "v": v}

    return gibbs_fn


def dp_approx(
    rng_key,
    release,
    *,
    n: int,
    a,
    epsilon1,
    prior=None,
    num_warmup: int = 1000,
    num_samples: int = 1000,
    num_chains: int = 1,
    chain_method: str = "sequential",
    progress_bar: bool = False,
    censored: bool = False,
) -> MCMC:
    """DPapprox (seed §3.3.4): the posterior of model (6), :func:`dp_approx_model`, by
    ``numpyro.infer.HMCGibbs``: NUTS for α | S₀ and Bernstein & Sheldon's exact Gibbs draws of the
    mixing variances and S₀. For model (4) (DPapprox p3, p4) pass the second release with n = n₂ and
    the prior from :func:`elicit_priors`. Returns the MCMC object. (``HMCGibbs`` runs several chains
    ``"sequential"`` or ``"parallel"``, not ``"vectorized"``.)

    ``censored=False`` (the seed's) takes S₀(D, a) for the uncensored mean log, biased where parts
    fall below a (at α = (0.5, 0.5, 0.5), a = 0.01 each E log max(xⱼ, a) exceeds E log xⱼ by 0.20).
    ``censored=True`` uses the censored statistic's own mean and covariance
    (:func:`~dpjax.compositional.censored_moments`); as ε → ∞ its posterior is the CLT posterior
    given S₀(D, a) itself, which DPMCMC's record moves cannot reach there (they change S₀ by far more
    than the noise: :class:`~dpjax.infer.StickyRecordsWarning`).

    >>> import jax, jax.numpy as jnp
    >>> m = dp_approx(  # doctest: +SKIP
    ...     jax.random.key(0), jnp.array([-1.6, -1.1, -0.9]), n=500, a=0.01, epsilon1=1.0,
    ...               num_warmup=50, num_samples=50)
    >>> m.get_samples()["alpha"].shape  # doctest: +SKIP
    (50, 3)
    """
    check_key(rng_key)
    release, n, a, epsilon1, d = _check_common(release, n, a, epsilon1, prior)
    _check_gradient_prior(prior)
    b = laplace_scale(a, d, n, epsilon1)
    gibbs = _approx_gibbs(release, _law(n, a, censored), b)
    # α starts at the prior's median, not anywhere in (e⁻², e²): at αⱼ ≲ 0.003 the censored variance is
    # ψ′(αⱼ) ≈ 1/αⱼ² less nearly all of it, lost to float32 cancellation
    nuts = NUTS(functools.partial(dp_approx_model, censored=censored), init_strategy=init_to_median)
    kernel = HMCGibbs(nuts, gibbs_fn=gibbs, gibbs_sites=["s0", "v"])
    mcmc = MCMC(
        kernel,
        num_warmup=positive_int(num_warmup, "num_warmup", minimum=0),
        num_samples=positive_int(num_samples, "num_samples"),
        num_chains=positive_int(num_chains, "num_chains"),
        chain_method=chain_method,
        progress_bar=progress_bar,
    )
    mcmc.run(rng_key, n, a, epsilon1, release, prior=prior)
    return mcmc


# ------------------------------------------------------------------ DPreMCMC
def _log_beta(c):
    return jnp.sum(gammaln(c), -1) - gammaln(jnp.sum(c, -1))


def dirichlet_replicates(b: int, n2: int, a, epsilon1, release=None, *, prior=None, d: int | None = None):
    """Model (5) of the seed (DPreMCMC): b records x₁..x_b, each standing for n₂/b replicated rows,
    with likelihood ∏ᵢ p_Dir(xᵢ | α)^{k}, k = n₂/b, and the release of D₂,
    s_L⁽²⁾ = (1/b) Σᵢ log max(xᵢ, a) + Laplace(0, −d log(a)/(n₂ ε₁)) (the mean over the replicated
    rows is the mean over the b records).

    No power (scaled) site is needed: p_Dir(x | α)^k = Z(α) · Dir(x | k(α − 1) + 1) with
    log Z(α) = log B(k(α − 1) + 1) − k log B(α), so the records are ordinary Dirichlet(k(α − 1) + 1)
    sites (the data-augmentation proposals come from them, as the exact record update needs) and
    b log Z(α) is a ``numpyro.factor`` on α. That Dirichlet is proper only where every
    αⱼ > 1 − 1/k; elsewhere ∫ p_Dir(x | α)^k dx diverges at xⱼ → 0 and model (5) itself is improper
    in α (the censored release does not see xⱼ < a). The model therefore gives log density −inf
    outside {αⱼ > 1 − 1/k}: the posterior is model (5) restricted to the region where it exists.
    """
    d = num_parts(release, prior, d)
    b = positive_int(b, "b")
    n2 = positive_int(n2, "n2")
    if b > n2:
        raise ValueError(f"`b` ({b}) must not exceed `n2` ({n2}): each record stands for n2/b ≥ 1 rows.")
    a = check_threshold(a, d)
    k = n2 / b
    alpha = sample_alpha(prior, d)
    conc = k * (alpha - 1.0) + 1.0
    inside = jnp.all(conc > 0, -1)
    safe = jnp.where(inside, conc, 1.0)
    numpyro.factor("power", jnp.where(inside, b * (_log_beta(safe) - k * _log_beta(alpha)), -jnp.inf))
    with numpyro.plate("replicates", b):
        x = numpyro.sample("x", dist.Dirichlet(safe))
    mechanism = LaplaceMechanism(epsilon=epsilon1, sensitivity=-d * jnp.log(a) / n2)
    statistic = lambda r: jnp.log(jnp.maximum(r["x"], a)) / b
    privatized("s_L", mechanism, statistic, {"x": x}, plate="replicates", obs=release)
    return x


class ReplicatesDriftWarning(UserWarning):
    """DPreMCMC's draws of α₀ = Σⱼ αⱼ lie far above the release's MLE: model (5) has run off (see
    :func:`dp_remcmc`)."""


DRIFT_FACTOR = 3.0  # dp_remcmc warns when the median draw of α₀ exceeds this multiple of the MLE's α₀


def dp_remcmc(
    rng_key,
    release2,
    *,
    b: int,
    n2: int,
    a,
    epsilon1,
    prior=None,
    num_warmup: int = 1000,
    num_samples: int = 1000,
    num_chains: int = 1,
    chain_method: str = "vectorized",
    max_tree_depth: int = 5,
    init_alpha=None,
    progress_bar: bool = False,
) -> MCMC:
    """DPreMCMC (seed §3.3.2, eq. (5)): :class:`~dpjax.infer.DataAugmentationKernel` on
    :func:`dirichlet_replicates` (b records, power n₂/b). α starts at ``init_alpha`` (default: the
    Dirichlet MLE of the release if it exists, raised to at least 1, else 2 per part), inside the
    region αⱼ > 1 − b/n₂ where model (5) is proper. One record now moves the release's statistic by
    up to n₂/b times its sensitivity, so the record acceptance is bounded below only by
    e^{−ε₁ n₂ / b}. Returns the MCMC object.

    **Caution: model (5) is degenerate.** Integrating the records out of model (5) leaves
    π₀(α) Z(α)^b E[p_Lap] (see :func:`dirichlet_replicates`). Along every ray α = t·u, Z(α)^b grows
    like t^{n₂(d−1)/2}, while the release term stays bounded (records concentrated at one point cost it
    a fixed amount), so only the prior's tail holds α back and the posterior of model (5) sits at
    α far above α_true. ``benchmarks/remcmc_degeneracy.py`` measures it at the seed's timed cell
    (n = 5 000, α₅, ε = 1.5, b = 5, p4): +17 000 nats per decade of t against a release term of
    −36 … −43 nats; this sampler's chains reach α₀ ≈ 2·10⁴ (α_true: 22), and the seed's own
    Metropolis-within-Gibbs sampler of model (5) reaches α₀ ≈ 10⁴ in 50 000 iterations. The seed's
    DPreMCMC figures cannot come from model (5) run to convergence (a chain without the power in the
    record step, which has no joint target, stays near the MLE there). When the median draw of α₀
    exceeds 3× the α₀ of the release's MLE, a :class:`ReplicatesDriftWarning` says so; use
    :func:`dp_mcmc` (exact) instead.

    >>> import jax, jax.numpy as jnp
    >>> m = dp_remcmc(  # doctest: +SKIP
    ...     jax.random.key(0), jnp.array([-1.6, -1.1, -0.9]), b=5, n2=100, a=0.01, epsilon1=1.0,
    ...               num_warmup=50, num_samples=50)
    >>> m.get_samples()["alpha"].shape  # doctest: +SKIP
    (50, 3)
    """
    check_key(rng_key)
    release2, n2, a, epsilon1, d = _check_common(release2, n2, a, epsilon1, prior)
    _check_gradient_prior(prior)
    b = positive_int(b, "b")
    num_chains = positive_int(num_chains, "num_chains")
    from .mle import mle_unchecked

    fit = np.asarray(mle_unchecked(release2).alpha, float)  # the start and the drift check's reference
    if init_alpha is None:
        init_alpha = np.maximum(fit, 1.0) if np.all(np.isfinite(fit)) else np.full(d, 2.0)
    init_alpha = np.asarray(init_alpha, float)
    if init_alpha.shape != (d,) or not np.all(init_alpha > 1 - b / n2):
        raise ValueError(f"`init_alpha` must have shape ({d},) with every αⱼ > 1 − b/n2 = {1 - b / n2:g}.")
    start = jnp.asarray(init_alpha, jnp.result_type(float))
    init = {"alpha": start}
    init = _per_chain(init, num_chains)
    kernel = DataAugmentationKernel(NUTS(dirichlet_replicates, max_tree_depth=max_tree_depth))
    mcmc = MCMC(
        kernel,
        num_warmup=positive_int(num_warmup, "num_warmup", minimum=0),
        num_samples=positive_int(num_samples, "num_samples"),
        num_chains=num_chains,
        chain_method=chain_method,
        progress_bar=progress_bar,
    )
    mcmc.run(rng_key, b, n2, a, epsilon1, release2, prior=prior, init_params=init)
    _warn_drift(mcmc.get_samples()["alpha"], float(np.sum(fit)))
    return mcmc


def _warn_drift(alpha, reference):
    """``reference``: α₀ of the release's MLE (NaN where it does not exist: no check)."""
    median = float(np.median(np.sum(np.asarray(alpha, float), -1)))
    if np.isfinite(reference) and median > DRIFT_FACTOR * reference:
        warnings.warn(
            f"DPreMCMC's draws of α₀ = Σⱼ αⱼ have median {median:.4g}, over {DRIFT_FACTOR:g}× the α₀ of the "
            f"release's MLE ({reference:.4g}): model (5)'s α-marginal grows like t^(n₂(d−1)/2) along every "
            "ray α = t·u and only the prior's tail bounds it, so these draws do not approximate the "
            "posterior of the release. Use dp_mcmc (exact) instead.",
            ReplicatesDriftWarning,
            stacklevel=3,
        )
