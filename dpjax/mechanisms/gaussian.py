"""The Gaussian family: the Gaussian mechanism (σ, analytic (ε, δ), or ρ-zCDP) and the discrete
Gaussian mechanism of Canonne, Kamath & Steinke (2020), as used by the 2020 US Census."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from jax import lax, random
from numpyro.distributions import constraints
from numpyro.distributions.util import validate_sample
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr, ndtri

from . import exact
from .base import (
    Guarantee,
    IntegerMechanism,
    Mechanism,
    array_module,
    concrete,
    integer,
    positive,
    positive_integer,
    pytree_mechanism,
)
from .laplace import DiscreteLaplace

__all__ = [
    "DiscreteGaussian",
    "DiscreteGaussianMechanism",
    "GaussianMechanism",
    "analytic_gaussian_sigma",
]


def _agm_delta(sigma, epsilon, sensitivity):
    """δ achieved by N(0, σ²) noise at ε (Balle & Wang 2018, Theorem 8)."""
    a = sensitivity / (2 * sigma)
    b = epsilon * sigma / sensitivity
    return ndtr(a - b) - math.exp(epsilon + log_ndtr(-a - b))


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest σ for which ``T + N(0, σ²)`` is (ε, δ)-DP for L2 sensitivity Δ₂: the analytic
    Gaussian mechanism of Balle & Wang (2018), valid for every ε > 0 (also ε ≥ 1).

    Host-side root finding (SciPy): ε, δ and Δ₂ must be concrete numbers. To trace over a grid of
    ε, calibrate σ for each beforehand and pass ``GaussianMechanism(sigma=...)`` the traced σ.

    >>> round(analytic_gaussian_sigma(1.0, 1e-5, 1.0), 3)
    3.731
    """
    if not concrete(epsilon, delta, sensitivity):
        raise ValueError(_ANALYTIC_NOT_TRACEABLE)
    epsilon = positive("epsilon", epsilon)
    delta = positive("delta", delta)
    sensitivity = positive("sensitivity", sensitivity)
    if not delta < 1:
        raise ValueError(f"`delta` must be in (0, 1), got {delta!r}.")
    f = lambda log_s: _agm_delta(math.exp(log_s), epsilon, sensitivity) - delta  # noqa: E731
    lo, hi = math.log(sensitivity) - 20.0, math.log(sensitivity) + 20.0
    return math.exp(brentq(f, lo, hi, xtol=1e-14, rtol=1e-12))


_ANALYTIC_NOT_TRACEABLE = (
    "The analytic Gaussian calibration from (`epsilon`, `delta`) finds σ by host-side root finding "
    "and needs concrete `epsilon`, `delta` and `sensitivity`, not traced JAX values (inside jax.jit / "
    "jax.vmap / jax.grad). Calibrate outside the transformation (sigma = analytic_gaussian_sigma(ε, δ, "
    "Δ₂) for each grid value) and trace `sigma`, or use `rho` (ρ-zCDP), which is traceable."
)


