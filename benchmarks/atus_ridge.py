"""The ATUS ridge at ε_n = 0.01 (or ``--eps-n``): ReversibleJumpKernel with and without ridge moves against the CLT oracle.

One release of the awan-atus experiment (ε_s = 10: s from its standard Laplace draw; n_dp = n +
Laplace(1/ε_n) from key 7), the 6 656 ATUS compositions, α_j ~ Gamma(1, 0.1), n flat on 1..capacity.
With n_dp's noise sd 141 the posterior of (α, n) is a long curved ridge n·E_α t ≈ s (E α₁ from 2 to 90
along it). Each variant runs 4 vectorized chains; its posterior of n and α is compared with the
semi-analytic large-n posterior of ``dpjax.reproduce.atus_oracle`` (z = (chain mean − oracle) / MCSE, MCSE from the
bulk ESS). Needs 64-bit floats: ``JAX_ENABLE_X64=1 python benchmarks/atus_ridge.py`` (~15 min);
``--ridge 1 3 10`` compares those numbers of ridge moves per iteration (0: none), ``--eps-n`` another ε_n.
"""

import argparse
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from _common import table, write_results
from numpyro.diagnostics import effective_sample_size
from numpyro.infer import MCMC

from dpjax.compositional import dirichlet_mle
from dpjax.infer import ReversibleJumpKernel
from dpjax.reproduce import atus_oracle
from dpjax.reproduce.awan_atus import A_CLAMP, atus_compositions, atus_model

EPS_S, CHAINS = 10.0, 4


COLUMNS = ("variant", "E n", "sd n", "E α₁", "sd α₁", "z (E n)", "z (E α₁)", "ESS n", "ESS α₁", "ESS n / s",
           "seconds", "ridge acceptance", "mean abs Δn per iteration")  # fmt: skip


def _cell(row, key):
    value = row.get(key)
    if value is None or isinstance(value, str):
        return value or ""
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def release(eps_n):
    x, _ = atus_compositions(0)
    n = len(x)
    t = jnp.asarray(np.log(np.clip(x, A_CLAMP, 1.0)).sum(0))
    unit = jax.random.laplace(jax.random.key(2019), (3,))
    s = t + unit * (-3 * float(np.log(A_CLAMP))) / EPS_S
    return n, s, n + jax.random.laplace(jax.random.key(7)) / eps_n


def run(ridge_moves, n, s, n_dp, eps_n, warmup, samples):
    capacity = int(n + 12 / eps_n + 10)
    kernel = ReversibleJumpKernel(partial(atus_model, capacity), noncentred_moves=5, ridge_moves=ridge_moves)
    mcmc = MCMC(kernel, num_warmup=warmup, num_samples=samples, num_chains=CHAINS, chain_method="vectorized",
                progress_bar=False)  # fmt: skip
    start = {"alpha": jnp.broadcast_to(dirichlet_mle(s / n_dp).alpha, (CHAINS, 3))}
    t = time.perf_counter()
    mcmc.run(jax.random.key(3), s, n_dp, EPS_S, eps_n, init_params=start, extra_fields=("nc.ridge_rate",))
    seconds = time.perf_counter() - t
    draws = mcmc.get_samples(group_by_chain=True)
    return (
        np.asarray(draws["n"], float),
        np.asarray(draws["alpha"]),
        seconds,
        float(np.nanmean(np.asarray(mcmc.get_extra_fields()["nc.ridge_rate"]))) if ridge_moves else None,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--samples", type=int, default=1500)
    parser.add_argument("--eps-n", type=float, default=0.01)
    parser.add_argument(
        "--ridge", type=int, nargs="+", default=[0, 3], help="ridge moves per iteration, one variant each"
    )
    args = parser.parse_args()
    if not jax.config.jax_enable_x64:
        raise SystemExit("run with JAX_ENABLE_X64=1 (the Dirichlet log density over 6 656 records needs it)")
    eps_n = args.eps_n
    n, s, n_dp = release(eps_n)
    capacity = int(n + 12 / eps_n + 10)
    ev = atus_oracle.evidence(np.asarray(s), EPS_S, atus_oracle.n_range([float(n_dp)], eps_n, capacity))
    oracle = {**atus_oracle.posterior(ev, float(n_dp), eps_n), "laplace_minus_grid": ev["laplace_minus_grid"]}
    rows = [
        {
            "variant": "CLT oracle (dpjax.reproduce.atus_oracle)",
            "E n": oracle["mean_n"],
            "sd n": oracle["sd_n"],
            "E α₁": oracle["mean_alpha"][0],
            "sd α₁": oracle["sd_alpha"][0],
        }
    ]
    for ridge in args.ridge:
        name = f"joint + ridge moves (J = 5, R = {ridge})" if ridge else "joint moves only (J = 5)"
        ns, alpha, seconds, rate = run(ridge, n, s, n_dp, eps_n, args.warmup, args.samples)
        ess_n, ess_a = float(effective_sample_size(ns)), float(effective_sample_size(alpha[..., 0]))
        z = lambda d, e, exact: (d.mean() - exact) / (d.std() / np.sqrt(e))
        rows.append(
            {
                "variant": name,
                "E n": ns.mean(),
                "sd n": ns.std(),
                "E α₁": alpha[..., 0].mean(),
                "sd α₁": alpha[..., 0].std(),
                "z (E n)": z(ns, ess_n, oracle["mean_n"]),
                "z (E α₁)": z(alpha[..., 0], ess_a, oracle["mean_alpha"][0]),
                "ESS n": ess_n,
                "ESS α₁": ess_a,
                "ESS n / s": ess_n / seconds,
                "seconds": seconds,
                "ridge acceptance": rate,
                # with the record noise held the ridge spans only a stretch of n: the step per iteration
                # saturates as ridge moves are added, and the sweep's renewal of the noise sets the pace
                "mean abs Δn per iteration": float(np.abs(np.diff(ns, axis=1)).mean()),
            }
        )
        print(rows[-1], flush=True)
    markdown = (
        f"ATUS, ε_s = {EPS_S:g}, ε_n = {eps_n:g}, n = {n}, n_dp = {float(n_dp):.1f}; {CHAINS} chains × "
        f"({args.warmup} warmup + {args.samples} draws); seconds include compilation. Oracle: Laplace − grid "
        f"spread of log p(s | n) {oracle['laplace_minus_grid']:.4f}, 5/50/95 % of n {oracle['q_n']}.\n\n"
        + "\n".join(table(rows, [(k, partial(_cell, key=k)) for k in COLUMNS]))
    )
    suffix = "" if eps_n == 0.01 else f"_eps_n{eps_n:g}"  # the default keeps its old file name
    flag = "" if eps_n == 0.01 else f" --eps-n {eps_n:g}"
    if args.ridge != [0, 3]:
        suffix += "_ridge" + "_".join(map(str, args.ridge))
        flag += " --ridge " + " ".join(map(str, args.ridge))
    write_results(
        f"atus_ridge{suffix}",
        {"oracle": oracle, "rows": rows, "settings": vars(args)},
        markdown,
        f"JAX_ENABLE_X64=1 python benchmarks/atus_ridge.py{flag}",
    )


if __name__ == "__main__":
    main()
