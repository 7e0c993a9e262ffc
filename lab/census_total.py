"""The Census-scale total of issue 88 (x64): 20 Poisson(λ) unit counts of ~10⁶, the total released with
the discrete Gaussian (ρ = 0.5); DA with the given noncentred_moves settings against the conjugate posterior.

    PYTHONPATH=. python lab/census_total.py auto 5

Exact: λ | s ≈ Gamma(2 + s, 2·10⁻⁶ + 20), mean 1 000 061.7, sd 223.6 (2 chains × (500 + 500)). With the
Poisson CDF by Temme's expansion (x64) the default ("auto") keeps the non-centred moves: mean 1 000 059.5,
sd 222.9, R̂ 1.00, ESS 404, 70 s on a loaded 2-core machine. They bring T to s early in warmup by moving λ
with the records; after that the records freeze (the StickyRecordsWarning is true) and λ | x = λ | s since
Σx is sufficient. With noncentred_moves=0 the records never reach s: chain means 1 000 552 and
1 000 056, R̂ 1.64 (SlowMixingWarning and StickyRecordsWarning).
"""

import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC

import dpjax

jax.config.update("jax_enable_x64", True)
N = 20


def model(s=None):
    lam = numpyro.sample("lam", dist.Gamma(2.0, 2.0 / 1e6))
    with numpyro.plate("units", N):
        x = numpyro.sample("x", dist.Poisson(lam))
    dpjax.privatized(
        "total", dpjax.DiscreteGaussianMechanism(rho=0.5), lambda r: r["x"], {"x": x}, plate="units", obs=s
    )


s = jnp.array(20_001_234.0)
a, b = 2.0 + float(s), 2.0 / 1e6 + N
print("exact approx mean", a / b, "sd", np.sqrt(a) / b)
import sys

for moves in sys.argv[1:]:
    mv = moves if moves == "auto" else int(moves)
    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        mcmc = MCMC(
            dpjax.infer.DataAugmentationKernel(model, noncentred_moves=mv),
            num_warmup=500,
            num_samples=500,
            num_chains=2,
            chain_method="vectorized",
            progress_bar=False,
        )
        mcmc.run(jax.random.key(0), s)
    lam = np.asarray(mcmc.get_samples(group_by_chain=True)["lam"])
    from numpyro.diagnostics import effective_sample_size, split_gelman_rubin

    print(
        moves,
        f"{time.perf_counter() - t:.0f}s",
        "mean",
        lam.mean(),
        "sd",
        lam.std(),
        "chain means",
        lam.mean(1),
        "rhat",
        float(split_gelman_rubin(lam)),
        "ess",
        float(effective_sample_size(lam)),
    )
    for x in w:
        print("   W:", x.category.__name__, str(x.message)[:150])
