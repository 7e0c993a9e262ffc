"""Can one chain's record sweep run as one Pallas program (issue 90)? A prototype of the plain sweep for
additive Laplace noise, the chain's residual held in registers while the program walks its records, against
the library's ``dpjax.infer.record_sweep`` (a ``lax.scan``, one launch-bound step at a time on a GPU):

1. the same accept decisions and residuals, bitwise, for the same inputs (interpret mode on a CPU);
2. ns per record update on the backend in use, 1 chain and C vmapped chains (a vmapped ``pallas_call``
   adds a grid axis: one program per chain); on a GPU it compiles through Triton, on a CPU it runs in
   interpret mode (a correctness check, not a speed).

    python lab/pallas_sweep.py [--n 1000 100000] [--d 5] [--chains 1 1024]

It writes ``lab/results/pallas_sweep[_gpu].md``. The program reads each record's statistic change and
uniform as scalars and carries the residual as d scalars, since Triton wants power-of-2 blocks; the
record count is padded to a power of 2 with updates that change nothing. Where Triton refuses the kernel
the table says why. Nothing in the library uses it until a GPU run says it is faster than the scan.
"""

import argparse
import time

import jax
import jax.numpy as jnp
from _common import table, write_results
from jax import lax
from jax.experimental import pallas as pl

from dpjax.infer import record_sweep
from dpjax.infer.samplers import uniform


def pallas_sweep(deltas, log_u, residual, scale, interpret):
    """The plain sweep of one chain as one program: ``deltas`` (n, d) the residual's change per record,
    ``log_u`` (n,) log uniforms, ``residual`` (d,), Laplace ``scale`` (d,) → (accepted, log_alpha, residual)."""
    n, d = deltas.shape
    size = 1 << max(n - 1, 1).bit_length()  # padded: zero changes, always accepted, nothing moves
    deltas = jnp.pad(deltas, ((0, size - n), (0, 0)))
    log_u = jnp.pad(log_u, (0, size - n), constant_values=-jnp.inf)

    def kernel(delta_ref, log_u_ref, res_ref, scale_ref, accepted_ref, alpha_ref, out_ref):
        scales = [scale_ref[j] for j in range(d)]
        log_eta = lambda r: sum(-jnp.abs(r[j]) / scales[j] for j in range(d))
        start = tuple(res_ref[j] for j in range(d))

        def body(i, carry):
            res, logp = carry
            star = tuple(res[j] + delta_ref[i, j] for j in range(d))
            logp_star = log_eta(star)
            log_alpha = logp_star - logp
            accept = log_u_ref[i] < log_alpha
            accepted_ref[i] = accept.astype(jnp.int32)
            alpha_ref[i] = log_alpha
            res = tuple(jnp.where(accept, a, b) for a, b in zip(star, res))
            return res, jnp.where(accept, logp_star, logp)

        res, _ = lax.fori_loop(0, size, body, (start, log_eta(start)))
        for j in range(d):
            out_ref[j] = res[j]

    dtype = deltas.dtype
    shapes = (jax.ShapeDtypeStruct((size,), jnp.int32), jax.ShapeDtypeStruct((size,), dtype),
              jax.ShapeDtypeStruct((d,), dtype))  # fmt: skip
    accepted, alpha, residual = pl.pallas_call(kernel, out_shape=shapes, interpret=interpret)(
        deltas, log_u, residual, scale
    )
    return accepted[:n].astype(bool), alpha[:n], residual


def library_sweep(key, deltas, residual, scale):
    """``dpjax.infer.record_sweep`` on the same changes (t_old − t_new = deltas) and Laplace noise."""
    log_noise = lambda r: -jnp.abs(r) / scale
    result = record_sweep(key, [deltas], [jnp.zeros_like(deltas)], [residual], [log_noise])
    return result.accepted, result.residuals[0]


def timed(fn, *args, repeats=3):
    jax.block_until_ready(fn(*args))
    start = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(fn(*args))
    return (time.perf_counter() - start) / repeats


def main(sizes, d, chains_list):
    backend = jax.default_backend()
    interpret = backend == "cpu"
    rows = []
    for n in sizes:
        key_d, key = jax.random.split(jax.random.key(n))
        deltas = jax.random.laplace(key_d, (n, d)) * 0.5
        log_u = jnp.log(uniform(key, (n,)))  # the uniforms record_sweep draws from `key`
        residual, scale = jnp.zeros(d), jnp.full(d, 2.0)
        library = jax.jit(lambda k, dl, r: library_sweep(k, dl, r, scale))
        ours = jax.jit(lambda dl, lu, r: pallas_sweep(dl, lu, r, scale, interpret))
        try:
            a, b = ours(deltas, log_u, residual), library(key, deltas, residual)
            same = bool(jnp.all(a[0] == b[0]) and jnp.all(a[2] == b[1]))
            error = ""
        except Exception as err:  # Triton may refuse the kernel: say why
            same, error = False, f"{type(err).__name__}: {str(err).splitlines()[0][:160]}"
        for chains in chains_list:
            row = {"backend": backend, "n": n, "d": d, "chains": chains, "same decisions": same}
            dl = jnp.broadcast_to(deltas, (chains, n, d))
            lu = jnp.broadcast_to(log_u, (chains, n))
            r0 = jnp.broadcast_to(residual, (chains, d))
            keys = jax.random.split(key, chains)
            scan_v = jax.jit(jax.vmap(lambda k, x, z: library_sweep(k, x, z, scale)))
            row["scan ns/update/chain"] = timed(scan_v, keys, dl, r0) / (n * chains) * 1e9
            if not error:
                ours_v = jax.jit(jax.vmap(lambda x, y, z: pallas_sweep(x, y, z, scale, interpret)))
                row["pallas ns/update/chain"] = timed(ours_v, dl, lu, r0) / (n * chains) * 1e9
                row["pallas / scan"] = row["pallas ns/update/chain"] / row["scan ns/update/chain"]
            row["error"] = error
            rows.append(row)
            print(row, flush=True)
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else v
    columns = ["backend", "n", "d", "chains", "same decisions", "scan ns/update/chain",
               "pallas ns/update/chain", "pallas / scan", "error"]  # fmt: skip
    md = [
        "# A Pallas record sweep against the library's scan (prototype, Laplace noise)",
        "",
        "ns per record update per chain of the plain sweep; `same decisions`: the prototype's accept "
        "decisions and final residual equal the scan's, bitwise, on the same inputs. On a CPU the prototype "
        "runs in Pallas's interpret mode (a correctness check); on a GPU through Triton.",
        "",
        *table(rows, [(k, lambda r, k=k: fmt(r.get(k, ""))) for k in columns]),
    ]
    write_results("pallas_sweep" + ("" if backend == "cpu" else f"_{backend}"), {"rows": rows}, "\n".join(md))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--d", type=int, default=5)
    parser.add_argument("--chains", type=int, nargs="+", default=[1, 8])
    a = parser.parse_args()
    main(a.n, a.d, a.chains)
