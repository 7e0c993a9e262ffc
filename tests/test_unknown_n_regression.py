"""The unknown-n regression of Awan, Barrientos & Ju §6.1 (dpjax.models.unknown_n_regression):
the θ-step against closed-form conditional moments (z-tests on iid draws), the release (no entry
is n, sensitivity 9). Table 1 itself: `dpjax reproduce awan-table1` (tests/test_reproduce.py)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
from numpyro import handlers

import dpjax.models as m
from dpjax.primitives import INFER_KEY

Z_MAX = 4.5
DRAWS = 20_000


def buffer(capacity=40, n=25, seed=0):
    """A records buffer whose first n slots are data and the rest garbage (which must be ignored)."""
    rng = np.random.default_rng(seed)
    x = rng.normal([-1.0, 1.0], 1.0, size=(capacity, 2))
    y = 0.3 - x[:, 0] + x[:, 1] + rng.normal(size=capacity)
    x[n:], y[n:] = 50.0, -80.0
    return {"x": jnp.asarray(x, jnp.float32), "y": jnp.asarray(y, jnp.float32)}, x[:n], y[:n]


def oracle_beta_tau(x, y):
    """NIG posterior (float64) under m = 0, V = I, a = b = 2: E β, Var β (marginal t), E τ, Var τ."""
    X = np.c_[np.ones(len(y)), x]
    prec = np.eye(3) + X.T @ X
    mean = np.linalg.solve(prec, X.T @ y)
    a_n = 2.0 + len(y)
    b_n = 2.0 + np.sum((y - X @ mean) ** 2) + mean @ mean
    shape, rate = a_n / 2, b_n / 2
    return mean, (b_n / (a_n - 2)) * np.diag(np.linalg.inv(prec)), shape / rate, shape / rate**2


def z(draws, mean, var):
    draws = np.asarray(draws, float)
    return (draws.mean(0) - mean) / np.sqrt(var / draws.shape[0])


@functools.lru_cache
def sampler(num_records=None):
    """One compilation per θ-step variant; the records and params are arguments."""
    update = m.unknown_n_regression_update(num_records)
    return jax.jit(jax.vmap(update, in_axes=(0, None, None)))


def draw_many(records, params, num_records=None, num=DRAWS, seed=1):
    keys = jax.random.split(jax.random.key(seed), num)
    return sampler(num_records)(keys, records, params)


PHI = np.array([[1.5, 0.4], [0.4, 0.8]])


def params(n=25):
    return {"mu": jnp.zeros(2), "Phi": jnp.asarray(PHI, jnp.float32), "n": jnp.array(n)}


@pytest.mark.parametrize("how", ["size in params", "known n"])
def test_beta_tau_step_matches_normal_inverse_gamma(how):
    records, x, y = buffer()
    if how == "size in params":
        out = draw_many(records, params(25))
    else:
        out = draw_many(records, {k: v for k, v in params().items() if k != "n"}, num_records=25)
    mean, var, e_tau, var_tau = oracle_beta_tau(x, y)
    assert np.all(np.abs(z(out["beta"], mean, var)) < Z_MAX), z(out["beta"], mean, var)
    assert abs(z(out["tau"], e_tau, var_tau)) < Z_MAX
    # second moment of τ: Var τ is (shape / rate²); check E τ² through its own sample variance
    tau = np.asarray(out["tau"], float)
    second = e_tau**2 + var_tau
    var_second = np.var(tau**2)
    assert abs(z(tau**2, second, var_second)) < Z_MAX


def test_beta_tau_step_would_fail_on_the_wrong_records():
    """The z-test has power: all 40 slots (garbage included) give a far-off posterior."""
    records, x, y = buffer()
    out = draw_many(records, params(40))
    mean, var, _, _ = oracle_beta_tau(x, y)
    assert np.max(np.abs(z(out["beta"], mean, var))) > 50


def test_mu_phi_step_matches_their_conditionals():
    """μ | Φ, x ~ N(Λ⁻¹ Φ Σxᵢ, Λ⁻¹), Λ = I + nΦ (θ = 0, Σ = I); then Φ | μ, x ~ Wishart(d + n, S⁻¹),
    S = I + Σ(xᵢ − μ)(xᵢ − μ)ᵀ, checked draw by draw at the μ it was drawn with: E Φ = (d+n) S⁻¹,
    Var Φ_jk = (d+n)(S⁻¹_jk² + S⁻¹_jj S⁻¹_kk)."""
    records, x, _ = buffer()
    phi = PHI
    out = draw_many(records, params(25))
    n = len(x)
    lam = np.eye(2) + n * phi
    mu_mean = np.linalg.solve(lam, phi @ x.sum(0))
    mu_var = np.diag(np.linalg.inv(lam))
    assert np.all(np.abs(z(out["mu"], mu_mean, mu_var)) < Z_MAX)
    mu = np.asarray(out["mu"], float)
    centred = x[None] - mu[:, None]
    scale = np.linalg.inv(np.eye(2) + np.einsum("dni,dnj->dij", centred, centred))
    nu = 2.0 + n
    expected = nu * scale
    variance = nu * (
        scale**2 + np.einsum("dj,dk->djk", np.diagonal(scale, 0, 1, 2), np.diagonal(scale, 0, 1, 2))
    )
    standardised = (np.asarray(out["Phi"], float) - expected) / np.sqrt(variance)
    zs = standardised.mean(0) * np.sqrt(DRAWS)
    assert np.all(np.abs(zs) < Z_MAX), zs
    # and the variances: the standardised residuals have variance 1 (sd of a sample variance ≈ √(κ−1)/√N)
    assert np.all(np.abs(standardised.var(0) - 1.0) < 0.06), standardised.var(0)
    assert np.all(np.linalg.eigvalsh(np.asarray(out["Phi"], float)) > 0)


def trace(capacity=30, n=20, eps_n=1.0, seed=0):
    model = functools.partial(m.unknown_n_regression, eps_s=1.0, eps_n=eps_n)
    model = handlers.condition(model, data={"n": jnp.array(n)})
    return handlers.trace(handlers.seed(model, seed)).get_trace(capacity)


def test_release_excludes_the_exact_n():
    """No released entry counts the records: records at the centre of the bounds (all normalised
    values 0) add nothing, so T does not change with n, and no entry of T equals n; only the n_dp
    site's statistic is 1 per record."""
    stat = m.unknown_n_regression_statistic()
    centre = stat({"x": jnp.zeros(2), "y": jnp.zeros(())})
    assert centre.shape == (9,) and np.all(np.asarray(centre) == 0)
    for n in (5, 29):
        tr = trace(n=n, seed=n)
        active = np.arange(30) < n
        t = np.asarray(jax.vmap(stat)({"x": tr["x"]["value"], "y": tr["y"]["value"]}))
        total = t[active].sum(0)
        assert not np.any(np.isclose(total, n)), (total, n)
        assert np.all(np.abs(t).max(0) < 1.0 + 1e-6)
        assert not np.any(np.all(t == 1.0, axis=0))  # no per-record constant 1
        # the release is centred at the statistic of the first n records only
        np.testing.assert_allclose(tr["summary"]["fn"].mean, total, rtol=1e-5, atol=1e-4)
    ones = tr["n_dp"]["infer"][INFER_KEY].statistic({"x": jnp.zeros(2), "y": jnp.zeros(())})
    assert float(ones) == 1.0
    assert set(k for k, s in tr.items() if INFER_KEY in (s.get("infer") or {})) == {"summary", "n_dp"}
    assert tr["summary"]["infer"][INFER_KEY].statistic is not None
    assert "n_dp" not in trace(eps_n=None)