@pytree_mechanism(("scale", "sensitivity"), ("_eps_delta",))
class GaussianMechanism(Mechanism):
    """Gaussian mechanism ``release = T + N(0, σ²)`` per entry.

    Give exactly one of: ``sigma``; ``epsilon`` and ``delta`` (the analytic Gaussian mechanism);
    or ``rho`` (ρ-zCDP, ``σ = Δ₂ / sqrt(2ρ)``). ``sensitivity`` is the L2 sensitivity Δ₂; with
    ``sigma`` it is optional and only used to report ρ = Δ₂² / (2σ²).

    Array-valued ``sigma``/``rho``/``sensitivity`` give each entry its own budget; the guarantee
    then reports the per-entry ρ_i and the total Σ ρ_i (zCDP composition).

    ``sigma``, ``rho`` and ``sensitivity`` may be traced (e.g. ``jax.vmap`` over a grid of ρ); the
    analytic calibration from ``(epsilon, delta)`` runs on the host and needs concrete values.

    :meth:`release` only *simulates* a release (float noise is not DP, Mironov 2012): publish
    integer statistics with :class:`DiscreteGaussianMechanism` and ``release(None, T)``.

    >>> import dpjax
    >>> dpjax.GaussianMechanism(rho=0.5, sensitivity=1.0).scale
    1.0
    >>> print(dpjax.GaussianMechanism(sigma=[1.0, 2.0], sensitivity=1.0).guarantee)
    ρ=0.625 (zCDP; per entry [0.5, 0.125])
    """

    sensitivity_norm = 2  # Δ₂

    def __init__(self, sigma=None, *, epsilon=None, delta=None, rho=None, sensitivity=None):
        given = [k for k, v in (("sigma", sigma), ("epsilon", epsilon), ("rho", rho)) if v is not None]
        if len(given) != 1:
            raise ValueError(
                f"Give exactly one of `sigma`, (`epsilon`, `delta`) or `rho`; got {given or 'none'}."
            )
        self.sensitivity = positive("sensitivity", sensitivity, allow_none=sigma is not None)
        self._eps_delta = None
        if sigma is not None:
            self.scale = positive("sigma", sigma)
        elif rho is not None:
            rho = positive("rho", rho)
            xp = array_module(self.sensitivity, rho)
            self.scale = xp.asarray(self.sensitivity) / xp.sqrt(2 * rho)
        else:
            if delta is None:
                raise ValueError("`delta` is required with `epsilon` (analytic Gaussian mechanism).")
            if not concrete(epsilon, delta, self.sensitivity):
                raise ValueError(_ANALYTIC_NOT_TRACEABLE)
            if any(np.ndim(v) for v in (epsilon, delta, self.sensitivity)):
                raise ValueError(
                    "The analytic Gaussian mechanism needs scalar `epsilon`, `delta` and `sensitivity`."
                )
            self.scale = analytic_gaussian_sigma(epsilon, delta, self.sensitivity)
            self._eps_delta = (float(epsilon), float(delta))
        if concrete(self.scale) and np.ndim(self.scale) == 0:
            self.scale = float(self.scale)

    @property
    def sigma(self):
        return self.scale

    @property
    def guarantee(self) -> Guarantee:
        eps_delta = dict(zip(("epsilon", "delta"), self._eps_delta or ()))
        if self.sensitivity is None:
            return Guarantee(**eps_delta)
        xp = array_module(self.sensitivity, self.scale)
        rho = xp.asarray(self.sensitivity) ** 2 / (2 * xp.asarray(self.scale) ** 2)
        return Guarantee.composed("rho", rho, **eps_delta)

    def noise(self, loc):
        return dist.Normal(loc, self.scale)

    def _accuracy(self, scale, alpha):
        return scale * float(ndtri(1.0 - alpha / 2))

    def _max_log_density_per_entry(self):
        xp = array_module(self.scale)
        return -0.5 * xp.log(2 * np.pi * xp.asarray(self.scale) ** 2)


def _log_normalizer(sigma):
    """log Σ_{k∈ℤ} exp(-k² / 2σ²) to double precision (Poisson summation for σ ≥ 1). A traced σ
    gets the same two formulas in JAX (accurate to the working float precision)."""
    if not concrete(sigma):
        return _traced_log_normalizer(sigma)
    if sigma >= 1.0:
        m = np.arange(1, 4)
        return math.log(sigma * math.sqrt(2 * math.pi)) + math.log1p(
            2 * np.sum(np.exp(-2 * math.pi**2 * sigma**2 * m**2))
        )
    k = np.arange(-40, 41)
    return float(np.log(np.sum(np.exp(-(k**2) / (2 * sigma**2)))))


