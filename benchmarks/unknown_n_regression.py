"""Awan, Barrientos & Ju §6.1, Table 1 (posterior means and variances) and Table 3 (their MCSEs):
linear regression when the sample size is private.

n = 1 000 records from the seed's data-generating values (β = (0, −1, 1), τ = 1, μ = (−1, 1),
Φ = I), one confidential dataset; per replicate a new release (s = T + Laplace(9/ε_s) on the 9
clamped-normalised entries without n, n_dp = n + Laplace(1/ε_n)) and a new chain;
ε_s ∈ {0.1, 1} × ε_n ∈ {0.001, 0.01, 0.1, 1, 10, ∞}. Unknown n: ``ReversibleJumpKernel`` with the
exact θ-step ``unknown_n_regression_update`` and 100 birth/death moves per iteration; ε_n = ∞: n
conditioned, ``DataAugmentationKernel`` on the same model. Prior of n: DiscreteUniform(1, capacity)
with a capacity per ε_n (``CAPACITY``) far above the posterior of n (the seed's flat prior on n ≥ 1
is improper); the share of draws in the top tenth of the capacity is reported.

All chains of the cells that share a capacity run as one vmapped, compiled computation (ε_s and ε_n
are traced per chain). Per replicate the posterior mean and variance of β, τ and n are taken over
the kept draws; the table averages them over replicates, with MCSE = sd over replicates / √R (the
seed's Table 3), next to the seed's Table 1 values and the z-score of the difference.
"""

import argparse
import time

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np
from numpyro import handlers
from numpyro.infer import Predictive

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from _common import write_results  # noqa: E402

import dpjax.models as m  # noqa: E402
from dpjax.infer import DataAugmentationKernel, ReversibleJumpKernel, run_chain  # noqa: E402

N = 1_000
EPS_S = [0.1, 1.0]
EPS_N = [0.001, 0.01, 0.1, 1.0, 10.0, float("inf")]
CAPACITY = {0.001: 3_000, 0.01: 2_000, 0.1: 1_200, 1.0: 1_200, 10.0: 1_200}  # ε_n = ∞: n = N slots
STATS = ["E b0", "Var b0", "E b1", "Var b1", "E b2", "Var b2", "E tau", "Var tau", "E n", "Var n"]
DELTA = m.unknown_n_regression_sensitivity(2)

# Awan, Barrientos & Ju, Table 1 (posterior means and variances, averaged over 100 replicates) and
# Table 3 (their Monte Carlo standard errors); keyed by (ε_s, ε_n), columns in the order of STATS.
SEED_TABLE1 = {
    0.1: {
        0.001: [-0.716, 6.098, -0.568, 5.559, 0.665, 3.797, 1.052, 0.633, 1116.219, 1005.443],
        0.01: [-0.729, 1.263, -0.507, 1.024, 0.517, 0.925, 1.057, 0.623, 987.717, 762.425],
        0.1: [-0.705, 1.178, -0.540, 1.053, 0.541, 0.992, 1.025, 0.531, 998.707, 145.776],
        1.0: [-0.730, 1.118, -0.550, 0.942, 0.514, 0.884, 1.042, 0.548, 999.874, 1.924],
        10.0: [-0.707, 1.184, -0.457, 0.936, 0.551, 0.992, 1.026, 0.535, 1000.000, 0.005],
        float("inf"): [-0.689, 1.117, -0.523, 0.879, 0.490, 0.787, 1.052, 0.544, 1000.000, 0.000],
    },
    1.0: {
        0.001: [-0.282, 0.411, -0.921, 0.205, 0.777, 0.253, 1.234, 0.351, 1217.458, 4051.367],
        0.01: [-0.131, 0.287, -0.942, 0.190, 0.880, 0.272, 1.095, 0.291, 1000.015, 258.795],
        0.1: [-0.115, 0.317, -0.952, 0.198, 0.886, 0.273, 1.107, 0.296, 999.109, 66.134],
        1.0: [-0.134, 0.309, -0.946, 0.196, 0.875, 0.265, 1.081, 0.274, 999.871, 1.665],
        10.0: [-0.134, 0.307, -0.946, 0.197, 0.873, 0.273, 1.090, 0.286, 1000.000, 0.005],
        float("inf"): [-0.127, 0.304, -0.956, 0.195, 0.867, 0.253, 1.093, 0.293, 1000.000, 0.000],
    },
}
SEED_TABLE3 = {
    0.1: {
        0.001: [0.080, 3.497, 0.079, 3.593, 0.120, 1.804, 0.045, 0.042, 101.040, 96.843],
        0.01: [0.040, 0.120, 0.062, 0.109, 0.065, 0.105, 0.043, 0.048, 13.060, 47.688],
        0.1: [0.044, 0.112, 0.057, 0.137, 0.052, 0.150, 0.039, 0.036, 1.351, 9.806],
        1.0: [0.045, 0.095, 0.048, 0.100, 0.053, 0.103, 0.039, 0.042, 0.140, 0.027],
        10.0: [0.044, 0.092, 0.060, 0.102, 0.057, 0.138, 0.040, 0.037, 0.002, 0.002],
        float("inf"): [0.041, 0.101, 0.048, 0.094, 0.057, 0.072, 0.039, 0.032, 0.000, 0.000],
    },
    1.0: {
        0.001: [0.031, 0.039, 0.027, 0.014, 0.031, 0.015, 0.043, 0.021, 76.632, 372.407],
        0.01: [0.027, 0.013, 0.030, 0.010, 0.032, 0.014, 0.030, 0.017, 1.328, 44.712],
        0.1: [0.026, 0.016, 0.028, 0.011, 0.028, 0.012, 0.030, 0.018, 0.627, 4.963],
        1.0: [0.025, 0.014, 0.029, 0.011, 0.028, 0.013, 0.029, 0.015, 0.129, 0.023],
        10.0: [0.027, 0.014, 0.028, 0.012, 0.031, 0.012, 0.030, 0.016, 0.002, 0.002],
        float("inf"): [0.025, 0.015, 0.028, 0.012, 0.030, 0.012, 0.031, 0.017, 0.000, 0.000],
    },
}


