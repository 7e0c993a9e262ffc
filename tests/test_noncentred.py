"""Non-centred θ-moves (interweaving): exactness, mixing gain, consistency, diagnostics."""

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer import MCMC
from scipy import stats

import dpjax
from dpjax.diagnostics import mcse_z
from dpjax.infer import DataAugmentationKernel
from dpjax.infer.noncentred import _from_noise, noise_of, to_noise, unconstrained_target
from dpjax.testing import mcse_z_test

N, TAU1, TAU2 = 100, 80.0, 200.0  # the release is far weaker than the records: plain DA crawls


def two_moment_model(s):
    """μ ~ N(0, 2²), xᵢ ~ N(μ, 1); Gaussian noise on Σxᵢ (sd 80) and on Σxᵢ² (sd 200)."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
    with numpyro.plate("rows", N):
        x = numpyro.sample("x", dist.Normal(mu, 1.0))
    dpjax.privatized(
        "s1", dpjax.GaussianMechanism(sigma=TAU1), lambda r: r["x"], {"x": x}, plate="rows", obs=s[0]
    )
    dpjax.privatized(
        "s2", dpjax.GaussianMechanism(sigma=TAU2), lambda r: r["x"] ** 2, {"x": x}, plate="rows", obs=s[1]
    )


def mu_update(key, records, params):
    prec = 1 / 4 + N
    return {"mu": records["x"].sum() / prec + jax.random.normal(key) / jnp.sqrt(prec)}


def exact_two_moment(s1, s2):
    """Posterior moments of μ: S1 = Σx ~ N(nμ, n), SS ~ χ²(n-1) independent, S2 = SS + S1²/n."""
    v = np.linspace(-2000, 2000, 8001)  # g(v) = ∫ N(v - SS; 0, τ2) χ²_{n-1}(SS) dSS
    ss = np.linspace(1e-3, 400, 8001)
    chi = stats.chi2(N - 1).pdf(ss)
    g = np.array([np.trapezoid(stats.norm.pdf(vi - ss, 0, TAU2) * chi, ss) for vi in v])
    mu = np.linspace(-8, 8, 1601)
    S1 = np.linspace(s1 - 8 * TAU1, s1 + 8 * TAU1, 2001)
    lik_s = stats.norm.pdf(s1 - S1, 0, TAU1) * np.interp(s2 - S1**2 / N, v, g, left=0, right=0)
    lik = np.trapezoid(lik_s[None, :] * stats.norm.pdf(S1[None, :], N * mu[:, None], np.sqrt(N)), S1, axis=1)
    w = lik * stats.norm.pdf(mu, 0, 2)
    w /= w.sum()
    return float(w @ mu), float(w @ mu**2)


def test_noncentred_moves_match_exact_posterior_and_mix_faster():
    release = jnp.array([60.0, 150.0])
    mean, second = exact_two_moment(60.0, 150.0)
    draws, ess = {}, {}
    for moves in ("auto", 0):
        mcmc = MCMC(
            DataAugmentationKernel(two_moment_model, theta_update=mu_update, noncentred_moves=moves),
            num_warmup=1000,
            num_samples=4000,
            num_chains=4,
            chain_method="vectorized",
            progress_bar=False,
        )
        mcmc.run(jax.random.key(0), release)
        draws[moves] = mcmc.get_samples(group_by_chain=True)["mu"]
        _, ess[moves] = mcse_z(draws[moves], mean)
    z1, _ = mcse_z(draws["auto"], mean)
    z2, _ = mcse_z(np.asarray(draws["auto"]) ** 2, second)
    assert abs(z1) < 4 and abs(z2) < 4, (z1, z2, mean, second)
    assert ess["auto"] >= 5 * ess[0], ess


def test_rebuilt_records_stay_consistent_with_the_statistic():
    kernel = DataAugmentationKernel(two_moment_model, theta_update=mu_update, store_records=True)
    mcmc = MCMC(kernel, num_warmup=200, num_samples=300, progress_bar=False)
    mcmc.run(jax.random.key(3), jnp.array([60.0, 150.0]), extra_fields=("statistics",))
    x = np.asarray(mcmc.get_samples()["x"], dtype=np.float64)
    carried = mcmc.get_extra_fields()["statistics"]
    np.testing.assert_allclose(carried["s1"], x.sum(-1), rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(carried["s2"], (x**2).sum(-1), rtol=1e-5, atol=1e-3)
    assert np.mean(mcmc.get_extra_fields()["nc_accept_rate"]) > 0.1


def test_release_free_start_plus_the_sweeps_log_eta_is_the_full_target():
    """A move's start adds the log η of the running statistic to the release-free target (one pass
    over the records fewer); the sum must be the full target exactly, normalising constants included,
    or every first move of an iteration would be accepted at a wrong rate."""
    release = (jnp.array(60.0), jnp.array(150.0))
    x = 0.7 + jax.random.normal(jax.random.key(1), (N,))
    theta, supports = {"mu": jnp.array(0.7)}, {"mu": dist.constraints.real}
    u = noise_of(jax.random.key(2), two_moment_model, theta, {"x": x}, (release,), {})
    flat, target = unconstrained_target(two_moment_model, u, {"x": x.dtype}, supports, theta, (release,), {})
    full = target(flat)[0]
    log_eta = dpjax.GaussianMechanism(sigma=TAU1).log_density(release[0], x.sum()) + dpjax.GaussianMechanism(
        sigma=TAU2
    ).log_density(release[1], (x**2).sum())
    split = target(flat, releases=False)[0] + log_eta
    assert abs(float(target(flat, releases=False)[0]) - float(full)) > 1.0  # the releases do count
    np.testing.assert_allclose(float(split), float(full), rtol=0, atol=1e-4)


PRECISION = jnp.array([[2.0, 0.5], [0.5, 1.0]])


@pytest.mark.parametrize(
    "fn, x",
    [
        (dist.Normal(1.5, 2.0), jnp.array([-1.0, 0.3, 4.0])),
        (dist.Laplace(0.0, 0.5), jnp.array([-1.0, 0.3, 4.0])),
        (dist.Exponential(2.0), jnp.array([0.1, 0.5, 3.0])),
        (dist.Gamma(0.7, 2.5), jnp.array([0.01, 0.5, 3.0])),
        (dist.Bernoulli(0.3), jnp.array([0.0, 1.0, 1.0])),
        (dist.Categorical(jnp.array([0.2, 0.5, 0.3])), jnp.array([0, 1, 2])),
        (dist.Poisson(3.5), jnp.array([0.0, 2.0, 7.0, 15.0])),
        (dist.NegativeBinomial2(6.0, 0.7), jnp.array([0.0, 2.0, 7.0, 40.0])),
        (dist.NegativeBinomialProbs(3.0, 0.8), jnp.array([0.0, 5.0, 30.0])),
        (
            dist.MultivariateNormal(jnp.array([1.0, -2.0]), precision_matrix=PRECISION),
            jnp.array([[0.0, 1.0], [3.0, -2.5], [1.0, -2.0]]),
        ),
        (
            dist.Dirichlet(jnp.array([2.0, 0.7, 5.0])),
            jnp.array([[0.2, 0.3, 0.5], [0.01, 0.9, 0.09], [0.6, 0.001, 0.399]]),
        ),
    ],
)
def test_noise_representation_round_trips(fn, x):
    for seed in range(5):
        u = to_noise(jax.random.key(seed), fn, x)
        np.testing.assert_allclose(_from_noise(fn, u, x.dtype), x, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "fn",
    [
        dist.Bernoulli(0.3),
        dist.Categorical(jnp.array([0.2, 0.5, 0.3])),
        dist.Poisson(3.5),
        dist.NegativeBinomial2(6.0, 0.7),
    ],
)
def test_discrete_noise_is_uniform(fn):
    """u drawn given x ~ f is Uniform(0, 1): the noise law does not depend on θ."""
    x = fn.sample(jax.random.key(0), (20000,))
    u = np.asarray(to_noise(jax.random.key(1), fn, x))
    assert stats.kstest(u, "uniform").pvalue > 1e-3


def test_multivariate_normal_noise_is_standard_normal():
    """u = L⁻¹(x − μ) of x ~ N(μ, Φ⁻¹) is N(0, I) whatever μ and Φ."""
    fn = dist.MultivariateNormal(jnp.array([1.0, -2.0]), precision_matrix=PRECISION)
    u = np.asarray(to_noise(None, fn, fn.sample(jax.random.key(0), (20000,))))
    assert stats.kstest(u[:, 0], "norm").pvalue > 1e-3 and stats.kstest(u[:, 1], "norm").pvalue > 1e-3
    assert abs(np.corrcoef(u.T)[0, 1]) < 0.03


def test_dirichlet_noise_is_wilson_hilferty_of_shape_raised_gamma_parts():
    """u drawn given x ~ Dirichlet(α) is (z, log U_0, …, log U_{m−1}) per part: zⱼ = WH⁻¹(G_m,ⱼ) with
    G_m,ⱼ ~ Gamma(αⱼ + m), whose CDF is F_Gamma(α+m)((α+m)(a + b z)³), and uniforms U_i independent
    of z and of each other, all independent across parts; g(α, u) gives x back; its log density is the
    representation's ``log_density``."""
    from dpjax.infer.noncentred import DIRICHLET_SHAPE_STEPS as M
    from dpjax.infer.noncentred import _from_noise, dirichlet_log_density

    # 15 KS tests: n = 10⁵ and p > 10⁻⁴ each (a family-wise false alarm of ~0.15 %, and half the
    # KS distance that n = 2·10⁴ at 10⁻³ could see)
    n = 100_000
    alpha = np.array([0.3, 3.3, 40.0])
    fn = dist.Dirichlet(jnp.array(alpha))
    x = fn.sample(jax.random.key(0), (n,))
    u = np.asarray(to_noise(jax.random.key(1), fn, x), float)
    assert u.shape == (n, 3, 1 + M)
    np.testing.assert_allclose(np.asarray(_from_noise(fn, jnp.asarray(u), x.dtype)), x, rtol=2e-4, atol=1e-6)
    shape = alpha + M
    a, b = 1 - 1 / (9 * shape), 1 / (3 * np.sqrt(shape))
    for j in range(3):
        cdf = lambda v, j=j: stats.gamma.cdf(shape[j] * np.maximum(a[j] + b[j] * v, 0) ** 3, shape[j])
        assert stats.kstest(u[:, j, 0], cdf).pvalue > 1e-4, j
        for i in range(M):
            assert stats.kstest(np.exp(u[:, j, 1 + i]), "uniform").pvalue > 1e-4, (j, i)
    flat = u.reshape(n, -1)
    assert np.all(np.abs(np.corrcoef(flat.T)[np.triu_indices(flat.shape[1], 1)]) < 0.015)  # sd 0.0032
    # the density of z: Σⱼ log Gamma(G_m,ⱼ | αⱼ + m) + log dG_m,ⱼ/dzⱼ (the uniforms' is α-free)
    g = shape * (a + b * u[:5, :, 0]) ** 3
    expected = np.sum(stats.gamma.logpdf(g, shape) + np.log(3 * shape * b * (a + b * u[:5, :, 0]) ** 2), -1)
    np.testing.assert_allclose(np.asarray(dirichlet_log_density(fn, jnp.asarray(u[:5]))), expected, rtol=2e-5)
    off = np.zeros((3, 1 + M))
    off[0, 0] = -a[0] / b[0] - 1.0
    assert float(dirichlet_log_density(fn, jnp.asarray(off))) == -np.inf


