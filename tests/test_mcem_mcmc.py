"""Monte Carlo EM with an MCMC E-step (Awan, Barrientos & Ju, Algorithm 2 and Remark 5.7): the MLE
and Louis's observed information against direct maximisation of the exact marginal likelihood,
computed by enumeration over the confidential count (and over n when it is latent), and a
finite-difference Hessian of it. Errors are judged in units of the Monte Carlo standard errors the
result reports (``mc_std_errors``, ``information_mcse``)."""

import re
import warnings
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from scipy import optimize, stats
from scipy.special import gammaln

import dpjax
from dpjax.infer import mcem

Z_MAX = 4.0
# The returned θ̂ is the last iterate of a noisy EM map θ ← M(θ) + e (e of s.d. mc_std_errors):
# its stationary s.d. is mcse / sqrt(1 − r²) for an EM rate r (the fraction of missing
# information, about 0.3 here), so √2 covers r up to 0.7.
STATIONARY = np.sqrt(2.0)
LAPLACE = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0)

# (a) known n: Bernoulli(p) records, a Laplace-noised count
N, S_DP = 30, 11.3


def known_n(s_dp=None):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))  # the prior is ignored by mcem
    with numpyro.plate("people", N):
        x = numpyro.sample("x", dist.Bernoulli(p))
    dpjax.privatized("count", LAPLACE, lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)


def known_n_loglik(p):
    k = np.arange(N + 1)
    return np.log(np.sum(stats.binom.pmf(k, N, p) * stats.laplace.pdf(S_DP - k)))


def hessian(f, x, h):
    x, d = np.asarray(x, float), len(x)
    out = np.zeros((d, d))
    for i in range(d):
        for j in range(d):
            ei, ej = np.eye(d)[i] * h[i], np.eye(d)[j] * h[j]
            corners = f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)
            out[i, j] = corners / (4 * h[i] * h[j])
    return out


def exact_known_n():
    p = optimize.minimize_scalar(
        lambda p: -known_n_loglik(p), bounds=(1e-3, 1 - 1e-3), method="bounded", options={"xatol": 1e-10}
    ).x
    return p, -hessian(lambda v: known_n_loglik(v[0]), [p], [1e-4])[0, 0]


def bernoulli_m_step(recs, w):
    return {"p": w @ recs["x"].mean(1)}


run_known = partial(
    mcem, jax.random.key(0), known_n, {"p": 0.8}, jnp.array(S_DP), e_step="mcmc",
    num_particles=(1_000, 4_000), tolerances=(1e-2, 1e-3), progress_bar=False,
)  # fmt: skip


def assert_mle(out, exact):
    for k, value in exact.items():
        se = STATIONARY * float(out.mc_std_errors[k][-1])
        z = (float(out.params[k]) - value) / se
        assert abs(z) < Z_MAX, (k, float(out.params[k]), value, se)


def assert_information(out, exact_info):
    z = (out.information - exact_info) / out.information_mcse
    assert np.all(np.abs(z) < Z_MAX), (out.information, exact_info, out.information_mcse)


def test_known_n_mle_and_information_closed_form_m_step():
    mle, info = exact_known_n()
    out = run_known(m_step=bernoulli_m_step)
    assert_mle(out, {"p": mle})
    assert_information(out, np.array([[info]]))
    assert float(out.std_errors["p"]) == pytest.approx(1 / np.sqrt(info), rel=0.05)
    # stages: 1000 then 4000 kept draws (4 chains × 250, × 1000), the last row of history is θ̂
    iterations = out.ess.shape[0]
    assert out.history["p"].shape == out.mc_std_errors["p"].shape == (iterations,)
    assert int(out.num_particles[0]) == 1_000 and int(out.num_particles[-1]) == 4_000
    assert float(out.history["p"][-1]) == float(out.params["p"])
    assert bool(jnp.all((out.ess > 0) & (out.ess <= out.num_particles)))
    # near θ̂ the Monte Carlo error shrinks with the draws as 1/√m: 4 × the draws, half the error
    end_of_first = int(np.sum(np.asarray(out.num_particles) == 1_000)) - 1
    first, last = float(out.mc_std_errors["p"][end_of_first]), float(out.mc_std_errors["p"][-1])
    assert 1.5 < first / last < 2.7, (first, last)
    # same key, same result (the compiled E-step is reused)
    again = run_known(m_step=bernoulli_m_step)
    jax.tree.map(np.testing.assert_array_equal, out, again)
    other = mcem(
        jax.random.key(1), known_n, {"p": 0.8}, jnp.array(S_DP), e_step="mcmc", m_step=bernoulli_m_step,
        num_particles=(1_000, 4_000), tolerances=(1e-2, 1e-3), progress_bar=False,
    )  # fmt: skip
    assert float(other.params["p"]) != float(out.params["p"])


