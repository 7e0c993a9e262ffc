"""The README's quickstart in a cold process, against the same model in plain NumPyro with the count
marginalised by enumeration (a `factor` of a logsumexp over k = 0..n): wall time from `import` to the
printed summary, and the ESS of p per second of that wall time. Each variant runs in a fresh Python
process (nothing cached between them, JAX's persistent compilation cache off), alternating, best of
``--repeats``; also the DA variant with ``noncentred_moves=0`` (plain data augmentation: no moves, no
warmup trial of them).
"""

import argparse
import json
import os
import subprocess
import sys
import time

from _common import write_results

COMMON = """
import time, json
t0 = time.perf_counter()
import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS
from numpyro.diagnostics import effective_sample_size
"""

DPJAX = (
    COMMON
    + """
import dpjax
def model(n, release=None):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("respondents", n):
        yes = numpyro.sample("yes", dist.Bernoulli(p))
    dpjax.privatized("count", dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=1.0), statistic=lambda r: r["yes"],
                     records={"yes": yes}, plate="respondents", obs=release)
mcmc = MCMC(dpjax.infer.DataAugmentationKernel(model, MOVES), num_warmup=1000, num_samples=2000, progress_bar=False)
mcmc.run(jax.random.key(0), 60, jnp.array(17.4))
mcmc.print_summary()
"""
)

NUMPYRO = (
    COMMON
    + """
def model(n, release):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    k = jnp.arange(n + 1)
    log_lik = dist.Binomial(n, p).log_prob(k) + dist.Laplace(k, 1.0 / 0.5).log_prob(release)
    numpyro.factor("count", jax.scipy.special.logsumexp(log_lik))
mcmc = MCMC(NUTS(model), num_warmup=1000, num_samples=2000, progress_bar=False)
mcmc.run(jax.random.key(0), 60, jnp.array(17.4))
mcmc.print_summary()
"""
)

TAIL = """
wall = time.perf_counter() - t0
ess = float(effective_sample_size(mcmc.get_samples(group_by_chain=True)["p"]))
print("RESULT", json.dumps({"wall_s": wall, "ess": ess, "ess_per_s": ess / wall, "mean": float(mcmc.get_samples()["p"].mean())}))
"""

VARIANTS = {
    "dpjax (README)": DPJAX.replace(", MOVES", "") + TAIL,
    "dpjax, noncentred_moves=0": DPJAX.replace("MOVES", "noncentred_moves=0") + TAIL,
    "numpyro, count enumerated": NUMPYRO + TAIL,
}


def run(code):
    env = {**os.environ, "JAX_ENABLE_COMPILATION_CACHE": "false", "XLA_FLAGS": ""}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900)
    line = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")]
    if out.returncode or not line:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(line[0][7:])


def main(repeats, name):
    runs = {k: [] for k in VARIANTS}
    for _ in range(repeats):
        for k, code in VARIANTS.items():  # alternating, so a busy spell slows all alike
            runs[k].append(run(code))
            print(k, runs[k][-1], flush=True)
    best = {k: min(v, key=lambda r: r["wall_s"]) for k, v in runs.items()}
    ref = best["numpyro, count enumerated"]
    md = [
        "# The README's quickstart, cold process: dpjax against NumPyro with the count enumerated",
        "",
        f"Best of {repeats} fresh processes each (alternating); wall time from `import` to the printed summary.",
        "",
        "| variant | wall s | × NumPyro's | ESS of p | ESS / s | ÷ NumPyro's | posterior mean |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for k, r in best.items():
        md.append(
            f"| {k} | {r['wall_s']:.1f} | {r['wall_s'] / ref['wall_s']:.2f} | {r['ess']:.0f} | {r['ess_per_s']:.0f} "
            f"| {r['ess_per_s'] / ref['ess_per_s']:.2f} | {r['mean']:.4f} |"
        )
    write_results(name, {"runs": runs, "best": best, "repeats": repeats}, "\n".join(md))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--name", default="quickstart_cold")
    a = ap.parse_args()
    t = time.perf_counter()
    main(a.repeats, a.name)
    print(f"{time.perf_counter() - t:.0f} s")