def confidential_data(n, key):
    truth = {k: jnp.asarray(v)[None] for k, v in m.SEED_UNKNOWN_N_TRUTH.items()}
    truth["n"] = jnp.array([n])
    sim = Predictive(m.unknown_n_regression, posterior_samples=truth, return_sites=["x", "y"])(key, n)
    x, y = sim["x"][0], sim["y"][0]
    return x, y, jax.vmap(m.unknown_n_regression_statistic())({"x": x, "y": y}).sum(0)


def collect(state):
    z = state.z
    return jnp.concatenate([z["beta"], z["tau"][None], jnp.asarray(z["n"], z["tau"].dtype)[None]])


def unknown_runner(capacity, num_warmup, num_samples):
    """Compiled ``(keys, s, n_dp, eps_s, eps_n) -> draws (chains, samples, 5)`` of β, τ, n."""

    def model(capacity, s_dp, n_dp, eps_s, eps_n):
        m.unknown_n_regression(capacity, s_dp, n_dp, eps_s=eps_s, eps_n=eps_n)

    kernel = ReversibleJumpKernel(model, theta_update=m.unknown_n_regression_update(), size_moves=100)

    def run(key, s, n_dp, eps_s, eps_n):
        args = (capacity, s, n_dp, eps_s, eps_n)
        return run_chain(kernel, key, args, num_warmup=num_warmup, num_samples=num_samples, collect=collect)

    return jax.jit(jax.vmap(run))


def known_runner(n, num_warmup, num_samples):
    """ε_n = ∞: n conditioned (n slots), the same model through DataAugmentationKernel."""

    def model(s_dp, eps_s):
        with handlers.condition(data={"n": jnp.array(n)}):
            m.unknown_n_regression(n, s_dp, eps_s=eps_s, eps_n=None)

    kernel = DataAugmentationKernel(model, theta_update=m.unknown_n_regression_update(n), noncentred_moves=0)

    def run(key, s, n_dp, eps_s, eps_n):
        del n_dp, eps_n
        draws = run_chain(
            kernel, key, (s, eps_s), num_warmup=num_warmup, num_samples=num_samples, collect=collect_known
        )
        return jnp.concatenate([draws, jnp.full(draws.shape[:-1] + (1,), float(n))], -1)

    def collect_known(state):
        return jnp.concatenate([state.z["beta"], state.z["tau"][None]])

    return jax.jit(jax.vmap(run))


def summarise(draws):
    """Per chain: (E b0, Var b0, ..., E n, Var n) over the kept draws."""
    d = np.asarray(draws, float)
    mean, var = d.mean(1), d.var(1, ddof=1)
    return np.stack([mean, var], -1).reshape(d.shape[0], -1)


