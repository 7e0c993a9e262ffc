"""Site rules shared by every engine: discrete latent records under NumPyro's NUTS/HMC give a clear
error pointing to DataAugmentationKernel, and a scaled or masked privatized site is refused by
every dpjax engine before any draws."""

import contextlib
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro import handlers
from numpyro.infer import HMC, MCMC, NUTS, DiscreteHMCGibbs, Predictive
from numpyro.infer.gibbs import prototype_trace

import dpjax
from dpjax.infer import DataAugmentationKernel, PseudoMarginalABC, exact_abc, mcem
from dpjax.primitives import site_roles

LAPLACE = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0)


def count_model(n, s=None, around=None, *, mechanism=LAPLACE, statistic=lambda r: r["yes"]):
    """Bernoulli records, the release on their count; ``around`` wraps the privatized site only."""
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("people", n):
        yes = numpyro.sample("yes", dist.Bernoulli(p))
    with around() if around is not None else contextlib.nullcontext():
        dpjax.privatized("count", mechanism, statistic, {"yes": yes}, plate="people", obs=s)


def poisson_model(n, s=None):
    lam = numpyro.sample("lam", dist.Gamma(2.0, 1.0))
    with numpyro.plate("people", n):
        x = numpyro.sample("x", dist.Poisson(lam))
    dpjax.privatized("total", LAPLACE, lambda r: r["x"], {"x": x}, plate="people", obs=s)


def discrete_theta_model(n, s=None):
    k = numpyro.sample("k", dist.Categorical(jnp.array([0.5, 0.5])))
    with numpyro.plate("people", n):
        yes = numpyro.sample("yes", dist.Bernoulli(jnp.array([0.2, 0.8])[k]))
    dpjax.privatized("count", LAPLACE, lambda r: r["yes"], {"yes": yes}, plate="people", obs=s)


def normal_model(n, s=None):
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    with numpyro.plate("people", n):
        x = numpyro.sample("x", dist.Normal(mu, 1.0))
    dpjax.privatized("sum", LAPLACE, lambda r: r["x"], {"x": x}, plate="people", obs=s)


def run_mcmc(kernel, *args, num_chains=1, **kw):
    mcmc = MCMC(kernel, num_warmup=10, num_samples=10, num_chains=num_chains, progress_bar=False, **kw)
    mcmc.run(jax.random.key(0), *args)
    return mcmc


# ------------------------------------------------------------------ discrete latent records under NUTS/HMC
@pytest.mark.parametrize(
    "kernel, model, sites",
    [(NUTS, count_model, "'yes'"), (HMC, poisson_model, "'x'")],
    ids=["nuts-bernoulli", "hmc-poisson"],
)
def test_nuts_on_discrete_latent_records_points_to_data_augmentation(kernel, model, sites):
    with pytest.raises(ValueError, match=rf"record sites \[{sites}\] are discrete latent sites") as e:
        run_mcmc(kernel(model), 10, jnp.array(7.0))
    assert "dpjax.infer.DataAugmentationKernel(model)" in str(e.value)
    assert "theta_update=" in str(e.value)


def test_nuts_with_vectorized_chains_gets_the_same_error():
    with pytest.raises(ValueError, match="DataAugmentationKernel"):
        run_mcmc(NUTS(count_model), 10, jnp.array(7.0), num_chains=2, chain_method="vectorized")


def test_discrete_theta_is_named_with_theta_update():
    with pytest.raises(ValueError, match=r"θ sites \['k'\] are discrete too, so pass `theta_update=`"):
        run_mcmc(NUTS(discrete_theta_model), 10, jnp.array(7.0))


def test_nuts_on_continuous_latent_records_still_runs():
    mcmc = run_mcmc(NUTS(normal_model), 5, jnp.array(1.5))
    samples = mcmc.get_samples()
    assert samples["mu"].shape == (10,) and samples["x"].shape == (10, 5)
    assert np.all(np.isfinite(samples["mu"]))


def test_the_error_does_not_fire_where_the_records_are_handled():
    # `init` is where NUTS traces the model (initialize_model): dpjax's own kernel, whose inner NUTS
    # sees the records conditioned, and NumPyro's Gibbs updates of discrete sites
    key, args = jax.random.key(0), (10, jnp.array(7.0))
    DataAugmentationKernel(count_model, noncentred_moves=0).init(key[None], 10, None, args, {})
    DiscreteHMCGibbs(NUTS(count_model)).init(key, 10, None, args, {})
    # prototype traces and predictive simulation
    prototype_trace(count_model, jax.random.key(0), (10, jnp.array(7.0)), {})
    assert Predictive(count_model, num_samples=2)(jax.random.key(0), 10)["count"].shape == (2,)


