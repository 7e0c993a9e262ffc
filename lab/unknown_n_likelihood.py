"""Why Table 2 of Awan, Barrientos & Ju has no well-defined MLE on our data: the likelihood p(s | θ) of
the §6.1 regression release along a stochastic-EM chain (n public, ε_s = 1, from the data-generating θ).

log p(s | θ) = log E_{x ~ f(· | θ)} η(s | T(x)), estimated from 20 000 simulated datasets of n = 1 000
records per θ (the ESS of the weights η is reported: the estimate is reliable when it is in the
thousands). If the chain climbs to θ's that the release does not make less likely than the
data-generating one, the likelihood is flat along the chain's path, and an MLE found by EM or stochastic
EM depends on where and for how long it runs.

    python lab/unknown_n_likelihood.py
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np
from _common import table, write_results
from numpyro import handlers

import dpjax.models as m
from dpjax.infer import stochastic_em
from dpjax.reproduce.unknown_n import N, confidential_regression_data

SIMULATIONS, CHECKPOINTS = 20_000, (0, 100, 300, 1_000, 2_000, 3_000, 4_000, 5_000, 5_999)


def main():
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    _, _, T = confidential_regression_data(N)
    delta = m.unknown_n_regression_sensitivity(2)
    truth = {k: jnp.asarray(v, jnp.float32) for k, v in m.SEED_UNKNOWN_N_TRUTH.items()}
    statistic = jax.vmap(m.unknown_n_regression_statistic())

    def model(s_dp):
        with handlers.condition(data={"n": jnp.array(N)}):
            m.unknown_n_regression(N, s_dp, eps_s=1.0, eps_n=None)

    @jax.jit
    def log_likelihood(key, theta, s):
        def log_eta(k):
            kx, ky = jax.random.split(k)
            chol = jnp.linalg.cholesky(jnp.linalg.inv(theta["Phi"]))
            x = theta["mu"] + jax.random.normal(kx, (N, 2)) @ chol.T
            y = (
                theta["beta"][0]
                + x @ theta["beta"][1:]
                + jax.random.normal(ky, (N,)) / jnp.sqrt(theta["tau"])
            )
            return jnp.sum(-jnp.abs(s - statistic({"x": x, "y": y}).sum(0)) / delta)

        le = jax.lax.map(log_eta, jax.random.split(key, SIMULATIONS), batch_size=500)
        ess = jnp.exp(2 * jax.nn.logsumexp(le) - jax.nn.logsumexp(2 * le))
        return jax.nn.logsumexp(le) - jnp.log(SIMULATIONS), ess

    rows = []
    for replicate in (0, 1):
        k_s, k_chain = jax.random.split(jax.random.key(replicate))
        s = T + jax.random.laplace(k_s, T.shape) * delta
        out = stochastic_em(
            k_chain, model, truth, s, m_step=m.unknown_n_regression_m_step, num_iterations=max(CHECKPOINTS) + 1,
            burn_in=0.0, num_chains=1, progress_bar=False,
        )  # fmt: skip
        path = {k: np.asarray(v)[0] for k, v in out.samples.items()}
        points = [("data-generating θ", truth)]
        points += [(f"iteration {t:,}", {k: jnp.asarray(path[k][t]) for k in truth}) for t in CHECKPOINTS]
        for label, theta in points:
            if not all(bool(jnp.all(jnp.isfinite(v))) for v in theta.values()):
                rows.append({"replicate": replicate, "θ": label, "τ": float("nan")})
                continue
            ll, ess = log_likelihood(jax.random.key(99), theta, s)
            beta = np.asarray(theta["beta"])
            cov = np.linalg.inv(np.asarray(theta["Phi"], np.float64))
            rows.append(
                {
                    "replicate": replicate,
                    "θ": label,
                    "τ": float(theta["tau"]),
                    "β": "(" + ", ".join(f"{b:.2f}" for b in beta) + ")",
                    "sd of x₁": float(np.sqrt(cov[0, 0])),
                    "corr(x₁, x₂)": float(cov[0, 1] / np.sqrt(cov[0, 0] * cov[1, 1])),
                    "log p̂(s; θ)": float(ll),
                    "ESS of the weights": float(ess),
                }
            )
            print(rows[-1])
    fmt = lambda v: f"{v:.4g}" if isinstance(v, float) else str(v)
    names = ["replicate", "θ", "τ", "β", "sd of x₁", "corr(x₁, x₂)", "log p̂(s; θ)", "ESS of the weights"]
    columns = [(c, lambda r, c=c: fmt(r.get(c, ""))) for c in names]
    md = (
        "# The likelihood of the §6.1 release along stochastic-EM chains (n public, ε_s = 1)\n\n"
        f"Per θ: log p̂(s; θ) from {SIMULATIONS:,} simulated datasets of n = {N:,} records (common random "
        "numbers across θ). The chain starts at the data-generating θ (τ = 1, β = (0, −1, 1)).\n\n"
        + "\n".join(table(rows, columns))
    )
    write_results("unknown_n_likelihood", {"rows": rows, "simulations": SIMULATIONS}, md)


if __name__ == "__main__":
    main()
