"""Cost of one unknown n per unit (``records_plate(name, n, capacity)`` with n of shape (G,)): time per
iteration of ``ReversibleJumpKernel`` against G at a fixed capacity per unit, next to the same model with
the sizes known (``DataAugmentationKernel``, the records plate masked at the known sizes), so the last
column is what the size step (size jumps and births/deaths of every unit) adds.

One chain, Bernoulli records, a noisy count and a noisy size per unit (Laplace, ε = 1), p by its exact
conditional. Per-iteration time = the difference of two runs' wall times over the difference of their
lengths (compilation cancels).
"""

import argparse
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from _common import write_results

import dpjax

LAPLACE = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0)


def blocks(units, capacity, s_dp=None, n_dp=None):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("blocks", units):
        n = numpyro.sample("n", dist.DiscreteUniform(0, capacity))
    people = dpjax.records_plate("people", n, capacity)
    with people:
        x = numpyro.sample("x", dist.Bernoulli(p))
    dpjax.privatized("count", LAPLACE, lambda r: r["x"], {"x": x}, plate=people, obs=s_dp)
    dpjax.privatized("n_dp", LAPLACE, lambda r: jnp.ones(()), {"x": x}, plate=people, obs=n_dp)


def update(capacity, sizes=None):
    def beta(key, records, params):
        n = params["n"] if sizes is None else sizes
        active = (jnp.arange(capacity)[None, :] < n[:, None]).reshape(-1)
        ones = jnp.sum(jnp.where(active, records["x"], 0))
        return {"p": jax.random.beta(key, 1.0 + ones, 1.0 + jnp.sum(n) - ones)}

    return beta


def seconds_per_iteration(kernel, args, length=200):
    """Wall time per iteration of ``length`` post-warmup iterations of the kernel's ``sample`` in one
    compiled loop, timed on its second call (the first compiles)."""
    state = kernel.init(jax.random.key(0), 0, None, args, {})
    loop = jax.jit(lambda s: jax.lax.fori_loop(0, length, lambda i, s: kernel.sample(s, args, {}), s))
    jax.block_until_ready(loop(state))
    start = time.perf_counter()
    jax.block_until_ready(loop(state))
    return (time.perf_counter() - start) / length


def main(units, capacity, name):
    rows = []
    for G in units:
        sim = numpyro.infer.Predictive(blocks, num_samples=1)(jax.random.key(1), G, capacity)
        s_dp, n_dp, sizes = sim["count"][0], sim["n_dp"][0], sim["n"][0]
        args, model = (s_dp, n_dp), partial(blocks, G, capacity)  # shapes static
        rj = dpjax.infer.ReversibleJumpKernel(model, theta_update=update(capacity))
        known = numpyro.handlers.condition(model, data={"n": sizes})
        da = dpjax.infer.DataAugmentationKernel(known, theta_update=update(capacity, sizes))
        row = {"G": G, "slots": G * capacity, "rj_s": seconds_per_iteration(rj, args)}
        row["da_s"] = seconds_per_iteration(da, args)
        row["ratio"] = row["rj_s"] / row["da_s"]
        row["rj_ns_per_slot"] = 1e9 * row["rj_s"] / row["slots"]
        rows.append(row)
        print(row, flush=True)
    md = [
        f"# One unknown n per unit: time per iteration against G ({capacity} slots per unit, one chain)",
        "",
        "| units G | record slots | RJ, n per unit (ms/iter) | DA, sizes known (ms/iter) | RJ / DA | RJ ns per slot |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        md.append(
            f"| {r['G']:,} | {r['slots']:,} | {1e3 * r['rj_s']:.2f} | {1e3 * r['da_s']:.2f} | "
            f"{r['ratio']:.1f} | {r['rj_ns_per_slot']:.0f} |"
        )
    md += [
        "",
        "RJ's size step per iteration: 10 size jumps and 100 births/deaths in every unit (the defaults), "
        "vmapped over units, and one table of log p(n_g | θ) over 0 … capacity + 1.",
    ]
    write_results(name, {"capacity": capacity, "rows": rows}, "\n".join(md))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--units", type=int, nargs="+", default=[10, 100, 1_000, 10_000])
    ap.add_argument("--capacity", type=int, default=40)
    ap.add_argument("--name", default="unit_sizes", help="results/<name>.{md,json}")
    a = ap.parse_args()
    main(a.units, a.capacity, a.name)