def test_dirichlet_noise_law_hardly_moves_with_small_alpha():
    """Why the shape is raised: with the noise held, moving α changes Σ log q_α(u) over the records;
    for a part with α ≈ 1 the plain Wilson–Hilferty law (m = 0) loses nats per 30 % move over 8 000
    records, the shape-raised one hardly any (a ridge move's acceptance pays that change)."""
    from dpjax.infer import noncentred
    from dpjax.infer.noncentred import dirichlet_log_density

    alpha = jnp.array([1.2, 2.5, 20.0])
    x = dist.Dirichlet(alpha).sample(jax.random.key(0), (8000,))
    change = {}
    for m in (0, noncentred.DIRICHLET_SHAPE_STEPS):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(noncentred, "DIRICHLET_SHAPE_STEPS", m)
            u = to_noise(jax.random.key(1), dist.Dirichlet(alpha), x)
            q = lambda a, u=u: float(jnp.sum(dirichlet_log_density(dist.Dirichlet(a), u)))
            change[m] = q(alpha * 1.3) - q(alpha)
    assert change[0] < -3.0 and abs(change[noncentred.DIRICHLET_SHAPE_STEPS]) < 0.5, change


def test_dirichlet_moves_target_carries_the_noise_density(monkeypatch):
    """The law of Dirichlet noise depends on α, so the moves' log target in (α, u) must be
    log p(α) + log|J| + Σᵢ log q_α(uᵢ) + log η(s | T(x(α, u))), up to a constant. (An MCMC test cannot
    see the q term's omission: the Wilson–Hilferty map is so nearly θ-free that the bias is small. The
    shape-raising steps are turned off here, where q's dependence on small α is large enough to see.)"""
    from dpjax.infer import noncentred
    from dpjax.infer.noncentred import dirichlet_log_density

    monkeypatch.setattr(noncentred, "DIRICHLET_SHAPE_STEPS", 0)

    mech = dpjax.LaplaceMechanism(scale=jnp.ones(3))

    def model(s):
        alpha = numpyro.sample("alpha", dist.Gamma(2.0, 1.0).expand([3]).to_event(1))
        with numpyro.plate("rows", 20):
            x = numpyro.sample("x", dist.Dirichlet(alpha))
        dpjax.privatized("s", mech, lambda r: jnp.log(r["x"]), {"x": x}, plate="rows", obs=s)

    s = jnp.array([-25.0, -20.0, -18.0])
    alpha0 = jnp.array([0.3, 0.6, 2.0])
    x = dist.Dirichlet(alpha0).sample(jax.random.key(0), (20,))
    theta, supports = {"alpha": alpha0}, {"alpha": dist.constraints.positive}
    u = noise_of(jax.random.key(1), model, theta, {"x": x}, (s,), {})
    flat, target = unconstrained_target(model, u, {"x": x.dtype}, supports, theta, (s,), {})

    def by_hand(phi):
        alpha = jnp.exp(phi)
        recs = target(phi)[2]["x"]
        return (
            dist.Gamma(2.0, 1.0).log_prob(alpha).sum()
            + phi.sum()  # log |J| of α = exp(φ)
            + dirichlet_log_density(dist.Dirichlet(alpha), u["x"]).sum()
            + mech.log_density(s, jnp.log(recs).sum(0)).sum()
        )

    # a move that raises every α: x(α, u) needs w = a(α) + b(α) z > 0, and a/b grows with α, so every
    # record stays defined (a part lowered from α = 0.6 leaves it for the ~3 % of records with G < 0.003)
    other = flat + jnp.array([0.5, 0.3, 0.25])
    np.testing.assert_allclose(
        float(target(other)[0] - target(flat)[0]), float(by_hand(other) - by_hand(flat)), rtol=1e-4, atol=1e-3
    )
    q_part = (
        dirichlet_log_density(dist.Dirichlet(jnp.exp(other)), u["x"]).sum()
        - dirichlet_log_density(dist.Dirichlet(alpha0), u["x"]).sum()
    )
    assert abs(float(q_part)) > 0.1  # the q term is not negligible here, so the check sees it


