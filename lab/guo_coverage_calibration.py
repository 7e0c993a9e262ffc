"""Why DPMCMCp1's predictive coverage falls below 95 % at ε = 0.5 (``guo_simulation_part``): a calibration
check of the sampler and a decomposition of the shortfall.

1. **Calibration over the prior.** Draw α from p1 = Gamma(1, 0.1)³ for each data set, then the records
   and the release S_L(D, a) at a fixed threshold a; run DPMCMCp1 and measure the seed's predictive
   coverage against Dirichlet(α) of that data set. Averaged over the prior, a correct posterior's 95 %
   predictive region covers exactly 95 % (whatever the prior, the privacy and the region's shape): a
   sampler that is wrong shows up as a mean coverage away from 0.95.
2. **A fixed α_true** (a study α, default α₃ = (2.2, 3.3, 4.4)): the same chains; the coverage, the
   posterior mean of α₀ = Σα against the true one, and the coverage of the same draws rescaled to the
   true α₀ (shares kept), which separates what the release leaves unknown about α's scale from its shares.

The threshold is fixed (one candidate), so the posterior is exactly p(α | S_L) and nothing of DPss's
selection is ignored. Chains as in ``run_methods`` (DataAugmentationKernel, α by NUTS, the default
moves), vmapped over data sets.

    python lab/guo_coverage_calibration.py [--alpha α₃] [--eps 0.5] [--n 1000] [--datasets 48]
        [--cases prior fixed] [--tag TAG]
"""

import argparse
import time
import unicodedata

import jax
import jax.numpy as jnp
import numpy as np
from _common import table, write_results
from numpyro.infer import NUTS

from dpjax.compositional import censored_mean_log, laplace_scale
from dpjax.infer import DataAugmentationKernel
from dpjax.models import dirichlet_mean_log
from dpjax.reproduce.compositional import ALPHAS, chains_inner, coverage

A = 1e-3  # a fixed public threshold (one of the seed's candidates)


def finite(draws):
    """The draws with every part finite and positive (the study's usable draws)."""
    return draws[np.all(np.isfinite(draws) & (draws > 0), axis=1)]


def flatten(out):
    """``(R, C, S, d)`` chains → ``(R, C·S, d)`` draws and each data set's largest split-R̂ of log α."""
    from numpyro.diagnostics import split_gelman_rubin

    out = np.asarray(out, float)
    max_rhat = lambda o: float(np.max(split_gelman_rubin(np.log(np.maximum(o, 1e-30)))))
    rhat = np.array([max_rhat(o) for o in out]) if out.shape[1] > 1 else np.full(len(out), np.nan)
    return out.reshape(out.shape[0], -1, out.shape[-1]), rhat


def releases(rng, alphas, n, eps1):
    """S_L = S₀(x, a) + Laplace(−d log a / (n ε₁)) of records x ~ Dirichlet(α), one per data set."""
    x = np.stack([rng.dirichlet(a, size=n) for a in alphas])
    scale = float(laplace_scale(A, alphas.shape[1], n, eps1))
    s = np.asarray(jax.vmap(lambda xi: censored_mean_log(xi, A))(jnp.asarray(x)))
    return s + rng.laplace(scale=scale, size=s.shape)


def chains(key, s, n, eps1, cfg):
    kern = DataAugmentationKernel(NUTS(dirichlet_mean_log, max_tree_depth=5))
    wrap = lambda ks, si: chains_inner(kern, ks, (n, A, eps1, si), cfg, None)
    keys = jax.random.split(key, (len(s), cfg["chains"]))
    return flatten(jax.jit(jax.vmap(wrap))(keys, jnp.asarray(s)))


def per_dataset(draws, alphas, rng, m_eval, rescale=None):
    """Coverage and E[α₀|s] of each data set (``rescale``: each draw's α₀ set to that value first)."""
    cover, a0 = [], []
    for d, a in zip(draws, alphas):
        d = finite(d)
        a0.append(d.sum(1).mean())
        if rescale is not None:
            d = d / d.sum(1, keepdims=True) * rescale
        cover.append(coverage(rng, d, a, m_eval))
    return np.asarray(cover), np.asarray(a0)