def _traced_log_normalizer(sigma):
    """:func:`_log_normalizer` in JAX: both branches are finite for every σ > 0, so the ``where``
    is safe (also for gradients). For σ < 1 the terms beyond |k| = 40 are below e^-800."""
    sigma = jnp.asarray(sigma, dtype=jnp.result_type(float))[..., None]
    m = jnp.arange(1, 4)
    poisson = jnp.log(sigma[..., 0] * math.sqrt(2 * math.pi)) + jnp.log1p(
        2 * jnp.sum(jnp.exp(-2 * math.pi**2 * sigma**2 * m**2), axis=-1)
    )
    k = jnp.arange(-40, 41)
    direct = jax.nn.logsumexp(-(k**2) / (2 * sigma**2), axis=-1)
    return jnp.where(sigma[..., 0] >= 1.0, poisson, direct)


def _dg_tail(a: int, sigma: float, log_z: float) -> float:
    """P(|K| > a) of the discrete Gaussian for large σ: 2 Σ_{k>a} e^(−k²/2σ²) / Z by Euler–Maclaurin,
    ∫ + f/2 − f′/12 + f‴/720 from a + 1 (each further term is smaller by about σ⁻²)."""
    x = a + 1.0
    f = math.exp(-(x**2) / (2 * sigma**2))
    u = x / sigma**2
    d1, d3 = -u * f, (3 * u / sigma**2 - u**3) * f
    integral = sigma * math.sqrt(2 * math.pi) * float(ndtr(-x / sigma))
    return 2 * (integral + f / 2 - d1 / 12 + d3 / 720) / math.exp(log_z)


