"""Cost of a release per unit (``privatized(..., groups=)``): ns per record update against the number of
units G at fixed n, next to the one-hot form a user writes without ``groups`` (one release of a G-vector,
t(x) = x·e_g, where every update reads all G entries: O(G) per update, O(nG) per sweep).

Both are the sweep alone (``record_sweep``, compiled, one chain, statistics precomputed, Laplace counts,
the accept decisions used as the engines use them), so the columns differ only in how a record's update
reaches its unit's total.
"""

import argparse

import jax
import jax.numpy as jnp
from _common import best_time, write_results

import dpjax
from dpjax.infer import record_sweep

UNITS = [10, 100, 1_000, 10_000, 100_000]


def sweep_ns(n, units, grouped, sweeps):
    mech = dpjax.LaplaceMechanism(1.0, 1.0)
    k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
    g = jax.random.randint(k1, (n,), 0, units)
    x_old = jax.random.bernoulli(k2, 0.3, (n,)).astype(jnp.float32)
    x_new = jax.random.bernoulli(k3, 0.3, (n,)).astype(jnp.float32)
    if grouped:
        t_old, t_new, groups = x_old, x_new, (g,)
        residual = jnp.full((units,), 0.5)
    else:
        one_hot = jax.nn.one_hot(g, units)
        t_old, t_new, groups = one_hot * x_old[:, None], one_hot * x_new[:, None], None
        residual = jnp.full((units,), 0.5)

    def density(r, unit=None):  # a grouped site's density takes the unit (for per-unit parameters)
        return mech.log_noise_density(r)

    def run(key, t_old, t_new, groups):  # the arrays as arguments: XLA would fold constants for minutes
        def body(i, carry):  # the accept decisions are used, as the engines use them (which records move)
            res, moved = carry
            out = record_sweep(jax.random.fold_in(key, i), (t_old,), (t_new,), res, (density,), groups=groups)
            return out.residuals, moved + jnp.sum(out.accepted)

        return jax.lax.fori_loop(0, sweeps, body, ((residual,), jnp.zeros((), jnp.int32)))

    return 1e9 * best_time(jax.jit(run), jax.random.key(1), t_old, t_new, groups) / (sweeps * n)


def main(n, units, one_hot_max, name):
    rows = []
    for G in units:
        sweeps = max(2, int(2e6 // n))
        row = {"G": G, "grouped_ns": sweep_ns(n, G, True, sweeps)}
        if G <= one_hot_max:
            row["one_hot_ns"] = sweep_ns(n, G, False, max(1, int(2e8 // (n * G))))
            row["ratio"] = row["one_hot_ns"] / row["grouped_ns"]
        rows.append(row)
        print(row, flush=True)
    md = [
        f"# A release per unit: ns per record update against G (n = {n:,}, one chain, the sweep alone)",
        "",
        "| units G | groups= (ns) | one-hot release (ns) | one-hot / groups |",
        "|---:|---:|---:|---:|",
    ]
    for r in rows:
        cells = [
            f"{r['grouped_ns']:.1f}",
            *(f"{r[c]:.1f}" if c in r else "–" for c in ("one_hot_ns", "ratio")),
        ]
        md.append(f"| {r['G']:,} | " + " | ".join(cells) + " |")
    write_results(name, {"n": n, "rows": rows}, "\n".join(md))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--units", type=int, nargs="+", default=UNITS)
    ap.add_argument("--one-hot-max", type=int, default=1_000, help="largest G for the O(nG) one-hot column")
    ap.add_argument("--name", default="grouped_sweep", help="results/<name>.{md,json}")
    a = ap.parse_args()
    main(a.n, a.units, a.one_hot_max, a.name)