def summarise(name, cover, a0, rhat, alphas):
    return {
        "case": name,
        "data sets": len(cover),
        "mean coverage": cover.mean(),
        "se": cover.std(ddof=1) / np.sqrt(len(cover)),
        "z vs 0.95": (cover.mean() - 0.95) / (cover.std(ddof=1) / np.sqrt(len(cover))),
        "median coverage": float(np.median(cover)),
        "median E[α₀|s] / α₀": float(np.median(np.asarray(a0) / alphas.sum(1))),
        "max split-R̂": float(np.nanmax(rhat)),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--alpha", default="α₃", choices=sorted(ALPHAS), help="the fixed α_true (case 2)")
    parser.add_argument("--eps", type=float, default=0.5, help="total ε; the release uses ε₁ = 0.25ε")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--datasets", type=int, default=48)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--m-eval", type=int, default=10_000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--cases", nargs="+", default=["prior", "fixed"], choices=["prior", "fixed"],
                        help="prior: α drawn from p1 per data set (calibration); fixed: α = --alpha")  # fmt: skip
    parser.add_argument(
        "--tag", default="", help="suffix of the output files (default: the settings that differ)"
    )
    args = parser.parse_args()
    eps1 = 0.25 * args.eps
    cfg = dict(chains=args.chains, warmup=args.warmup, samples=args.samples, thin=2)
    rng = np.random.default_rng(2024)
    truth = np.asarray(ALPHAS[args.alpha])
    d = len(truth)
    cases = {  # --cases name: (row label, α per data set)
        "prior": ("α ~ p1 (calibration)", rng.gamma(1.0, 10.0, size=(args.datasets, d))),
        "fixed": (f"α = {args.alpha}", np.tile(truth, (args.datasets, 1))),
    }
    rows, seconds, sets = [], {}, {}
    for i, (case, (name, alphas)) in enumerate(cases.items()):
        if case not in args.cases:
            continue
        s = releases(rng, alphas, args.n, eps1)
        t = time.perf_counter()
        draws, rhat = chains(jax.random.key(i), s, args.n, eps1, cfg)
        seconds[name] = time.perf_counter() - t
        cover, a0 = per_dataset(draws, alphas, rng, args.m_eval)
        sets[name] = {"alpha": alphas, "coverage": cover, "E alpha0": a0, "rhat": rhat}
        rows.append(summarise(name, cover, a0, rhat, alphas))
        print(rows[-1], flush=True)
        mixed = rhat < 1.1
        if not mixed.all():  # which data sets the chains failed on, and the calibration without them
            for j in np.flatnonzero(~mixed):
                print(f"  split-R̂ {rhat[j]:.2f}: α = {np.round(alphas[j], 3)}, coverage {cover[j]:.3f}")
            keep = lambda v: v[mixed]
            if mixed.sum() > 1:  # a mean and its s.e. need two
                rows.append(
                    summarise(f"{name}, data sets with split-R̂ < 1.1", *map(keep, (cover, a0, rhat, alphas)))
                )
        if case == "fixed":
            cover, a0 = per_dataset(draws, alphas, rng, args.m_eval, rescale=truth.sum())
            rows.append(summarise(f"{name}, draws rescaled to the true α₀", cover, a0, rhat, alphas))
    cols = ["case", "data sets", "mean coverage", "se", "z vs 0.95", "median coverage", "median E[α₀|s] / α₀",
            "max split-R̂"]  # fmt: skip
    fmt = lambda k: lambda r: r[k] if isinstance(r[k], str | int) else f"{r[k]:.3g}"
    md = [
        f"# DPMCMCp1's predictive coverage: calibration over the prior and the shortfall at {args.alpha} "
        f"(n = {args.n}, ε = {args.eps:g})",
        "",
        f"n = {args.n}, d = {d}, ε₁ = 0.25ε = {eps1:g}, fixed threshold a = {A:g} (Laplace scale "
        f"{float(laplace_scale(A, d, args.n, eps1)):.3g}), prior p1 = Gamma(1, 0.1) per part; DPMCMCp1 as in the "
        f"study: {cfg['chains']} chains × ({args.warmup} warm-up + {args.samples}) iterations, every "
        f"{cfg['thin']}-nd kept, vmapped over data sets. Coverage: the seed's 95 % predictive ellipsoid "
        f"(`dpjax.reproduce.compositional.coverage`) against {args.m_eval} draws from Dirichlet(α) of each data set; se over data sets.",
        "",
        *table(rows, [(k, fmt(k)) for k in cols]),
        "",
        "Seconds (compilation included): " + ", ".join(f"{k}: {v:.0f}" for k, v in seconds.items()) + ".",
    ]
    write_results(
        "guo_coverage_calibration" + (f"_{args.tag}" if args.tag else default_tag(args, parser)),
        {"settings": vars(args), "rows": rows, "seconds": seconds, "data sets": sets},
        "\n".join(md),
    )


def default_tag(args, parser):
    """What differs from the defaults: α₅, n = 5 000 → ``_alpha5_n5000`` (as the other Guo results)."""
    tag = "".join(
        f"_{k}{getattr(args, k):g}" for k in ("n", "eps") if getattr(args, k) != parser.get_default(k)
    )
    if args.alpha != parser.get_default("alpha"):
        tag = f"_alpha{unicodedata.digit(args.alpha[-1])}" + tag
    return tag


if __name__ == "__main__":
    main()
