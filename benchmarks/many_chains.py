"""One long chain against many short chains on one release (issue 90's two paths, the second here): ESS
of β per second of sampling for the seeds' clamped regression (p = 2, ε = 1, DA with the exact β-step),
compile time apart, on whatever backend ``jax.default_backend()`` is.

- ``1 chain``: warmup W, then S draws (the default path, what one analyst runs);
- ``K×M chains``: K superchains of M chains (``dpjax.infer.superchain_init``: a start per superchain drawn
  from the prior), each chain w warmup iterations and s draws, vmapped; nested R̂ (``dpjax.diagnostics.
  nested_rhat``) of β over them, ESS over every chain.

    python benchmarks/many_chains.py [--sizes 1000 10000] [--superchains 8] [--per 8] [--name NAME]

On a GPU (the command in benchmarks/README.md) the many-chains row is where the device's width turns
into ESS; on a 2-core CPU the chains share the cores, so it shows what the CPU does instead.
"""

import argparse
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from _common import table, write_results
from numpyro.diagnostics import effective_sample_size
from numpyro.infer import Predictive

import dpjax
import dpjax.models as m
from dpjax.diagnostics import nested_rhat
from dpjax.infer import DataAugmentationKernel, run_chain, superchain_init


def measure(kernel, args, chains, warmup, samples, init=None):
    run = lambda key, init: run_chain(
        kernel,
        key,
        args,
        num_warmup=warmup,
        num_samples=samples,
        collect=lambda s: s.z["beta"],
        init_params=init,
    )
    keys = jax.random.split(jax.random.key(0), chains)
    start = time.perf_counter()
    compiled = jax.jit(jax.vmap(run)).lower(keys, init).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    draws = np.asarray(jax.block_until_ready(compiled(keys, init)))
    return draws, time.perf_counter() - start, compile_s


def main(sizes, superchains, per, long, short, name):
    rows = []
    kernel = lambda: DataAugmentationKernel(m.clamped_regression, theta_update=m.regression_update())
    truth = {"beta": jnp.array(m.regression.SEED_BETA)[None]}
    for n in sizes:
        data = Predictive(m.clamped_regression, posterior_samples=truth, return_sites=["x", "y"])(
            jax.random.key(2023), n, 1.0
        )
        T = jax.vmap(m.regression_statistic())({"x": data["x"][0], "y": data["y"][0]}).sum(0)
        release = dpjax.LaplaceMechanism(1.0, m.regression_sensitivity(2)).release(jax.random.key(10), T)
        args = (n, 1.0, release)
        chains = superchains * per
        init = superchain_init(m.clamped_regression, jax.random.key(1), superchains, per, *args)
        for label, c, (w, s), start in [
            ("1 chain", 1, long, None),
            (f"{superchains}×{per} chains", chains, short, init),
        ]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # SlowBackendWarning on a GPU is the point of the row
                draws, run_s, compile_s = measure(kernel(), args, c, w, s, start)
            flat = draws.reshape(c, s, -1)
            ess = min(float(effective_sample_size(flat[..., j])) for j in range(flat.shape[-1]))
            nrhat = float(np.max(nested_rhat(flat, superchains))) if c > 1 else float("nan")
            rows.append({
                "backend": jax.default_backend(), "n": n, "path": label, "chains": c, "warmup": w, "draws": s,
                "sampling s": run_s, "compile s": compile_s, "min ESS β": ess, "ESS/s": ess / run_s,
                "nested R̂": nrhat,
                "ns / record update / chain": run_s / (c * (w + s) * n) * 1e9,
            })  # fmt: skip
            print(rows[-1], flush=True)
        rows[-1]["vs 1 chain"] = rows[-1]["ESS/s"] / rows[-2]["ESS/s"]
    fmt = lambda v: f"{v:.4g}" if isinstance(v, float) else v
    keys = list(rows[0]) + ["vs 1 chain"]
    md = [
        "# One long chain against many short chains (clamped regression, ε = 1)",
        "",
        "Min ESS over β per second of sampling (compile apart). The many-chains row is K superchains × M "
        "chains started per superchain at a prior draw (`superchain_init`), its ESS over every chain and "
        "its nested R̂ (below 1.01: the chains have forgotten their starts).",
        "",
        *table(rows, [(k, lambda r, k=k: fmt(r.get(k, ""))) for k in keys]),
    ]
    write_results(name, {"rows": rows}, "\n".join(md))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--superchains", type=int, default=8)
    parser.add_argument("--per", type=int, default=8, help="chains per superchain")
    parser.add_argument("--long", type=int, nargs=2, default=[500, 2000], help="warmup, draws of 1 chain")
    parser.add_argument("--short", type=int, nargs=2, default=[500, 50], help="warmup, draws per short chain")
    parser.add_argument("--name", default="many_chains")
    a = parser.parse_args()
    main(a.sizes, a.superchains, a.per, tuple(a.long), tuple(a.short), a.name)
