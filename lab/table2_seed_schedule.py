"""Does the seed's MCEM schedule explain its Table 2 τ̂ ≈ 1.15 (Awan, Barrientos & Ju §6.1)?

`awan-table2` and `awan-table2-seed-code` run stochastic EM for 10 000 iterations from the
data-generating θ, and τ's iterates climb to the cap of 10⁴ in every chain: the release barely
constrains τ (`lab/unknown_n_likelihood.py`). The seed's code runs the first third of its 100 rounds
as the Bayesian sampler (a burn-in), then MCEM rounds of 100 record sweeps at fixed θ, each followed by
the closed-form M-step with Φ held at I (`../shared/reviews/seed_code.md`, Table 2). The question: do
67 M-steps from where the Bayesian burn-in ends stay near τ = 1, so that the seed's τ̂ is where its
burn-in left it rather than an MLE?

Per replicate: a new release (s, n_dp) of the awan-table1-code-mu dataset (μ = (1, −1)) at ε_s = 1;
the Bayesian reversible-jump chain of Table 1 (the paper's model) for ``--burn-in`` iterations; then
`dpjax.infer.mcem` with ``e_step="mcmc"``, one chain, 100 kept draws per E-step, ``--rounds``
iterations, the M-step of `dpjax.models.unknown_n_regression_m_step` with Φ = I and τ capped at 10⁴
(as `awan-table2-seed-code`). Not the seed's: its τ update uses the previous β's residuals, and its
release density drops an entry and reads the exact n (`seed_code_regression`); the schedule is the
question here.

    python lab/table2_seed_schedule.py [--replicates 10] [--eps-n 1] [--burn-in 3333] [--rounds 67]
"""

import argparse
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from _common import table, write_results
from numpyro.infer import MCMC

import dpjax.models as m
from dpjax.infer import ReversibleJumpKernel, mcem
from dpjax.reproduce.unknown_n import CAPACITY, CODE_MU, TAU_CAP, N, confidential_regression_data


def m_step(records, weights):
    """The seed code's M-step: the non-private MLEs with Φ held at I (τ capped as awan-table2's)."""
    fit = m.unknown_n_regression_m_step(records, weights)
    return {**fit, "tau": jnp.minimum(fit["tau"], TAU_CAP), "Phi": jnp.eye(2, dtype=fit["Phi"].dtype)}


def replicate(key, T, eps_n, burn_in, rounds):
    k_s, k_n, k_b, k_e = jax.random.split(key, 4)
    s_dp = T + jax.random.laplace(k_s, T.shape) * m.unknown_n_regression_sensitivity(2)  # ε_s = 1
    n_dp = N + jax.random.laplace(k_n) / eps_n
    model = partial(m.unknown_n_regression, CAPACITY[eps_n], eps_s=1.0, eps_n=eps_n)
    kernel = ReversibleJumpKernel(model, theta_update=m.unknown_n_regression_update(), size_moves=100)
    bayes = MCMC(kernel, num_warmup=burn_in, num_samples=1, progress_bar=False)
    bayes.run(k_b, s_dp, n_dp)
    z = bayes.last_state.z
    start = {k: z[k] for k in ("beta", "tau", "mu")} | {"Phi": jnp.eye(2)}
    fit = mcem(
        k_e, model, start, s_dp, n_dp, e_step="mcmc", num_particles=[100], tolerances=[1e-9],
        max_iterations=rounds, m_step=m_step, num_chains=1, progress_bar=False,
    )  # fmt: skip
    tau = np.asarray(fit.history["tau"])
    return {
        "n_dp": float(n_dp),
        "n at the end of the burn-in": int(z["n"]),
        "τ at the end of the burn-in": float(z["tau"]),
        "τ after 10 M-steps": float(tau[min(9, len(tau) - 1)]),
        f"τ after {len(tau)} M-steps": float(tau[-1]),
        "β at the end": ", ".join(f"{b:.2f}" for b in np.asarray(fit.params["beta"])),
    }


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--replicates", type=int, default=10)
    parser.add_argument("--eps-n", type=float, default=1.0)
    parser.add_argument("--burn-in", type=int, default=3333)
    parser.add_argument("--rounds", type=int, default=67)
    parser.add_argument("--name", default="table2_seed_schedule")
    args = parser.parse_args()
    _, _, T = confidential_regression_data(N, mu=CODE_MU)
    rows, start = [], time.perf_counter()
    for r in range(args.replicates):
        rows.append(
            {"replicate": r, **replicate(jax.random.key(r), T, args.eps_n, args.burn_in, args.rounds)}
        )
        print(rows[-1], flush=True)
    last = f"τ after {args.rounds} M-steps"
    taus = np.array([row[last] for row in rows])
    summary = (
        f"Median τ after {args.rounds} M-steps {np.median(taus):.3g} (mean {taus.mean():.3g} ± "
        f"{taus.std(ddof=1) / np.sqrt(len(taus)):.2g}); at the end of the burn-in "
        f"{np.median([row['τ at the end of the burn-in'] for row in rows]):.3g}; seed's τ̂ ≈ 1.15; "
        f"{time.perf_counter() - start:.0f} s."
    )
    md = [
        f"# Table 2 on the seed's MCEM schedule (ε_s = 1, ε_n = {args.eps_n:g})",
        "",
        f"{args.replicates} releases of the awan-table1-code-mu dataset; per release the Bayesian "
        f"reversible-jump chain for {args.burn_in} iterations, then {args.rounds} MCEM rounds "
        '(`mcem(e_step="mcmc")`, 100 kept draws per E-step, Φ = I, τ capped at 10⁴). ' + summary,
        "",
        *table(
            rows, [(k, lambda r, k=k: f"{r[k]:.4g}" if isinstance(r[k], float) else r[k]) for k in rows[0]]
        ),
    ]
    write_results(args.name, {"settings": vars(args), "rows": rows}, "\n".join(md))


if __name__ == "__main__":
    main()