def test_known_n_mle_with_optax_m_step():
    mle, _ = exact_known_n()
    out = run_known()
    assert_mle(out, {"p": mle})


# (b) unknown n: n ~ Poisson(λ) with λ a parameter, Bernoulli(p) records, noisy count and noisy n
CAP, S_COUNT, N_DP = 80, 11.3, 33.6
NOISY_N = dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=1.0)


def unknown_n(s_dp=None, n_dp=None):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    lam = numpyro.sample("lam", dist.Gamma(1.0, 0.01))
    n = numpyro.sample("n", dist.Poisson(lam))
    people = dpjax.records_plate("people", n, CAP)
    with people:
        x = numpyro.sample("x", dist.Bernoulli(p))
    dpjax.privatized("count", LAPLACE, lambda r: r["x"], {"x": x}, plate=people, obs=s_dp)
    dpjax.privatized("n_dp", NOISY_N, lambda r: jnp.ones(()), {"x": x}, plate=people, obs=n_dp)


def unknown_n_loglik(theta, n_max=200):
    """log p(s, n_dp | p, λ): double enumeration over n ≤ n_max (Poisson mass beyond is < 1e-60) and
    the count k ≤ n."""
    p, lam = theta
    if not (0 < p < 1 and lam > 0):
        return -np.inf
    n, k = np.arange(n_max + 1)[:, None], np.arange(n_max + 1)[None, :]
    log_binom = gammaln(n + 1) - gammaln(k + 1) - gammaln(np.maximum(n - k, 0) + 1)
    log_w = np.where(k <= n, log_binom + k * np.log(p) + (n - k) * np.log1p(-p), -np.inf)
    log_w = log_w + stats.laplace.logpdf(S_COUNT - k) + stats.laplace.logpdf(N_DP - n, scale=2.0)
    log_w = log_w + stats.poisson.logpmf(n, lam)
    top = log_w.max()
    return top + np.log(np.exp(log_w - top).sum())


def complete_data_m_step(recs, w):
    """argmax over (p, λ) of Σ_j w_j [log Poisson(n_j; λ) + Σ_{i<n_j} log Bernoulli(x_ij; p)]."""
    active = jnp.arange(CAP)[None] < recs["n"][:, None]
    ones = jnp.sum(jnp.where(active, recs["x"], 0), 1)
    return {"p": (w @ ones) / (w @ recs["n"]), "lam": w @ recs["n"]}


def test_unknown_n_mle_of_p_and_poisson_rate_and_information():
    exact = optimize.minimize(
        lambda t: -unknown_n_loglik(t), [0.4, 30.0], method="Nelder-Mead",
        options={"xatol": 1e-9, "fatol": 1e-13, "maxiter": 5000},
    ).x  # fmt: skip
    info = -hessian(unknown_n_loglik, exact, [1e-4, 1e-2])  # in (p, λ) order
    out = mcem(
        jax.random.key(0), unknown_n, {"p": 0.5, "lam": 20.0}, jnp.array(S_COUNT), jnp.array(N_DP),
        e_step="mcmc", m_step=complete_data_m_step, num_particles=(2_000,), tolerances=(0.1,),
        progress_bar=False,
    )  # fmt: skip
    assert_mle(out, {"p": exact[0], "lam": exact[1]})
    order = [1, 0]  # ravel_pytree order of the result: lam, p
    assert_information(out, info[np.ix_(order, order)])
    assert float(out.params["lam"]) != pytest.approx(N_DP, abs=0.05)  # not just the noisy n


