"""DataAugmentationKernel against exact posteriors (MCSE z-tests over vectorized chains)."""

import warnings

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer import MCMC, NUTS
from scipy import stats
from scipy.special import betaln, gammaln

import dpjax
from dpjax.diagnostics import mcse_z
from dpjax.infer import DataAugmentationKernel, StickyRecordsWarning, record_sweep, run_chain
from dpjax.infer.record_sweep import UNROLL

Z_MAX = 4.0


# ------------------------------------------------------------------ models and exact answers
def bernoulli_model(n, releases, mechanisms):
    """Beta(1, 1)–Bernoulli records; each mechanism releases the count."""
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("people", n):
        x = numpyro.sample("x", dist.Bernoulli(p))
    for i, (mech, s) in enumerate(zip(mechanisms, releases)):
        dpjax.privatized(f"count{i}", mech, lambda r: r["x"], {"x": x}, plate="people", obs=s)


def beta_update(key, records, params):
    k, n = records["x"].sum(), records["x"].shape[0]
    return {"p": dist.Beta(1.0 + k, 1.0 + n - k).sample(key)}


def exact_bernoulli_moments(n, releases, mechanisms):
    """E[p | s], E[p² | s] by enumerating the count K (BetaBinomial(n, 1, 1) prior on K)."""
    k = np.arange(n + 1)
    logw = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1) + betaln(1 + k, 1 + n - k)
    for mech, s in zip(mechanisms, releases):
        logw = logw + np.asarray(mech.log_density(s, k.astype(float)), dtype=float)
    w = np.exp(logw - logw.max())
    w /= w.sum()
    m1 = (1 + k) / (n + 2)
    m2 = (1 + k) * (2 + k) / ((n + 2) * (n + 3))
    return float(w @ m1), float(w @ m2)


