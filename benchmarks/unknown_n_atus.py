"""The unknown-n seed's ATUS application (§6.2, Figure 1; supplement Figures C2–C3).

Dirichlet(α) compositions of the day (personal care, eating and drinking, other) from
``../shared/data/atus/`` (male and female together, 6 656 rows, the size of the seed's §6.2),
α_j ~ Gamma(1, 0.1). Release s = Σᵢ log(clamp(xᵢⱼ, a, 1)) + Laplace(−3 log a / ε_s), a = 0.0006
(the seed's oracle threshold), and n_dp = n + Laplace(1/ε_n). One realisation of s per ε_s; for
each ε_n several realisations of n_dp. Bounded DP (n known): DataAugmentationKernel; unbounded
(n latent, flat prior up to the capacity): ReversibleJumpKernel; α by the inner NUTS in both.

The seed's figure has no table of numbers, so the script checks (and prints) its three
conclusions: the posterior sd of α under unbounded DP falls as ε_n grows, towards the bounded-DP
sd; the posterior of n narrows as ε_n grows; and a larger ε_s gives smaller posterior sds.
"""

import argparse
import time
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro import handlers
from numpyro.infer import MCMC

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from _common import RESULTS, table, write_results

import dpjax
from dpjax.compositional import load_atus
from dpjax.infer import DataAugmentationKernel, ReversibleJumpKernel

A = 0.0006
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "atus"


def atus_model(capacity, s_dp=None, n_dp=None, *, eps_s, eps_n):
    alpha = numpyro.sample("alpha", dist.Gamma(1.0, 0.1).expand([3]).to_event(1))
    n = numpyro.sample("n", dist.DiscreteUniform(1, capacity))
    people = dpjax.records_plate("people", n, capacity)
    with people:
        x = numpyro.sample("x", dist.Dirichlet(alpha))
    log_clamped = lambda r: jnp.log(jnp.clip(r["x"], A, 1.0))
    composition = dpjax.LaplaceMechanism(scale=-3 * jnp.log(A) / eps_s * jnp.ones(3))
    dpjax.privatized("s", composition, log_clamped, {"x": x}, plate=people, obs=s_dp)
    size = dpjax.LaplaceMechanism(epsilon=eps_n, sensitivity=1.0)
    dpjax.privatized("n_dp", size, lambda r: jnp.ones(()), {"x": x}, plate=people, obs=n_dp)


def load(rows):
    x = np.concatenate([load_atus(DATA / "male.csv"), load_atus(DATA / "female.csv")])
    if rows:
        x = x[np.random.default_rng(0).choice(len(x), rows, replace=False)]
    return x