def test_sensitivity_and_noise_scales():
    """Δ = p²/2 + 5p/2 + 2 (9 at p = 2) is the L1 bound of one record's statistic (each entry in
    [-1, 1]) and is attained at the corner x = (U, U), y = U."""
    assert m.unknown_n_regression_sensitivity(2) == 9
    assert m.unknown_n_regression_sensitivity(3) == 14
    stat = m.unknown_n_regression_statistic()
    corners = np.array(np.meshgrid(*[[-5.0, 5.0]] * 3)).reshape(3, -1).T
    l1 = [float(jnp.abs(stat({"x": jnp.asarray(c[:2]), "y": jnp.asarray(c[2])})).sum()) for c in corners]
    assert max(l1) == 9.0
    rng = np.random.default_rng(0)
    pts = rng.uniform(-20, 20, (2000, 3))
    t = jax.vmap(stat)({"x": jnp.asarray(pts[:, :2]), "y": jnp.asarray(pts[:, 2])})
    assert float(jnp.abs(t).sum(1).max()) <= 9.0 + 1e-5
    tr = trace(eps_n=0.1)
    np.testing.assert_allclose(float(tr["summary"]["fn"].base_dist.scale[0]), 9.0, rtol=1e-6)
    np.testing.assert_allclose(float(tr["n_dp"]["fn"].scale), 10.0, rtol=1e-6)