def normal_model(n, s, noise_sd):
    """μ ~ N(0, 2²), xᵢ ~ N(μ, 1); Gaussian noise on Σxᵢ."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
    with numpyro.plate("rows", n):
        x = numpyro.sample("x", dist.Normal(mu, 1.0))
    mech = dpjax.GaussianMechanism(sigma=noise_sd)
    dpjax.privatized("total", mech, lambda r: r["x"], {"x": x}, plate="rows", obs=s)


def normal_update(key, records, params):
    n = records["x"].shape[0]
    prec = 1 / 4 + n
    return {"mu": records["x"].sum() / prec + jax.random.normal(key) / jnp.sqrt(prec)}


def exact_normal(n, s, noise_sd):
    # s | μ ~ N(nμ, n + τ²)
    prec = 1 / 4 + n**2 / (n + noise_sd**2)
    mean = n * s / (n + noise_sd**2) / prec
    return mean, 1 / prec


def public_covariate_model(xs, s, noise_sd):
    """Public covariates xᵢ, latent yᵢ ~ N(β xᵢ, 1), Gaussian noise on Σ xᵢ yᵢ."""
    beta = numpyro.sample("beta", dist.Normal(0.0, 1.0))
    with numpyro.plate("rows", xs.shape[0]):
        x = numpyro.sample("x", dist.Normal(0.0, 1.0), obs=xs)
        y = numpyro.sample("y", dist.Normal(beta * x, 1.0))
    mech = dpjax.GaussianMechanism(sigma=noise_sd)
    dpjax.privatized("xy", mech, lambda r: r["x"] * r["y"], {"x": x, "y": y}, plate="rows", obs=s)


def run(kernel, *args, num_warmup=500, num_samples=2000, num_chains=4, seed=0, extra_fields=()):
    mcmc = MCMC(
        kernel,
        num_warmup=num_warmup,
        num_samples=num_samples,
        num_chains=num_chains,
        chain_method="vectorized",
        progress_bar=False,
    )
    mcmc.run(jax.random.key(seed), *args, extra_fields=extra_fields)
    return mcmc


def assert_moments(draws, mean, second):
    z1, ess = mcse_z(draws, mean)
    z2, _ = mcse_z(np.asarray(draws) ** 2, second)
    assert ess > 400, ess
    assert abs(z1) < Z_MAX and abs(z2) < Z_MAX, (z1, z2, ess)


# ------------------------------------------------------------------ exact-posterior tests
LAPLACE = [dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=1.0)]
DLAPLACE = [dpjax.DiscreteLaplaceMechanism(epsilon=0.4)]
TWO_SITES = [dpjax.LaplaceMechanism(epsilon=0.3, sensitivity=1.0), dpjax.DiscreteGaussianMechanism(sigma=2.0)]


@pytest.mark.parametrize(
    "mechs, releases",
    [(LAPLACE, [9.6]), (DLAPLACE, [12.0]), (TWO_SITES, [13.2, 8.0])],
    ids=["laplace", "discrete-laplace", "two-sites"],
)
@pytest.mark.parametrize("theta_step", ["exact", "nuts"])
def test_beta_bernoulli_exact_posterior(mechs, releases, theta_step):
    n = 30
    kw = {"theta_update": beta_update} if theta_step == "exact" else {}
    model = lambda: bernoulli_model(n, [jnp.array(s) for s in releases], mechs)
    mcmc = run(DataAugmentationKernel(model, **kw))
    draws = mcmc.get_samples(group_by_chain=True)["p"]
    assert_moments(draws, *exact_bernoulli_moments(n, releases, mechs))


@pytest.mark.parametrize("theta_step", ["exact", "nuts"])
def test_normal_sum_gaussian_noise_exact_posterior(theta_step):
    n, s, tau = 40, 25.0, 3.0
    kw = {"theta_update": normal_update} if theta_step == "exact" else {}
    mcmc = run(DataAugmentationKernel(normal_model, **kw), n, jnp.array(s), tau)
    mean, var = exact_normal(n, s, tau)
    assert_moments(mcmc.get_samples(group_by_chain=True)["mu"], mean, var + mean**2)


def test_public_records_exact_posterior():
    xs = jax.random.normal(jax.random.key(3), (25,))
    s, tau = 12.0, 2.0
    mcmc = run(DataAugmentationKernel(NUTS(public_covariate_model)), xs, jnp.array(s), tau)
    s2 = float(jnp.sum(xs**2))
    prec = 1 + s2**2 / (s2 + tau**2)
    mean = s2 * s / (s2 + tau**2) / prec
    assert_moments(mcmc.get_samples(group_by_chain=True)["beta"], mean, 1 / prec + mean**2)


# ------------------------------------------------------------------ properties of the sweep
@pytest.mark.parametrize("eps", [0.5, 2.0])
@pytest.mark.filterwarnings("ignore::dpjax.infer.ReleaseRangeWarning")  # releases far out on purpose
def test_record_acceptance_never_below_exp_minus_epsilon(eps):
    # release far from anything plausible so that many proposals move T the wrong way
    mechs = [dpjax.LaplaceMechanism(epsilon=eps, sensitivity=1.0)]
    model = lambda: bernoulli_model(40, [jnp.array(-30.0)], mechs)
    mcmc = MCMC(
        DataAugmentationKernel(model, theta_update=beta_update),
        num_warmup=0,
        num_samples=1000,
        num_chains=2,
        chain_method="vectorized",
        progress_bar=False,
    )
    mcmc.run(jax.random.key(1))
    rate = np.asarray(mcmc.get_extra_fields()["record_accept_rate"])
    assert rate.min() >= np.exp(-eps) - 1e-6


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_sweep_attains_the_bound_on_adversarial_moves(eps):
    """Every proposal moves T a full sensitivity away from the release: α = e^{-ε} exactly."""
    mech = dpjax.LaplaceMechanism(epsilon=eps, sensitivity=2.0)
    n = 200
    t_old, t_new = jnp.zeros((n, 3)), jnp.tile(jnp.array([1.0, -0.5, 0.5]), (n, 1))
    res = jnp.array([-1.0, 1.0, -1.0])  # s - T on the side where each move increases |s - T|
    out = dpjax.infer.record_sweep(jax.random.key(0), [t_old], [t_new], [res], [mech.log_noise_density])
    assert float(out.accept_rate) == pytest.approx(np.exp(-eps), rel=1e-5)
    k = int(out.accepted.sum())
    np.testing.assert_allclose(out.residuals[0], res - k * jnp.array([1.0, -0.5, 0.5]), atol=1e-4)


def test_two_sites_bound_uses_total_epsilon():
    mechs = [
        dpjax.LaplaceMechanism(epsilon=0.7, sensitivity=1.0),
        dpjax.LaplaceMechanism(epsilon=0.6, sensitivity=1.0),
    ]
    model = lambda: bernoulli_model(40, [jnp.array(-30.0), jnp.array(80.0)], mechs)
    mcmc = run(
        DataAugmentationKernel(model, theta_update=beta_update), num_warmup=0, num_samples=500, num_chains=2
    )
    assert np.asarray(mcmc.get_extra_fields()["record_accept_rate"]).min() >= np.exp(-1.3) - 1e-6


def test_carried_statistic_equals_recomputed():
    mcmc = run(
        DataAugmentationKernel(normal_model, theta_update=normal_update, store_records=True),
        30,
        jnp.array(10.0),
        1.0,
        num_warmup=50,
        num_samples=200,
        num_chains=2,
        extra_fields=("statistics",),
    )
    x = mcmc.get_samples()["x"]
    carried = mcmc.get_extra_fields()["statistics"]["total"]
    np.testing.assert_allclose(carried, x.sum(-1), rtol=1e-5, atol=1e-4)
    assert x.shape == (400, 30)


def test_same_key_same_draws_and_records_not_stored():
    kernel = lambda: DataAugmentationKernel(normal_model)
    a = run(kernel(), 20, jnp.array(5.0), 1.0, num_warmup=50, num_samples=50, num_chains=2)
    b = run(kernel(), 20, jnp.array(5.0), 1.0, num_warmup=50, num_samples=50, num_chains=2)
    c = run(kernel(), 20, jnp.array(5.0), 1.0, num_warmup=50, num_samples=50, num_chains=2, seed=1)
    assert set(a.get_samples()) == {"mu"}
    np.testing.assert_array_equal(a.get_samples()["mu"], b.get_samples()["mu"])
    assert not np.allclose(a.get_samples()["mu"], c.get_samples()["mu"])


@pytest.mark.parametrize("unroll", [2, 8, 33])
def test_scan_unroll_changes_no_draw(unroll, monkeypatch):
    """The scan's unroll (record_sweep.UNROLL, by backend) lays the loop out, not the update: the same
    draws on XLA:CPU (a GPU may fuse the kernel's float arithmetic differently at another unroll)."""
    key, n, d = jax.random.key(3), 100, 4
    t_old, t_new = (0.05 * jax.random.normal(k, (n, d)) for k in jax.random.split(key))
    args = (key, [t_old], [t_new], [jnp.full(d, 0.1)], [lambda r: -jnp.abs(r) / 0.2], jnp.arange(n) < 90)
    a, b = record_sweep(*args, unroll=1), record_sweep(*args, unroll=unroll)
    assert 0 < a.accepted.sum() < 90
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(x, y)

    if jax.default_backend() != "cpu":
        return
    kernel = lambda: DataAugmentationKernel(normal_model, theta_update=normal_update)
    plain = run(kernel(), 20, jnp.array(5.0), 1.0, num_warmup=20, num_samples=30, num_chains=2)
    monkeypatch.setitem(UNROLL, jax.default_backend(), unroll)
    unrolled = run(kernel(), 20, jnp.array(5.0), 1.0, num_warmup=20, num_samples=30, num_chains=2)
    np.testing.assert_array_equal(plain.get_samples()["mu"], unrolled.get_samples()["mu"])


@pytest.mark.parametrize("unroll", [0, 1.5, True])
def test_error_scan_unroll(unroll):
    t = jnp.zeros((5, 2))
    with pytest.raises(ValueError, match="unroll: expected a positive int"):
        record_sweep(jax.random.key(0), [t], [t], [jnp.zeros(2)], [lambda r: -jnp.abs(r)], unroll=unroll)


# "parallel" pmaps the 4 chains over 4 devices: conftest.py gives 4 host CPU devices, but a machine with
# one GPU has 1 (NumPyro's fallback warning is an error, pyproject.toml), so the case is skipped there.
FOUR_DEVICES = pytest.mark.skipif("jax.local_device_count() < 4", reason="parallel chains need 4 devices")


@pytest.mark.parametrize(
    "chain_method", ["sequential", "vectorized", pytest.param("parallel", marks=FOUR_DEVICES)]
)
def test_chain_methods_agree(chain_method):
    mcmc = MCMC(
        DataAugmentationKernel(normal_model, theta_update=normal_update),
        num_warmup=20,
        num_samples=30,
        num_chains=4,
        chain_method=chain_method,
        progress_bar=False,
    )
    mcmc.run(jax.random.key(0), 20, jnp.array(5.0), 1.0)
    ref = MCMC(
        DataAugmentationKernel(normal_model, theta_update=normal_update),
        num_warmup=20,
        num_samples=30,
        num_chains=4,
        chain_method="vectorized",
        progress_bar=False,
    )
    ref.run(jax.random.key(0), 20, jnp.array(5.0), 1.0)
    # identical chains up to float32 rounding of vmapped vs unvmapped reductions
    np.testing.assert_allclose(mcmc.get_samples()["mu"], ref.get_samples()["mu"], rtol=1e-5, atol=1e-6)


def test_arviz_from_numpyro_unchanged():
    mcmc = run(
        DataAugmentationKernel(normal_model),
        20,
        jnp.array(5.0),
        1.0,
        num_warmup=50,
        num_samples=50,
        num_chains=2,
    )
    idata = az.from_numpyro(mcmc)
    assert idata.posterior["mu"].shape == (2, 50)
    assert {"record_accept_rate", "acceptance_rate", "diverging"} <= set(idata.sample_stats)
    assert "mu" in az.summary(idata).index


def test_progress_bar_diagnostics_string():
    kernel = DataAugmentationKernel(normal_model)
    state = kernel.init(jax.random.key(0), 10, None, (20, jnp.array(5.0), 1.0), {})
    state = kernel.sample(state, (20, jnp.array(5.0), 1.0), {})
    text = kernel.get_diagnostics_str(state)
    assert text.startswith("rec. acc.") and "steps of size" in text and "unroll" not in text


def test_progress_bar_names_the_sweeps_and_the_layout_picked_for_a_gpu(monkeypatch):
    kernel = DataAugmentationKernel(normal_model, record_sweeps=3)
    state = kernel.init(jax.random.key(0), 10, None, (20, jnp.array(5.0), 1.0), {})
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    text = kernel.get_diagnostics_str(state)
    assert "3 record sweeps" in text and text.endswith(f"gpu: sweep, unroll {UNROLL['gpu']}")


def test_run_chain_vmaps_over_releases():
    kernel = DataAugmentationKernel(normal_model, theta_update=normal_update)
    f = lambda key, s: run_chain(kernel, key, (30, s, 1.0), num_warmup=100, num_samples=300)
    draws = jax.jit(jax.vmap(f))(jax.random.split(jax.random.key(0), 3), jnp.array([-30.0, 0, 30]))
    means = np.asarray(draws["mu"].mean(1))
    exact = [exact_normal(30, s, 1.0)[0] for s in (-30.0, 0.0, 30.0)]
    np.testing.assert_allclose(means, exact, atol=0.15)


def test_run_chain_thinning_keeps_every_kth_draw_and_uses_init_params():
    kernel = DataAugmentationKernel(normal_model, theta_update=normal_update, noncentred_moves=0)
    run = lambda **kw: run_chain(kernel, jax.random.key(1), (30, 5.0, 1.0), num_warmup=20, **kw)
    full = run(num_samples=30)["mu"]
    np.testing.assert_array_equal(run(num_samples=30, thinning=3)["mu"], full[2::3])
    start = {"mu": jnp.array(9.0), "x": jnp.full(30, 9.0)}
    first = run_chain(kernel, jax.random.key(1), (30, 5.0, 1.0), num_warmup=0, num_samples=1,
                      init_params=start, collect=lambda s: s.records["x"])  # fmt: skip
    assert not np.array_equal(first[0], np.asarray(run(num_samples=1, collect=lambda s: s.records["x"])[0]))
    with pytest.raises(ValueError, match="thinning"):
        run(num_samples=10, thinning=0)


def test_frozen_records_warn_at_the_end_of_warmup_and_of_run_chain():
    """Noise s.d. 10⁻³ on Σxᵢ, which one record moves by about 1: the records stop moving once Σxᵢ is
    near the release, and μ's draws are μ | those records. NumPyro's MCMC warns at the end of warmup,
    run_chain (vmapped over replicates) from its final state; at s.d. 1 the records move, no warning."""
    kernel = DataAugmentationKernel(normal_model, theta_update=normal_update, noncentred_moves=0)
    replicates = lambda sd: jax.vmap(
        lambda k: run_chain(kernel, k, (30, 5.0, sd), num_warmup=50, num_samples=20)
    )(jax.random.split(jax.random.key(2), 2))  # fmt: skip
    with pytest.warns(StickyRecordsWarning, match="2 of 2 chains .* less than once in 1 000 sweeps"):
        mcmc = run(kernel, 30, 5.0, 1e-3, num_warmup=50, num_samples=20, num_chains=2)
    assert float(np.mean(mcmc.get_extra_fields()["record_accept_rate"])) < 1e-2
    with pytest.warns(StickyRecordsWarning, match="less than once"):  # one callback per replicate
        replicates(1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StickyRecordsWarning)
        run(kernel, 30, 5.0, 1.0, num_warmup=50, num_samples=20, num_chains=2)
        replicates(1.0)


@pytest.mark.parametrize("record_update", ["sweep", "soma"])
def test_frozen_discrete_records_warn_though_half_their_proposals_repeat_them(record_update):
    """Bernoulli records under ε = 30 on their count: once the count meets the release no record flips
    (each flip costs e^{-30}). Proposals equal to their record (about half of them) change nothing: the
    seed's record_accept_rate counts them as accepted and stays near 0.5, record_move_rate leaves them out
    and shows the freeze, and the warning reads it. SOMA accepts nearly every offer (it swaps it for a
    record with the same value), so only its move rate shows the freeze."""
    frozen = dpjax.LaplaceMechanism(epsilon=30.0, sensitivity=1.0)
    kernel = DataAugmentationKernel(
        lambda: bernoulli_model(40, [jnp.array(20.0)], [frozen]),
        theta_update=beta_update,
        record_update=record_update,
    )
    with pytest.warns(StickyRecordsWarning, match="2 of 2 chains"):
        mcmc = run(kernel, num_warmup=100, num_samples=50, num_chains=2, extra_fields=("record_move_rate",))
    fields = mcmc.get_extra_fields()
    assert float(np.max(fields["record_move_rate"])) < 1e-6
    accept = float(np.mean(fields["record_accept_rate"]))
    assert 0.3 < accept < 0.7 if record_update == "sweep" else accept > 0.9, accept
    free = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    kernel = DataAugmentationKernel(
        lambda: bernoulli_model(40, [jnp.array(20.0)], [free]),
        theta_update=beta_update,
        record_update=record_update,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", StickyRecordsWarning)
        mcmc = run(kernel, num_warmup=100, num_samples=50, num_chains=2)
    if record_update == "sweep":
        assert float(np.min(mcmc.get_extra_fields()["record_accept_rate"])) >= np.exp(-1.0) - 1e-6


def test_vectorized_mcmc_takes_one_init_value_per_chain():
    """numpyro.infer.MCMC gives init_params with a leading chain axis: each chain starts at its own."""
    kernel = DataAugmentationKernel(normal_model, theta_update=normal_update, noncentred_moves=0)
    mcmc = MCMC(
        kernel, num_warmup=0, num_samples=1, num_chains=3, chain_method="vectorized", progress_bar=False
    )
    mcmc.run(jax.random.key(0), 30, 5.0, 1.0, init_params={"mu": jnp.array([-50.0, 0.0, 50.0])})
    # one θ-step from records drawn at μ = ±50: the chains are still far apart, in that order
    mu = np.asarray(mcmc.get_samples(group_by_chain=True)["mu"][:, 0])
    assert mu[0] < -20 and abs(mu[1]) < 20 and mu[2] > 20, mu
    with pytest.raises(ValueError, match="one value per chain"):
        kernel.init(jax.random.split(jax.random.key(0), 3), 0, {"mu": jnp.zeros(2)}, (30, 5.0, 1.0), {})


# ------------------------------------------------------------------ clear errors
def _mcmc_init(model, *args, **kernel_kw):
    kernel = DataAugmentationKernel(model, **kernel_kw)
    kernel.init(jax.random.key(0), 10, None, args, {})


def test_error_unknown_plate():
    def model(s):
        p = numpyro.sample("p", dist.Beta(1, 1))
        with numpyro.plate("people", 10):
            x = numpyro.sample("x", dist.Bernoulli(p))
        dpjax.privatized("c", LAPLACE[0], lambda r: r["x"], {"x": x}, plate="persons", obs=s)

    with pytest.raises(ValueError, match="plate 'persons'"):
        _mcmc_init(model, jnp.array(3.0))


def test_error_records_outside_plate():
    def model(s):
        p = numpyro.sample("p", dist.Beta(1, 1))
        x = numpyro.sample("x", dist.Bernoulli(p).expand([10]).to_event(1))
        with numpyro.plate("people", 10):
            numpyro.sample("z", dist.Normal(0, 1))
        dpjax.privatized("c", LAPLACE[0], lambda r: r["x"], {"x": x}, plate="people", obs=s)

    with pytest.raises(ValueError, match="not sample sites inside plate"):
        _mcmc_init(model, jnp.array(3.0))


def test_error_no_privatized_site_and_missing_release():
    with pytest.raises(ValueError, match="no dpjax.privatized"):
        _mcmc_init(lambda: numpyro.sample("a", dist.Normal()))
    with pytest.raises(ValueError, match="observed release"):
        _mcmc_init(lambda: bernoulli_model(10, [None], LAPLACE))


def test_error_theta_update_wrong_keys():
    with pytest.raises(ValueError, match="must return a dict with keys"):
        kernel = DataAugmentationKernel(
            lambda: bernoulli_model(10, [jnp.array(3.0)], LAPLACE),
            theta_update=lambda key, records, params: {"q": params["p"]},
        )
        state = kernel.init(jax.random.key(0), 10, None, (), {})
        kernel.sample(state, (), {})


def test_error_kernel_arguments():
    with pytest.raises(ValueError, match="not both"):
        DataAugmentationKernel(normal_model, inner_kernel=NUTS(normal_model), theta_update=beta_update)
    with pytest.raises(ValueError, match="same `model`"):
        DataAugmentationKernel(normal_model, inner_kernel=NUTS(bernoulli_model))
    with pytest.raises(ValueError, match="callable"):
        DataAugmentationKernel(None)


def test_inner_kernel_settings_are_used():
    kernel = DataAugmentationKernel(inner_kernel=NUTS(normal_model, target_accept_prob=0.95))
    mcmc = run(kernel, 20, jnp.array(5.0), 1.0, num_warmup=200, num_samples=200, num_chains=1)
    assert float(np.mean(mcmc.get_extra_fields()["accept_prob"])) > 0.85


def test_exact_answer_is_not_the_naive_one():
    """Guard against a test that cannot fail: at ε = 0.2 the naive posterior is far too narrow."""
    n, s, mechs = 30, 9.6, [dpjax.LaplaceMechanism(epsilon=0.2, sensitivity=1.0)]
    mcmc = run(
        DataAugmentationKernel(lambda: bernoulli_model(n, [jnp.array(s)], mechs), theta_update=beta_update)
    )
    draws = np.asarray(mcmc.get_samples(group_by_chain=True)["p"])
    z_naive, _ = mcse_z(draws**2, stats.beta(1 + s, 1 + n - s).moment(2))
    z_exact, _ = mcse_z(draws**2, exact_bernoulli_moments(n, [s], mechs)[1])
    assert abs(z_exact) < Z_MAX < abs(z_naive), (z_exact, z_naive)


@pytest.mark.slow
@pytest.mark.parametrize("theta_step", ["exact", "nuts"])
def test_beta_bernoulli_exact_posterior_long_run(theta_step):
    """Higher-power version: n = 200, two integer releases, 8 chains x 20 000 draws."""
    n, releases = 200, [61.0, 70.0]
    mechs = [dpjax.DiscreteGaussianMechanism(sigma=5.0), dpjax.DiscreteLaplaceMechanism(epsilon=0.3)]
    kw = {"theta_update": beta_update} if theta_step == "exact" else {}
    model = lambda: bernoulli_model(n, [jnp.array(s) for s in releases], mechs)
    mcmc = run(DataAugmentationKernel(model, **kw), num_warmup=2000, num_samples=20000, num_chains=8)
    assert_moments(mcmc.get_samples(group_by_chain=True)["p"], *exact_bernoulli_moments(n, releases, mechs))


def test_arviz_with_stored_records_has_release_log_likelihood():
    kernel = DataAugmentationKernel(normal_model, theta_update=normal_update, store_records=True)
    mcmc = run(kernel, 20, jnp.array(5.0), 1.0, num_warmup=20, num_samples=30, num_chains=2)
    idata = az.from_numpyro(mcmc)
    assert idata.posterior["x"].shape == (2, 30, 20)
    assert idata.log_likelihood["total"].shape == (2, 30)  # log η(s | T(x)) of each stored database
    assert float(np.asarray(idata.observed_data["total"]).squeeze()) == 5.0


@pytest.mark.parametrize("kernel_type", ["da", "rj"])
def test_a_vmapped_trace_leaves_no_traced_value_on_the_kernel(kernel_type):
    """The kernel keeps only static metadata of its model (ModelSpec): vmapping a chain over ε (a
    model argument that sets the mechanism's scale) under jax.eval_shape leaves no tracer on it
    (NumPyro's rule for prototype traces; before ModelSpec, the spec held the mechanism's scale)."""

    def model(eps, s_dp=None):
        p = numpyro.sample("p", dist.Beta(2.0, 2.0))
        n = numpyro.sample("n", dist.DiscreteUniform(1, 30)) if kernel_type == "rj" else 20
        people = dpjax.records_plate("people", n, 30) if kernel_type == "rj" else numpyro.plate("people", n)
        with people:
            x = numpyro.sample("x", dist.Bernoulli(p))
        mech = dpjax.LaplaceMechanism(epsilon=eps, sensitivity=1.0)
        plate = people if kernel_type == "rj" else "people"
        dpjax.privatized("count", mech, lambda r: r["x"], {"x": x}, plate=plate, obs=s_dp)

    kind = dpjax.infer.ReversibleJumpKernel if kernel_type == "rj" else DataAugmentationKernel
    kernel = kind(model, noncentred_moves=0)
    chain = lambda key, eps: run_chain(kernel, key, (eps, 7.0), num_warmup=2, num_samples=2)
    jax.eval_shape(jax.vmap(chain), jax.random.split(jax.random.key(0), 2), jnp.array([0.5, 1.0]))
    leaves = jax.tree.leaves(vars(kernel), is_leaf=lambda x: isinstance(x, jax.core.Tracer))
    assert not [leaf for leaf in leaves if isinstance(leaf, jax.core.Tracer)]


def test_a_chain_that_leaves_the_support_while_sampling_warns():
    """A θ-step that goes NaN (as a float32 θ-step can on records far beyond their bounds) turns the
    chain's `valid` False: one InvalidChainWarning, under MCMC (at the iteration it happens) and under
    run_chain (at the end); a healthy chain gives none."""
    from dpjax.infer import InvalidChainWarning

    mech = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    model = lambda n, s: bernoulli_model(n, [s], [mech])

    def breaks(key, records, params):
        draw = beta_update(key, records, params)["p"]
        return {"p": jnp.where(jax.random.uniform(jax.random.fold_in(key, 2)) < 0.05, jnp.nan, draw)}

    kernel = DataAugmentationKernel(model, theta_update=breaks, noncentred_moves=0)
    with pytest.warns(InvalidChainWarning, match="1 of 1 chains left the model's support"):
        MCMC(kernel, num_warmup=20, num_samples=100, progress_bar=False).run(jax.random.key(0), 20, 7.0)
    with pytest.warns(InvalidChainWarning, match="1 of 1 chains"):
        draws = run_chain(kernel, jax.random.key(0), (20, 7.0), num_warmup=20, num_samples=100)
    assert np.isnan(draws["p"][-1])
    healthy = DataAugmentationKernel(model, theta_update=beta_update, noncentred_moves=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InvalidChainWarning)
        MCMC(healthy, num_warmup=20, num_samples=100, progress_bar=False).run(jax.random.key(0), 20, 7.0)