def test_e_step_and_settings_are_validated():
    run = partial(mcem, jax.random.key(0), known_n, {"p": 0.5}, jnp.array(S_DP), progress_bar=False)
    for bad in ("MCMC", "gibbs", None):
        with pytest.raises(ValueError, match=r"`e_step` must be one of \['importance', 'mcmc'\], got"):
            run(e_step=bad)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="`num_chains` must be a positive int"):
            run(e_step="mcmc", num_chains=bad)
    with pytest.raises(ValueError, match="equal length"):
        run(e_step="mcmc", num_particles=(100, 200), tolerances=(1e-2,))
    # an unknown n needs the MCMC E-step; the importance E-step says so
    with pytest.raises(ValueError, match="unknown n.*e_step='mcmc'"):
        mcem(
            jax.random.key(0), unknown_n, {"p": 0.5, "lam": 20.0}, jnp.array(S_COUNT), jnp.array(N_DP),
            progress_bar=False,
        )  # fmt: skip


def test_compiles_once_per_model_structure():
    """θ and the release are traced arguments of the compiled E-step: a new release re-executes only
    the eager set-up (prototype trace, the chains' start), not the compiled loop."""
    calls = {"n": 0}

    def model(s_dp=None):
        calls["n"] += 1
        known_n(s_dp)

    counts = []
    for release in (11.3, 9.7, 14.2):
        before = calls["n"]
        mcem(
            jax.random.key(0), model, {"p": 0.5}, jnp.array(release), e_step="mcmc", m_step=bernoulli_m_step,
            num_particles=(200,), tolerances=(0.05,), progress_bar=False,
        )  # fmt: skip
        counts.append(calls["n"] - before)
    first, second, third = counts
    assert second < first and second == third, counts


# (c) EM's rate of convergence (the fraction of missing information), and the warning when a change
# below the tolerance is no evidence of convergence. The known-n model with a noisier count: its exact
# EM map is m(p) = E[K | s, p] / N (enumeration over the count K), and m'(p̂) at the MLE is EM's rate
# (for one parameter, the same in any parametrisation at the fixed point).


def noisy_count(epsilon):
    mechanism = dpjax.LaplaceMechanism(epsilon=epsilon, sensitivity=1.0)

    def model(s_dp=None):
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        with numpyro.plate("people", N):
            x = numpyro.sample("x", dist.Bernoulli(p))
        dpjax.privatized("count", mechanism, lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)

    return model


def count_joint(p, epsilon):
    """p(K = k, s | p) for k = 0..N."""
    k = np.arange(N + 1)
    return k, stats.binom.pmf(k, N, p) * stats.laplace.pdf(S_DP - k, scale=1 / epsilon)


def exact_em_map(p, epsilon):
    k, joint = count_joint(p, epsilon)
    return joint @ k / joint.sum() / N


def exact_noisy_mle(epsilon):
    nll = lambda p: -np.log(np.sum(count_joint(p, epsilon)[1]))
    opts = {"xatol": 1e-10}
    return optimize.minimize_scalar(nll, bounds=(1e-3, 1 - 1e-3), method="bounded", options=opts).x


def exact_em_rate(p, epsilon, h=1e-5):
    return (exact_em_map(p + h, epsilon) - exact_em_map(p - h, epsilon)) / (2 * h)


