"""Unknown n: ESS(n) per second of ReversibleJumpKernel against ε_n on Table 1's setting, with and
without the size jumps (moves of many records at once, `size_jumps`), and the posterior sd of n.

Awan, Barrientos & Ju's Table 1 model (the regression of §6.1; awan-table1's dataset, n = 1 000,
capacity 3 000), ε_s = 1, one release per ε_n (the same key for every variant), C chains of W warmup
+ S draws run as one vmapped `run_chain` (compile time apart: the first call compiles, the timed one
reruns it). ESS(n) by numpyro's `effective_sample_size` over the chains; seconds of the timed call.

    python benchmarks/unknown_n_jumps.py                      # ε_n ∈ {0.001, 0.003, 0.01, 0.03, 0.1, 1}
    python benchmarks/unknown_n_jumps.py --eps-n 0.001 --warmup 1000 --samples 2000
    python benchmarks/unknown_n_jumps.py --eps-n 0.001 --seeds 4 --variants before default ridge
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from _common import table, write_results
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin

import dpjax.models as m
from dpjax.infer import ReversibleJumpKernel, run_chain
from dpjax.reproduce.unknown_n import confidential_regression_data

N, CAPACITY, EPS_S = 1_000, 3_000, 1.0
VARIANTS = {  # --variants choice: (label, ReversibleJumpKernel settings besides the model and θ-step)
    "before": ("±1 moves only (before)", dict(size_jumps=0)),
    "default": ("with size jumps (default)", dict()),
    "x50": ("size jumps ×50", dict(size_jumps=50)),
    "ridge": ("size jumps and 3 ridge moves", dict(ridge_moves=3)),
    "nc25": ("25 joint moves", dict(noncentred_moves=25)),
}


def release(key, T, eps_n):
    delta = m.unknown_n_regression_sensitivity(2)
    k_s, k_n = jax.random.split(key)
    return T + jax.random.laplace(k_s, T.shape) * delta / EPS_S, N + jax.random.laplace(k_n) / eps_n


def measure(settings, s_dp, n_dp, eps_n, chains, warmup, samples, seeds=1):
    model = lambda s, nd: m.unknown_n_regression(CAPACITY, s, nd, eps_s=EPS_S, eps_n=eps_n)
    kernel = ReversibleJumpKernel(model, theta_update=m.unknown_n_regression_update(), **settings)
    collect = lambda state: state.z["n"]
    run = jax.jit(
        jax.vmap(
            lambda k: run_chain(
                kernel, k, (s_dp, n_dp), num_warmup=warmup, num_samples=samples, collect=collect
            )
        )
    )
    keys = lambda seed: jax.random.split(jax.random.key(1 + seed), chains)
    start = time.perf_counter()
    jax.block_until_ready(run(keys(0)))
    first = time.perf_counter() - start
    ess, seconds, draws, rhat = [], [], [], []
    for seed in range(seeds):  # ESS(n) of a few chains varies ~3× with the key: several keys resolve a ratio
        start = time.perf_counter()
        n = np.asarray(jax.block_until_ready(run(keys(seed))), float)
        seconds.append(time.perf_counter() - start)
        ess.append(float(effective_sample_size(n)))
        rhat.append(float(split_gelman_rubin(n)))
        draws.append(n)
    rate = [e / t for e, t in zip(ess, seconds)]
    n = np.concatenate(draws)
    return {
        "ESS(n)": float(np.mean(ess)),
        "ESS(n)/s": float(np.mean(rate)),
        "ESS(n)/s range": f"{min(rate):.3g}–{max(rate):.3g}",
        "sd(n)": float(n.std()),
        "E n": float(n.mean()),
        "split R-hat": max(rhat),
        "seconds": float(np.mean(seconds)),
        "compile s": first - seconds[0],
    }


def _cell(v):
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps-n", type=float, nargs="+", default=[0.001, 0.003, 0.01, 0.03, 0.1, 1.0])
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=1, help="chain keys per row (means and the range)")
    parser.add_argument("--name", default="unknown_n_jumps")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=["before", "default"])
    args = parser.parse_args()
    _, _, T = confidential_regression_data(N)
    rows = []
    for eps_n in args.eps_n:
        s_dp, n_dp = release(jax.random.key(round(1e6 * eps_n)), T, eps_n)
        for name, settings in (VARIANTS[v] for v in args.variants):
            row = {"ε_n": eps_n, "variant": name}
            row.update(
                measure(
                    settings,
                    s_dp,
                    jnp.asarray(n_dp),
                    eps_n,
                    args.chains,
                    args.warmup,
                    args.samples,
                    args.seeds,
                )
            )
            rows.append(row)
            print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    for row in rows:  # the gain of each variant over the ±1 moves alone, per ε_n
        base = [r for r in rows if r["ε_n"] == row["ε_n"] and r["variant"] == VARIANTS["before"][0]]
        row["ESS(n)/s ÷ before"] = row["ESS(n)/s"] / base[0]["ESS(n)/s"] if base else float("nan")
    cols = [
        "ε_n",
        "variant",
        "ESS(n)",
        "seconds",
        "ESS(n)/s",
        "ESS(n)/s ÷ before",
        *(["ESS(n)/s range"] if args.seeds > 1 else []),
        "E n",
        "sd(n)",
        "split R-hat",
    ]
    md = [
        "# Unknown n: ESS(n) per second against ε_n (Table 1's setting), with and without size jumps",
        "",
        f"Awan et al.'s §6.1 regression, n = {N}, capacity {CAPACITY}, ε_s = {EPS_S}; one release per ε_n; "
        f"{args.chains} chains × ({args.warmup} warmup + {args.samples} draws), vmapped, compile time apart; "
        f"{args.seeds} chain key(s) per row (means over them; R-hat the largest). "
        "Defaults otherwise (100 ±1 birth/death moves and 5 joint (θ, n) moves per iteration; the default "
        "has 10 size jumps).",
        "",
        *table(rows, [(c, lambda r, c=c: _cell(r[c])) for c in cols]),
    ]
    write_results(args.name, {"rows": rows, "settings": vars(args)}, "\n".join(md))


if __name__ == "__main__":
    main()
