"""Mixing per second on the seed's clamped regression (n = 100, p = 2): minimum ESS over β per
second of sampling (compile time measured separately), at ε ∈ {0.1, 1, 10}, for
- DA, exact β-step: DataAugmentationKernel with the conjugate β | x, y draw (the seed's sampler);
- DA, NUTS β-step: DataAugmentationKernel with its default inner NUTS;
- joint NUTS: what a NumPyro user writes today, NUTS on (β, x, y) of the same model.
Four chains, vmapped, one fixed release per ε of one confidential dataset.
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from _common import write_results
from numpyro.diagnostics import effective_sample_size
from numpyro.infer import NUTS, Predictive

import dpjax
import dpjax.models as m
from dpjax.infer import DataAugmentationKernel, run_chain

N = 100
METHODS = {
    "DA, exact β-step": lambda: DataAugmentationKernel(
        m.clamped_regression, theta_update=m.regression_update()
    ),
    "DA, NUTS β-step": lambda: DataAugmentationKernel(m.clamped_regression),
    "joint NUTS": lambda: NUTS(m.clamped_regression),
}


def measure(kernel, args, num_warmup, num_samples, chains=4, seed=0):
    run = lambda key: run_chain(
        kernel, key, args, num_warmup=num_warmup, num_samples=num_samples, collect=lambda s: s.z["beta"]
    )
    keys = jax.random.split(jax.random.key(seed), chains)
    t = time.perf_counter()
    compiled = jax.jit(jax.vmap(run)).lower(keys).compile()
    compile_s = time.perf_counter() - t
    t = time.perf_counter()
    draws = np.asarray(jax.block_until_ready(compiled(keys)))
    run_s = time.perf_counter() - t
    ess = [float(effective_sample_size(draws[..., j])) for j in range(draws.shape[-1])]
    return {
        "min_ess": min(ess),
        "seconds": run_s,
        "compile_seconds": compile_s,
        "min_ess_per_s": min(ess) / run_s,
        "draws_per_chain": num_samples,
        "posterior_mean": draws.reshape(-1, draws.shape[-1]).mean(0).tolist(),
    }


def main(eps_list, lengths):
    truth = {"beta": jnp.array(m.regression.SEED_BETA)[None]}
    data = Predictive(m.clamped_regression, posterior_samples=truth, return_sites=["x", "y"])(
        jax.random.key(2023), N, 1.0
    )
    T = jax.vmap(m.regression_statistic())({"x": data["x"][0], "y": data["y"][0]}).sum(0)
    rows = []
    for eps in eps_list:
        release = dpjax.LaplaceMechanism(eps, m.regression_sensitivity(2)).release(
            jax.random.key(int(eps * 10)), T
        )
        for name, make in METHODS.items():
            warm, samples = lengths[name]
            r = {"epsilon": eps, "method": name, **measure(make(), (N, eps, release), warm, samples)}
            rows.append(r)
            print(
                {
                    k: (round(v, 3) if isinstance(v, float) else v)
                    for k, v in r.items()
                    if k != "posterior_mean"
                },
                flush=True,
            )
    md = [
        "# Mixing per second, clamped regression (n = 100, p = 2)",
        "",
        "Minimum over β of the bulk ESS (4 vmapped chains), per second of sampling; compile time apart.",
        "",
        "| ε | method | draws/chain | min ESS | sampling s | min ESS/s | compile s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        md.append(
            f"| {r['epsilon']:g} | {r['method']} | {r['draws_per_chain']} | {r['min_ess']:.0f} | "
            f"{r['seconds']:.2f} | {r['min_ess_per_s']:.1f} | {r['compile_seconds']:.1f} |"
        )
    write_results("regression_ess", {"rows": rows}, "\n".join(md))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epsilon", type=float, nargs="+", default=[0.1, 1.0, 10.0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply all chain lengths")
    a = ap.parse_args()
    s = a.scale
    lengths = {
        "DA, exact β-step": (int(2000 * s), int(10000 * s)),
        "DA, NUTS β-step": (int(1000 * s), int(5000 * s)),
        "joint NUTS": (int(500 * s), int(1000 * s)),
    }
    main(a.epsilon, lengths)
