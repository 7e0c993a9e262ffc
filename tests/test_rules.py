"""The model-shape rules of the record-imputing engines (dpjax.infer.rules), each read by every engine
it concerns: failures of the third reliability probe (shared/reviews/reliability_t3.md, items 1–4 and
9), each silently wrong, a crash or an unclear error at 840f5ad."""

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro import handlers
from numpyro.infer import MCMC

import dpjax
from dpjax.infer import DataAugmentationKernel, ReversibleJumpKernel, mcem, run_chain, stochastic_em
from dpjax.infer.samplers import fast_sampling

LAP2 = dpjax.LaplaceMechanism(scale=2.0)


def theta_in_statistic(n, s=None):
    """The statistic reads the θ site mu (A-thstat): the θ-step cannot see the release through it."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    with numpyro.plate("people", n):
        u = numpyro.sample("u", dist.Normal(0.0, 1.0))
    dpjax.privatized("total", LAP2, lambda r: mu + r["u"], {"u": u}, plate="people", obs=s)


def theta_in_mechanism(n, s=None):
    mu = numpyro.sample("mu", dist.Gamma(2.0, 1.0))
    with numpyro.plate("people", n):
        u = numpyro.sample("u", dist.Normal(0.0, 1.0))
    dpjax.privatized(
        "total", dpjax.LaplaceMechanism(scale=mu), lambda r: r["u"], {"u": u}, plate="people", obs=s
    )


def released_mean(capacity, s_dp=None, n_dp=None):
    """A released mean r["x"] / n of an unknown n (A-thstat-latent-n)."""
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    n = numpyro.sample("n", dist.DiscreteUniform(1, capacity))
    people = dpjax.records_plate("people", n, capacity)
    with people:
        x = numpyro.sample("x", dist.Bernoulli(p))
    dpjax.privatized(
        "mean", dpjax.LaplaceMechanism(scale=0.05), lambda r: r["x"] / n, {"x": x}, plate=people, obs=s_dp
    )
    dpjax.privatized("n_dp", LAP2, lambda r: jnp.ones(()), {"x": x}, plate=people, obs=n_dp)


def _da(model, *args, **kw):
    MCMC(DataAugmentationKernel(model, **kw), num_warmup=5, num_samples=5, progress_bar=False).run(
        jax.random.key(0), *args
    )


def _jit_da(model, *args):
    kernel = DataAugmentationKernel(model)
    jax.jit(lambda k: run_chain(kernel, k, args, num_warmup=2, num_samples=2))(jax.random.key(0))


ENGINES = {
    "DA": lambda m: _da(m, 20, 10.0),
    "DA-conjugate-free": lambda m: _da(m, 20, 10.0, noncentred_moves=0),
    "DA-jit": lambda m: _jit_da(m, 20, 10.0),
    "mcem-importance": lambda m: mcem(jax.random.key(0), m, {"mu": 1.0}, 20, 10.0, progress_bar=False),
    "mcem-mcmc": lambda m: mcem(
        jax.random.key(0), m, {"mu": 1.0}, 20, 10.0, e_step="mcmc", progress_bar=False
    ),
    "stochastic_em": lambda m: stochastic_em(
        jax.random.key(0), m, {"mu": 1.0}, 20, 10.0, m_step=lambda r, w: {"mu": 1.0}, progress_bar=False
    ),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("model", [theta_in_statistic, theta_in_mechanism], ids=["statistic", "mechanism"])
def test_a_release_that_reads_theta_is_refused_by_every_record_engine_naming_the_site(engine, model):
    """840f5ad: DA gave the prior of mu (0.00 ± 1.00 against the exact 0.47 ± 0.26), mcem returned its
    start, mcem(e_step="mcmc") crashed."""
    with pytest.raises(
        ValueError, match="privatized site 'total': its statistic or mechanism reads the θ site 'mu'"
    ):
        ENGINES[engine](model)


class PlainLaplace(dpjax.mechanisms.Mechanism):
    """A user's mechanism class, not registered as a pytree: its parameters are attributes."""

    def __init__(self, scale):
        self.scale = scale

    def noise(self, loc):
        return dist.Laplace(loc, self.scale)

    def _max_log_density_per_entry(self):
        return -np.log(2 * self.scale)

    @property
    def guarantee(self):
        return dpjax.mechanisms.Guarantee(epsilon=1.0 / self.scale)


