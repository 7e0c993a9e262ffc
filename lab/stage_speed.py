"""Before/after check for issue 87's refactor into stages: per-iteration cost and compile time of
DataAugmentationKernel (exact θ-step and inner NUTS) and ReversibleJumpKernel, as numpyro's MCMC runs
them (a jitted fori_loop over kernel.sample). Run it at two commits, alternating, and compare:

    PYTHONPATH=<checkout> python lab/stage_speed.py --out result.json
"""

import argparse
import json
import time

import jax
import jax.numpy as jnp
from jax import lax

import dpjax
import dpjax.models as m
from dpjax.infer import DataAugmentationKernel, ReversibleJumpKernel


def cases():
    mech = dpjax.LaplaceMechanism(1.0, m.regression_sensitivity(2))
    release = mech.release(jax.random.key(1), jnp.zeros(9))
    yield "da_exact_n1000", DataAugmentationKernel(
        m.clamped_regression, theta_update=m.regression_update(), noncentred_moves=0
    ), (1000, 1.0, release), 400
    yield "da_nuts_n200", DataAugmentationKernel(m.clamped_regression, noncentred_moves=0), (200, 1.0, release), 40
    s, n_dp = jnp.array([2.0, 1.0, 3.0, 50.0, 20.0, 40.0, 1.0, 2.0, 3.0]), jnp.array(300.0)
    rj = ReversibleJumpKernel(m.unknown_n_regression, theta_update=m.unknown_n_regression_update())
    yield "rj_exact_cap1000", rj, (1000, s[: 9], n_dp), 100


def measure(name, kernel, args, iters, repeats=5):
    state = kernel.init(jax.random.key(0), 10, None, args, {})

    def run(state):
        return lax.fori_loop(0, iters, lambda i, s: kernel.sample(s, args, {}), state)

    t0 = time.perf_counter()
    f = jax.jit(run).lower(state).compile()
    compile_s = time.perf_counter() - t0
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(f(state))
        best = min(best, time.perf_counter() - t0)
    return {"case": name, "compile_s": compile_s, "us_per_iteration": 1e6 * best / iters}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--case", default=None, help="only this case")
    parser.add_argument("--repeats", type=int, default=5)
    opts = parser.parse_args()
    rows = [measure(*c, opts.repeats) for c in cases() if opts.case in (None, c[0])]
    json.dump(rows, open(opts.out, "w"), indent=1)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
