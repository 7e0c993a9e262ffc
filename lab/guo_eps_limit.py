"""What the release tells of α as ε → ∞ where censoring is heavy: α₂ = (0.5, 0.5, 0.5) by default (or another
study α: ``--alpha α₄``), a = 0.01 (at α₂ 10 % of each part lies below a; a = 0.01 is the threshold DPss picks
at ε = 10¹⁰ for every study α but α₁, which sometimes gets 0.1), n = 1 000, prior p1, ε₁ = 0.25·10¹⁰
(Laplace scale 5.5·10⁻¹² at d = 3: the release is S₀(D, a) itself). Three posteriors per simulated data set:

* **α | D** — NUTS on the Dirichlet likelihood of the records (MCMCp1). The study's DPMCMCp1 at ε = 10¹⁰
  returns this: its records start at the data and never move (``StickyRecordsWarning``).
* **α | S₀(D, a), CLT** — ``dp_approx(censored=True)``: the censored statistic's own mean and covariance
  (``censored_moments``). The posterior given the release itself, up to the normal approximation of
  S₀ (at n = 200, ε₁ = 2 it matches exact DPMCMC: ``test_censored_dpapprox_agrees_with_dpmcmc_where_the_
  seeds_does_not``).
* **seed's DPapprox** — the same CLT with the censoring ignored (S₀(D, a) read as the uncensored mean log).

Per method: the study's MSE of α (over draws, median over data sets), the median posterior s.d. of α₀ and
of each αⱼ, and how often the 95 % equal-tailed interval of αⱼ and of α₀ holds the true value.

    JAX_ENABLE_X64=1 python lab/guo_eps_limit.py [--alpha α₂] [--datasets 20] [--n 1000]

Results: ``results/guo_eps_limit.{md,json}`` for α₂, ``results/guo_eps_limit_alpha4.{md,json}`` for α₄, etc.
"""

import argparse
import multiprocessing
import time

import jax
import jax.numpy as jnp
import numpy as np
from _common import table, write_results
from numpyro.infer import MCMC, NUTS

from dpjax.compositional import censored_mean_log, censoring_diagnostics, dp_approx
from dpjax.reproduce.compositional import ALPHAS, exact_p1

A, EPS1 = 0.01, 0.25 * 1e10
WARMUP, SAMPLES, CHAINS = 500, 2000, 2


def posteriors(key, x, draws=SAMPLES):
    """α draws (chains × draws, d) of the three posteriors for the records ``x``, and seconds each."""
    s0 = np.asarray(censored_mean_log(x, A))  # the release: its Laplace scale is 5.5·10⁻¹²
    k_d, k_c, k_u = jax.random.split(key, 3)
    out, secs = {}, {}
    t = time.perf_counter()
    exact = MCMC(NUTS(exact_p1, max_tree_depth=5), num_warmup=WARMUP, num_samples=draws,
                 num_chains=CHAINS, chain_method="sequential", progress_bar=False)  # fmt: skip
    exact.run(k_d, float(len(x)), jnp.mean(jnp.log(jnp.asarray(x)), 0))
    out["α given D"], secs["α given D"] = (
        exact.get_samples(group_by_chain=True)["alpha"],
        time.perf_counter() - t,
    )
    for name, k, censored in (("α given S₀(D, a), CLT", k_c, True), ("seed's DPapprox", k_u, False)):
        t = time.perf_counter()
        m = dp_approx(k, s0, n=len(x), a=A, epsilon1=EPS1, num_warmup=WARMUP, num_samples=draws,
                      num_chains=CHAINS, censored=censored)  # fmt: skip
        out[name], secs[name] = m.get_samples(group_by_chain=True)["alpha"], time.perf_counter() - t
    return {k: np.asarray(v, float) for k, v in out.items()}, secs


def _posteriors_of(job):
    key_data, x, draws = job
    return posteriors(jax.random.wrap_key_data(jnp.asarray(key_data)), x, draws)


def _progress(results, total):
    for i, (draws, t) in enumerate(results):
        print(f"data set {i + 1}/{total}: " + ", ".join(f"{k} {t[k]:.0f} s" for k in t), flush=True)
        yield draws, t