def test_dirichlet_transport_moves_run_by_default():
    """A transport map (Dirichlet records) is a noise representation the "auto" moves use, like a
    θ-free one."""
    from dpjax.infer.noncentred import noise_supported

    fn = dist.Dirichlet(jnp.ones(3))
    assert noise_supported(fn)

    def model(s):
        alpha = numpyro.sample("alpha", dist.Gamma(2.0, 1.0).expand([3]).to_event(1))
        with numpyro.plate("rows", 10):
            x = numpyro.sample("x", dist.Dirichlet(alpha))
        mech = dpjax.LaplaceMechanism(scale=jnp.ones(3))
        dpjax.privatized("s", mech, lambda r: jnp.log(r["x"]), {"x": x}, plate="rows", obs=s)

    s = jnp.array([-12.0, -10.0, -9.0])
    for moves, expected in (("auto", 5), (2, 2), (0, 0)):
        kernel = DataAugmentationKernel(model, noncentred_moves=moves)
        kernel.init(jax.random.key(0), 10, None, (s,), {})
        assert kernel._num_moves == expected, moves


def test_diagnostics_reach_arviz_and_progress_bar():
    kernel = DataAugmentationKernel(two_moment_model)
    mcmc = MCMC(
        kernel, num_warmup=50, num_samples=50, num_chains=2, chain_method="vectorized", progress_bar=False
    )
    mcmc.run(jax.random.key(0), jnp.array([60.0, 150.0]))
    stats_ = az.from_numpyro(mcmc).sample_stats
    assert {"nc_accept_rate", "nc_step_size"} <= set(stats_)
    state = jax.tree.map(lambda v: v[0], mcmc.last_state)
    assert "NC: acc." in kernel.get_diagnostics_str(state)


