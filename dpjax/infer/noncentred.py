"""Non-centred θ-moves: ancillarity–sufficiency interweaving (Yu & Meng 2011) for data augmentation.

The centred step θ | x crawls when the release is weak compared with the confidential data.
Here the latent records are re-expressed as noise variables u with a θ-free law, x = g(θ, u):

- loc-scale families (Normal, Laplace, Cauchy, Logistic) and Exponential: u = (x - loc) / scale,
  the transformation of ``numpyro.infer.reparam.LocScaleReparam(centered=0)``;
- Bernoulli, Categorical and Poisson: u ~ Uniform(F(x-1), F(x)) drawn given x (inverse CDF).

The inverse-CDF map is only as exact as F. JAX's float32 ``gammaincc`` errs by 2e-5 at a Poisson
rate of 100 and 6e-3 at 12 000, which would target a distorted record law; float64 is accurate at
every rate. The representation is therefore used only where the rates are at most
``POISSON_RATE_LIMIT[dtype]``: a move whose proposal leaves that region is rejected, and no move is
made from a state outside it. A Metropolis move restricted to a fixed region still leaves the
target invariant (detailed balance holds pairwise), so the chain stays exact at any rate.

With u fixed, θ moves by random-walk Metropolis in its unconstrained space on
p(θ | u, s) ∝ p(θ) η(s | T(g(θ, u))). The target is read off one trace of the model with the
records rebuilt from u: the θ sites' priors plus the privatized sites' log densities (which are
log η(s | T)). Each move is O(n · dim T) and vectorised over the records.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpyro.distributions as dist
from jax import random
from jax.flatten_util import ravel_pytree
from jax.scipy.special import gammaincc, ndtri
from numpyro import handlers
from numpyro.distributions import biject_to
from numpyro.infer.util import log_density
from numpyro.primitives import Messenger

from .rwm import adapt, proposal_scale

__all__ = [
    "NCState",
    "init_nc_state",
    "noise_of",
    "noise_supported",
    "noncentred_moves",
    "representable",
    "AUTO_POISSON_RATE",
    "POISSON_RATE_LIMIT",
    "base_distribution",
]

_LOC_SCALE = (dist.Normal, dist.Laplace, dist.Cauchy, dist.Logistic)
_DISCRETE = (
    dist.BernoulliProbs,
    dist.BernoulliLogits,
    dist.CategoricalProbs,
    dist.CategoricalLogits,
    dist.Poisson,
)
TARGET_ACCEPT = 0.3
#: largest Poisson rate whose inverse-CDF noise map is used, per float type (see the module docstring)
POISSON_RATE_LIMIT = {jnp.dtype("float32"): 100.0, jnp.dtype("float64"): float("inf")}
#: ``noncentred_moves="auto"`` leaves Poisson records above this rate to plain DA: JAX's float64
#: ``gammaincc`` costs ~8 µs a value at rate 12 000 (3 s per iteration for 10⁴ records), and records
#: that large pin θ anyway, so the centred step mixes well.
AUTO_POISSON_RATE = 1000.0


class NCState(NamedTuple):
    """Adaptation state of the non-centred moves (frozen after warmup)."""

    i: jax.Array  # iteration counter
    log_step: jax.Array  # log of the scalar random-walk step
    count: jax.Array  # Welford estimate of the per-coordinate variance of unconstrained θ
    mean: jax.Array
    m2: jax.Array


def base_distribution(fn):
    """``fn`` without its Independent / Expanded / Masked wrappers."""
    while isinstance(fn, (dist.Independent, dist.ExpandedDistribution, dist.MaskedDistribution)):
        fn = fn.base_dist
    return fn


def noise_supported(fn) -> bool:
    """Whether a record site's distribution has a θ-free noise representation here."""
    return isinstance(base_distribution(fn), _LOC_SCALE + _DISCRETE + (dist.Exponential,))


def _poisson_cdf(k, rate):
    return jnp.where(k < 0, 0.0, gammaincc(jnp.maximum(k, 0) + 1.0, rate))


