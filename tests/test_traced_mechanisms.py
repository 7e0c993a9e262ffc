"""Mechanisms are JAX pytrees: a traced ε / scale works under jax.jit and jax.vmap (one compilation
for a whole grid of privacy budgets), concrete parameters are still validated, and the host-only
parts (the exact integer release, the analytic Gaussian calibration) say so for traced ones."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import dpjax
from dpjax.infer import DataAugmentationKernel, run_chain

KEY = jax.random.key(0)
EPS = jnp.array([0.25, 0.5, 1.0, 2.0, 4.0])

# each maker maps a privacy budget (ε, or ρ for the Gaussian family) to a mechanism
MAKERS = {
    "laplace": lambda e: dpjax.LaplaceMechanism(epsilon=e, sensitivity=1.0),
    "gaussian": lambda e: dpjax.GaussianMechanism(rho=e, sensitivity=1.0),
    "discrete_laplace": lambda e: dpjax.DiscreteLaplaceMechanism(epsilon=e),
    "discrete_gaussian": lambda e: dpjax.DiscreteGaussianMechanism(rho=e),
}
RELEASE = jnp.array([3.0, -2.0, 40.0])
STAT = jnp.array([1.0, 0.0, 37.0])


def _per_value(f, grid):
    return np.stack([np.asarray(f(float(e))) for e in grid])


# ------------------------------------------------------------------ (1) vmap over an ε grid
@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_vmap_over_epsilon_matches_each_epsilon(kind):
    make = MAKERS[kind]
    fns = {
        "log_density": lambda e: make(e).log_density(RELEASE, STAT),
        "log_noise_density": lambda e: make(e).log_noise_density(RELEASE - STAT),
        "log_prob": lambda e: make(e)(STAT).log_prob(RELEASE),
        "max_log_density": lambda e: make(e).max_log_density((3,)),
    }
    for what, f in fns.items():
        batched = np.asarray(jax.vmap(f)(EPS))
        # the discrete Gaussian's traced normalizer is computed in float32 (float64 on the host)
        np.testing.assert_allclose(batched, _per_value(f, EPS), rtol=1e-6, atol=1e-5, err_msg=what)
    guarantee = jax.vmap(lambda e: make(e).guarantee)(EPS)
    value = guarantee.rho if "gaussian" in kind else guarantee.epsilon
    np.testing.assert_allclose(np.asarray(value), np.asarray(EPS), rtol=1e-6)


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_concrete_mechanism_roundtrips_as_a_pytree(kind):
    mech = MAKERS[kind](0.7)
    leaves, tree = jax.tree.flatten(mech)
    again = jax.tree.unflatten(tree, leaves)
    assert type(again) is type(mech) and again.scale == mech.scale
    assert again.guarantee == mech.guarantee
    # passed into a jit as an argument: same densities and same draws for the same key
    got = jax.jit(lambda m: m.log_density(RELEASE, STAT))(mech)
    np.testing.assert_allclose(got, mech.log_density(RELEASE, STAT), rtol=1e-6, atol=1e-6)
    draw = jax.jit(lambda m, k: m(STAT).sample(k))(mech, KEY)
    np.testing.assert_allclose(draw, mech(STAT).sample(KEY), rtol=1e-6)  # jit vs eager: ≤ 1 ulp


def test_traced_guarantee_prints_without_error():
    text = jax.jit(lambda e: jnp.asarray(len(str(dpjax.LaplaceMechanism(epsilon=e, sensitivity=1.0)))))
    assert int(text(1.0)) > 0


# ------------------------------------------------------------------ (2) one compilation for many ε
@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_jit_with_epsilon_argument_compiles_once(kind):
    make, traces = MAKERS[kind], []

    def f(e):
        traces.append(1)  # runs once per compilation (trace), not per call
        return jnp.sum(make(e).log_density(RELEASE, STAT))

    jitted = jax.jit(f)
    got = [float(jitted(jnp.float32(e))) for e in (0.3, 0.9, 1.7, 5.0)]
    assert len(traces) == 1
    np.testing.assert_allclose(got, [float(f(e)) for e in (0.3, 0.9, 1.7, 5.0)], rtol=1e-5)


# ------------------------------------------------------------------ (3) the data-augmentation study
def count_model(n, s_dp, eps):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("people", n):
        x = numpyro.sample("x", dist.Bernoulli(p))
    mech = dpjax.DiscreteLaplaceMechanism(epsilon=eps)
    dpjax.privatized("count", mech, lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)


def beta_draw(key, records, params):
    k, n = records["x"].sum(), records["x"].shape[0]
    return {"p": dist.Beta(1.0 + k, 1.0 + n - k).sample(key)}


def test_run_chain_vmapped_over_epsilon_matches_each_epsilon():
    kernel = DataAugmentationKernel(count_model, theta_update=beta_draw, noncentred_moves=0)
    run = lambda key, eps: run_chain(kernel, key, (40, 12.0, eps), num_warmup=20, num_samples=30)
    grid = jnp.array([0.3, 1.0, 3.0])
    keys = jax.random.split(KEY, grid.shape[0])
    batched = jax.jit(jax.vmap(run))(keys, grid)
    for i, eps in enumerate(grid.tolist()):
        single = jax.jit(run)(keys[i], eps)
        np.testing.assert_allclose(batched["p"][i], single["p"], rtol=1e-5, atol=1e-6)
    assert not np.allclose(batched["p"][0], batched["p"][2])  # ε does reach the chains
    # and with a concrete mechanism built outside any transformation (the previous usage)
    concrete = jax.jit(lambda key: run_chain(kernel, key, (40, 12.0, 1.0), num_warmup=20, num_samples=30))
    np.testing.assert_allclose(concrete(keys[1])["p"], batched["p"][1], rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ (4) concrete values still validated
@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: dpjax.LaplaceMechanism(epsilon=0.0, sensitivity=1.0), "`epsilon` must be positive"),
        (lambda: dpjax.LaplaceMechanism(epsilon=-1.0, sensitivity=1.0), "`epsilon` must be positive"),
        (lambda: dpjax.LaplaceMechanism(epsilon=float("nan"), sensitivity=1.0), "`epsilon` must be positive"),
        (lambda: dpjax.GaussianMechanism(rho=jnp.array(-1.0), sensitivity=1.0), "`rho` must be positive"),
        (
            lambda: dpjax.DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.5),
            "`sensitivity` must be an integer",
        ),
        (
            lambda: dpjax.DiscreteGaussianMechanism(rho=1.0, sensitivity=0.5),
            "`sensitivity` must be an integer",
        ),
        (lambda: dpjax.DiscreteGaussianMechanism(sigma=float("inf")), "`sigma` must be positive"),
    ],
)
def test_concrete_invalid_values_still_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()


# ------------------------------------------------------------------ (5) host-only parts
@pytest.mark.parametrize("kind", ["discrete_laplace", "discrete_gaussian"])
def test_exact_release_with_traced_parameter_raises_a_clear_error(kind):
    make = MAKERS[kind]
    with pytest.raises(ValueError, match="exact `release` needs concrete privacy parameters"):
        jax.jit(lambda e: make(e).release(KEY, 3))(1.0)
    with pytest.raises(ValueError, match="exact `release` needs concrete privacy parameters"):
        jax.vmap(lambda e: make(e).release(KEY, 3))(EPS)
    # a concrete mechanism passed into a jit has traced leaves there, too
    with pytest.raises(ValueError, match="exact `release` needs concrete privacy parameters"):
        jax.jit(lambda m: m.release(KEY, 3))(make(1.0))
    # outside any transformation it publishes as before
    assert make(1.0).release(KEY, 3) == make(1.0).release(KEY, 3)


def test_analytic_gaussian_with_traced_epsilon_raises_a_clear_error():
    with pytest.raises(ValueError, match="analytic Gaussian calibration .* needs concrete"):
        jax.vmap(lambda e: dpjax.GaussianMechanism(epsilon=e, delta=1e-5, sensitivity=1.0).scale)(EPS)
    # calibrating on the host and tracing sigma works
    sigmas = jnp.array([dpjax.mechanisms.analytic_gaussian_sigma(float(e), 1e-5, 1.0) for e in EPS])
    got = jax.vmap(lambda s: dpjax.GaussianMechanism(sigma=s).log_density(RELEASE, STAT))(sigmas)
    want = _per_value(
        lambda e: dpjax.GaussianMechanism(epsilon=e, delta=1e-5, sensitivity=1.0).log_density(RELEASE, STAT),
        EPS,
    )
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_privatized_accepts_a_traced_mechanism_and_keeps_the_integer_check():
    def model(eps, s):
        with numpyro.plate("people", 3):
            x = numpyro.sample("x", dist.Bernoulli(0.5))
        dpjax.privatized(
            "c",
            dpjax.DiscreteLaplaceMechanism(epsilon=eps),
            lambda r: r["x"],
            {"x": x},
            plate="people",
            obs=s,
        )

    def log_joint(eps, s):
        data = {"x": jnp.array([1.0, 0.0, 1.0])}
        return numpyro.infer.util.log_density(model, (eps, s), {}, data)[0]

    got = jax.vmap(log_joint, in_axes=(0, None))(EPS, 3.0)
    np.testing.assert_allclose(got, _per_value(lambda e: log_joint(e, 3.0), EPS), rtol=1e-6)
    with pytest.raises(ValueError, match="non-integer entries"):
        jax.vmap(log_joint, in_axes=(0, None))(EPS, 2.5)


def test_traced_discrete_gaussian_normalizer_matches_the_host_one():
    from dpjax.mechanisms.gaussian import _log_normalizer, _traced_log_normalizer

    sigmas = np.array([0.05, 0.3, 0.7, 0.999, 1.0, 1.5, 3.0, 30.0, 1e4])
    got = np.asarray(jax.jit(_traced_log_normalizer)(sigmas))
    np.testing.assert_allclose(got, [_log_normalizer(s) for s in sigmas], rtol=1e-6, atol=1e-6)
    assert np.all(np.isfinite([jax.grad(_traced_log_normalizer)(s) for s in (0.5, 2.0)]))