# ------------------------------------------------------------------ one scale / mask rule for every engine
def engines(model, *args):
    """Each of the four engines on ``model``; each call must raise before any draws."""
    yield "DataAugmentationKernel", lambda: run_mcmc(DataAugmentationKernel(model), *args)
    yield "exact_abc", lambda: exact_abc(jax.random.key(0), model, *args, num_samples=5, progress_bar=False)
    yield "PseudoMarginalABC", lambda: run_mcmc(PseudoMarginalABC(model, 4), *args)
    yield (
        "mcem",
        lambda: mcem(jax.random.key(0), model, {"p": 0.5}, *args, num_particles=(10,), tolerances=(1e-2,)),
    )


SCALED = {
    "handlers.scale(model)": handlers.scale(count_model, 2.0),
    "scale around the site": lambda n, s: count_model(n, s, around=lambda: handlers.scale(scale=2.0)),
}
MASKED = {
    "handlers.mask(model)": handlers.mask(count_model, mask=False),
    "mask around the site": lambda n, s: count_model(n, s, around=lambda: handlers.mask(mask=False)),
    "array mask": lambda n, s: count_model(n, s, around=lambda: handlers.mask(mask=jnp.array(False))),
}


@pytest.mark.parametrize("how", list(SCALED))
def test_scaled_privatized_site_is_refused_by_every_engine(how):
    for engine, call in engines(SCALED[how], 10, jnp.array(7.0)):
        with pytest.raises(ValueError, match=r"privatized site 'count' is under a likelihood scale \(2\.0"):
            call()
            pytest.fail(f"{engine} accepted a scaled privatized site")


@pytest.mark.parametrize("how", list(MASKED))
def test_masked_privatized_site_is_refused_by_every_engine(how):
    for engine, call in engines(MASKED[how], 10, jnp.array(7.0)):
        with pytest.raises(ValueError, match=r"privatized site 'count' is masked"):
            call()
            pytest.fail(f"{engine} accepted a masked privatized site")


@pytest.mark.parametrize(
    "around",
    [
        lambda: handlers.scale(scale=1.0),
        lambda: handlers.mask(mask=True),
        lambda: handlers.mask(mask=jnp.array(True)),
    ],
    ids=["scale-1", "mask-True", "mask-array-True"],
)
def test_unit_scale_and_all_true_mask_are_accepted(around):
    model = lambda n, s: count_model(n, s, around=around)
    tr = prototype_trace(model, jax.random.key(0), (10, jnp.array(7.0)), {})
    assert site_roles(tr).latent_records == ("yes",)


def test_subsampled_records_plate_is_refused_with_its_own_message():
    def model(n, s=None):
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        with numpyro.plate("people", n, subsample_size=5):
            yes = numpyro.sample("yes", dist.Bernoulli(p))
        dpjax.privatized("count", LAPLACE, lambda r: r["yes"], {"yes": yes}, plate="people", obs=s)

    tr = prototype_trace(model, jax.random.key(0), (10, jnp.array(3.0)), {})
    with pytest.raises(ValueError, match=r"Records plate 'people' is subsampled \(5 of 10\)"):
        site_roles(tr)


def scaled_records_model(n, s=None):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("people", n), handlers.scale(scale=3.0):
        yes = numpyro.sample("yes", dist.Bernoulli(p))
    dpjax.privatized("count", LAPLACE, lambda r: r["yes"], {"yes": yes}, plate="people", obs=s)


def masked_prior_model(n, s=None):
    with handlers.mask(mask=False):
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("people", n):
        yes = numpyro.sample("yes", dist.Bernoulli(p))
    dpjax.privatized("count", LAPLACE, lambda r: r["yes"], {"yes": yes}, plate="people", obs=s)


@pytest.mark.parametrize(
    "model, message",
    [
        (scaled_records_model, r"site 'yes' is under a likelihood scale"),
        (masked_prior_model, r"site 'p' is masked"),
    ],
)
def test_scaled_or_masked_record_and_theta_sites_are_refused_by_every_engine(model, message):
    # the θ-step's log density would honour them; simulation (ABC, the sweep's proposals) would not
    for engine, call in engines(model, 10, jnp.array(7.0)):
        with pytest.raises(ValueError, match=message):
            call()
            pytest.fail(f"{engine} accepted {message}")


# ------------------------------------------------------------------ terms on the records outside the releases
def factor_on_records(n, s=None):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("people", n):
        yes = numpyro.sample("yes", dist.Bernoulli(p))
    numpyro.factor("prefer_yes", 0.5 * jnp.sum(yes))
    dpjax.privatized("count", LAPLACE, lambda r: r["yes"], {"yes": yes}, plate="people", obs=s)