def _interval(fn, x):
    """[F(x-1), F(x)) of a discrete value under its distribution."""
    if isinstance(fn, (dist.BernoulliProbs, dist.BernoulliLogits)):
        q = 1.0 - fn.probs
        return jnp.where(x > 0, q, 0.0), jnp.where(x > 0, 1.0, q)
    if isinstance(fn, (dist.CategoricalProbs, dist.CategoricalLogits)):
        probs = jnp.broadcast_to(fn.probs, jnp.shape(x) + fn.probs.shape[-1:])
        upper = jnp.take_along_axis(jnp.cumsum(probs, -1), x[..., None].astype(jnp.int32), -1)[..., 0]
        return upper - jnp.take_along_axis(probs, x[..., None].astype(jnp.int32), -1)[..., 0], upper
    return _poisson_cdf(x - 1.0, fn.rate), _poisson_cdf(x, fn.rate)


def _to_noise(rng_key, fn, x):
    fn = base_distribution(fn)
    if isinstance(fn, _LOC_SCALE):
        return (x - fn.loc) / fn.scale
    if isinstance(fn, dist.Exponential):
        return x * fn.rate
    lower, upper = _interval(fn, x)
    return lower + random.uniform(rng_key, jnp.shape(x)) * (upper - lower)


def _from_noise(fn, u, dtype):
    fn = base_distribution(fn)
    if isinstance(fn, _LOC_SCALE):
        return fn.loc + fn.scale * u
    if isinstance(fn, dist.Exponential):
        return u / fn.rate
    if isinstance(fn, (dist.BernoulliProbs, dist.BernoulliLogits)):
        return (u >= 1.0 - fn.probs).astype(dtype)
    if isinstance(fn, (dist.CategoricalProbs, dist.CategoricalLogits)):
        cum = jnp.cumsum(jnp.broadcast_to(fn.probs, jnp.shape(u) + fn.probs.shape[-1:]), -1)
        return jnp.sum(u[..., None] >= cum[..., :-1], -1).astype(dtype)
    # Poisson: smallest k with F(k) > u. A Cornish–Fisher guess brackets it within ±3 for almost
    # every u (widened to ±(10 sd + 10), then the full range, when it misses); bisection finishes.
    rate = jnp.broadcast_to(fn.rate, jnp.shape(u))
    sd = jnp.sqrt(rate)
    z = ndtri(jnp.clip(u, 1e-30, 1.0 - 1e-7))
    guess = jnp.floor(rate + sd * z + (z**2 - 1.0) / 6.0)
    lo, hi = guess - 3.0, guess + 3.0
    wide_lo, wide_hi = jnp.floor(rate - 10 * sd - 10), jnp.ceil(rate + 10 * sd + 10)
    lo = jnp.where((lo >= 0) & (_poisson_cdf(lo, rate) <= u), lo, jnp.maximum(wide_lo, -1.0))
    lo = jnp.where((lo >= 0) & (_poisson_cdf(lo, rate) > u), -1.0, lo)
    hi = jnp.where(_poisson_cdf(hi, rate) > u, hi, wide_hi)
    hi = jnp.where(_poisson_cdf(hi, rate) > u, hi, jnp.ceil(rate + 40 * sd + 40))

    def body(bounds):
        lo, hi = bounds
        mid = jnp.floor((lo + hi) / 2)
        above = _poisson_cdf(mid, rate) > u
        return jnp.where(above, lo, mid), jnp.where(above, mid, hi)

    _, hi = jax.lax.while_loop(lambda b: jnp.any(b[1] - b[0] > 1), body, (lo, hi))
    return hi.astype(dtype)


def representable(fn, dtype, limit=None) -> jax.Array:
    """Whether the noise map of a record site is exact at its current parameters in ``dtype``
    (Poisson rates at most ``limit``, by default ``POISSON_RATE_LIMIT[dtype]``)."""
    fn = base_distribution(fn)
    if isinstance(fn, dist.Poisson):
        limit = POISSON_RATE_LIMIT[jnp.dtype(dtype)] if limit is None else limit
        return jnp.all(fn.rate <= limit)
    return jnp.array(True)