def test_noncentred_option_validation():
    with pytest.raises(ValueError, match="noncentred_moves"):
        DataAugmentationKernel(two_moment_model, noncentred_moves=-1)

    def gamma_records(s):  # Beta records: no noise representation
        rate = numpyro.sample("rate", dist.Gamma(2.0, 1.0))
        with numpyro.plate("rows", 10):
            x = numpyro.sample("x", dist.Beta(2.0, rate))
        dpjax.privatized(
            "s", dpjax.GaussianMechanism(sigma=1.0), lambda r: r["x"], {"x": x}, plate="rows", obs=s
        )

    with pytest.raises(ValueError, match="noise representation"):
        DataAugmentationKernel(gamma_records, noncentred_moves=3).init(
            jax.random.key(0), 10, None, (jnp.array(5.0),), {}
        )
    auto = DataAugmentationKernel(gamma_records)  # "auto" switches them off where they do not apply
    state = auto.init(jax.random.key(0), 10, None, (jnp.array(5.0),), {})
    assert auto._num_moves == 0 and float(state.nc_step_size) == 0.0


def assert_moves_match(model, release, site, exact):
    """DA with 3 non-centred moves per iteration (2 chains × 2 000): the MCSE z-test of ``site``'s mean
    against ``exact``, and the moves ran."""
    mcmc = MCMC(
        DataAugmentationKernel(model, noncentred_moves=3), num_warmup=500, num_samples=2000, num_chains=2,
        chain_method="vectorized", progress_bar=False,
    )  # fmt: skip
    mcmc.run(jax.random.key(0), jnp.array(release), extra_fields=("nc_accept_rate",))
    z, ess = mcse_z(mcmc.get_samples(group_by_chain=True)[site], exact)
    assert abs(z) < 4 and ess > 200, (z, ess, exact)
    assert float(np.mean(mcmc.get_extra_fields()["nc_accept_rate"])) > 0.1