def observed_given_records(n, s=None):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("people", n):
        yes = numpyro.sample("yes", dist.Bernoulli(p))
    numpyro.sample("z", dist.Normal(jnp.sum(yes), 1.0), obs=3.0)
    dpjax.privatized("count", LAPLACE, lambda r: r["yes"], {"yes": yes}, plate="people", obs=s)


def factor_on_theta(n, s=None):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    numpyro.factor("tilt", jnp.log(p))
    with numpyro.plate("people", n):
        yes = numpyro.sample("yes", dist.Bernoulli(p))
    dpjax.privatized("count", LAPLACE, lambda r: r["yes"], {"yes": yes}, plate="people", obs=s)


@pytest.mark.parametrize("model,site", [(factor_on_records, "prefer_yes"), (observed_given_records, "z")])
def test_terms_on_the_records_outside_the_releases_are_refused_by_data_augmentation(model, site):
    """The DA record step proposes records from their own sites and accepts by the releases alone, so a
    factor of the records, or an observed site given them, would be ignored: refused before any draws
    (by the kernel and by mcem, whose E-step it is). The ABC engines weigh each simulation by every
    observed site (tests/test_pseudo_marginal.py::test_public_data_that_depend_on_the_records)."""
    calls = {
        "DataAugmentationKernel": lambda: run_mcmc(DataAugmentationKernel(model), 10, jnp.array(7.0)),
        "mcem (MCMC E-step)": lambda: mcem(
            jax.random.key(0), model, {"p": 0.5}, 10, jnp.array(7.0), num_particles=(10,), tolerances=(1e-2,),
            e_step="mcmc",
        ),
    }  # fmt: skip
    for engine, call in calls.items():
        with pytest.raises(
            ValueError, match=rf"Sites \['{site}'\] have log densities that depend on the latent"
        ):
            call()
            pytest.fail(f"{engine} accepted a term on the records outside the releases")


def test_a_factor_of_theta_alone_is_accepted():
    m = run_mcmc(DataAugmentationKernel(NUTS(factor_on_theta)), 10, jnp.array(7.0))
    assert m.get_samples()["p"].shape[0] > 0


# ------------------------------------------------------------------ what a user gets wrong first
missing_field_model = partial(count_model, statistic=lambda r: r["no"])
# a count declared with sensitivity 1/2: one Bernoulli record moves it by 1 (add, remove or replace)
undersensitive_model = partial(count_model, mechanism=dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=0.5))


@pytest.mark.parametrize(
    "model, args, message",
    [
        (count_model, (0, jnp.array(2.0)), "A plate of the model has size 0"),  # NumPyro: a bare assert
        (count_model, (jnp.array(7.0), 10), r"'people' has a size that is not a positive integer.*order"),
        (missing_field_model, (10, jnp.array(7.0)), r"'count': `statistic` reads the field 'no'.*\['yes'\]"),
        (
            undersensitive_model,
            (10, jnp.array(7.0)),
            r"'count': LaplaceMechanism declares sensitivity 0.5.*by 1 ",
        ),
    ],
    ids=["n=0", "arguments swapped", "a field not in records", "a sensitivity below the statistic's"],
)
def test_first_mistakes_get_a_value_error_naming_them_from_every_engine(model, args, message):
    for engine, call in engines(model, *args):
        with pytest.raises(ValueError, match=message):
            call()
            pytest.fail(f"{engine} accepted it")


def test_a_plate_sized_by_a_concrete_integer_array_is_accepted():
    state = DataAugmentationKernel(count_model, theta_update=lambda k, r, p: p).init(
        jax.random.key(0), 5, None, (np.int64(10), jnp.array(7.0)), {}
    )
    assert state.records["yes"].shape == (10,)


@pytest.mark.parametrize(
    "release, warns",
    [(20.3, False), (-30.0, False), (55.0, False), (65.0, True), (5000.0, True), (-3000.0, True)],
)
def test_a_release_far_outside_every_value_of_its_statistic_warns(release, warns):
    """T = Σ Bernoulli ∈ [0, 10]: a release 30 or 45 Laplace scales outside is improbable but possible
    (no warning: the threshold is e⁻⁵⁰, 50 scales); 55 or thousands of scales outside is a mistake (a
    wrong scale, a mean released as a sum), named by the model spec that every engine reads."""
    import warnings

    from dpjax.infer.spec import model_spec, prototype

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        model_spec(prototype(count_model, jax.random.key(0), (10, jnp.array(release)), {}))
    flagged = [str(w.message) for w in seen if issubclass(w.category, dpjax.infer.ReleaseRangeWarning)]
    assert bool(flagged) == warns, flagged
    assert not warns or ("privatized site 'count'" in flagged[0] and "[0, 10]" in flagged[0])


