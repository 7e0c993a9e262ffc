"""SBC's power on a Beta–Bernoulli count with Laplace noise: the exact DA engine against two broken ones
(the sensitivity off by 2×, and the naive posterior that takes the noisy count as exact).

    PYTHONPATH=. python lab/sbc_power.py [n] [epsilon] [simulations] [seeds]
"""

import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

import dpjax
from dpjax.testing import sbc

N = int(sys.argv[1]) if len(sys.argv) > 1 else 50
EPS = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
SIMS = int(sys.argv[3]) if len(sys.argv) > 3 else 256
SEEDS = int(sys.argv[4]) if len(sys.argv) > 4 else 1


def make_model(sensitivity):
    def model(n, s_dp=None):
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        with numpyro.plate("people", n):
            x = numpyro.sample("x", dist.Bernoulli(p))
        mech = dpjax.LaplaceMechanism(epsilon=EPS, sensitivity=sensitivity)
        dpjax.privatized("count", mech, lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)

    return model


def beta_draw(key, records, params):
    k, n = records["x"].sum(), records["x"].shape[0]
    return {"p": dist.Beta(1.0 + k, 1.0 + n - k).sample(key)}


def naive(key, args, kwargs):
    n, s = args[0], kwargs["s_dp"]
    k = jnp.clip(jnp.round(s), 0, n)
    return {"p": dist.Beta(1.0 + k, 1.0 + n - k).sample(key, (1, 400))}


model = make_model(1.0)
engines = {
    "exact": dpjax.infer.DataAugmentationKernel(model, theta_update=beta_draw),
    "sensitivity 2x": dpjax.infer.DataAugmentationKernel(make_model(2.0), theta_update=beta_draw),
    "naive": naive,
}
for name, engine in engines.items():
    for seed in range(SEEDS):
        t = time.perf_counter()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = sbc(
                model,
                engine,
                release="s_dp",
                model_args=(N,),
                num_simulations=SIMS,
                num_warmup=200,
                num_samples=400,
                num_ranks=49,
                rng_key=jax.random.key(seed),
                progress_bar=False,
            )
        v = r.verdicts.iloc[0]
        print(
            f"{name:15s} seed {seed}: passed {r.passed}  max_gap {v.max_gap:.2f}  ess {v.median_ess:.0f}  "
            f"{time.perf_counter() - t:.1f} s  warnings {[str(x.message)[:60] for x in w]}",
            flush=True,
        )
