"""Per-method run times of Guo, Barrientos & Peña's §4.1 study at its own settings, for the cell the seed
timed (n = 5 000, α₅ = (2.2, 3.3, 4.4, 5.5, 6.6), here ε = 1.5): 5 chains of 50 000 iterations (25 000
burn-in, 1 000 draws kept), 1 000 bootstrap draws, 10 000 ABC proposals, b = 5. The seed reports
DPreMCMC 6.2× and DPABC 60.3× faster than DPMCMC. Each method runs once through
`dpjax.reproduce.compositional.run_methods`, the code of `dpjax reproduce guo-simulation`, on
``--datasets`` data sets batched (vmap); times are per data set, compilation excluded (listed apart).
``--scale f`` runs the chains at f × the seed's length (warm-up, kept iterations and thinning alike);
chain methods cost in proportion, so their full-length time is about 1/f × theirs.

    python benchmarks/compositional_method_times.py [--datasets 1] [--scale 1.0]
"""

import argparse

import jax.numpy as jnp
import numpy as np
from _common import guo_chains, write_results
from jax import random

from dpjax.reproduce.compositional import ALPHAS, SPEEDUP, run_methods

N, EPSILON, ALPHA = 5_000, 1.5, "α₅"


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", type=int, default=1)
    parser.add_argument("--scale", type=float, default=1.0, help="chain length as a fraction of the seed's")
    parser.add_argument("--name", default="compositional_method_times", help="results/<name>.{md,json}")
    args = parser.parse_args()
    r, scale = args.datasets, args.scale
    cfg = guo_chains(scale)
    x = np.random.default_rng(7).dirichlet(np.asarray(ALPHAS[ALPHA]), size=(r, N))
    draws, seconds, info = run_methods(random.key(0), jnp.asarray(x), EPSILON, cfg, progress=True)
    rows = [
        {"method": k, "s per data set": v / r, "compile s": info["compile"].get(k, float("nan"))}
        for k, v in seconds.items()
    ]
    base = seconds["DPMCMCp1"]
    lines = ["| method | s per data set | compile s | DPMCMCp1 time ÷ this | seed |", "|---|---|---|---|---|"]
    for row in rows:
        ratio = base / (row["s per data set"] * r)
        seed = SPEEDUP.get(row["method"], "")
        lines.append(
            f"| {row['method']} | {row['s per data set']:.3g} | {row['compile s']:.1f} | {ratio:.3g} | {seed} |"
        )
    rhat = {k: float(np.max(v)) for k, v in info["rhat"].items()}
    md = (
        f"# Per-method run times at the §4.1 settings (n = {N:,}, {ALPHA}, ε = {EPSILON}, {r} data set(s))\n\n"
        f"Chains at {scale:g} × the seed's length: 5 chains × {cfg['warmup'] + cfg['samples']:,} iterations "
        f"({cfg['warmup']:,} burn-in, thinned by {cfg['thin']}); the seed's: 5 × 50 000 (25 000 burn-in, "
        "thinned to 1 000 draws). 1 000 bootstrap draws, "
        "10 000 ABC proposals, b = 5; `run_methods` of `dpjax reproduce guo-simulation`. The seed (§4.1) "
        "reports DPreMCMCp4 6.2× and DPABCp5 60.3× faster than DPMCMCp1 on its machine. DPABCp5's prior p5 "
        "needs a DPMCMC chain on D₁ first (its own row).\n\n"
        + "\n".join(lines)
        + f"\n\nLargest split-R̂ per chain method: {', '.join(f'{k} {v:.3f}' for k, v in rhat.items())}. "
        "DPreMCMCp4's chains run off to α far above α_true, each at its own pace: model (5) is degenerate "
        "(`results/remcmc_degeneracy.md`), so its time is that of a chain with no stationary answer."
    )
    write_results(args.name, {"rows": rows, "datasets": r, "scale": scale, "rhat": rhat}, md)


if __name__ == "__main__":
    main()