def test_every_engine_warns_of_a_release_out_of_reach():
    import warnings

    args = (10, jnp.array(5000.0))
    calls = {
        "DataAugmentationKernel": lambda: run_mcmc(DataAugmentationKernel(count_model), *args),
        "exact_abc": lambda: exact_abc(
            jax.random.key(0), count_model, *args, num_samples=5, max_proposals=10_000, progress_bar=False
        ),
        "PseudoMarginalABC": lambda: run_mcmc(PseudoMarginalABC(count_model, 4), *args),
        "mcem": lambda: mcem(
            jax.random.key(0), count_model, {"p": 0.5}, *args, num_particles=(10,), tolerances=(1e-2,)
        ),
    }
    for engine, call in calls.items():
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                call()
            except Exception:  # noqa: BLE001 - only the warning is checked (nothing may be accepted)
                pass
        assert any(issubclass(w.category, dpjax.infer.ReleaseRangeWarning) for w in seen), engine


def _declared(mechanism, statistic, records, *, transform=None, n=6):
    """``model_spec`` of one privatized site with ``mechanism`` over ``records`` (name -> distribution)."""
    from dpjax.infer.spec import model_spec, prototype

    def model():
        with numpyro.plate("people", n):
            values = {k: numpyro.sample(k, d) for k, d in records.items()}
        total = jax.vmap(statistic)(values).sum(0)
        release = jnp.zeros_like(total if transform is None else transform(total))
        dpjax.privatized("s", mechanism, statistic, values, plate="people", obs=release, transform=transform)

    return model_spec(prototype(model, jax.random.key(0), (), {}))


ONE_HOT = lambda r: jax.nn.one_hot(r["c"], 3)  # noqa: E731
CATEGORIES = {"c": dist.Categorical(jnp.ones(3) / 3)}
PAIR = lambda r: jnp.stack([r["y"], r["y"]])  # noqa: E731
COIN = {"y": dist.Bernoulli(0.5)}
COIN_AND_ONE = lambda r: jnp.stack([r["y"], jnp.ones(())])  # noqa: E731
MEAN_OF = lambda T: T[0] / T[1]  # noqa: E731


@pytest.mark.parametrize(
    "mechanism, statistic, records, transform, least",
    [
        # a histogram: L1 1 by add/remove (2 by replace-one), L2 1 (√2)
        (lambda d: dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=d), ONE_HOT, CATEGORIES, None, 1.0),
        (lambda d: dpjax.GaussianMechanism(rho=0.5, sensitivity=d), ONE_HOT, CATEGORIES, None, 1.0),
        # (y, y): L1 2, L2 √2 by either relation; given per entry, 1 each
        (lambda d: dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=d), PAIR, COIN, None, 2.0),
        (lambda d: dpjax.GaussianMechanism(rho=0.5, sensitivity=d), PAIR, COIN, None, 2**0.5),
        (lambda d: dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=[d, d]), PAIR, COIN, None, 1.0),
        # Binomial(4) records: a sum moves by 4; the integer mechanisms read Δ the same way
        (lambda d: dpjax.DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=d), lambda r: r["k"],
         {"k": dist.Binomial(4, 0.5)}, None, 4),
        # a released mean of 6 coin flips moves by 1/6 when one flips; checked at the prototype's records
        # (a lower bound: removing one moves it by |x - mean| / 5), so a tenth of it is refused
        (lambda d: dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=d), COIN_AND_ONE, COIN, MEAN_OF,
         (1 / 6, 1 / 60)),
    ],
    ids=["histogram L1", "histogram L2", "pair L1", "pair L2", "pair per entry", "binomial sum", "mean"],
)  # fmt: skip
def test_a_declared_sensitivity_below_the_statistics_is_refused(
    mechanism, statistic, records, transform, least
):
    """The least sensitivity the records' support allows under either neighbour relation is accepted;
    just below it is refused before any draws (the reported guarantee would overstate the privacy)."""
    least, below = (
        least if isinstance(least, tuple) else (least, least - 1 if isinstance(least, int) else least * 0.99)
    )
    _declared(mechanism(least), statistic, records, transform=transform)
    with pytest.raises(ValueError, match=r"privatized site 's'.*declares sensitivity.*overstate the privacy"):
        _declared(mechanism(below), statistic, records, transform=transform)


def test_records_without_a_finite_support_are_not_checked():
    _declared(
        dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=0.01), lambda r: r["x"], {"x": dist.Poisson(3.0)}
    )
