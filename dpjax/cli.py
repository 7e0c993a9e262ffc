"""The ``dpjax`` command line: ``dpjax demo`` runs the main job on built-in simulated data."""

from __future__ import annotations

import argparse
import math
import os
import sys
import time


def demo(epsilon: float, n: int, seed: int, out: str, num_samples: int, progress: bool) -> None:
    """Release a DP summary of simulated working hours, then compare the naive posterior (noise
    ignored) with dpjax's privacy-aware one: ArviZ summaries side by side and a plot."""
    import arviz as az
    import jax
    import jax.numpy as jnp
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd
    from numpyro.infer import MCMC, NUTS

    import dpjax
    from dpjax.infer import DataAugmentationKernel, auto_moves
    from dpjax.models import clamped_normal, naive_normal
    from dpjax.models.normal import SENSITIVITY, clamp_to_unit

    start = time.perf_counter()
    truth = {"mu": 38.0, "sigma": 12.0}
    k_data, k_release, k_naive, k_private = jax.random.split(jax.random.key(seed), 4)
    hours = truth["mu"] + truth["sigma"] * jax.random.normal(k_data, (n,))
    u = clamp_to_unit(hours, 0.0, 100.0)
    confidential = jnp.stack([u.sum(), (u**2).sum()])
    mechanism = dpjax.LaplaceMechanism(epsilon, SENSITIVITY)
    release = mechanism.release(k_release, confidential)
    print(f"dpjax demo: {n} people's weekly working hours (true μ = {truth['mu']}, σ = {truth['sigma']}).")
    print(f"The curator releases (Σu, Σu²), u = hours/100 clamped to [0, 1], with {mechanism}.")
    shown = lambda v: np.round(np.asarray(v), 2)
    print(f"  confidential: {shown(confidential)}   released: {shown(release)}\n")

    def fit(kernel, key, *args, label):
        print(f"[{label}]", flush=True)
        mcmc = MCMC(
            kernel,
            num_warmup=num_samples,
            num_samples=num_samples,
            num_chains=2,
            chain_method="vectorized" if not progress else "sequential",
            progress_bar=progress,
        )
        mcmc.run(key, *args)
        return mcmc

    naive = fit(NUTS(naive_normal), k_naive, n, release, label="naive: release taken as exact")
    kernel = DataAugmentationKernel(clamped_normal)
    private = fit(
        kernel,
        k_private,
        n,
        epsilon,
        release,
        label="dpjax: DataAugmentationKernel (NUTS θ-step, imputed records, non-centred θ-moves if they pay)",
    )
    chosen = auto_moves.choice(private.last_state)
    if chosen is not None:
        print(
            f"non-centred θ-moves {'on' if chosen[0] else 'off'}: in warmup they gave {chosen[1]:.2f}× plain "
            f"data augmentation's ESS per draw (kept from {auto_moves.GAIN_TO_KEEP:g}×)."
        )

    cols = ["mean", "sd", "hdi_3%", "hdi_97%", "ess_bulk", "r_hat"]
    table = pd.concat(
        {
            "naive": az.summary(az.from_numpyro(naive))[cols],
            "privacy-aware": az.summary(az.from_numpyro(private))[cols],
        },
        axis=1,
    )
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print("\n" + table.to_string())
    rate = float(np.mean(private.get_extra_fields()["record_accept_rate"]))
    print(
        f"\nrecord acceptance rate {rate:.2f} (bound e^-ε = {np.exp(-epsilon):.2f}); "
        f"true μ = {truth['mu']}, σ = {truth['sigma']}."
    )

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, name in zip(axes, ["mu", "sigma"]):
        for mcmc, label, color in [(naive, "naive", "C1"), (private, "privacy-aware (dpjax)", "C0")]:
            ax.hist(
                np.asarray(mcmc.get_samples()[name]),
                bins=60,
                density=True,
                alpha=0.55,
                label=label,
                color=color,
            )
        ax.axvline(truth[name], color="k", ls="--", label="truth")
        ax.set(title=f"posterior of {name}", xlabel=name)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"n = {n}, Laplace release with ε = {epsilon:g}")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"plot saved to {os.path.abspath(out)}; finished in {time.perf_counter() - start:.0f} s.")


def reproduce(parser, args) -> int:
    from dpjax.reproduce import REGISTRY, markdown_table, run_experiment

    if args.list or not (args.names or args.all):
        for e in REGISTRY.values():
            print(f"{e.name:28s} {e.source}: {e.title} (full run {e.full_cost})")
        return 0
    names = list(REGISTRY) if args.all or args.names == ["all"] else args.names
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        parser.error(f"unknown experiment(s) {', '.join(unknown)}; `dpjax reproduce --list` lists them")
    failed = []
    for name in names:
        print(f"== {name}{' (quick)' if args.quick else ''}", flush=True)
        report = run_experiment(name, quick=args.quick, out=args.out, progress=not args.no_progress)
        print(markdown_table(report.comparison))
        print(f"written to {os.path.join(os.path.abspath(args.out), name)}.md\n", flush=True)
        failed += [f"{name}: {q}" for q in report.comparison.query("verdict == 'fail'")["quantity"]]
    if failed:
        print("outside the Monte Carlo error of the seed's figure:\n  " + "\n  ".join(failed))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="dpjax", description="Exact inference from differentially private releases."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="naive vs privacy-aware posterior on built-in simulated data")
    d.add_argument(
        "--epsilon", type=float, default=0.25, help="privacy-loss budget of the release (default 0.25)"
    )
    d.add_argument("--n", type=int, default=300, help="number of confidential records (default 300)")
    d.add_argument("--seed", type=int, default=1)
    d.add_argument("--num-samples", type=int, default=1000, help="draws kept per chain (default 1000)")
    d.add_argument("--out", default="dpjax_demo.png", help="where to save the plot")
    d.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    r = sub.add_parser(
        "reproduce",
        help="reproduce a table or figure of the seeds (markdown + JSON + PNG, compared with the seed)",
        description="Run experiments of dpjax.reproduce; each writes OUT/NAME.md, .json and PNGs with "
        "dpjax's numbers next to the seed's and a verdict computed from the Monte Carlo errors. A stopped "
        "run resumes from the cells kept in OUT/.NAME.cells/ (delete it to start afresh).",
    )
    r.add_argument("names", nargs="*", metavar="NAME", help="experiments to run, or 'all'")
    r.add_argument("--list", action="store_true", help="list the experiments and stop")
    r.add_argument("--all", action="store_true", help="run every registered experiment (long ones resume)")
    r.add_argument("--quick", action="store_true", help="reduced settings: seconds instead of minutes")
    r.add_argument("--out", default="reproduce", help="folder for the results (default ./reproduce)")
    r.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    r.epilog = (
        "run_study spreads the replicates of a study over the JAX devices: on a CPU with k cores, "
        "XLA_FLAGS=--xla_force_host_platform_device_count=d with d < k runs them on d devices (the numbers "
        "do not depend on it). Keep d below the cores: with d = k a study whose model runs LAPACK kernels "
        "(the unknown-n regression's multivariate records) can deadlock XLA's CPU thread pool."
    )
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        return reproduce(parser, args)
    if not (math.isfinite(args.epsilon) and args.epsilon > 0) or args.n < 2 or args.num_samples < 10:
        parser.error("need a finite --epsilon > 0, --n >= 2 and --num-samples >= 10")
    folder = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(folder):
        parser.error(f"--out: the folder {folder} does not exist")
    demo(args.epsilon, args.n, args.seed, args.out, args.num_samples, progress=not args.no_progress)
    return 0


if __name__ == "__main__":
    sys.exit(main())
