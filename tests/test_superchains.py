"""Many short chains on one release: ``superchain_init``, ``nested_rhat`` (against a direct transcription
of Margossian et al. 2024's formulas; it must fail on chains that remember their starts) and the warning
for one chain's record sweep on a GPU."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer import MCMC
from test_data_augmentation import exact_normal, normal_model, normal_update

from dpjax.diagnostics import mcse_z, nested_rhat
from dpjax.infer import DataAugmentationKernel, SlowBackendWarning, superchain_init
from dpjax.infer.record_sweep import warn_slow_backend


def nested_rhat_by_the_paper(x, k):
    """Eqs. (15)–(19) element by element: x (chains, samples), chains superchain after superchain."""
    m = x.shape[0] // k
    supers = [x[i * m : (i + 1) * m] for i in range(k)]
    means = [s.mean() for s in supers]
    grand = sum(means) / k
    b = sum((mu - grand) ** 2 for mu in means) / (k - 1)
    w = 0.0
    for s in supers:
        chain_means = s.mean(1)
        b_k = sum((c - s.mean()) ** 2 for c in chain_means) / (m - 1) if m > 1 else 0.0
        w_k = (
            sum(((row - row.mean()) ** 2).sum() / (len(row) - 1) for row in s) / m if x.shape[1] > 1 else 0.0
        )
        w += (b_k + w_k) / k
    return np.sqrt(1 + b / w)


@pytest.mark.parametrize("chains, samples, k", [(64, 10, 8), (12, 1, 3), (6, 20, 6), (40, 3, 2)])
def test_nested_rhat_is_the_papers(chains, samples, k):
    rng = np.random.default_rng(chains + samples)
    x = (
        rng.normal(size=(chains, samples, 2))
        + np.repeat(rng.normal(size=k) * 0.3, chains // k)[:, None, None]
    )
    got = nested_rhat(x, num_superchains=k)
    assert got.shape == (2,)
    for j in range(2):
        assert np.isclose(got[j], nested_rhat_by_the_paper(x[..., j], k), rtol=1e-12)


@pytest.mark.parametrize("bad", [1, 5, 2.0, True])
def test_error_num_superchains(bad):
    with pytest.raises(ValueError, match="num_superchains"):
        nested_rhat(np.zeros((8, 4)), num_superchains=bad)


def run_superchains(num_warmup, num_samples, k=8, m=16, seed=0):
    n, s, tau = 20, 12.0, 0.3  # a strong release: sd 0.3 on Σx of 20 records
    init = superchain_init(normal_model, jax.random.key(seed + 1), k, m, n, jnp.array(s), tau)
    assert {name: v.shape for name, v in init.items()} == {"mu": (k * m,), "x": (k * m, n)}
    assert np.all(init["mu"].reshape(k, m) == init["mu"][::m, None])  # one start per superchain
    kernel = DataAugmentationKernel(normal_model, theta_update=normal_update)
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples, num_chains=k * m,
                chain_method="vectorized", progress_bar=False)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SlowMixingWarning of the unconverged run
        mcmc.run(jax.random.key(seed), n, jnp.array(s), tau, init_params=init)
    return mcmc.get_samples(group_by_chain=True)["mu"], exact_normal(n, s, tau)


def test_many_short_chains_reach_the_exact_posterior_and_nested_rhat_says_so():
    """128 chains in 8 superchains, 100 warmup iterations and 25 draws each: nested R̂ below 1.01 and
    the pooled draws match the exact posterior (MCSE z-test); after 1 warmup iteration from prior starts
    the chains still remember them and nested R̂ says so."""
    draws, (mean, var) = run_superchains(100, 25)
    assert nested_rhat(draws, num_superchains=8) < 1.01
    z1, ess = mcse_z(draws, mean)
    z2, _ = mcse_z(np.asarray(draws) ** 2, var + mean**2)
    assert ess > 1000 and abs(z1) < 4 and abs(z2) < 4, (z1, z2, ess)
    early, _ = run_superchains(1, 2)
    assert nested_rhat(early, num_superchains=8) > 1.1


def test_error_superchain_init():
    with pytest.raises(ValueError, match="num_superchains"):
        superchain_init(normal_model, jax.random.key(0), 1, 4, 5, jnp.array(1.0), 1.0)
    with pytest.raises(ValueError, match="chains_per_superchain"):
        superchain_init(normal_model, jax.random.key(0), 2, 0, 5, jnp.array(1.0), 1.0)


def test_one_chain_on_a_gpu_warns_and_many_chains_or_the_cpu_do_not(monkeypatch):
    with pytest.warns(SlowBackendWarning, match="superchain_init"):
        warn_slow_backend(1, 5_000, backend="gpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_slow_backend(256, 5_000, backend="gpu")
        warn_slow_backend(1, 5_000, backend="cpu")
        warn_slow_backend(1, 100, backend="gpu")
    args, kernel = (2_000, jnp.array(100.0), 1.0), DataAugmentationKernel(normal_model)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SlowBackendWarning)
        kernel.init(jax.random.key(0), 10, None, args, {})  # on this CPU
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    with pytest.warns(SlowBackendWarning, match="2000 records"):
        kernel.init(jax.random.key(0), 10, None, args, {})
    with warnings.catch_warnings():
        warnings.simplefilter("error", SlowBackendWarning)
        kernel.init(jax.random.split(jax.random.key(0), 8), 10, None, args, {})