@pytest.mark.parametrize("scale", ["constant", "mu"])
def test_a_mechanism_object_that_is_no_pytree_is_read_through_its_attributes(scale):
    """A mechanism class that is not a pytree is one leaf, an object: the rule reads its array
    attributes (a TypeError from jnp.asarray(mechanism) before this round's fix), so it runs with a
    constant scale and is refused with a scale that is the θ site mu."""

    def model(n, s=None):
        mu = numpyro.sample("mu", dist.Gamma(2.0, 1.0))
        with numpyro.plate("people", n):
            u = numpyro.sample("u", dist.Normal(0.0, 1.0))
        mech = PlainLaplace(2.0 if scale == "constant" else mu)
        dpjax.privatized("total", mech, lambda r: r["u"], {"u": u}, plate="people", obs=s)

    if scale == "constant":
        ENGINES["DA"](model)
    else:
        with pytest.raises(ValueError, match="reads the θ site 'mu'"):
            ENGINES["DA"](model)


def test_a_released_mean_of_an_unknown_n_is_refused_naming_n():
    """840f5ad: the statistic's n was frozen at the prototype's draw, so the answer depended on the key."""
    kernel = ReversibleJumpKernel(released_mean)
    with pytest.raises(ValueError, match="reads the latent size 'n'"):
        MCMC(kernel, num_warmup=5, num_samples=5, progress_bar=False).run(jax.random.key(0), 60, 0.3, 20.0)


def test_exact_abc_takes_a_statistic_that_reads_theta():
    """ABC simulates the whole model, so the rule is not its: it runs (and was right at 840f5ad)."""
    out = dpjax.infer.exact_abc(
        jax.random.key(0), theta_in_statistic, 20, 10.0, num_samples=50, progress_bar=False
    )
    assert out.samples["mu"].shape == (50,)


def slot_dependent(capacity, s_dp=None, n_dp=None, covariate=False):
    """Record i has mean b + 0.1 i (B-RJ-plate-index), or reads a covariate array sized by the capacity."""
    b = numpyro.sample("b", dist.Normal(0.0, 1.0))
    n = numpyro.sample("n", dist.DiscreteUniform(1, capacity))
    people = dpjax.records_plate("people", n, capacity)
    with people as i:
        shift = 0.1 * jnp.arange(capacity) if covariate else 0.1 * i
        x = numpyro.sample("x", dist.Normal(b + shift, 1.0))
    dpjax.privatized("total", LAP2, lambda r: r["x"], {"x": x}, plate=people, obs=s_dp)
    dpjax.privatized("n_dp", LAP2, lambda r: jnp.ones(()), {"x": x}, plate=people, obs=n_dp)


@pytest.mark.parametrize("covariate", [False, True], ids=["plate-index", "covariate-array"])
def test_births_of_records_whose_law_varies_along_the_plate_are_refused(covariate):
    """840f5ad: births took the law of the k-th move, not of slot n: n 29.6 against the exact 31.15
    (z = -17), 10.2 without the joint moves; with a covariate array a raw broadcasting error."""
    model = lambda *a: slot_dependent(*a, covariate=covariate)
    mcmc = MCMC(ReversibleJumpKernel(model), num_warmup=5, num_samples=5, progress_bar=False)
    with pytest.raises(
        ValueError, match=r"law varies along the records plate.*ReversibleJumpKernel \(its births\)"
    ):
        mcmc.run(jax.random.key(1), 60, 60.0, 31.0)


def test_under_jit_slot_dependent_births_give_an_invalid_chain_not_draws():
    """Where the records are traced the check is the chain's `valid` flag, set at its start (then its
    draws are NaN, never wrong ones); an exchangeable model starts valid."""
    for model, valid in ((slot_dependent, False), (_exchangeable, True)):
        kernel = ReversibleJumpKernel(model)
        start = jax.jit(
            jax.vmap(lambda k, kernel=kernel: kernel.init(k, 4, None, (60, 60.0, 31.0), {}).valid)
        )
        assert np.all(np.asarray(start(jax.random.split(jax.random.key(0), 2))) == valid)