class RateGamma(dist.Gamma):
    """A test-local record family: Gamma records whose rate (only) depends on θ."""


def test_registered_noise_representation_gives_exact_moves_for_a_new_family():
    from dpjax.infer.noncentred import _representation, noise_supported, register_noise_representation

    register_noise_representation(RateGamma, lambda key, fn, x: x * fn.rate, lambda fn, u, dtype: u / fn.rate)
    assert noise_supported(RateGamma(2.0, 1.0).expand([3]))
    assert _representation(RateGamma(2.0, 1.0)).log_density is None  # its own, not the built-in Gamma's

    def model(s):
        rate = numpyro.sample("rate", dist.Gamma(2.0, 1.0))
        with numpyro.plate("rows", 10):
            x = numpyro.sample("x", RateGamma(2.0, rate))
        dpjax.privatized(
            "s", dpjax.GaussianMechanism(sigma=1.0), lambda r: r["x"], {"x": x}, plate="rows", obs=s
        )

    # exact: T = Σx ~ Gamma(20, rate) given rate, s = T + N(0, 1)
    rate, T = np.linspace(1e-3, 12, 1200), np.linspace(1e-3, 40, 4000)
    lik = np.trapezoid(
        stats.gamma.pdf(T[None], 20, scale=1 / rate[:, None]) * stats.norm.pdf(5.0 - T)[None], T, axis=1
    )
    w = stats.gamma.pdf(rate, 2.0) * lik
    assert_moves_match(model, 5.0, "rate", float(w @ rate / w.sum()))


