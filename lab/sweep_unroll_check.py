"""Does the record sweep's unroll change the draws on this backend? ``dpjax.infer.record_sweep`` at unroll
2…33 against 1 on the same (n, d) statistics, then 20 iterations of the Dirichlet DataAugmentationKernel
(α by a random-walk θ-update) at ``UNROLL`` 1, 8, 32: every float leaf of the state compared bit for bit.
Prints one line each (the first lines of `benchmarks/results/sweep_unroll_gpu.log` on an H200).

    python lab/sweep_unroll_check.py
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dpjax.infer import DataAugmentationKernel, record_sweep
from dpjax.infer.record_sweep import UNROLL
from dpjax.models import dirichlet_mean_log


def same(a, b):
    return all(np.array_equal(x, y, equal_nan=x.dtype.kind == "f") for x, y in zip(a, b))


def float_leaves(tree):
    return [np.asarray(x) for x in jax.tree.leaves(tree) if not jnp.issubdtype(x.dtype, jax.dtypes.prng_key)]


def main():
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    print(jax.devices(), "default UNROLL", UNROLL)
    key, n, d = jax.random.key(3), 1000, 5
    t_old, t_new = (0.05 * jax.random.normal(k, (n, d)) for k in jax.random.split(key))
    args = (key, [t_old], [t_new], [jnp.full(d, 0.1)], [lambda r: -jnp.abs(r) / 0.2], jnp.arange(n) < 900)
    ref = record_sweep(*args, unroll=1)
    for u in (2, 8, 16, 32, 33):
        out = record_sweep(*args, unroll=u)
        print(
            f"record_sweep unroll={u}: identical={same(float_leaves(ref), float_leaves(out))}; "
            f"accepted {int(out.accepted.sum())}",
            flush=True,
        )

    alpha = jnp.linspace(2.0, 4.0, d)
    release = jnp.log(jnp.maximum(alpha / alpha.sum(), 1e-3))
    kargs = (n, 1e-3, 0.375, release)
    walk = lambda k, r, p: {"alpha": p["alpha"] * jnp.exp(0.01 * jax.random.normal(k, p["alpha"].shape))}
    backend, default, draws = jax.default_backend(), UNROLL.get(jax.default_backend(), 1), {}
    try:
        for u in (1, 8, 32):
            UNROLL[backend] = u
            kernel = DataAugmentationKernel(dirichlet_mean_log, theta_update=walk, noncentred_moves=0)
            state = kernel.init(jax.random.key(0), 0, {"alpha": alpha}, kargs, {})
            state = jax.jit(lambda s: lax.fori_loop(0, 20, lambda i, s: kernel.sample(s, kargs, {}), s))(
                state
            )
            draws[u] = float_leaves(state)
            print(
                f"kernel unroll={u}: identical to unroll=1 ({len(draws[u])} leaves): "
                f"{same(draws[1], draws[u])}",
                flush=True,
            )
    finally:
        UNROLL[backend] = default


if __name__ == "__main__":
    main()
