"""Speed of the compiled Pitman–Yor sampler (synthetic records per second, one release and 100
vmapped replicates) and of one δ̃ estimate with 10 000 Monte Carlo draws (Lazzarini issue)."""

import argparse
import time

import jax
import numpy as np
from _common import table, write_results

from dpjax.synthetic import delta_tilde, partition, predictive_release, sample_pitman_yor


def clock(fn, repeats=3):
    jax.block_until_ready(fn())  # compile
    t = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(fn())
    return (time.perf_counter() - t) / repeats


def main():
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    x = np.asarray(sample_pitman_yor(jax.random.key(0), 30_000, 0.0, 36.0))
    p = partition(x)
    data = p._replace(counts=np.where(p.counts == 1, 2, p.counts))
    rows = []
    for sigma, theta in ((0.0, 36.0), (0.5, 3.0)):
        for m in (1_000, 10_000, 100_000):
            one = jax.jit(lambda k, m=m: predictive_release(k, data, m, sigma, theta).values)
            t1 = clock(lambda: one(jax.random.key(1)))
            batch = jax.jit(jax.vmap(lambda k, m=m: predictive_release(k, data, m, sigma, theta).values))
            keys = jax.random.split(jax.random.key(2), 100)
            t100 = clock(lambda: batch(keys), repeats=1)
            rows.append({"sigma": sigma, "theta": theta, "m": m, "single": m / t1, "vmapped": 100 * m / t100})
            print(rows[-1], flush=True)
    small = partition(np.asarray(sample_pitman_yor(jax.random.key(3), 500, 0.2, 3.0)))
    small = small._replace(counts=np.where(small.counts == 1, 2, small.counts))
    t0 = time.perf_counter()
    delta_tilde(jax.random.key(4), small, 250, 0.2, 3.0, [1.0, 2.0, 4.0, 5.0], num_draws=10_000)
    first = time.perf_counter() - t0
    warm = clock(
        lambda: (
            delta_tilde(jax.random.key(5), small, 250, 0.2, 3.0, [1.0, 2.0, 4.0, 5.0], num_draws=10_000).delta
        )
    )
    md = [
        "# Pitman–Yor sampler speed",
        "",
        f"Confidential data: 30 000 records from DP(θ = 36) ({p.counts.size} values). Records per second, compile excluded.",
        "",
    ]
    md += table(
        rows,
        [
            ("σ", lambda r: r["sigma"]),
            ("θ", lambda r: r["theta"]),
            ("m", lambda r: f"{r['m']:,}"),
            ("one release, records/s", lambda r: f"{r['single']:,.0f}"),
            ("100 vmapped replicates, records/s", lambda r: f"{r['vmapped']:,.0f}"),
        ],
    )
    md += [
        "",
        f"One δ̃ estimate (n = 500, σ = 0.2, θ = 3, m = 250, 4 values of ε, 10 000 draws = 2.5 M urn steps): "
        f"{warm:.2f} s compiled, {first:.2f} s including compilation.",
    ]
    write_results(
        "py_speed", {"rows": rows, "delta_seconds": warm, "delta_seconds_with_compile": first}, "\n".join(md)
    )


if __name__ == "__main__":
    main()