def test_gamma_records_whose_shape_depends_on_theta_match_the_exact_posterior():
    """The built-in Gamma representation u = x · rate carries log q_θ(u) = log Gamma(u; shape(θ), 1), so the
    moves are exact when θ sets the shape too (here x ~ Gamma(θ, θ): mean 1, shape θ). Without that
    density in the target the posterior mean is off (checked: z = 11)."""

    def model(s):
        theta = numpyro.sample("theta", dist.Gamma(4.0, 1.0))
        with numpyro.plate("rows", 10):
            x = numpyro.sample("x", dist.Gamma(theta, theta))
        dpjax.privatized(
            "s", dpjax.GaussianMechanism(sigma=1.0), lambda r: r["x"], {"x": x}, plate="rows", obs=s
        )

    # exact: T = Σx ~ Gamma(10θ, θ) given θ, s = T + N(0, 1)
    theta, T = np.linspace(1e-3, 20, 1500), np.linspace(1e-3, 40, 4000)
    lik = np.trapezoid(
        stats.gamma.pdf(T[None], 10 * theta[:, None], scale=1 / theta[:, None])
        * stats.norm.pdf(13.0 - T)[None],
        T,
        axis=1,
    )
    w = stats.gamma.pdf(theta, 4.0) * lik
    assert_moves_match(model, 13.0, "theta", float(w @ theta / w.sum()))


def test_random_walk_adapts_a_dense_covariance():
    """The random-walk moves learn the covariance of θ, off-diagonal included (a ridge off the axes,
    as the ATUS α at ε_s = 1): after warmup the proposal's covariance is step² × that of the draws."""
    from dpjax.infer.mh import adapt, proposal_cholesky, proposer
    from dpjax.infer.noncentred import init_nc_state

    cov = jnp.array([[1.0, 0.98], [0.98, 1.0]])
    draws = jax.random.multivariate_normal(jax.random.key(0), jnp.zeros(2), cov, (4000,))
    state = init_nc_state({"a": jnp.zeros(2)}, {"a": dist.constraints.real})
    # acceptance on target: the step stays put
    state = jax.lax.scan(lambda s, x: (adapt(s, x, 0.3, 0.3, learn=True), None), state, draws)[0]
    chol = proposal_cholesky(state.count, state.m2)
    learnt = np.asarray(chol @ chol.T)
    assert np.allclose(learnt, np.cov(np.asarray(draws).T), atol=0.02), learnt
    steps = jax.vmap(lambda k: proposer(state)(k, jnp.zeros(2)))(jax.random.split(jax.random.key(1), 20_000))
    assert np.corrcoef(np.asarray(steps).T)[0, 1] > 0.95


NB_N, NB_RELEASE = 30, 290.4
NB_NOISE = dpjax.LaplaceMechanism(epsilon=0.05, sensitivity=1.0)  # scale 20 against Σx's prior sd ≈ 40


def negative_binomial_model(s=None):
    m = numpyro.sample("m", dist.Gamma(4.0, 0.4))
    r = numpyro.sample("r", dist.Gamma(2.0, 1.0))  # the dispersion: the records pin it, the release hardly
    with numpyro.plate("people", NB_N):
        x = numpyro.sample("x", dist.NegativeBinomial2(m, r))
    dpjax.privatized("total", NB_NOISE, lambda q: q["x"], {"x": x}, plate="people", obs=s)


def negative_binomial_exact():
    """E[m | s], E[r | s] on a grid: Σx of NB2(m, r) records is NB2(N m, N r), summed against the noise."""
    m, r = np.linspace(0.01, 40, 400)[:, None, None], np.linspace(0.005, 12, 400)[None, :, None]
    k = np.arange(0, int(NB_RELEASE + 40 * NB_NOISE.scale))[None, None, :]
    a = NB_N * r
    lik = (
        stats.nbinom(a, a / (a + NB_N * m)).pmf(k) * stats.laplace(scale=NB_NOISE.scale).pdf(NB_RELEASE - k)
    ).sum(-1)
    log_post = (
        np.log(lik) + stats.gamma(4.0, scale=2.5).logpdf(m[..., 0]) + stats.gamma(2.0).logpdf(r[..., 0])
    )
    w = np.exp(log_post - log_post.max())
    return float((w * m[..., 0]).sum() / w.sum()), float((w * r[..., 0]).sum() / w.sum())


def test_negative_binomial_moves_match_the_exact_posterior_and_mix_faster():
    """With the inverse-CDF noise map of the negative binomial the moves mix the dispersion ~3× faster
    (ESS per draw; benchmarks/negative_binomial_moves.py) and both chains match the grid posterior."""
    exact = negative_binomial_exact()
    ess = {}
    for moves in (5, 0):
        kernel = DataAugmentationKernel(negative_binomial_model, noncentred_moves=moves)
        mcmc = MCMC(kernel, num_warmup=500, num_samples=1000, num_chains=2, chain_method="vectorized",
                    progress_bar=False)  # fmt: skip
        mcmc.run(jax.random.key(0), jnp.array(NB_RELEASE))
        draws = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
        for site, value in zip(("m", "r"), exact):
            assert mcse_z_test(draws[site], value).passed, (moves, site)
        ess[moves] = float(az.ess(draws["r"]))
    assert ess[5] > 2 * ess[0], ess