class DiscreteGaussian(dist.Distribution):
    """Discrete Gaussian on ``loc + ℤ``: ``P(k) ∝ exp(-(k - loc)² / 2σ²)``, exactly normalized.
    ``loc`` must be an integer; ``sigma`` a scalar (the normalizer is computed once, on the host
    for a concrete σ, in JAX for a traced one)."""

    arg_constraints = {"loc": integer, "sigma": constraints.positive}
    support = integer
    pytree_data_fields = ("loc", "sigma", "_log_z")

    def __init__(self, loc=0, sigma=1.0, *, validate_args=None):
        self.sigma = positive("sigma", sigma)
        if np.ndim(self.sigma) != 0:
            raise ValueError("DiscreteGaussian needs a scalar `sigma`.")
        self._log_z = _log_normalizer(self.sigma)
        self.loc = loc
        super().__init__(batch_shape=jnp.shape(loc), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        """Simulation-grade JAX sampler (traceable): the CKS rejection sampler in float32 with the
        truncated :class:`DiscreteLaplace` proposal, so not exactly the discrete Gaussian. To
        publish, use :meth:`DiscreteGaussianMechanism.release` with ``rng_key=None`` (exact)."""
        # Canonne–Kamath–Steinke rejection sampler from a discrete Laplace proposal
        shape = sample_shape + self.batch_shape
        sigma = self.sigma
        t = math.floor(sigma) + 1.0 if concrete(sigma) else jnp.floor(sigma) + 1.0

        def draw(key, value, done):
            k1, k2 = random.split(key)
            y = DiscreteLaplace(0.0, t).sample(k1, shape)
            log_c = -((jnp.abs(y) - sigma**2 / t) ** 2) / (2 * sigma**2)
            accept = jnp.log(random.uniform(k2, shape)) < log_c
            return jnp.where(done, value, y), done | accept

        def body(carry):
            key, value, done = carry
            key, sub = random.split(key)
            return (key, *draw(sub, value, done))

        init = (key, jnp.zeros(shape), jnp.zeros(shape, bool))
        _, value, _ = lax.while_loop(lambda c: ~jnp.all(c[2]), body, init)
        return self.loc + value

    @validate_sample
    def log_prob(self, value):
        x = jnp.asarray(value - self.loc, dtype=jnp.result_type(float))  # no int32 overflow of x²
        return -(x**2) / (2 * self.sigma**2) - self._log_z

    @property
    def mean(self):
        return jnp.broadcast_to(self.loc, self.batch_shape)


@pytree_mechanism(("scale", "sensitivity", "_log_z", "_exact_inputs"))
class DiscreteGaussianMechanism(IntegerMechanism):
    """Discrete Gaussian mechanism for integer statistics (Canonne, Kamath & Steinke 2020):
    ``ρ``-zCDP with ``ρ = Δ₂² / (2σ²)``.

    Give ``sigma``, or ``rho`` with the integer L2 sensitivity ``sensitivity`` ≥ 1 (default 1).

    ``release(None, T)`` publishes exactly: the noise is drawn in integer arithmetic from a
    CSPRNG with the rational variance ``σ² = Fraction(sigma)**2`` (or ``Δ₂² / (2 ρ)`` exactly from
    ``rho``), see :meth:`IntegerMechanism.release`. The densities and ``mechanism(T)`` accept a
    traced ``sigma`` / ``rho`` (the normalizer is then computed in JAX); the exact ``release``
    needs concrete ones.

    >>> import dpjax
    >>> dpjax.DiscreteGaussianMechanism(rho=0.5).guarantee.rho
    0.5
    """

    sensitivity_norm = 2  # Δ₂

    def __init__(self, sigma=None, *, rho=None, sensitivity=1):
        if (sigma is None) == (rho is None):
            raise ValueError("Give exactly one of `sigma` or `rho`.")
        self.sensitivity = positive_integer("sensitivity", sensitivity)
        if sigma is None:
            rho = positive("rho", rho)
            sigma = self.sensitivity / array_module(self.sensitivity, rho).sqrt(2 * rho)
        self.scale = positive("sigma", sigma)
        if np.ndim(self.scale) != 0:
            raise ValueError("DiscreteGaussianMechanism needs a scalar `sigma`.")
        self._exact_inputs = (self.scale, None) if rho is None else (self.sensitivity, rho)
        self._log_z = _log_normalizer(self.scale)

    @functools.cached_property
    def _exact_params(self):
        """The exact rational variance: ``Fraction(σ)²`` or ``Fraction(Δ₂)² / (2 Fraction(ρ))``."""
        num, rho = self._exact_inputs
        if rho is None:
            return Fraction(num) ** 2
        return Fraction(num) ** 2 / (2 * Fraction(rho))

    _exact_draw = staticmethod(exact.discrete_gaussian)

    @property
    def sigma(self):
        return self.scale

    @property
    def guarantee(self) -> Guarantee:
        xp = array_module(self.sensitivity, self.scale)
        return Guarantee.composed(
            "rho", xp.asarray(self.sensitivity) ** 2 / (2 * xp.asarray(self.scale) ** 2)
        )

    def noise(self, loc):
        return DiscreteGaussian(loc, self.scale)

    def _accuracy(self, scale, alpha):
        log_z = _log_normalizer(scale)
        if scale > 1e4:  # Σ_{k>a} by Euler–Maclaurin: its next term is below double precision at this σ
            a = math.ceil(scale * float(ndtri(1.0 - alpha / 2)))
            while a > 0 and _dg_tail(a - 1, scale, log_z) <= alpha:
                a -= 1
            while _dg_tail(a, scale, log_z) > alpha:
                a += 1
            return float(a)
        # P(|noise| > a) = 2 Σ_{k > a} P(k), summed from the far end (no 1 − (1 − ε) round-off), far enough
        # out that the sub-Gaussian tail beyond holds under 10⁻⁶ α
        top = math.ceil(scale * math.sqrt(2 * math.log(2e6 / alpha))) + 2
        k = np.arange(0, top + 1, dtype=float)
        tail = 2 * np.cumsum(np.exp(-(k**2) / (2 * scale**2) - log_z)[::-1])[::-1]  # P(|noise| ≥ k), k ≥ 1
        return float(np.argmax(np.append(tail[1:], 0.0) <= alpha))  # the first a with P(|noise| > a) ≤ α

    def _max_log_density_per_entry(self):
        return -self._log_z
