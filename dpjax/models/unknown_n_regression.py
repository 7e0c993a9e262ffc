"""Linear regression with a private sample size (Awan, Barrientos & Ju, §6.1 and Appendix C.2).

The confidential data are n records (xᵢ ∈ ℝᵖ, yᵢ) with the full conjugate model of the seed::

    yᵢ | xᵢ ~ N((1, xᵢ) β, 1/τ),        xᵢ ~ N_p(μ, Φ⁻¹),
    β | τ ~ N_{p+1}(m, τ⁻¹ V⁻¹),        τ ~ Gamma(a/2, b/2)  (shape, rate),
    Φ ~ Wishart_p(d, W),                μ ~ N_p(θ, Σ),

with the seed's hyperparameters m = 0, V = I, a = b = 2, θ = 0, Σ = I, d = 2, W = I and bounds
[L, U] = [-5, 5]. The curator clamps every value to [L, U], maps it onto [-1, 1] and releases, with
Laplace(Δ/ε_s) noise, the unique entries of X̃ᵀX̃, X̃ᵀỸ and ỸᵀỸ *except* the (1, 1) entry of X̃ᵀX̃
(which is n): (p+1)(p+2)/2 − 1 + (p + 1) + 1 = p²/2 + 5p/2 + 2 entries (9 at p = 2), each a sum of
per-record terms in [-1, 1], so adding or removing a record moves each by at most 1 and the
unbounded-DP L1 sensitivity is Δ = p²/2 + 5p/2 + 2 (the seed's C.2). n is released separately as
n_dp = n + Laplace(1/ε_n), a second privatized site whose per-record statistic is 1.

Prior of n. The seed's flat prior on n ≥ 1 is improper; here n ~ DiscreteUniform(1, capacity), the
records plate's capacity, which must be chosen far above the posterior of n (the posterior
truncated at the capacity is then the seed's). ε_n = ∞ (n public, bounded DP): leave ``eps_n`` at
``None`` and condition ``n`` (``numpyro.handlers.condition(model, data={"n": n})``); the same model
then runs through :class:`~dpjax.infer.DataAugmentationKernel`.

:func:`unknown_n_regression_m_step` is the closed-form M-step of MCEM and stochastic EM (the
non-private MLEs of the seed's §6.1). :func:`unknown_n_regression_update` is the θ-step: an exact
draw of (β, τ) from their normal–inverse-gamma conditional and one Gibbs scan of μ | Φ and Φ | μ (the
prior of (μ, Φ) is semi-conjugate, not jointly conjugate), all from the sufficient statistics of the
first n records. :func:`unknown_n_regression_ridge_surrogate` is the release statistic without its
clamping, as a function of θ and sums of the record noise: with it, ReversibleJumpKernel's ridge moves,
which free n when n_dp is very noisy, cost one pass over the capacity each.

Precision. The seed's prior Φ ~ Wishart_p(p, W) is the least proper Wishart: it puts mass on Φ whose
eigenvalues differ by 10⁷ and more (records then reach 10⁴), which a float32 matrix cannot hold as
positive definite. Where the release says little (a small ε, or releases simulated from the prior, as
in SBC), a float32 chain reaches such a Φ in some runs and stops with
:class:`~dpjax.infer.InvalidChainWarning` (5–42 of 256 SBC simulations per ε,
``benchmarks/results/sbc_seed_models.json``); run in float64 (``JAX_ENABLE_X64=1``), where none
stop, or give Φ more degrees of freedom (``hyper={"d": ...}``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ..infer import RidgeSurrogate
from ..mechanisms import LaplaceMechanism
from ..primitives import privatized, records_plate
from .regression import regression_statistic

__all__ = [
    "SEED_UNKNOWN_N_TRUTH",
    "unknown_n_regression",
    "unknown_n_regression_m_step",
    "unknown_n_regression_ridge_surrogate",
    "unknown_n_regression_sensitivity",
    "unknown_n_regression_statistic",
    "unknown_n_regression_update",
]

#: the data-generating values of the seed's §6.1
SEED_UNKNOWN_N_TRUTH = {
    "beta": (0.0, -1.0, 1.0),
    "tau": 1.0,
    "mu": (-1.0, 1.0),
    "Phi": ((1.0, 0.0), (0.0, 1.0)),
}

#: the seed's hyperparameters (§6.1): scalars stand for m = m·1, V = V·I, θ = θ·1, Σ = Σ·I, W = W·I
SEED_HYPER = {"m": 0.0, "V": 1.0, "a": 2.0, "b": 2.0, "theta": 0.0, "Sigma": 1.0, "d": 2.0, "W": 1.0}
SEED_BOUNDS = (-5.0, 5.0)


def unknown_n_regression_sensitivity(num_predictors: int) -> float:
    """Unbounded-DP L1 sensitivity ``p²/2 + 5p/2 + 2`` of the released entries (9 at p = 2)."""
    p = num_predictors
    return p * p / 2 + 5 * p / 2 + 2


def unknown_n_regression_statistic(lower: float = SEED_BOUNDS[0], upper: float = SEED_BOUNDS[1]):
    """Per-record statistic of the release: (x̃ ỹ with x̃ = (1, x̃₁..x̃ₚ), ỹ², the upper triangle
    of x̃ x̃ᵀ without its constant (1, 1) entry). Summed over records these are the unique entries
    of X̃ᵀỸ, ỸᵀỸ and X̃ᵀX̃ less n, in that order.

    >>> import jax.numpy as jnp
    >>> t = unknown_n_regression_statistic()({"x": jnp.array([5.0, 0.0]), "y": jnp.array(-5.0)})
    >>> t.tolist()  # ỹ, x̃₁ỹ, x̃₂ỹ, ỹ², x̃₁, x̃₂, x̃₁², x̃₁x̃₂, x̃₂²
    [-1.0, -1.0, -0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    """
    return regression_statistic(lower, upper)


def unknown_n_regression_ridge_surrogate(lower: float = SEED_BOUNDS[0], upper: float = SEED_BOUNDS[1]):
    """The release statistics of :func:`unknown_n_regression` without their clamping, for
    :class:`~dpjax.infer.ReversibleJumpKernel`'s ``ridge_surrogate`` (a
    :class:`~dpjax.infer.RidgeSurrogate`): its ridge moves then cost one pass over the capacity each.

    A record is affine in its noise z = (1, u, e) (x = μ + L u, L the Cholesky factor of Φ⁻¹;
    y = β₀ + xᵀβ₁ + e/√τ), so is r = (1, x̃, ỹ) = A B(θ) z with x̃, ỹ mapped from [lower, upper] onto
    [-1, 1] by A, and the released sums are entries of A B M Bᵀ Aᵀ, M = Σ z zᵀ over the records: the
    features are z zᵀ. Exact where no record is clamped; clamped records only lower the moves'
    acceptance (``lower``, ``upper``: the model's bounds).

    >>> import jax.numpy as jnp
    >>> surrogate = unknown_n_regression_ridge_surrogate()
    >>> noise = {"x": jnp.array([[0.5, -1.0]]), "y": jnp.array([0.3])}
    >>> theta = {"beta": jnp.array([0.0, -1.0, 1.0]), "tau": 1.0, "mu": jnp.array([-1.0, 1.0]),
    ...          "Phi": jnp.eye(2)}
    >>> totals = surrogate.features(noise)[0]
    >>> x, y = jnp.array([-0.5, 0.0]), 0.8  # μ + u, β₀ + xᵀβ₁ + e
    >>> expected = unknown_n_regression_statistic()({"x": x, "y": jnp.array(y)})
    >>> bool(jnp.allclose(surrogate.statistic(theta, totals), expected))
    True
    """
    scale, shift = 2.0 / (upper - lower), -(upper + lower) / (upper - lower)

    def features(noise):
        u, e = noise["x"], noise["y"]
        z = jnp.concatenate([jnp.ones_like(e)[:, None], u, e[:, None]], axis=1)
        return (z[:, :, None] * z[:, None, :]).reshape(z.shape[0], -1)

    def affine(k, dtype):  # A: (1, x, y) ↦ (1, x̃, ỹ), and its inverse
        a = jnp.diag(jnp.full(k, scale, dtype).at[0].set(1.0)).at[1:, 0].set(shift)
        inverse = jnp.diag(jnp.full(k, 1 / scale, dtype).at[0].set(1.0)).at[1:, 0].set(-shift / scale)
        return a, inverse

    def statistic(theta, totals):
        beta, mu = theta["beta"], theta["mu"]
        p = mu.shape[0]
        chol = dist.MultivariateNormal(mu, precision_matrix=theta["Phi"]).scale_tril
        b = jnp.zeros((p + 2, p + 2), mu.dtype).at[0, 0].set(1.0)
        b = b.at[1 : p + 1, 0].set(mu).at[1 : p + 1, 1 : p + 1].set(chol)
        b = b.at[p + 1, 0].set(beta[0] + beta[1:] @ mu).at[p + 1, 1 : p + 1].set(beta[1:] @ chol)
        b = b.at[p + 1, p + 1].set(1.0 / jnp.sqrt(theta["tau"]))
        ab = affine(p + 2, mu.dtype)[0] @ b
        r = ab @ totals.reshape(p + 2, p + 2) @ ab.T  # Σ r rᵀ, r = (1, x̃, ỹ)
        rows, cols = np.triu_indices(p + 1)
        return jnp.concatenate([r[: p + 1, p + 1], r[p + 1, p + 1, None], r[rows, cols][1:]])

    def solve(value, totals):
        # Σ r rᵀ = A B M Bᵀ Aᵀ with B lower triangular (positive diagonal) and M = Σ z zᵀ, so
        # B = chol(A⁻¹ G A⁻ᵀ) chol(M)⁻¹ where G is Σ r rᵀ rebuilt from the statistics and M's count
        k = int(round(np.sqrt(totals.shape[-1])))
        p = k - 2
        rows, cols = np.triu_indices(p + 1)
        g = jnp.zeros((k, k), value.dtype).at[rows[1:], cols[1:]].set(value[p + 2 :])
        g = g.at[: p + 1, p + 1].set(value[: p + 1]).at[p + 1, p + 1].set(value[p + 1])
        m = totals.reshape(k, k)
        g = jnp.triu(g) + jnp.triu(g, 1).T
        g = g.at[0, 0].set(m[0, 0])
        inverse = affine(k, value.dtype)[1]
        h = inverse @ g @ inverse.T
        b = jax.scipy.linalg.solve_triangular(
            jnp.linalg.cholesky(m).T, jnp.linalg.cholesky(h).T, lower=False
        ).T  # B chol(M) = chol(H)
        mu, chol = b[1 : p + 1, 0], b[1 : p + 1, 1 : p + 1]
        beta1 = jax.scipy.linalg.solve_triangular(chol.T, b[p + 1, 1 : p + 1], lower=False)
        eye = jnp.eye(p, dtype=value.dtype)
        phi = jax.scipy.linalg.cho_solve((chol, True), eye)  # (L Lᵀ)⁻¹
        beta = jnp.concatenate([(b[p + 1, 0] - beta1 @ mu)[None], beta1])
        return {"beta": beta, "tau": 1.0 / b[p + 1, p + 1] ** 2, "mu": mu, "Phi": (phi + phi.T) / 2}

    return RidgeSurrogate(features, statistic, solve)


def _hyper(p, hyper):
    h = {**SEED_HYPER, **(hyper or {})}
    vec = lambda v, k: jnp.broadcast_to(jnp.asarray(v, float), (k,))
    mat = lambda v, k: jnp.asarray(v, float) * jnp.eye(k) if jnp.ndim(v) == 0 else jnp.asarray(v, float)
    return {
        "m": vec(h["m"], p + 1),
        "V": mat(h["V"], p + 1),
        "a": float(h["a"]),
        "b": float(h["b"]),
        "theta": vec(h["theta"], p),
        "Sigma": mat(h["Sigma"], p),
        "d": float(h["d"]),
        "W": mat(h["W"], p),
    }


def unknown_n_regression(
    capacity: int,
    s_dp=None,
    n_dp=None,
    *,
    eps_s: float = 1.0,
    eps_n: float | None = 1.0,
    num_predictors: int = 2,
    bounds=SEED_BOUNDS,
    hyper: dict | None = None,
):
    """The seed's §6.1 model: sites ``beta`` (p+1), ``tau``, ``mu`` (p), ``Phi`` (p × p), ``n``,
    records ``x`` (capacity × p) and ``y`` (capacity) in the records plate ``records`` of size n,
    the release ``summary`` (p²/2 + 5p/2 + 2 entries, Laplace(Δ/ε_s)) and, unless ``eps_n`` is
    ``None`` (n public: condition ``n``), ``n_dp`` = n + Laplace(1/ε_n). ``eps_s`` and ``eps_n`` may
    be traced (one compiled study over a grid of ε).

    n ~ DiscreteUniform(1, capacity): choose the capacity far above the posterior of n.

    >>> import jax, numpyro
    >>> sim = numpyro.infer.Predictive(unknown_n_regression, num_samples=2)(jax.random.key(0), 50)
    >>> sim["summary"].shape, sim["n_dp"].shape
    ((2, 9), (2,))
    """
    p = int(num_predictors)
    h = _hyper(p, hyper)
    tau = numpyro.sample("tau", dist.Gamma(h["a"] / 2, h["b"] / 2))
    beta = numpyro.sample("beta", dist.MultivariateNormal(h["m"], precision_matrix=tau * h["V"]))
    phi = numpyro.sample("Phi", dist.Wishart(h["d"], scale_matrix=h["W"]))
    mu = numpyro.sample("mu", dist.MultivariateNormal(h["theta"], covariance_matrix=h["Sigma"]))
    n = numpyro.sample("n", dist.DiscreteUniform(1, capacity))
    plate = records_plate("records", n, capacity)
    with plate:
        x = numpyro.sample("x", dist.MultivariateNormal(mu, precision_matrix=phi))
        y = numpyro.sample("y", dist.Normal(beta[0] + x @ beta[1:], 1.0 / jnp.sqrt(tau)))
    mech = LaplaceMechanism(eps_s, unknown_n_regression_sensitivity(p))
    records = {"x": x, "y": y}
    privatized("summary", mech, unknown_n_regression_statistic(*bounds), records, plate=plate, obs=s_dp)
    if eps_n is not None:
        if isinstance(eps_n, (int, float)) and not (eps_n > 0 and math.isfinite(eps_n)):
            raise ValueError(
                f"`eps_n` must be a finite positive float, or None for a public n; got {eps_n!r}."
            )
        size = LaplaceMechanism(eps_n, 1.0)
        privatized("n_dp", size, lambda r: jnp.ones(()), records, plate=plate, obs=n_dp)


def unknown_n_regression_update(num_records: int | None = None, hyper: dict | None = None):
    """θ-step of :func:`unknown_n_regression` given the records: ``update(rng_key, records, params)``.

    The active records are the first ``params["n"]`` slots (unknown n), else the first
    ``num_records`` (a known n conditioned in the model), else all. With X the n × (p+1) design
    (1, xᵢ) and Sxx = Σ (xᵢ − μ)(xᵢ − μ)ᵀ:

    * τ | x, y ~ Gamma((a + n)/2, (b + ‖y − X mₙ‖² + (mₙ − m)ᵀV(mₙ − m))/2), with Vₙ = V + XᵀX,
      mₙ = Vₙ⁻¹(Vm + Xᵀy); β | τ, x, y ~ N(mₙ, (τVₙ)⁻¹) (exact, jointly);
    * μ | Φ, x ~ N(Λ⁻¹(Σ⁻¹θ + Φ Σxᵢ), Λ⁻¹), Λ = Σ⁻¹ + nΦ; then Φ | μ, x ~ Wishart(d + n,
      (W⁻¹ + Sxx)⁻¹) (one Gibbs scan, which leaves p(μ, Φ | x) invariant).

    >>> import jax, jax.numpy as jnp
    >>> upd = unknown_n_regression_update()
    >>> records = {"x": jnp.zeros((4, 2)), "y": jnp.ones(4)}
    >>> params = {"mu": jnp.zeros(2), "Phi": jnp.eye(2), "n": jnp.array(3)}
    >>> sorted(upd(jax.random.key(0), records, params))
    ['Phi', 'beta', 'mu', 'tau']
    """
    if num_records is not None and (not isinstance(num_records, int) or num_records < 0):
        raise ValueError(f"`num_records` must be a non-negative int or None, got {num_records!r}.")

    def update(rng_key, records, params):
        x, y = records["x"], records["y"]
        capacity, p = x.shape
        h = _hyper(p, hyper)
        n = params.get("n", capacity if num_records is None else num_records)
        active = jnp.arange(capacity) < n
        n = jnp.sum(active).astype(x.dtype)
        w = active.astype(x.dtype)
        k_tau, k_beta, k_mu, k_phi = jax.random.split(rng_key, 4)
        # every sum over the records from one moments matrix of z = (1, x, y) over the active slots:
        # one O(n) pass (separate small matmuls over the records cost 3× more on CPU)
        z = jnp.concatenate([jnp.ones((capacity, 1), x.dtype), x, y[:, None]], axis=1) * w[:, None]
        moments = jnp.einsum("ni,nj->ij", z, z)
        xtx, xty, yty = moments[: p + 1, : p + 1], moments[: p + 1, p + 1], moments[p + 1, p + 1]
        # (β, τ) | x, y: normal–inverse-gamma
        prec = h["V"] + xtx
        chol = jnp.linalg.cholesky(prec)
        mean = jax.scipy.linalg.cho_solve((chol, True), h["V"] @ h["m"] + xty)
        rss = yty - 2 * mean @ xty + mean @ xtx @ mean  # ‖y − X mₙ‖²
        dm = mean - h["m"]
        rate = (h["b"] + rss + dm @ h["V"] @ dm) / 2
        tau = jax.random.gamma(k_tau, (h["a"] + n) / 2) / rate
        eps = jax.random.normal(k_beta, mean.shape, x.dtype)
        beta = mean + jax.scipy.linalg.solve_triangular(chol.T, eps, lower=False) / jnp.sqrt(tau)
        # μ | Φ, x
        phi = params["Phi"]
        sum_x, sum_xx = xtx[0, 1:], xtx[1:, 1:]
        sigma_inv = jnp.linalg.inv(h["Sigma"])
        lam = sigma_inv + n * phi
        lam_chol = jnp.linalg.cholesky(lam)
        mu_mean = jax.scipy.linalg.cho_solve((lam_chol, True), sigma_inv @ h["theta"] + phi @ sum_x)
        eps = jax.random.normal(k_mu, mu_mean.shape, x.dtype)
        mu = mu_mean + jax.scipy.linalg.solve_triangular(lam_chol.T, eps, lower=False)
        # Φ | μ, x: Sxx = Σ xxᵀ − Σx μᵀ − μ Σxᵀ + n μμᵀ
        scatter = sum_xx - jnp.outer(sum_x, mu) - jnp.outer(mu, sum_x) + n * jnp.outer(mu, mu)
        rate_matrix = jnp.linalg.inv(h["W"]) + scatter
        phi = dist.Wishart(h["d"] + n, rate_matrix=rate_matrix).sample(k_phi)
        phi = (phi + phi.T) / 2
        return {"beta": beta, "tau": tau, "mu": mu, "Phi": phi}

    return update


def unknown_n_regression_m_step(records, weights):
    """The closed-form M-step of :func:`unknown_n_regression` for :func:`dpjax.infer.mcem` and
    :func:`dpjax.infer.stochastic_em`: the non-private MLEs from the pooled, weighted active records
    of all record sets (``records["x"]`` of shape (sets, capacity, p), ``records["y"]`` (sets,
    capacity), ``records["n"]`` (sets,) the size of each set; without ``"n"`` every slot is a
    record): least squares for β, τ = count / residual sum of squares, and the Gaussian MLEs μ = x̄,
    Φ = Σ̂⁻¹.

    >>> import jax, jax.numpy as jnp
    >>> x = jax.random.normal(jax.random.key(0), (1, 500, 2))
    >>> y = 1.0 + x @ jnp.array([2.0, -1.0]) + 0.1 * jax.random.normal(jax.random.key(1), (1, 500))
    >>> fit = unknown_n_regression_m_step({"x": x, "y": y, "n": jnp.array([400])}, jnp.ones(1))
    >>> [round(float(b), 1) for b in fit["beta"]], round(float(fit["tau"]) ** -0.5, 2)
    ([1.0, 2.0, -1.0], 0.1)
    """
    x, y = records["x"], records["y"]
    active = jnp.ones(y.shape, x.dtype)
    if "n" in records:
        active = (jnp.arange(y.shape[1])[None] < records["n"][:, None]).astype(x.dtype)
    w = weights[:, None] * active
    design = jnp.concatenate([jnp.ones_like(x[..., :1]), x], -1)
    beta = jnp.linalg.solve(
        jnp.einsum("nc,nci,ncj->ij", w, design, design), jnp.einsum("nc,nci,nc->i", w, design, y)
    )
    count = jnp.sum(w)
    tau = count / jnp.sum(w * (y - design @ beta) ** 2)
    mu = jnp.einsum("nc,nci->i", w, x) / count
    centred = x - mu
    cov = jnp.einsum("nc,nci,ncj->ij", w, centred, centred) / count
    phi = jnp.linalg.inv(cov)
    return {"beta": beta, "tau": tau, "mu": mu, "Phi": (phi + phi.T) / 2}
