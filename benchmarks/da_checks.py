"""What DataAugmentationKernel's stalled-chain checks cost per iteration, as numpyro's MCMC runs the kernel
(a jitted ``fori_loop`` over ``kernel.sample``, compiled once; timing ``MCMC.run`` instead would time NumPyro
0.22's recompiling of its loop on every call).

* **end-of-warmup check** — the ``lax.cond``-guarded callback that raises ``StickyRecordsWarning``, against a
  kernel without it; Gaussian records (μ ~ N(0, 2²), xᵢ ~ N(μ, 1), Gaussian noise s.d. 30 on Σxᵢ, exact μ-draw).
* **move rate** — discrete records only: proposals equal to their record kept out of the sweep and the
  move rate, against the sweep without that; Bernoulli records (p ~ Beta(1, 1), Laplace noise ε = 1 on the
  count, exact p-draw).

Alternating runs of each pair in one process; the ratio pair by pair, its median and range.

    python benchmarks/da_checks.py [--n 100 1000 10000] [--iterations 20000] [--repeats 8]
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from _common import table, write_results
from jax import lax

import dpjax
from dpjax.infer import DataAugmentationKernel


def gaussian_records(n, s):
    mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
    with numpyro.plate("rows", n):
        x = numpyro.sample("x", dist.Normal(mu, 1.0))
    dpjax.privatized(
        "total", dpjax.GaussianMechanism(sigma=30.0), lambda r: r["x"], {"x": x}, plate="rows", obs=s
    )


def mu_draw(key, records, params):
    prec = 0.25 + records["x"].shape[0]
    return {"mu": records["x"].sum() / prec + jax.random.normal(key) / jnp.sqrt(prec)}


def bernoulli_records(n, s):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("rows", n):
        x = numpyro.sample("x", dist.Bernoulli(p))
    mech = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    dpjax.privatized("count", mech, lambda r: r["x"], {"x": x}, plate="rows", obs=s)


def p_draw(key, records, params):
    k, n = records["x"].sum(), records["x"].shape[0]
    return {"p": dist.Beta(1.0 + k, 1.0 + n - k).sample(key)}


class WithoutWarmupCheck(DataAugmentationKernel):
    def _check_step(self, state, new):
        pass


def compiled(kernel, args, iterations, move_rate=True):
    state = kernel.init(jax.random.key(0), 1000, None, args, {})
    # off: every proposal in the sweep, one rate (the earlier sweep)
    kernel._spec = kernel._spec._replace(discrete_records=kernel._spec.discrete_records and move_rate)
    loop = lambda s: lax.fori_loop(0, iterations, lambda i, s: kernel.sample(s, args, {}), s)
    return jax.jit(loop).lower(state).compile(), state


def pair(a, b, iterations, repeats):
    """µs per iteration of each (medians) and the ratio a/b pair by pair."""
    times = {0: [], 1: []}
    for _ in range(repeats):
        for i, (fn, state) in enumerate((a, b)):
            t = time.perf_counter()
            jax.block_until_ready(fn(state))
            times[i].append((time.perf_counter() - t) / iterations * 1e6)
    ratio = np.asarray(times[0]) / np.asarray(times[1])
    return float(np.median(times[0])), float(np.median(times[1])), ratio


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--iterations", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=8)
    args = parser.parse_args()
    rows = []
    for n in args.n:
        cases = {
            "end-of-warmup check (Gaussian records)": (
                compiled(DataAugmentationKernel(gaussian_records, theta_update=mu_draw, noncentred_moves=0),
                         (n, 20.0), args.iterations),
                compiled(WithoutWarmupCheck(gaussian_records, theta_update=mu_draw, noncentred_moves=0),
                         (n, 20.0), args.iterations),
            ),
            "move rate (Bernoulli records)": (
                compiled(DataAugmentationKernel(bernoulli_records, theta_update=p_draw), (n, 0.3 * n), args.iterations),
                compiled(DataAugmentationKernel(bernoulli_records, theta_update=p_draw), (n, 0.3 * n), args.iterations,
                         move_rate=False),
            ),
        }  # fmt: skip
        for name, (a, b) in cases.items():
            with_it, without, ratio = pair(a, b, args.iterations, args.repeats)
            rows.append(
                {
                    "check": name,
                    "n": n,
                    "µs per iteration, with": with_it,
                    "without": without,
                    "ratio, median": float(np.median(ratio)),
                    "ratio, range": f"{ratio.min():.3f}–{ratio.max():.3f}",
                }
            )
            print(rows[-1], flush=True)
    md = [
        "# What DataAugmentationKernel's stalled-chain checks cost per iteration",
        "",
        f"One chain, a jitted loop of {args.iterations} iterations compiled once, {args.repeats} alternating runs of "
        "each pair; ratio = with / without, pair by pair.",
        "",
        *table(
            rows,
            [
                (k, (lambda k: lambda r: r[k] if isinstance(r[k], (str, int)) else f"{r[k]:.4g}")(k))
                for k in rows[0]
            ],
        ),
    ]
    write_results("da_checks", {"rows": rows}, "\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