def sampler(kernel, num_warmup, num_samples):
    """One MCMC whose compiled loop every run reuses: ε_s, ε_n and the releases are traced
    arguments (``jit_model_args``), the capacity is the same for every ε_n."""
    mcmc = MCMC(
        kernel, num_warmup=num_warmup, num_samples=num_samples, progress_bar=False, jit_model_args=True
    )

    def fit(args, kwargs, seed):
        mcmc.run(jax.random.key(seed), *args, **kwargs)
        return mcmc.get_samples()

    return fit


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=0, help="subsample the data (0: all 6 656 rows)")
    parser.add_argument("--realizations", type=int, default=10, help="n_dp realisations per ε_n")
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="400 rows, 2 realisations, short chains")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.realizations, args.warmup, args.samples = 400, 2, 150, 300
    x = load(args.rows)
    n = len(x)
    t_true = np.log(np.clip(x, A, 1.0)).sum(0)
    rng = np.random.default_rng(2019)
    rows, n_draws = [], {}
    # the capacity is a shape, so it is bound to the model, not passed as a (traced) argument
    known = handlers.condition(partial(atus_model, n), data={"n": jnp.array(n)})
    bounded = sampler(DataAugmentationKernel(known), args.warmup, args.samples)
    capacity = int(n + 12 / 0.01 + 10)  # n_dp's noise beyond 12/ε_n has probability e^-12
    unbounded = sampler(ReversibleJumpKernel(partial(atus_model, capacity)), args.warmup, args.samples)
    start = time.perf_counter()
    for eps_s in (1.0, 10.0):
        s_dp = jnp.asarray(t_true + rng.laplace(scale=-3 * np.log(A) / eps_s, size=3), jnp.float32)
        # bounded DP: n known, the same model with n conditioned
        kw = {"eps_s": jnp.array(eps_s), "eps_n": jnp.array(1.0)}
        draws = bounded((s_dp, jnp.array(float(n))), kw, 0)
        bounded_sd = np.asarray(draws["alpha"]).std(0)
        rows.append(
            {"eps_s": eps_s, "eps_n": "bounded", "rep": 0, "sd": bounded_sd, "n_mean": n, "n_sd": 0.0}
        )
        print(rows[-1], f"{time.perf_counter() - start:.0f} s", flush=True)
        for eps_n in (0.01, 0.1, 1.0, 10.0):
            for rep in range(args.realizations):
                n_dp = jnp.array(n + rng.laplace(scale=1 / eps_n), jnp.float32)
                kw = {"eps_s": jnp.array(eps_s), "eps_n": jnp.array(eps_n)}
                draws = unbounded((s_dp, n_dp), kw, rep)
                n_draws.setdefault((eps_s, eps_n), []).append(np.asarray(draws["n"]))
                rows.append(
                    {
                        "eps_s": eps_s,
                        "eps_n": eps_n,
                        "rep": rep,
                        "n_dp": float(n_dp),
                        "sd": np.asarray(draws["alpha"]).std(0),
                        "n_mean": float(draws["n"].mean()),
                        "n_sd": float(draws["n"].std()),
                    }
                )
                print(rows[-1], f"{time.perf_counter() - start:.0f} s", flush=True)
    seconds = time.perf_counter() - start
    # the seed's conclusions, computed
    mean_sd = {}
    for r in rows:
        mean_sd.setdefault((r["eps_s"], r["eps_n"]), []).append(r["sd"])
    mean_sd = {k: np.mean(v, 0) for k, v in mean_sd.items()}
    n_sd = {k: float(np.concatenate(v).std()) for k, v in n_draws.items()}
    checks = {}
    for eps_s in (1.0, 10.0):
        sds = [mean_sd[(eps_s, e)].mean() for e in (0.01, 0.1, 1.0, 10.0)]
        checks[f"ε_s={eps_s:g}: sd(α) falls with ε_n"] = bool(sds[0] >= sds[-1])
        checks[f"ε_s={eps_s:g}: sd(α) at ε_n=10 within 20 % of bounded"] = bool(
            abs(sds[-1] / mean_sd[(eps_s, "bounded")].mean() - 1) < 0.2
        )
        ns = [n_sd[(eps_s, e)] for e in (0.01, 0.1, 1.0, 10.0)]
        checks[f"ε_s={eps_s:g}: sd(n) falls with ε_n"] = bool(all(a > b for a, b in zip(ns, ns[1:])))
    checks["sd(α) smaller at ε_s=10 than at 1 (bounded)"] = bool(
        mean_sd[(10.0, "bounded")].mean() < mean_sd[(1.0, "bounded")].mean()
    )
    summary = [
        {"eps_s": k[0], "eps_n": k[1], "sd": v, "n_sd": n_sd.get(k, 0.0)}
        for k, v in sorted(mean_sd.items(), key=str)
    ]
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for i, eps_s in enumerate((1.0, 10.0)):
        ax = axes[i, 0]
        for j in range(3):
            line = ax.axhline(mean_sd[(eps_s, "bounded")][j], color=f"C{j}")
            reps = [
                [r["sd"][j] for r in rows if r["eps_s"] == eps_s and r["eps_n"] == e]
                for e in (0.01, 0.1, 1.0, 10.0)
            ]
            for rep in zip(*reps):
                ax.plot([0.01, 0.1, 1.0, 10.0], rep, "--", color=line.get_color(), alpha=0.5)
        ax.set(xscale="log", xlabel="ε_n", ylabel=f"posterior sd of α (ε_s = {eps_s:g})")
        axes[i, 1].boxplot([np.concatenate(n_draws[(eps_s, e)]) for e in (0.01, 0.1, 1.0, 10.0)])
        axes[i, 1].set_xticks([1, 2, 3, 4], ["0.01", "0.1", "1", "10"])
        axes[i, 1].axhline(n, color="k")
        axes[i, 1].set(xlabel="ε_n", ylabel="posterior of n")
    fig.tight_layout()
    RESULTS.mkdir(exist_ok=True)
    fig.savefig(RESULTS / "unknown_n_atus.png", dpi=120)
    md = [
        "# Unknown n, ATUS application (the seed's §6.2, Figure 1)",
        "",
        f"{n} rows, a = {A}, {args.realizations} n_dp realisations per ε_n, {args.warmup} warmup + {args.samples} "
        f"draws per chain, inner NUTS for α; {seconds:.0f} s in all. Figure: `unknown_n_atus.png`.",
        "",
        *table(
            summary,
            [
                ("ε_s", lambda r: f"{r['eps_s']:g}"),
                ("ε_n", lambda r: r["eps_n"] if isinstance(r["eps_n"], str) else f"{r['eps_n']:g}"),
                ("mean posterior sd of α₁, α₂, α₃", lambda r: ", ".join(f"{v:.3f}" for v in r["sd"])),
                ("posterior sd of n (pooled)", lambda r: f"{r['n_sd']:.1f}"),
            ],
        ),
        "",
        "The seed's conclusions, checked on these runs:",
        "",
        *[f"- {k}: {'yes' if v else 'NO'}" for k, v in checks.items()],
    ]
    write_results("unknown_n_atus", {"rows": rows, "checks": checks, "settings": vars(args)}, "\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