def _fmt(v):
    return v if isinstance(v, str) else f"{v:.4g}"


def covers(draws, truth):
    lo, hi = np.quantile(draws, [0.025, 0.975], axis=0)
    return (lo <= truth) & (truth <= hi)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--alpha", default="α₂", choices=list(ALPHAS))
    parser.add_argument("--datasets", type=int, default=20)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=SAMPLES, help="kept draws per chain")
    args = parser.parse_args()
    if jnp.result_type(float) != jnp.float64:
        raise SystemExit("Run with JAX_ENABLE_X64=1: float32 cannot resolve a Laplace scale of 5.5e-12.")
    alpha = np.asarray(ALPHAS[args.alpha])
    rng = np.random.default_rng(2026)
    data = [rng.dirichlet(alpha, size=args.n) for _ in range(args.datasets)]
    keys = np.asarray(jax.random.key_data(jax.random.split(jax.random.key(12), args.datasets)))
    rows, per_set, secs = {}, [], {}
    # each MCMC call compiles anew, and a long process runs out of memory maps for the compiled code
    # (LLVM: "Cannot allocate memory" after ~30 calls): a fresh worker process every 4 data sets
    with multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=4) as pool:
        results = pool.imap(_posteriors_of, [(k, x, args.draws) for k, x in zip(keys, data)])
        results = list(_progress(results, args.datasets))
    for draws, t in results:
        flat = {k: v.reshape(-1, len(alpha)) for k, v in draws.items()}
        for k, v in flat.items():
            secs.setdefault(k, []).append(t[k])
            r = rows.setdefault(k, {"mse": [], "sd0": [], "sdj": [], "cover_j": [], "cover0": [], "mean": []})
            r["mse"].append(np.mean(np.sum((v - alpha) ** 2, 1)))
            r["sd0"].append(v.sum(1).std())
            r["sdj"].append(v.std(0))
            r["mean"].append(v.mean(0))
            r["cover_j"].append(covers(v, alpha))
            r["cover0"].append(bool(covers(v.sum(1), alpha.sum())))
        per_set.append(
            {k: {"mean": v.mean(0), "sd": v.std(0), "sd α₀": v.sum(1).std()} for k, v in flat.items()}
        )

    base = np.asarray(rows["α given D"]["sd0"])
    summary = [
        {
            "posterior": k,
            "median MSE α": float(np.median(r["mse"])),
            "median s.d. α₀": float(np.median(r["sd0"])),
            "median s.d. ratio α₀ (to α given D)": float(np.median(np.asarray(r["sd0"]) / base)),
            "median s.d. αⱼ": float(np.median(r["sdj"])),
            "95 % interval holds αⱼ": float(np.mean(r["cover_j"])),
            "95 % interval holds α₀": float(np.mean(r["cover0"])),
            "mean E[αⱼ] − αⱼ": float(np.mean(np.asarray(r["mean"]) - alpha)),
            "s per data set": float(np.median(secs[k])),
        }
        for k, r in rows.items()
    ]
    diag = censoring_diagnostics(alpha, A)
    below = ", ".join(f"{v:.3g}" for v in np.asarray(diag.censored_prob))
    bias = ", ".join(f"{v:.3g}" for v in np.asarray(diag.bias))
    md = [
        "# ε → ∞ under censoring: the posterior given S₀(D, a) against α | D",
        "",
        f"{args.alpha} = ({', '.join(f'{v:g}' for v in alpha)}), n = {args.n}, a = {A} (each part below a with "
        f"probability {below}; E log max(xⱼ, a) − E log xⱼ = {bias}), "
        f"ε₁ = {EPS1:.3g}, prior p1, {args.datasets} data sets, {CHAINS} chains × ({WARMUP} + {args.draws}) each.",
        "",
        *table(summary, [(k, (lambda k: lambda r: _fmt(r[k]))(k)) for k in summary[0]]),
    ]
    name = "guo_eps_limit" + ("" if args.alpha == "α₂" else f"_alpha{list(ALPHAS).index(args.alpha) + 1}")
    write_results(name, {"alpha": args.alpha, "summary": summary, "per_data_set": per_set}, "\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