def test_chains_that_disagree_at_the_end_of_warmup_name_the_slow_site():
    """At ε = 1 the release pins Σx to ±1 and plain DA holds the dispersion r at the records' (R̂ ≈ 2.4
    over 4 chains, benchmarks/negative_binomial_moves.py): a SlowMixingWarning names r before any draws
    are kept. Chains that mix (a Normal mean) stay silent."""
    import warnings

    from dpjax.infer import SlowMixingWarning

    strong = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0)

    def nb_strong(s=None):
        m = numpyro.sample("m", dist.Gamma(4.0, 0.4))
        r = numpyro.sample("r", dist.Gamma(2.0, 1.0))
        with numpyro.plate("people", NB_N):
            x = numpyro.sample("x", dist.NegativeBinomial2(m, r))
        dpjax.privatized("total", strong, lambda q: q["x"], {"x": x}, plate="people", obs=s)

    runs = {"negative binomial, ε = 1": (nb_strong, (jnp.array(NB_RELEASE),))}

    def normal_mean(s=None):
        mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
        with numpyro.plate("rows", 30):
            x = numpyro.sample("x", dist.Normal(mu, 1.0))
        dpjax.privatized(
            "total", dpjax.GaussianMechanism(sigma=3.0), lambda r: r["x"], {"x": x}, plate="rows", obs=s
        )

    runs["Normal mean"] = (normal_mean, (jnp.array(20.0),))
    for name, (model, args) in runs.items():
        mcmc = MCMC(DataAugmentationKernel(model, noncentred_moves=0), num_warmup=200, num_samples=10,
                    num_chains=4, chain_method="vectorized", progress_bar=False)  # fmt: skip
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            mcmc.run(jax.random.key(0), *args)
        slow = [str(w.message) for w in seen if issubclass(w.category, SlowMixingWarning)]
        if name.startswith("negative"):
            assert len(slow) == 1 and "['r']" in slow[0], slow
        else:
            assert not slow, slow


def test_records_the_moves_carry_are_not_sticky():
    """σ = 10⁻⁴ on a sum of 10 Normal records: a record proposal moves the sum by ~10⁴ noise s.d., so the
    sweep moves none. With the non-centred moves the records move with μ: no StickyRecordsWarning (it
    read the sweep's acceptance only before, and fired), and μ's posterior is the exact one. Without the
    moves the records stay where they started, and the warning says so."""
    import warnings

    from dpjax.infer import StickyRecordsWarning
    from dpjax.testing import mcse_z_test

    n, s, sigma = 10, 3.0, 1e-4

    def model(s=None):
        mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        with numpyro.plate("rows", n):
            x = numpyro.sample("x", dist.Normal(mu, 1.0))
        mech = dpjax.GaussianMechanism(sigma=sigma)
        dpjax.privatized("total", mech, lambda r: r["x"], {"x": x}, plate="rows", obs=s)

    def run(moves, chains, num_samples=10):
        kernel = DataAugmentationKernel(model, noncentred_moves=moves)
        mcmc = MCMC(kernel, num_warmup=200, num_samples=num_samples, num_chains=chains,
                    chain_method="vectorized", progress_bar=False)  # fmt: skip
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            mcmc.run(jax.random.key(1), jnp.array(s))
        return mcmc, [w for w in seen if issubclass(w.category, StickyRecordsWarning)]

    mcmc, sticky = run(5, 4, num_samples=500)
    assert not sticky, [str(w.message) for w in sticky]
    precision = 1.0 + n**2 / (n + sigma**2)  # s | μ ~ N(n μ, n + σ²), μ ~ N(0, 1)
    mean = n * s / (n + sigma**2) / precision
    mu = np.asarray(mcmc.get_samples(group_by_chain=True)["mu"])
    assert mcse_z_test(mu, mean), mcse_z_test(mu, mean)
    assert mcse_z_test(mu**2, mean**2 + 1 / precision)
    assert len(run(0, 4)[1]) == 1
