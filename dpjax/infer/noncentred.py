"""Non-centred θ-moves: ancillarity–sufficiency interweaving (Yu & Meng 2011) for data augmentation.

The centred step θ | x crawls when the release is weak compared with the confidential data.
Here the latent records are re-expressed as noise variables u with a θ-free law, x = g(θ, u):

- loc-scale families (Normal, Laplace, Cauchy, Logistic) and Exponential: u = (x - loc) / scale,
  the transformation of ``numpyro.infer.reparam.LocScaleReparam(centered=0)``; MultivariateNormal:
  u = L⁻¹(x − loc) with L its ``scale_tril``;
- Bernoulli, Categorical, Poisson and negative binomial (numpyro's GammaPoisson and its
  NegativeBinomial subclasses): u ~ Uniform(F(x-1), F(x)) drawn given x (inverse CDF);
- Gamma (and Chi2): u = x · rate ~ Gamma(concentration, 1), θ-free when only the rate depends on θ (a
  variance's scale); where the concentration does too, the target carries log q_θ(u), as the Dirichlet's;
- Dirichlet: a transport map, not a θ-free law (below);
- any other family registered with :func:`register_noise_representation`.

Dirichlet records have no cheap exact map (the Gamma quantile). They are written through their Gamma
parts, x = G / ΣG with Gⱼ ~ Gamma(αⱼ). Given x, G is drawn exactly: the total R = ΣG ~ Gamma(α₀) is
independent of x, so G = R·x. Each part's shape is then raised m = ``DIRICHLET_SHAPE_STEPS`` times,
Gamma(α) = Gamma(α + 1)·U^(1/α) with U uniform and independent (given G, the Gamma(α + 1) factor is
G + Exp(1), so the step is drawn exactly too), and G_m ~ Gamma(α + m) is held through its
Wilson–Hilferty coordinate, G_m = (α+m)(1 − 1/(9(α+m)) + z/(3√(α+m)))³, z ≈ N(0, 1). u = (z, log U₀, …,
log U_{m−1}): the uniforms are α-free; the law q_θ(z) is known but not quite θ-free, so the target
includes Σᵢ log q_θ(uᵢ) (the representation's ``log_density``) and the moves stay exact. The
Wilson–Hilferty error is O(1/shape), and raising the shape is what keeps q nearly θ-free for a part with
α ≈ 1: on the ATUS compositions (α ≈ (8, 1.1, 11)) a ridge move that adds 160 records with the noise
held changed Σ log q over the 7 866 slots by −18 nats with m = 0 and by −0.12 with m = 4, which
widened the stretch of n one iteration's ridge moves can cover from sd 17–20 to 92
(``lab/atus_ridge_curve.py``); over 8 000 records with α = (1.2, 2.5, 20) a 30 % move
changes Σ log q by −6.9 nats at m = 0 and by −0.19 at m = 4 (float32; ``tests/test_noncentred.py``).
``noncentred_moves="auto"`` includes them since the moves adapt a dense covariance
(:mod:`dpjax.infer.mh`): where the release pins the ratios of α but hardly its scale, the θ-step of
plain DA crawls along that ridge and these moves cross it. Measured with m = 0 (2 chains × 2 000
draws): DPMCMC at n = 1 000, ε₁ = 0.375, α = (2.2, 3.3, 4.4) (``benchmarks/dpmcmc_mixing.py``,
float32), ESS of α 3–4 without them (a posterior sd of α₁ of 1.1 where the mixing chains give 2.8)
and ~880 with 5 per iteration, ~440× the ESS per second; the ATUS
compositions with n known at ε_s = 1 (float64), ESS of α₁ 11–12 per 2 000 draws and 190–225.

The inverse-CDF map is only as exact as F. JAX's float32 ``gammaincc`` errs by 2e-5 at a Poisson
rate of 100 and 6e-3 at 12 000, which would target a distorted record law; in float64 the Poisson CDF
(:mod:`dpjax.infer.poisson_cdf`, Temme's expansion from a rate of 10³) is exact to round-off at every
rate, and fast (0.13 µs a value at 10⁶ against ``gammaincc``'s 41 µs; ``gammaincc`` errs by up to 6e-7).
The representation is therefore used only where the rates are at most ``POISSON_RATE_LIMIT[dtype]``:
a move whose proposal leaves that region is rejected, and no move is made from a state outside it.
A Metropolis move restricted to a fixed region still leaves the target invariant (detailed balance
holds pairwise), so the chain stays exact at any rate.

With u fixed, θ moves by random-walk Metropolis in its unconstrained space on
p(θ | u, s) ∝ p(θ) η(s | T(g(θ, u))). The target is read off one trace of the model with the
records rebuilt from u: the θ sites' priors plus the privatized sites' log densities (which are
log η(s | T)). Each move is O(n · dim T) and vectorised over the records.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpyro.distributions as dist
from jax import random
from jax.flatten_util import ravel_pytree
from jax.scipy.special import betainc, gammaln, ndtri
from numpyro import handlers
from numpyro.distributions import biject_to
from numpyro.infer.util import log_density
from numpyro.primitives import Messenger

from ..mechanisms.base import concrete
from ..primitives import INFER_KEY
from .mh import RWState, accept, adapt, init_rw, proposer
from .poisson_cdf import poisson_cdf
from .samplers import log_gamma, uniform

__all__ = [
    "NoiseRepresentation",
    "register_noise_representation",
    "init_nc_state",
    "noise_of",
    "noise_supported",
    "MovesInfo",
    "build_kernel",
    "resolve_moves",
    "representable",
    "AUTO_NEGATIVE_BINOMIAL_MEAN",
    "MaskReleases",
    "NEGATIVE_BINOMIAL_MEAN_LIMIT",
    "POISSON_RATE_LIMIT",
    "base_distribution",
    "dirichlet_log_density",
    "to_noise",
]

TARGET_ACCEPT = 0.3
#: largest Poisson rate whose inverse-CDF noise map is used, per float type (see the module docstring)
POISSON_RATE_LIMIT = {jnp.dtype("float32"): 100.0, jnp.dtype("float64"): float("inf")}
#: largest negative-binomial mean whose inverse-CDF map is used: JAX's float32 ``betainc`` errs by up to
#: 5e-5 at mean 30 and 3e-3 at 1 000; float64 by 1e-11 at 1 000 (the same rule as the Poisson's)
NEGATIVE_BINOMIAL_MEAN_LIMIT = {jnp.dtype("float32"): 30.0, jnp.dtype("float64"): float("inf")}
#: ``noncentred_moves="auto"`` leaves negative-binomial records above this mean to plain DA: JAX's
#: float64 ``betainc`` grows slow with the mean (as ``gammaincc`` did for the Poisson before
#: :mod:`dpjax.infer.poisson_cdf`: 3 s per iteration for 10⁴ records at a rate of 12 000).
AUTO_NEGATIVE_BINOMIAL_MEAN = 1000.0


def base_distribution(fn):
    """``fn`` without its Independent / Expanded / Masked wrappers."""
    while isinstance(fn, (dist.Independent, dist.ExpandedDistribution, dist.MaskedDistribution)):
        fn = fn.base_dist
    return fn


class NoiseRepresentation(NamedTuple):
    """How a record family is written as x = g(θ, u) with a θ-free law of u.

    - **to_noise(rng_key, fn, x) -> u** – u given the record x under its distribution ``fn`` (a
      draw of u | x for a discrete family);
    - **from_noise(fn, u, dtype) -> x** – the record g(θ, u) under ``fn`` (θ enters through it);
    - **exact(fn, dtype) -> bool array** – where the map is exact in ``dtype`` (None: everywhere).
      A move whose proposal leaves this region is rejected, so the chain stays exact.
    - **log_density(fn, u) -> array** – per record, log q_θ(u) when the law of u depends on θ (a
      transport map such as the Dirichlet's); None for a θ-free law, whose density cancels.
    """

    to_noise: Callable
    from_noise: Callable
    exact: Callable | None = None
    log_density: Callable | None = None


_REPRESENTATIONS: dict[type, NoiseRepresentation] = {}


def register_noise_representation(family: type, to_noise, from_noise, exact=None, log_density=None) -> None:
    """Give a record distribution class (and its subclasses) a noise representation, so the
    non-centred θ-moves of :class:`~dpjax.infer.DataAugmentationKernel` apply to its records.

    For Weibull records whose ``scale`` (not ``concentration``) depends on θ, u = x / scale has the
    θ-free law Weibull(1, concentration)::

        register_noise_representation(
            dist.Weibull, lambda key, fn, x: x / fn.scale, lambda fn, u, dtype: u * fn.scale
        )

    The registration is global and trusted: u must have the same law for every θ the model can
    take (a Weibull whose ``concentration`` depends on θ has no such representation), or, where it
    does not, ``log_density(fn, u)`` must give its per-record log density q_θ(u) (as the
    Dirichlet's does), or the moves target the wrong posterior.
    """
    if not (isinstance(family, type) and issubclass(family, dist.Distribution)):
        raise ValueError(f"`family` must be a numpyro Distribution class, got {family!r}.")
    optional = (exact, log_density)
    if not (callable(to_noise) and callable(from_noise) and all(f is None or callable(f) for f in optional)):
        raise ValueError("`to_noise`, `from_noise` (and `exact`, `log_density`, if given) must be callables.")
    _REPRESENTATIONS[family] = NoiseRepresentation(to_noise, from_noise, exact, log_density)


def _representation(fn) -> NoiseRepresentation | None:
    return next((_REPRESENTATIONS[k] for k in type(fn).__mro__ if k in _REPRESENTATIONS), None)


def noise_supported(fn) -> bool:
    """Whether a record site's distribution has a noise representation here (θ-free noise, or a
    transport map such as the Dirichlet's)."""
    return _representation(base_distribution(fn)) is not None


def _uniform_within(interval):
    """to_noise of a discrete family: u ~ Uniform[F(x - 1), F(x)) given x."""

    def to_noise(rng_key, fn, x):
        lower, upper = interval(fn, x)
        return lower + uniform(rng_key, jnp.shape(x)) * (upper - lower)

    return to_noise


def _bernoulli_interval(fn, x):
    q = 1.0 - fn.probs
    return jnp.where(x > 0, q, 0.0), jnp.where(x > 0, 1.0, q)


def _categorical_interval(fn, x):
    probs = jnp.broadcast_to(fn.probs, jnp.shape(x) + fn.probs.shape[-1:])
    upper = jnp.take_along_axis(jnp.cumsum(probs, -1), x[..., None].astype(jnp.int32), -1)[..., 0]
    return upper - jnp.take_along_axis(probs, x[..., None].astype(jnp.int32), -1)[..., 0], upper


def _categorical_from_noise(fn, u, dtype):
    cum = jnp.cumsum(jnp.broadcast_to(fn.probs, jnp.shape(u) + fn.probs.shape[-1:]), -1)
    return jnp.sum(u[..., None] >= cum[..., :-1], -1).astype(dtype)


def _quantile(cdf, mean, sd, u, dtype, skew=0.0):
    """Smallest k ≥ 0 with ``cdf(k) > u`` for a count law of ``mean``, ``sd`` (and ``skew``, for the
    Cornish–Fisher guess, which brackets it within ±3 for almost every u; widened to ±(10 sd + 10), then
    to mean + 40 sd + 40, when it misses); bisection finishes."""
    z = ndtri(jnp.clip(u, 1e-30, 1.0 - 1e-7))
    guess = jnp.floor(mean + sd * (z + skew * (z**2 - 1.0) / 6.0))
    lo, hi = guess - 3.0, guess + 3.0
    wide_lo, wide_hi = jnp.floor(mean - 10 * sd - 10), jnp.ceil(mean + 10 * sd + 10)
    lo = jnp.where((lo >= 0) & (cdf(lo) <= u), lo, jnp.maximum(wide_lo, -1.0))
    lo = jnp.where((lo >= 0) & (cdf(lo) > u), -1.0, lo)
    hi = jnp.where(cdf(hi) > u, hi, wide_hi)
    hi = jnp.where(cdf(hi) > u, hi, jnp.ceil(mean + 40 * sd + 40))

    def body(bounds):
        lo, hi = bounds
        mid = jnp.floor((lo + hi) / 2)
        above = cdf(mid) > u
        return jnp.where(above, lo, mid), jnp.where(above, mid, hi)

    _, hi = jax.lax.while_loop(lambda b: jnp.any(b[1] - b[0] > 1), body, (lo, hi))
    return hi.astype(dtype)


def _poisson_from_noise(fn, u, dtype):
    rate = jnp.broadcast_to(fn.rate, jnp.shape(u))
    sd = jnp.sqrt(rate)
    return _quantile(partial(poisson_cdf, rate=rate), rate, sd, u, dtype, skew=1.0 / sd)


def _gamma_poisson_cdf(k, fn):
    """P(X ≤ k) of a Gamma(a, b)-mixed Poisson (a negative binomial): I_q(a, k + 1), q = b / (1 + b)."""
    q = fn.rate / (1.0 + fn.rate)
    return jnp.where(k < 0, 0.0, betainc(fn.concentration, jnp.maximum(k, 0) + 1.0, q))


def _gamma_poisson_from_noise(fn, u, dtype):
    mean = jnp.broadcast_to(fn.concentration / fn.rate, jnp.shape(u))
    sd = jnp.sqrt(mean * (1.0 + 1.0 / fn.rate))
    return _quantile(partial(_gamma_poisson_cdf, fn=fn), mean, sd, u, dtype)


def _solve_lower(scale_tril, b):
    """L⁻¹ b for each vector b along the last axis, by forward substitution over its (few)
    coordinates: elementwise over the records, no LAPACK call (XLA's batched triangular solve over
    thousands of records, vmapped over chains on several CPU devices, deadlocked)."""
    u = []
    for i in range(b.shape[-1]):
        partial_sum = sum((scale_tril[..., i, j] * u[j] for j in range(i)), jnp.zeros_like(b[..., i]))
        u.append((b[..., i] - partial_sum) / scale_tril[..., i, i])
    return jnp.stack(u, -1)


def _poisson_exact(fn, dtype, limit=None):
    limit = POISSON_RATE_LIMIT[jnp.dtype(dtype)] if limit is None else limit
    return jnp.all(fn.rate <= limit)


def _gamma_poisson_exact(fn, dtype, limit=None):
    own = NEGATIVE_BINOMIAL_MEAN_LIMIT[jnp.dtype(dtype)]
    return jnp.all(fn.concentration / fn.rate <= (own if limit is None else min(own, limit)))


for _family in (dist.Normal, dist.Laplace, dist.Cauchy, dist.Logistic):  # u = (x - loc) / scale
    register_noise_representation(
        _family, lambda key, fn, x: (x - fn.loc) / fn.scale, lambda fn, u, dtype: fn.loc + fn.scale * u
    )
register_noise_representation(  # u = L⁻¹(x − loc), L the Cholesky factor of the covariance
    dist.MultivariateNormal,
    lambda key, fn, x: _solve_lower(fn.scale_tril, x - fn.loc),
    lambda fn, u, dtype: fn.loc + jnp.sum(fn.scale_tril * u[..., None, :], -1),
)
register_noise_representation(
    dist.Exponential, lambda key, fn, x: x * fn.rate, lambda fn, u, dtype: u / fn.rate
)
register_noise_representation(  # u = x · rate ~ Gamma(concentration, 1): its density is θ-free unless
    dist.Gamma,  # the concentration depends on θ, and the target carries it either way
    lambda key, fn, x: x * fn.rate,
    lambda fn, u, dtype: u / fn.rate,
    log_density=lambda fn, u: dist.Gamma(fn.concentration).log_prob(u),
)
for _family in (dist.BernoulliProbs, dist.BernoulliLogits):
    register_noise_representation(
        _family,
        _uniform_within(_bernoulli_interval),
        lambda fn, u, dtype: (u >= 1.0 - fn.probs).astype(dtype),
    )
for _family in (dist.CategoricalProbs, dist.CategoricalLogits):
    register_noise_representation(_family, _uniform_within(_categorical_interval), _categorical_from_noise)
register_noise_representation(
    dist.Poisson,
    _uniform_within(lambda fn, x: (poisson_cdf(x - 1.0, fn.rate), poisson_cdf(x, fn.rate))),
    _poisson_from_noise,
    _poisson_exact,
)
register_noise_representation(  # NegativeBinomialProbs/Logits and NegativeBinomial2 are GammaPoisson
    dist.GammaPoisson,
    _uniform_within(lambda fn, x: (_gamma_poisson_cdf(x - 1.0, fn), _gamma_poisson_cdf(x, fn))),
    _gamma_poisson_from_noise,
    _gamma_poisson_exact,
)


#: shape-raising steps of the Dirichlet noise map: Gamma(α) = Gamma(α + m) · Π U_i^(1/(α+i)), i < m
DIRICHLET_SHAPE_STEPS = 4


def _wilson_hilferty(alpha):
    """(1 − 1/(9α), 1/(3√α)): G = α (a + b z)³ is Gamma(α) for z ~ N(0, 1), to O(1/α)."""
    return 1 - 1 / (9 * alpha), 1 / (3 * jnp.sqrt(alpha))


def _dirichlet_to_noise(rng_key, fn, x):
    """u given x: G = R·x with R ~ Gamma(α₀) drawn (independent of x); then m shape-raising steps,
    G_{i+1} = G_i + E_i with E_i ~ Exp(1) (the law of Gamma(α+i+1) given its U^(1/(α+i)) product,
    so log U_i = (α+i)(log G_i − log G_{i+1}) are independent uniforms' logs); z = WH⁻¹(G_m) at
    shape α + m. u stacks (z, log U_0, …, log U_{m−1}) on a trailing axis."""
    m, alpha = DIRICHLET_SHAPE_STEPS, fn.concentration  # per-part terms at α's own shape, not per record
    key_r, key_e = random.split(rng_key)
    log_r = log_gamma(key_r, jnp.broadcast_to(jnp.sum(alpha, -1), jnp.shape(x)[:-1]))
    log_g0 = log_r[..., None] + jnp.log(x)
    # log G_k = log(G_0 + E_0 + … + E_{k−1}) from G_0 and the running sums (a tiny G_0 stays exact),
    # each straight from its inputs: chained, log G_{k+1} from log G_k, XLA's fusion recomputed the
    # chain (2^m times; 5.4 µs per 5-part record, now a tenth of that)
    exponentials = -jnp.log1p(-uniform(key_e, (m,) + jnp.shape(x), log_g0.dtype))
    log_sums = jnp.log(jnp.cumsum(exponentials, 0))
    log_g = [log_g0] + [jnp.logaddexp(log_g0, log_sums[k]) for k in range(m)]
    log_u = [(alpha + i) * (log_g[i] - log_g[i + 1]) for i in range(m)]
    shape = alpha + m
    a, b = _wilson_hilferty(shape)
    z = (jnp.exp((log_g[m] - jnp.log(shape)) / 3) - a) / b
    return jnp.stack([z, *log_u], -1)


def _dirichlet_log_parts(fn, u):
    """(shape α + m, w = the cube root of G_m / (α + m), log w, log G_m, log G); the per-part terms
    at α's own shape (not once per record)."""
    alpha = fn.concentration
    shape = alpha + DIRICHLET_SHAPE_STEPS
    a, b = _wilson_hilferty(shape)
    w = a + b * u[..., 0]  # the map needs w > 0
    log_w = jnp.log(jnp.where(w > 0, w, 1.0))
    log_gm = jnp.log(shape) + 3 * log_w
    log_g = log_gm + sum(u[..., 1 + i] * (1 / (alpha + i)) for i in range(DIRICHLET_SHAPE_STEPS))
    return shape, w, log_w, log_gm, log_g


def _dirichlet_from_noise(fn, u, dtype):
    _, w, _, _, log_g = _dirichlet_log_parts(fn, u)
    x = jax.nn.softmax(log_g, -1)  # on the log scale: a part with tiny α does not underflow to 0/0
    return jnp.where(jnp.all(w > 0, -1, keepdims=True), x, jnp.nan).astype(dtype)


def dirichlet_log_density(fn, u):
    """log q_α(u) of Dirichlet records' Wilson–Hilferty noise u (``fn`` the records' Dirichlet):
    Σⱼ log [Gamma(G_m,ⱼ | αⱼ + m) dG_m,ⱼ/dzⱼ], dG/dz = 3(α+m)b w² = √(α+m) w²; −inf where w ≤ 0.
    The log U parts are α-free (their law cancels in every ratio) and left out."""
    shape, w, log_w, log_gm, _ = _dirichlet_log_parts(fn, u)
    per_part = 0.5 * jnp.log(shape) - gammaln(shape)
    log_q = (shape - 1) * log_gm - shape * w**3 + 2 * log_w + per_part  # G_m = (α + m) w³
    return jnp.sum(jnp.where(w > 0, log_q, -jnp.inf), -1)


register_noise_representation(
    dist.Dirichlet, _dirichlet_to_noise, _dirichlet_from_noise, log_density=dirichlet_log_density
)


def to_noise(rng_key, fn, x):
    """u given the record ``x`` under its distribution ``fn``, by the registered noise representation of
    ``fn``'s family (``rng_key`` draws the noise a discrete record leaves free)."""
    fn = base_distribution(fn)
    return _representation(fn).to_noise(rng_key, fn, x)


def _from_noise(fn, u, dtype):
    fn = base_distribution(fn)
    return _representation(fn).from_noise(fn, u, dtype)


def representable(fn, dtype, limit=None) -> jax.Array:
    """Whether the noise map of a record site is exact at its current parameters in ``dtype``
    (for Poisson: rates at most ``limit``, by default ``POISSON_RATE_LIMIT[dtype]``; for a negative
    binomial: means at most the least of ``limit`` and ``NEGATIVE_BINOMIAL_MEAN_LIMIT[dtype]``)."""
    fn = base_distribution(fn)
    rep = _representation(fn)
    if rep is None or rep.exact is None:
        return jnp.array(True)
    return rep.exact(fn, dtype) if limit is None else rep.exact(fn, dtype, limit)


class _RecordsFromNoise(Messenger):
    """Set each latent record site to g(θ, u) given its (θ-dependent) distribution, and mask its
    density: in (θ, u) coordinates the records contribute the noise law only, θ-free (nothing to
    add) or q_θ(u), summed into ``log_noise`` over every slot (a records plate's empty slots hold
    noise of the same law)."""

    def __init__(self, fn, noise, dtypes):
        self.noise, self.dtypes = noise, dtypes
        self.exact = jnp.array(True)
        self.log_noise = jnp.zeros(())
        super().__init__(fn)

    def process_message(self, msg):
        if msg["type"] == "sample" and msg["name"] in self.noise:
            name = msg["name"]
            self.exact = self.exact & representable(msg["fn"], jnp.result_type(float))
            msg["value"] = _from_noise(msg["fn"], self.noise[name], self.dtypes[name])
            fn = base_distribution(msg["fn"])
            log_density = _representation(fn).log_density
            if log_density is not None:
                self.log_noise = self.log_noise + jnp.sum(log_density(fn, self.noise[name]))
            msg["fn"] = msg["fn"].mask(False)


def noise_of(rng_key, model, theta, records, model_args, model_kwargs):
    """u for the current (θ, x): one trace of the model with both conditioned."""
    tr = handlers.trace(handlers.condition(model, data={**theta, **records})).get_trace(
        *model_args, **model_kwargs
    )
    keys = random.split(rng_key, len(records))
    return {k: to_noise(key, tr[k]["fn"], records[k]) for key, k in zip(keys, sorted(records))}


class MaskReleases(Messenger):
    """Drop the privatized sites from a log density (their log η is the caller's, or irrelevant)."""

    def process_message(self, msg):
        if msg["type"] == "sample" and INFER_KEY in (msg.get("infer") or {}):
            msg["fn"] = msg["fn"].mask(False)


def _log_target(model, noise, dtypes, model_args, model_kwargs, theta, releases=True):
    """log p(θ) + log p(public data | θ) + log η(s | T(g(θ, u))) (without the last term when
    ``releases`` is false: the records are then not rebuilt), and the rebuilt records; -inf where
    the noise map is not exact in the working float type."""
    rebuilt = _RecordsFromNoise(model, noise, dtypes)
    lp, tr = log_density(rebuilt if releases else MaskReleases(rebuilt), model_args, model_kwargs, theta)
    return jnp.where(rebuilt.exact, lp + rebuilt.log_noise, -jnp.inf), {k: tr[k]["value"] for k in noise}


def unconstrain(theta, supports):
    """θ flattened in its unconstrained space (``ravel_pytree`` order), and ``constrain(flat) -> (θ,
    log |J|)``, J the Jacobian of that map."""
    transforms = {k: biject_to(supports[k]) for k in theta}
    flat, unravel = ravel_pytree({k: transforms[k].inv(theta[k]) for k in theta})

    def constrain(flat):
        phi = unravel(flat)
        theta = {k: transforms[k](v) for k, v in phi.items()}
        return theta, sum(jnp.sum(transforms[k].log_abs_det_jacobian(phi[k], theta[k])) for k in phi)

    return flat, constrain


def unconstrained_target(model, noise, dtypes, supports, theta, model_args, model_kwargs):
    """θ flattened in its unconstrained space, and ``log_density(flat, given={}, releases=True)``: the
    log target of :func:`_log_target` there (plus log |J|) with the sites ``given`` (e.g. n) fixed,
    returning ``(log density, θ, rebuilt records)``. With ``releases=False`` the log η term is left
    out: a move's start adds the log η that the record sweep's residuals already give, which spares
    one O(n) pass over the records."""
    flat, constrain = unconstrain(theta, supports)

    def log_density(flat, given={}, releases=True):  # noqa: B006 (read only)
        theta, log_jac = constrain(flat)
        log_p, recs = _log_target(
            model, noise, dtypes, model_args, model_kwargs, {**theta, **given}, releases
        )
        return log_p + log_jac, theta, recs

    return flat, log_density


class MovesInfo(NamedTuple):
    """- **accept_rate** – mean acceptance probability of this iteration's non-centred θ-moves."""

    accept_rate: jax.Array


def build_kernel(model, supports, num_moves: int):
    """The non-centred θ-moves as a stage: ``kernel(rng_key, state, theta, records, log_eta, learn,
    model_args, model_kwargs) -> (theta, records, state, MovesInfo)``, ``num_moves`` random-walk
    Metropolis moves of θ with the record noise u held fixed (x = g(θ, u)), ``state`` the
    :class:`~dpjax.infer.mh.RWState` of their proposal (:func:`init_nc_state`), adapted where ``learn``
    (the warmup). ``log_eta``: log η(s | T) of the current records (the record sweep's), added to the
    start's release-free log target. The records returned are g(θ_new, u) (the current records when
    every move is rejected)."""

    def kernel(rng_key, state: RWState, theta, records, log_eta, learn, model_args, model_kwargs):
        key_u, key_moves = random.split(rng_key)
        noise = noise_of(key_u, model, theta, records, model_args, model_kwargs)
        dtypes = {k: v.dtype for k, v in records.items()}
        flat, log_density = unconstrained_target(
            model, noise, dtypes, supports, theta, model_args, model_kwargs
        )
        propose = proposer(state)

        def move(carry, key):
            flat, lp, theta, recs = carry
            k1, k2 = random.split(key)
            prop = propose(k1, flat)
            lp_new, theta_new, recs_new = log_density(prop)
            # no move from outside the exact region (lp = -inf): its noise u would be inexact
            carry, info = accept(
                k2, lp_new - lp, (prop, lp_new, theta_new, recs_new), carry, jnp.isfinite(lp)
            )
            return carry, info.accept_prob

        lp0 = log_density(flat, releases=False)[0] + log_eta
        (flat, _, theta, records), probs = jax.lax.scan(
            move, (flat, lp0, theta, records), random.split(key_moves, num_moves)
        )
        rate = jnp.mean(probs)
        return theta, records, adapt(state, flat, rate, TARGET_ACCEPT, learn), MovesInfo(rate)

    return kernel


def init_nc_state(theta, supports) -> RWState:
    """The moves' random-walk state before adaptation (step 0.5 on unconstrained θ)."""
    flat, _ = unconstrain(theta, supports)
    return init_rw(flat.shape[0], flat.dtype, 0.5)


def _auto_limit(fn):
    """The mean above which ``"auto"`` leaves a record site's moves out for cost (None: exactness only)."""
    return AUTO_NEGATIVE_BINOMIAL_MEAN if isinstance(base_distribution(fn), dist.GammaPoisson) else None


def resolve_moves(setting: int | str, tr, spec, *, held: bool = False, stacklevel: int = 2) -> int:
    """How many non-centred θ-moves per iteration ``setting`` (``noncentred_moves``: ``"auto"`` or an
    int) gives for the model of trace ``tr``: 0 where a record site has no noise representation, a
    record density is scaled, θ is discrete or ``held``; ``"auto"`` also leaves them out (with a
    warning) for count records whose means the noise map cannot represent exactly (float32) or only
    slowly (negative binomial), and an int that cannot apply is a ``ValueError``."""
    blockers = [k for k in spec.latent_records if not noise_supported(tr[k]["fn"])]
    # a scaled record density (a power likelihood) is not the noise law's push-forward
    blockers += [k for k in spec.latent_records if tr[k].get("scale") is not None and k not in blockers]
    blockers += [k for k in spec.theta if tr[k]["fn"].support.is_discrete]
    if held:
        blockers += list(spec.theta)
    dtype = jnp.result_type(float)
    costly = [k for k in spec.latent_records if k not in blockers and concrete(tr[k]["fn"])]
    with jax.ensure_compile_time_eval():  # concrete parameters stay concrete under a user's jit
        costly = [k for k in costly if not bool(representable(tr[k]["fn"], dtype, _auto_limit(tr[k]["fn"])))]
    if setting == "auto" and costly and not blockers:
        why = (
            f"Poisson rates above {POISSON_RATE_LIMIT[jnp.dtype(dtype)]:g} or negative-binomial means above "
            f"{NEGATIVE_BINOMIAL_MEAN_LIMIT[jnp.dtype(dtype)]:g}, where the inverse-CDF noise map is inexact "
            "in float32 (enable 64-bit floats)"
            if jnp.dtype(dtype) == jnp.float32
            else f"negative-binomial means above {AUTO_NEGATIVE_BINOMIAL_MEAN:g}, where the inverse-CDF "
            "noise map is slow (JAX's betainc)"
        )
        warnings.warn(
            f"Non-centred θ-moves are off: record sites {costly} have {why}; plain data augmentation stays "
            "exact. Force the moves with noncentred_moves=5: those that would need an inexact map are "
            "rejected.",
            stacklevel=stacklevel,
        )
        blockers = costly
    if setting == "auto":
        return 0 if blockers else 5
    if setting and blockers:
        raise ValueError(
            f"`noncentred_moves` needs a noise representation of every latent record site and a "
            f"continuous θ; not available for sites {blockers}."
        )
    return setting