def run_grid(n, eps_s_list, eps_n_list, capacity, replicates, iterations, seed=2025):
    num_warmup = iterations // 2
    num_samples = iterations - num_warmup
    key = jax.random.key(seed)
    k_data, k_rel, k_chain = jax.random.split(key, 3)
    _, _, T = confidential_data(n, k_data)
    groups: dict = {}
    for es in eps_s_list:
        for en in eps_n_list:
            cap = n if np.isinf(en) else capacity[en]
            groups.setdefault(cap if not np.isinf(en) else "known", []).append((es, en))
    cells, timings = {}, []
    for group, members in groups.items():
        runner = (
            known_runner(n, num_warmup, num_samples)
            if group == "known"
            else unknown_runner(group, num_warmup, num_samples)
        )
        keys, s, nd, es_arr, en_arr = [], [], [], [], []
        for es, en in members:
            index = EPS_S.index(es) * len(EPS_N) + EPS_N.index(en)  # the same keys in every run of a cell
            k_s, k_n = jax.random.split(jax.random.fold_in(k_rel, index))
            s.append(T + jax.random.laplace(k_s, (replicates, T.shape[0])) * DELTA / es)
            noise_n = (
                jax.random.laplace(k_n, (replicates,)) / en if not np.isinf(en) else jnp.zeros(replicates)
            )
            nd.append(n + noise_n)
            keys.append(jax.random.split(jax.random.fold_in(k_chain, index), replicates))
            es_arr.append(jnp.full(replicates, es))
            en_arr.append(jnp.full(replicates, 1.0 if np.isinf(en) else en))
        args = [jnp.concatenate(a) for a in (keys, s, nd, es_arr, en_arr)]
        t0 = time.perf_counter()
        compiled = runner.lower(*args).compile()
        t1 = time.perf_counter()
        draws = np.asarray(jax.block_until_ready(compiled(*args)))
        t2 = time.perf_counter()
        timing = {
            "group": str(group),
            "capacity": n if group == "known" else group,
            "cells": len(members),
            "chains": len(members) * replicates,
            "compile_s": t1 - t0,
            "run_s": t2 - t1,
        }
        timing["ns_per_slot_iteration"] = (
            1e9 * timing["run_s"] / (timing["chains"] * iterations * timing["capacity"])
        )
        timings.append(timing)
        print(timing, flush=True)
        per_chain = summarise(draws)
        for i, (es, en) in enumerate(members):
            block = per_chain[i * replicates : (i + 1) * replicates]
            nd_i = np.asarray(nd[i])
            n_draws = draws[i * replicates : (i + 1) * replicates, :, 4]
            cap = timing["capacity"]
            cells[(es, en)] = {
                "eps_s": es,
                "eps_n": en,
                "mean": block.mean(0),
                "mcse": block.std(0, ddof=1) / np.sqrt(replicates) if replicates > 1 else np.full(10, np.nan),
                "per_replicate": block,
                "n_dp": nd_i,
                "n_max": float(n_draws.max()),
                "share_top_tenth": float(np.mean(n_draws > 0.9 * cap)) if group != "known" else 0.0,
            }
    return cells, timings


def fmt(v, se=None):
    if not np.isfinite(v):
        return "–"
    digits = 1 if abs(v) >= 100 else 3
    return f"{v:.{digits}f}" if se is None or not np.isfinite(se) else f"{v:.{digits}f} ± {se:.{digits}f}"


def comparison_table(cells, es, eps_n_list):
    """Rows: statistics; per ε_n: ours ± MCSE | seed ± MCSE | z of the difference."""
    cols = [en for en in eps_n_list if (es, en) in cells]
    head = "| statistic | " + " | ".join(f"ε_n = {en:g}: dpjax &#124; seed &#124; z" for en in cols) + " |"
    lines = [head, "|---" * (1 + len(cols)) + "|"]
    for j, name in enumerate(STATS):
        row = [name]
        for en in cols:
            c = cells[(es, en)]
            ours, se = c["mean"][j], c["mcse"][j]
            seed, seed_se = SEED_TABLE1[es][en][j], SEED_TABLE3[es][en][j]
            denom = np.sqrt(se**2 + seed_se**2) if np.isfinite(se) else np.nan
            z = (ours - seed) / denom if denom and np.isfinite(denom) and denom > 0 else np.nan
            row.append(
                f"{fmt(ours, se)} &#124; {fmt(seed, seed_se)} &#124; {'–' if np.isnan(z) else f'{z:+.1f}'}"
            )
        lines.append("| " + " | ".join(row) + " |")
    return lines


