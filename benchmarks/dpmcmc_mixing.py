"""DPMCMC (Guo et al. §3.3.2) with and without non-centred α-moves: ESS of α per draw and per second.

One simulated data set, α = (2.2, 3.3, 4.4), n = 1 000, a = 10⁻³, ε₁ = 0.375 (the §4.1 split of
ε = 0.5), the release S_L = S₀(D, a) + Laplace; ``compositional.dp_mcmc`` with 2 vectorized chains ×
(1 000 warmup + 2 000 draws), prior p1, ``noncentred_moves`` 0 (the seed's sampler) against 5 (the
records held as Wilson–Hilferty noise, a dense adaptive random walk on log α). Seconds include
compilation, float32. ``python benchmarks/dpmcmc_mixing.py`` (under a minute on 2 cores).
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from _common import write_results
from numpyro.diagnostics import effective_sample_size

from dpjax.compositional import censored_mean_log, dp_mcmc, laplace_scale

ALPHA, N, A, EPS1 = (2.2, 3.3, 4.4), 1_000, 1e-3, 0.375


def main():
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    x = jax.random.dirichlet(jax.random.key(0), jnp.array(ALPHA), (N,))
    release = censored_mean_log(x, A) + laplace_scale(A, 3, N, EPS1) * jax.random.laplace(
        jax.random.key(1), (3,)
    )
    rows = []
    for moves in (0, 5):
        t = time.perf_counter()
        mcmc = dp_mcmc(
            jax.random.key(2), release, n=N, a=A, epsilon1=EPS1, num_warmup=1000, num_samples=2000,
            num_chains=2, noncentred_moves=moves,
        )  # fmt: skip
        seconds = time.perf_counter() - t
        draws = np.asarray(mcmc.get_samples(group_by_chain=True)["alpha"])
        ess = effective_sample_size(draws)
        rows.append(
            {
                "noncentred_moves": moves,
                "mean": draws.reshape(-1, 3).mean(0),
                "sd": draws.reshape(-1, 3).std(0),
                "ess": ess,
                "seconds": seconds,
                "ess_per_s": ess / seconds,
            }  # fmt: skip
        )
        print(rows[-1], flush=True)
    fmt = lambda v, f: "(" + ", ".join(f.format(u) for u in v) + ")"
    lines = [
        "| noncentred_moves | E α | sd α | ESS α | seconds | ESS/s |",
        "|---|---|---|---|---|---|",
        *(
            f"| {r['noncentred_moves']} | {fmt(r['mean'], '{:.2f}')} | {fmt(r['sd'], '{:.2f}')} | "
            f"{fmt(r['ess'], '{:.0f}')} | {r['seconds']:.0f} | {fmt(r['ess_per_s'], '{:.2f}')} |"
            for r in rows
        ),
    ]
    write_results(
        "dpmcmc_mixing",
        {"rows": rows, "settings": {"alpha": ALPHA, "n": N, "a": A, "epsilon1": EPS1}},
        __doc__.split("\n\n")[1] + "\n\n" + "\n".join(lines),
        "python benchmarks/dpmcmc_mixing.py",
    )


if __name__ == "__main__":
    main()