class _RecordsFromNoise(Messenger):
    """Set each latent record site to g(θ, u) given its (θ-dependent) distribution, and mask its
    density: in (θ, u) coordinates the records contribute the θ-free noise law only."""

    def __init__(self, fn, noise, dtypes):
        self.noise, self.dtypes = noise, dtypes
        self.exact = jnp.array(True)
        super().__init__(fn)

    def process_message(self, msg):
        if msg["type"] == "sample" and msg["name"] in self.noise:
            name = msg["name"]
            self.exact = self.exact & representable(msg["fn"], jnp.result_type(float))
            msg["value"] = _from_noise(msg["fn"], self.noise[name], self.dtypes[name])
            msg["fn"] = msg["fn"].mask(False)


def noise_of(rng_key, model, theta, records, model_args, model_kwargs):
    """u for the current (θ, x): one trace of the model with both conditioned."""
    tr = handlers.trace(handlers.condition(model, data={**theta, **records})).get_trace(
        *model_args, **model_kwargs
    )
    keys = random.split(rng_key, len(records))
    return {k: _to_noise(key, tr[k]["fn"], records[k]) for key, k in zip(keys, sorted(records))}


def _log_target(model, noise, dtypes, model_args, model_kwargs, theta):
    """log p(θ) + log p(public data | θ) + log η(s | T(g(θ, u))), and the rebuilt records; -inf where
    the noise map is not exact in the working float type."""
    rebuilt = _RecordsFromNoise(model, noise, dtypes)
    lp, tr = log_density(rebuilt, model_args, model_kwargs, theta)
    return jnp.where(rebuilt.exact, lp, -jnp.inf), {k: tr[k]["value"] for k in noise}


def noncentred_moves(
    rng_key,
    nc: NCState,
    theta,
    records,
    *,
    model,
    supports,
    num_moves,
    num_warmup,
    model_args,
    model_kwargs,
):
    """``num_moves`` random-walk Metropolis moves of θ with the record noise u held fixed.

    Returns ``(theta, records, nc_state, accept_rate)``; records are g(θ_new, u) (the current
    records when every move is rejected).
    """
    key_u, key_moves = random.split(rng_key)
    dtypes = {k: v.dtype for k, v in records.items()}
    noise = noise_of(key_u, model, theta, records, model_args, model_kwargs)
    transforms = {k: biject_to(supports[k]) for k in theta}
    phi = {k: transforms[k].inv(theta[k]) for k in theta}
    flat, unravel = ravel_pytree(phi)

    def log_density(flat):
        phi = unravel(flat)
        theta = {k: transforms[k](v) for k, v in phi.items()}
        log_jac = sum(jnp.sum(transforms[k].log_abs_det_jacobian(phi[k], theta[k])) for k in phi)
        log_p, recs = _log_target(model, noise, dtypes, model_args, model_kwargs, theta)
        return log_p + log_jac, theta, recs

    scale = proposal_scale(nc)

    def move(carry, key):
        flat, lp, theta, recs = carry
        k1, k2 = random.split(key)
        prop = flat + scale * random.normal(k1, flat.shape)
        lp_new, theta_new, recs_new = log_density(prop)
        log_alpha = jnp.nan_to_num(lp_new - lp, nan=-jnp.inf)
        # no move from outside the exact region (lp = -inf): its noise u would be inexact
        accept = jnp.isfinite(lp) & (jnp.log(random.uniform(k2)) < log_alpha)
        pick = lambda a, b: jax.tree.map(lambda x, y: jnp.where(accept, x, y), a, b)
        carry = (
            jnp.where(accept, prop, flat),
            jnp.where(accept, lp_new, lp),
            pick(theta_new, theta),
            pick(recs_new, recs),
        )
        return carry, jnp.where(jnp.isfinite(lp), jnp.exp(jnp.minimum(log_alpha, 0.0)), 0.0)

    lp0, _, _ = log_density(flat)
    (flat, _, theta, records), probs = jax.lax.scan(
        move, (flat, lp0, theta, records), random.split(key_moves, num_moves)
    )
    rate = jnp.mean(probs)
    new = adapt(nc, flat, rate, num_warmup, TARGET_ACCEPT)
    return theta, records, new, rate


def init_nc_state(theta, supports) -> NCState:
    flat, _ = ravel_pytree({k: biject_to(supports[k]).inv(theta[k]) for k in theta})
    zero = jnp.zeros_like(flat)
    return NCState(jnp.array(0), jnp.log(jnp.array(0.5)), jnp.array(0.0), zero, zero)
