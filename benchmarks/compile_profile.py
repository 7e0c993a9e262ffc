"""Where the README quickstart's cold-process time goes: importing, the kernel's ``init`` step by step
(the prototype trace, the host checks, the chains' start, the start checks) and the run, each split
into tracing, lowering and XLA compilation (``jax.monitoring``'s duration events: seconds and counts),
then a second run on a new release with ``jit_model_args=True``. One fresh process (the persistent
compilation cache off).

    python benchmarks/compile_profile.py
"""

import collections
import os
import subprocess
import sys
import time

CHILD = "--child"

if CHILD in sys.argv:
    start = time.perf_counter()
    import jax
    import jax.monitoring

    seconds, counts, names = collections.defaultdict(float), collections.Counter(), []

    def listen(event, duration, **kw):
        seconds[event.split("/")[-1]] += duration
        counts[event.split("/")[-1]] += 1
        if "backend_compile" in event:
            names.append(kw.get("fun_name", "?"))

    jax.monitoring.register_event_duration_secs_listener(listen)
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC

    imported_jax = time.perf_counter()
    import dpjax
    from dpjax.infer import chains, data_augmentation

    rows = [
        ("import jax, numpyro", imported_jax - start, {}),
        ("import dpjax", time.perf_counter() - imported_jax, {}),
    ]

    def phase(name, fn):
        before_s, before_c, before_n = dict(seconds), dict(counts), len(names)
        t = time.perf_counter()
        out = fn()
        parts = {k: (seconds[k] - before_s.get(k, 0.0), counts[k] - before_c.get(k, 0)) for k in seconds}
        parts["compiled"] = sorted(set(names[before_n:])) if len(names) - before_n <= 3 else []
        rows.append((name, time.perf_counter() - t, parts))
        return out

    def timed(owner, name, label):
        fn = getattr(owner, name)
        setattr(owner, name, lambda *a, **k: phase(label, lambda: fn(*a, **k)))

    def model(n, release=None):
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        with numpyro.plate("respondents", n):
            yes = numpyro.sample("yes", dist.Bernoulli(p))
        mechanism = dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=1.0)
        dpjax.privatized(
            "count", mechanism, lambda r: r["yes"], {"yes": yes}, plate="respondents", obs=release
        )

    da = data_augmentation
    timed(da, "prototype", "init: prototype trace")
    timed(da, "model_spec", "init: model spec")
    timed(da, "check_records_feed_only_releases", "init: site rules (traced)")
    timed(da, "check_release_reads_records", "init: statistic reads (traced)")
    timed(chains.PerChainKernel, "_start", "init: chains' start (one program)")
    timed(da.da_core, "check_start", "init: start checks")
    kernel = dpjax.infer.DataAugmentationKernel(model)
    mcmc = MCMC(kernel, num_warmup=1000, num_samples=2000, progress_bar=False, jit_model_args=True)
    total = time.perf_counter()
    phase("MCMC.run (init above + sampling)", lambda: mcmc.run(jax.random.key(0), 60, jnp.array(17.4)))
    rows.append(("first run, total", time.perf_counter() - total, {}))
    phase("second run, new release", lambda: mcmc.run(jax.random.key(1), 60, jnp.array(30.2)))
    print(repr(rows))
    sys.exit(0)

from _common import write_results  # noqa: E402


def main():
    env = {**os.environ, "JAX_ENABLE_COMPILATION_CACHE": "false", "XLA_FLAGS": ""}
    out = subprocess.run(
        [sys.executable, __file__, CHILD], capture_output=True, text=True, env=env, timeout=900
    )
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    rows = eval(out.stdout.strip().splitlines()[-1])  # noqa: S307 (our own child's repr)
    cell = lambda parts, key: f"{parts[key][0]:.2f} ({parts[key][1]})" if parts.get(key, (0, 0))[1] else ""
    md = [
        "# Where the quickstart's cold-process time goes",
        "",
        "The README quickstart (60 records, 1 000 warmup + 2 000 draws, one chain) in a fresh process, "
        "with `jit_model_args=True` and no progress bar; seconds (and counts) of JAX's tracing, lowering "
        "and XLA compilation inside each phase. The `init:` rows are inside the `MCMC.run` row that "
        "follows them. In the second run, on a new release, nothing of dpjax's compiles; NumPyro "
        "recompiles its own sampling loop (`_fori_collect_loop`) when there is no progress bar, since it "
        "passes a new jit wrapper of its loop body as a static argument on every run (with the progress "
        "bar on nothing compiles, but its Python loop costs milliseconds per iteration).",
        "",
        "| phase | wall s | tracing s (n) | lowering s (n) | compiling s (n) | what compiled (≤ 3) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, wall, parts in rows:
        md.append(
            f"| {name} | {wall:.2f} | {cell(parts, 'jaxpr_trace_duration')} "
            f"| {cell(parts, 'jaxpr_to_mlir_module_duration')} | {cell(parts, 'backend_compile_duration')} "
            f"| {', '.join(f'`{n}`' for n in parts.get('compiled', []))} |"
        )
    write_results("compile_profile", {"rows": rows}, "\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