def plot(cells, eps_s_list, eps_n_list, path):
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    xs = np.arange(len(eps_n_list))
    for es, marker in zip(eps_s_list, ["o", "s"]):
        for ax, j, title in zip(axes, [0, 2, 4, 8], ["E β0", "E β1", "E β2", "E n"]):
            got = [(i, cells[(es, en)]) for i, en in enumerate(eps_n_list) if (es, en) in cells]
            ax.errorbar(
                [i for i, _ in got],
                [c["mean"][j] for _, c in got],
                yerr=[2 * np.nan_to_num(c["mcse"][j]) for _, c in got],
                marker=marker,
                ls="-",
                label=f"dpjax ε_s={es:g}",
            )
            ax.errorbar(
                xs + 0.1,
                [SEED_TABLE1[es][en][j] for en in eps_n_list],
                yerr=[2 * SEED_TABLE3[es][en][j] for en in eps_n_list],
                marker=marker,
                ls=":",
                mfc="none",
                label=f"seed ε_s={es:g}",
            )
            ax.set_title(title)
            ax.set_xticks(xs, [f"{en:g}" for en in eps_n_list])
            ax.set_xlabel("ε_n")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--replicates", type=int, default=100)
    parser.add_argument("--iterations", type=int, default=10_000, help="total; the first half is burn-in")
    parser.add_argument("--quick", action="store_true", help="smoke test (n = 100, two cells, seconds)")
    parser.add_argument("--results-dir", default=None, help="where to write (default benchmarks/results)")
    args = parser.parse_args(argv)
    import _common

    if args.results_dir:
        _common.RESULTS = __import__("pathlib").Path(args.results_dir)
    n, eps_s, eps_n, capacity = N, EPS_S, EPS_N, CAPACITY
    name = "unknown_n_regression"
    if args.quick:
        n, eps_s, eps_n, capacity = 100, [1.0], [1.0, float("inf")], {1.0: 120}
        args.replicates, args.iterations, name = 2, 20, "unknown_n_regression_quick"
    start = time.perf_counter()
    cells, timings = run_grid(n, eps_s, eps_n, capacity, args.replicates, args.iterations)
    total = time.perf_counter() - start
    # projection to the full grid (100 replicates × 10 000 iterations) from the measured ns per slot-iteration
    full = {}
    for t in timings:
        cells_full = len(EPS_S) * (
            1 if t["group"] == "known" else sum(CAPACITY[e] == t["capacity"] for e in CAPACITY)
        )
        full[t["group"]] = t["ns_per_slot_iteration"] * 1e-9 * cells_full * 100 * 10_000 * t["capacity"]
    projected = sum(full.values()) + sum(t["compile_s"] for t in timings) if n == N else float("nan")
    md = [
        "# Unknown n: linear regression (Awan, Barrientos & Ju §6.1, Tables 1 and 3)",
        "",
        f"n = {n}, {args.replicates} replicates per cell (one dataset; new release and chain each), "
        f"{args.iterations} iterations ({args.iterations // 2} burn-in), 100 birth/death moves per iteration, "
        "exact θ-step. Prior of n: DiscreteUniform(1, capacity), capacity per ε_n: "
        + ", ".join(f"{k:g} → {v}" for k, v in capacity.items())
        + "; ε_n = ∞: n known (DataAugmentationKernel). Cells: mean over replicates of the per-chain posterior "
        "mean/variance ± MCSE (sd over replicates / √R) | the seed's Table 1 ± Table 3 | z of the difference "
        "(using both MCSEs).",
        "",
    ]
    if args.quick:
        md += [
            "**Quick smoke run (n = 100, 2 replicates, 20 iterations): the seed's columns are for n = 1000.**",
            "",
        ]
    for es in eps_s:
        md += [f"## ε_s = {es:g}", "", *comparison_table(cells, es, eps_n), ""]
    md += [
        "## n near the capacity",
        "",
        "| ε_s | ε_n | max n drawn | share of draws > 0.9 capacity |",
        "|---|---|---|---|",
    ]
    md += [
        f"| {c['eps_s']:g} | {c['eps_n']:g} | {c['n_max']:.0f} | {c['share_top_tenth']:.2g} |"
        for c in cells.values()
        if np.isfinite(c["eps_n"])
    ]
    md += [
        "",
        "## Time",
        "",
        "| group (capacity) | cells | chains | compile s | run s | ns per slot-iteration |",
        "|---|---|---|---|---|---|",
    ]
    md += [
        f"| {t['group']} ({t['capacity']}) | {t['cells']} | {t['chains']} | {t['compile_s']:.0f} | {t['run_s']:.1f} | "
        f"{t['ns_per_slot_iteration']:.0f} |"
        for t in timings
    ]
    md += [
        "",
        f"Total {total:.0f} s. Projected full grid (12 cells × 100 replicates × 10 000 iterations, n = 1000) at "
        f"the measured speed: {projected / 60:.0f} min (the machine is shared with other work; timings vary).",
    ]
    write_results(
        name,
        {
            "n": n,
            "replicates": args.replicates,
            "iterations": args.iterations,
            "capacity": {str(k): v for k, v in capacity.items()},
            "statistics": STATS,
            "cells": [
                {k: v for k, v in c.items() if k != "per_replicate"} | {"per_replicate": c["per_replicate"]}
                for c in cells.values()
            ],
            "timings": timings,
            "projected_full_grid_s": projected,
            "total_s": total,
        },
        "\n".join(md),
    )
    plot(cells, eps_s, eps_n, _common.RESULTS / f"{name}.png")
    print("\n".join(md))
    return cells, timings


if __name__ == "__main__":
    main()
