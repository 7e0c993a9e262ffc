"""Non-centred moves for negative-binomial records (the inverse-CDF noise map of numpyro's GammaPoisson):
ESS of the dispersion r and of the mean m with and without the moves, against the exact posterior means
on a grid, at a weak release (Laplace ε = 0.05 on Σx, scale 20 against Σx's prior sd ≈ 40) and a strong
one (ε = 1, scale 1).

Model: m ~ Gamma(4, 0.4), r ~ Gamma(2, 1), 30 records xᵢ ~ NB2(m, r), one noisy total. The records pin r
(30 of them say much about their spread), the release hardly does, so the centred θ | x step crawls in r.
"""

import argparse
import sys
import time
from pathlib import Path

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
from _common import write_results
from numpyro.infer import MCMC

import dpjax
from dpjax.infer import DataAugmentationKernel
from dpjax.testing import mcse_z_test

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import test_noncentred as nb  # noqa: E402  (the model and the grid posterior of the tests)


def run(epsilon, moves, chains, samples):
    nb.NB_NOISE = dpjax.LaplaceMechanism(epsilon=epsilon, sensitivity=1.0)
    exact = dict(zip(("m", "r"), nb.negative_binomial_exact()))
    kernel = DataAugmentationKernel(nb.negative_binomial_model, noncentred_moves=moves)
    mcmc = MCMC(kernel, num_warmup=samples // 2, num_samples=samples, num_chains=chains,
                chain_method="vectorized", progress_bar=False)  # fmt: skip
    start = time.perf_counter()
    mcmc.run(jax.random.key(0), jnp.array(nb.NB_RELEASE))
    seconds = time.perf_counter() - start
    draws = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    row = {"epsilon": epsilon, "moves": moves, "seconds": seconds}
    for site in ("m", "r"):
        test = mcse_z_test(draws[site], exact[site])
        row[site] = (float(az.ess(draws[site])), float(az.rhat(draws[site])), test.z, test.passed)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--samples", type=int, default=2000)
    args = parser.parse_args()
    lines = [
        f"{args.chains} chains × {args.samples} draws (warmup {args.samples // 2}), one process, float32.",
        "",
        "| ε | moves | wall (s) | ESS r | R̂ r | z r (exact) | ESS m | R̂ m | z m (exact) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rows = []
    for epsilon in (0.05, 1.0):
        for moves in (0, 5):
            row = run(epsilon, moves, args.chains, args.samples)
            rows.append(row)
            (er, rr, zr, _), (em, rm, zm, _) = row["r"], row["m"]
            lines.append(f"| {epsilon:g} | {moves} | {row['seconds']:.0f} | {er:.0f} | {rr:.2f} | {zr:+.1f} | "
                         f"{em:.0f} | {rm:.2f} | {zm:+.1f} |")  # fmt: skip
            print(lines[-1], flush=True)
    lines += [
        "",
        "z: the MCSE z-score of the posterior mean against the grid's (|z| < 4 passes where ESS ≥ 100). At the",
        "strong release neither run mixes r (R̂ well above 1): Σx is pinned to ±1, so the centred step holds r",
        "at the records' dispersion and the moves, with u held, can only slide along a thin ridge of (m, r)",
        "that keeps Σx in place. dpjax says so before any draws are kept: a SlowMixingWarning at the end of",
        "warmup names r (R̂ over the warmup's second half above 1.2).",
    ]
    write_results("negative_binomial_moves", {"rows": rows}, "\n".join(lines))


if __name__ == "__main__":
    main()