def test_invalid_eps_n():
    with pytest.raises(ValueError, match="eps_n"):
        trace(eps_n=float("inf"))
    with pytest.raises(ValueError, match="num_records"):
        m.unknown_n_regression_update(num_records=-1)


@pytest.mark.slow
def test_predictive_simulates_the_seed_model():
    draws = numpyro.infer.Predictive(m.unknown_n_regression, num_samples=3)(jax.random.key(0), 50)
    assert draws["summary"].shape == (3, 9) and draws["n_dp"].shape == (3,)
    assert draws["Phi"].shape == (3, 2, 2) and draws["beta"].shape == (3, 3)
    noise = np.asarray(draws["n_dp"] - draws["n"])
    assert np.all(noise != 0) and np.all(np.abs(noise) < 30)  # n_dp = n + Laplace(1), never n itself


@pytest.mark.parametrize("bounds, equal", [((-50.0, 50.0), True), ((-2.0, 2.0), False)])
def test_ridge_surrogate_is_the_release_statistic_where_nothing_is_clamped(bounds, equal):
    """The surrogate of the ridge moves, from the sums of the noise products z zᵀ, equals the sum of
    the model's per-record statistic over records rebuilt from that noise when no value reaches the
    bounds; with bounds that clamp some values it differs (it is the unclamped statistic)."""
    rng = np.random.default_rng(1)
    p, n = 2, 30
    noise = {"x": jnp.asarray(rng.normal(size=(40, p))), "y": jnp.asarray(rng.normal(size=40))}
    phi = jnp.array([[2.0, 0.6], [0.6, 1.0]])
    theta = {
        "beta": jnp.array([0.4, -1.0, 1.5]),
        "tau": jnp.array(2.0),
        "mu": jnp.array([-1.0, 1.0]),
        "Phi": phi,
    }
    chol = np.linalg.cholesky(np.linalg.inv(np.asarray(phi)))
    x = np.asarray(theta["mu"]) + np.asarray(noise["x"])[:n] @ chol.T
    y = 0.4 + x @ np.array([-1.0, 1.5]) + np.asarray(noise["y"])[:n] / np.sqrt(2.0)
    per_record = jax.vmap(m.unknown_n_regression_statistic(*bounds))
    exact = np.sum(per_record({"x": jnp.asarray(x), "y": jnp.asarray(y)}), 0)
    surrogate = m.unknown_n_regression_ridge_surrogate(*bounds)
    got = surrogate.statistic(theta, jnp.sum(surrogate.features(noise)[:n], 0))
    assert got.shape == exact.shape == (9,)
    assert np.allclose(got, exact, rtol=1e-4, atol=1e-4) == equal


def test_ridge_surrogate_solves_for_theta_in_closed_form():
    """The surrogate's ``solve`` is the inverse of its statistic in θ: it gives back θ from its own
    statistic, and at other sums of the noise (the first n* records instead of n) a θ* whose
    statistic is the given one (what a ridge move needs); a statistic that no θ gives (here Σ x̃₁² = 0
    with Σ x̃₁ ≠ 0) has no solution and comes back NaN."""
    rng = np.random.default_rng(2)
    noise = {"x": jnp.asarray(rng.normal(size=(60, 2))), "y": jnp.asarray(rng.normal(size=60))}
    theta = {
        "beta": jnp.array([0.4, -1.0, 1.5]),
        "tau": jnp.array(2.0),
        "mu": jnp.array([-1.0, 1.0]),
        "Phi": jnp.array([[2.0, 0.6], [0.6, 1.0]]),
    }
    surrogate = m.unknown_n_regression_ridge_surrogate()
    totals = jnp.cumsum(surrogate.features(noise), 0)
    value = surrogate.statistic(theta, totals[39])
    back = surrogate.solve(value, totals[39])
    for k in theta:
        np.testing.assert_allclose(back[k], theta[k], rtol=1e-4, atol=1e-4)
    moved = surrogate.solve(value, totals[59])
    np.testing.assert_allclose(surrogate.statistic(moved, totals[59]), value, rtol=1e-4, atol=1e-3)
    assert not np.allclose(moved["mu"], theta["mu"], atol=1e-2)
    impossible = surrogate.solve(value.at[6].set(0.0), totals[39])  # Σ x̃₁² = 0 with Σ x̃₁ ≠ 0
    assert value[4] != 0 and np.isnan(impossible["mu"]).any()