@pytest.mark.parametrize(
    "e_step, num_particles, tolerances",
    [("mcmc", (1_000, 4_000), (1e-2, 3e-3)), ("importance", (2_000, 20_000), (1e-3, 1e-4))],
)
def test_em_rate_is_the_derivative_of_the_exact_em_map(e_step, num_particles, tolerances):
    epsilon = 0.25  # Laplace scale 4: the rate is about 0.6 (0.18 at the scale 1 of the tests above)
    mle = exact_noisy_mle(epsilon)
    exact = exact_em_rate(mle, epsilon)
    # the fixed point's rate: Var(K | s, p̂) / (N p̂ (1 − p̂)), I_miss / I_c for the Bernoulli records
    k, joint = count_joint(mle, epsilon)
    post = joint / joint.sum()
    var = post @ k**2 - (post @ k) ** 2
    assert exact == pytest.approx(var / (N * mle * (1 - mle)), rel=1e-5) and 0.5 < exact < 0.7, exact
    out = mcem(
        jax.random.key(0), noisy_count(epsilon), {"p": 0.5}, jnp.array(S_DP), e_step=e_step,
        m_step=bernoulli_m_step, num_particles=num_particles, tolerances=tolerances, progress_bar=False,
    )  # fmt: skip
    rate = float(out.em_rate)
    # Monte Carlo error: with one parameter r = 1 − I_obs / I_c; that of I_c (linear in the mean
    # count) is small beside that of I_obs, so s.e.(r) ≈ information_mcse / I_c, I_c = I_obs / (1 − r).
    # The exact rate moves by only ~1e-3 over the Monte Carlo error of θ̂ (evaluated at the MLE).
    se = float(out.information_mcse[0, 0]) * (1 - rate) / float(out.information[0, 0])
    assert se < 0.03, se  # the check tells 0.6 from, e.g., I_obs / I_c = 0.4
    assert abs(rate - exact) < Z_MAX * se, (rate, exact, se)
    assert out.em_rate.shape == () and out.em_rate.dtype == out.information.dtype


def test_a_warning_when_a_high_em_rate_makes_the_stopping_rule_stop_far_from_the_mle():
    """A very noisy count (Laplace scale 100): EM's rate is 0.98 at the MLE and 0.997 at p = 0.55,
    from where EM moves by about 0.0023 an iteration, below the tolerance 0.003: it stops at the
    start, 0.18 from the MLE, and the rate says so (0.0023 / (1 − 0.997) ≫ 10 × 0.003). With 16,000
    draws the Monte Carlo error of the rate (about 0.01) and of the change (about 0.0005) leave the
    warning robust to the seed."""
    epsilon = 0.01
    mle = exact_noisy_mle(epsilon)
    assert 0.97 < exact_em_rate(mle, epsilon) < 0.99 and 0.99 < exact_em_rate(0.55, epsilon) < 1.0
    with pytest.warns(dpjax.infer.ConvergenceWarning, match="EM rate") as rec:
        out = mcem(
            jax.random.key(0), noisy_count(epsilon), {"p": 0.55}, jnp.array(S_DP), e_step="mcmc",
            m_step=bernoulli_m_step, num_particles=(16_000,), tolerances=(3e-3,), progress_bar=False,
        )  # fmt: skip
    assert len(rec) == 1, [str(r.message) for r in rec]
    message = str(rec[0].message)
    assert re.search(
        r"EM rate \(the fraction of missing information\) at θ̂ is [\d.]+, so the last change of [\d.e-]+ "
        r"\(below the final tolerance 0\.003\) (implies a distance of about [\d.e+]+ from the MLE: EM "
        r"needs about [\d,]+ more iterations|is no evidence of convergence: EM does not contract at θ̂, which "
        r"is not near the MLE)\. Raise `max_iterations`",
        message,
    ), message
    assert float(out.em_rate) > 0.95 and abs(float(out.params["p"]) - mle) > 0.1  # the silent wrong answer
    # the well-informed count of the tests above (rate about 0.2): converged, and no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpjax.infer.ConvergenceWarning)
        out = mcem(
            jax.random.key(0), known_n, {"p": 0.8}, jnp.array(S_DP), e_step="mcmc", m_step=bernoulli_m_step,
            num_particles=(1_000,), tolerances=(1e-2,), progress_bar=False,
        )  # fmt: skip
    assert float(out.em_rate) < 0.4