def _exchangeable(capacity, s_dp=None, n_dp=None):
    b = numpyro.sample("b", dist.Normal(0.0, 1.0))
    n = numpyro.sample("n", dist.DiscreteUniform(1, capacity))
    people = dpjax.records_plate("people", n, capacity)
    with people:
        x = numpyro.sample("x", dist.Normal(b, 1.0))
        y = numpyro.sample("y", dist.Normal(2.0 * x, 1.0))  # a hierarchical record is exchangeable too
    dpjax.privatized("total", LAP2, lambda r: r["x"] + r["y"], {"x": x, "y": y}, plate=people, obs=s_dp)
    dpjax.privatized("n_dp", LAP2, lambda r: jnp.ones(()), {"x": x}, plate=people, obs=n_dp)


def test_soma_refuses_public_records():
    """SOMA offers the proposal drawn for slot k to every slot: with public covariates (a regression)
    record k's law is not slot i's (silently wrong at 840f5ad, not in the probe)."""

    def regression(z, s=None):
        beta = numpyro.sample("beta", dist.Normal(0.0, 1.0))
        with numpyro.plate("people", z.shape[0]):
            zz = numpyro.sample("z", dist.Normal(0.0, 1.0), obs=z)
            y = numpyro.sample("y", dist.Normal(beta * zz, 1.0))
        dpjax.privatized("sum", LAP2, lambda r: r["y"] * r["z"], {"y": y, "z": zz}, plate="people", obs=s)

    with pytest.raises(ValueError, match=r"public record sites \['z'\].*record_update='soma'"):
        _da(regression, jnp.linspace(-1.0, 1.0, 20), 3.0, record_update="soma")


def test_a_record_site_free_of_theta_runs_under_jit():
    """840f5ad: jit(run_chain), run_study and mcem(e_step="mcmc") crashed with a raw
    TracerBoolConversionError when a record site's law did not involve θ (B-thetafree-record-jit)."""

    def model(n, s=None):
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        with numpyro.plate("people", n):
            x = numpyro.sample("x", dist.Bernoulli(p))
            c = numpyro.sample("c", dist.Bernoulli(0.5))
        mech = dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=1.0)
        dpjax.privatized("count", mech, lambda r: r["x"] * r["c"], {"x": x, "c": c}, plate="people", obs=s)

    def beta_draw(key, records, params):  # the crash was in the kernel's set-up, whatever the θ-step
        k = jnp.sum(records["x"])
        return {"p": dist.Beta(1 + k, 1 + records["x"].shape[0] - k).sample(key)}

    kernel = DataAugmentationKernel(model, theta_update=beta_draw)
    run = jax.jit(lambda k, s: run_chain(kernel, k, (40, s), num_warmup=5, num_samples=5))
    out = run(jax.random.key(0), 8.0)
    assert np.all(np.isfinite(np.asarray(out["p"])))


def test_arviz_works_with_public_data_outside_the_records_plate():
    """840f5ad: az.from_numpyro raised a bare AssertionError (the hidden records were drawn without a key
    in ArviZ's log-likelihood pass)."""

    def model(n, z_obs, s=None):
        mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        numpyro.sample("z", dist.Normal(mu, 1.0), obs=z_obs)
        with numpyro.plate("people", n):
            x = numpyro.sample("x", dist.Normal(mu, 1.0))
        dpjax.privatized("total", LAP2, lambda r: r["x"], {"x": x}, plate="people", obs=s)

    mcmc = MCMC(DataAugmentationKernel(model), num_warmup=5, num_samples=5, progress_bar=False)
    mcmc.run(jax.random.key(0), 20, jnp.array([0.3, 0.5]), 10.0)
    idata = az.from_numpyro(mcmc)
    assert idata.posterior["mu"].shape == (1, 5) and idata.log_likelihood["z"].shape == (1, 5, 2)


@pytest.mark.parametrize(
    "fn",
    [
        dist.Poisson(3.0),
        dist.Normal(0.0, 1.0),
        dist.Gamma(2.0, 1.0),
        dist.Beta(2.0, 2.0),
        dist.Dirichlet(jnp.ones(3)),
    ],
    ids=lambda f: type(f).__name__,
)
def test_proposals_have_the_dtype_and_shape_of_the_models_draws(fn):
    """840f5ad drew Poisson proposals as int32 where the model's trace held int64 (x64): a statistic
    x * 10**6 overflowed in the proposals only (λ 3 225 against 3 006, z ≈ 17). Runs in both widths."""
    model = lambda: numpyro.sample("x", fn.expand([7]))
    want = handlers.trace(handlers.seed(model, 0)).get_trace()["x"]["value"]
    got = handlers.trace(handlers.seed(fast_sampling(model), 0)).get_trace()["x"]["value"]
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
