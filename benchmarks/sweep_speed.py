"""Cost of the record sweep: ns per record update as n grows (single chain and vmapped chains).

Three measurements per n, all compiled, compile time excluded:
- ``kernel``: one full DataAugmentationKernel iteration on the seed's clamped regression
  (dim T = 9): conjugate β-step, all n proposals in one model call, t(x*) vectorised, the scan;
- ``scan``: the ``lax.scan`` of ``record_sweep`` alone (statistics precomputed), dim T = 9 and 1;
- ``recompute``: the sweep a user without record additivity writes — T recomputed from all n
  records at every step (O(n²) per sweep), for n ≤ 10⁴;
- ``soma``: ``soma_sweep`` alone (``record_update="soma"``: each offer scored against all n slots,
  O(n²) parallel work per sweep, the GPU option), dim T = 9, for n ≤ ``--soma-max``.
"""

import argparse

import jax
import jax.numpy as jnp
from _common import best_time, write_results
from jax import lax

import dpjax
import dpjax.models as m
from dpjax.infer import DataAugmentationKernel, record_sweep
from dpjax.infer.soma import soma_sweep

SIZES = [100, 1_000, 10_000, 100_000, 1_000_000]


def iterations_for(n, work=1.0):
    """Sweeps timed at n; ``work`` (--work-scale) scales them: a GPU's scan steps cost µs each."""
    return max(2, int(work * 2e6 // n))


def kernel_ns(n, chains, work=1.0):
    mech = dpjax.LaplaceMechanism(1.0, m.regression_sensitivity(2))
    kernel = DataAugmentationKernel(
        m.clamped_regression, theta_update=m.regression_update(), noncentred_moves=0
    )
    release = mech.release(jax.random.key(1), jnp.zeros(9))
    args = (n, 1.0, release)
    iters = iterations_for(n, work)

    def run(key):
        state = kernel.init(key, 0, None, args, {})
        state = lax.fori_loop(0, iters, lambda i, s: kernel.sample(s, args, {}), state)
        return state.record_accept_rate

    keys = jax.random.split(jax.random.key(0), chains)
    f = jax.jit(jax.vmap(run)) if chains > 1 else jax.jit(lambda k: run(k[0]))
    init_only = jax.jit(jax.vmap(lambda k: kernel.init(k, 0, None, args, {}).record_accept_rate))
    total = best_time(f, keys) - best_time(init_only, keys)
    return 1e9 * total / (iters * n * chains)


def scan_ns(n, dim, chains, recompute=False, soma=False, work=1.0):
    """The sweep alone on precomputed statistics (passed in, so nothing is subtracted)."""
    mech = dpjax.LaplaceMechanism(1.0, 2.0)
    # Half the kernel's sweep count, as the committed tables were measured; O(n²) variants scale with n².
    quadratic = recompute or soma
    iters = max(1, int(work * 1e7 // n**2)) if quadratic else iterations_for(n, work / 2)
    k1, k2 = jax.random.split(jax.random.key(0))
    t_old = jax.random.uniform(k1, (chains, n, dim))
    t_new = jax.random.uniform(k2, (chains, n, dim))

    def sweep(key, t_old, t_new):
        res = jnp.zeros(dim)
        if soma:
            body = lambda i, r: soma_sweep(
                jax.random.fold_in(key, i), [t_old], [t_new], [r], [mech.log_noise_density]
            ).residuals[0]
            return lax.fori_loop(0, iters, body, res)
        if not recompute:
            body = lambda i, r: record_sweep(
                jax.random.fold_in(key, i), [t_old], [t_new], [r], [mech.log_noise_density]
            ).residuals[0]
            return lax.fori_loop(0, iters, body, res)

        def step(t, i):  # recompute T over all records at every step: O(n) per record
            t_star = t.at[i].set(t_new[i])
            lp = lambda tt: jnp.sum(mech.log_noise_density(res - tt.sum(0)))
            log_u = jnp.log(jax.random.uniform(jax.random.fold_in(key, i)))
            return jnp.where(lp(t_star) - lp(t) > log_u, t_star, t), None

        return lax.fori_loop(0, iters, lambda j, t: lax.scan(step, t, jnp.arange(n))[0], t_old).sum()

    keys = jax.random.split(jax.random.key(1), chains)
    return 1e9 * best_time(jax.jit(jax.vmap(sweep)), keys, t_old, t_new) / (iters * n * chains)


def main(sizes, chains, soma_max, name="sweep_speed", work=1.0):
    rows = []
    for n in sizes:
        row = {"n": n}
        for c in (1, chains):
            row[f"kernel_{c}"] = kernel_ns(n, c, work)
            row[f"scan9_{c}"] = scan_ns(n, 9, c, work=work)
            row[f"scan1_{c}"] = scan_ns(n, 1, c, work=work)
        if n <= 10_000:
            row["recompute_1"] = scan_ns(n, 9, 1, recompute=True, work=work)
        if n <= soma_max:
            row["soma_1"] = scan_ns(n, 9, 1, soma=True, work=work)
        rows.append(row)
        print(row, flush=True)
    cols = [
        "kernel_1",
        f"kernel_{chains}",
        "scan9_1",
        f"scan9_{chains}",
        "scan1_1",
        f"scan1_{chains}",
        "recompute_1",
        "soma_1",
    ]
    md = [
        "# Record sweep cost (ns per record update)",
        "",
        "`kernel`: full DataAugmentationKernel iteration on the clamped regression (dim T = 9) per record; "
        "`scan9`/`scan1`: the scan of `record_sweep` alone at dim T = 9 / 1; `recompute`: T recomputed from all "
        "records at every step (no record additivity). Suffix: number of chains (vmapped; ns per record per chain). "
        "Target: ≤ 50 ns per record update at dim T ≤ 10, linear in n.",
        "",
        "| n | " + " | ".join(cols) + " |",
        "|---" * (len(cols) + 1) + "|",
    ]
    for r in rows:
        md.append(f"| {r['n']:,} | " + " | ".join(f"{r[c]:.1f}" if c in r else "–" for c in cols) + " |")
    write_results(name, {"rows": rows, "chains": chains, "work_scale": work}, "\n".join(md))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    ap.add_argument("--chains", type=int, default=8)
    ap.add_argument("--soma-max", type=int, default=10_000, help="largest n for the soma column (O(n²) work)")
    ap.add_argument("--work-scale", type=float, default=1.0, help="scales the number of timed sweeps")
    ap.add_argument("--name", default="sweep_speed", help="results/<name>.{md,json}")
    a = ap.parse_args()
    main(a.sizes, a.chains, a.soma_max, a.name, a.work_scale)
