"""Gong (2022), exact ABC and Monte Carlo EM for DP releases: the Poisson example (§5.1, Appendix E) and the
NSW / Lalonde example (§5.2, Appendix F)."""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from scipy import optimize, stats

from ._core import Report, compare, experiment

S_DP, EPS = 37.4, 0.2  # the seed's release and budget, s ~ Pois(θ), Laplace(1/ε) noise


def poisson_log_likelihood(theta):
    """Exact log p(s_dp | θ) = log Σ_k Pois(k; θ) Laplace(s_dp − k; 1/ε), by summation over k."""
    k = np.arange(0, 600)
    log_terms = stats.poisson.logpmf(k, theta) + stats.laplace.logpdf(S_DP - k, scale=1 / EPS)
    return np.logaddexp.reduce(log_terms)


def exact_poisson_mle():
    """θ̂ and the observed information −∂²/∂θ² log p(s_dp | θ) at θ̂, numerically."""
    theta = optimize.minimize_scalar(lambda t: -poisson_log_likelihood(t), bounds=(1, 100), method="bounded")
    t, h = theta.x, 1e-3
    info = (
        -(poisson_log_likelihood(t + h) - 2 * poisson_log_likelihood(t) + poisson_log_likelihood(t - h))
        / h**2
    )
    return float(t), float(info)


@experiment(
    "gong-mcem",
    source="Gong (2022) §5.1 and Appendix E",
    title="MLE of θ from s_dp = 37.4 by importance-sampling MCEM, with Louis's observed information",
    full_cost="~4 min",
)
def gong_mcem(quick: bool, progress: bool) -> Report:
    from dpjax.infer import mcem
    from dpjax.models import poisson_count

    stages = (1_000, 10_000, 20_000) if quick else (1_000, 100_000, 10_000_000)
    mle, info = exact_poisson_mle()
    runs = []
    for name, kw in [
        ("closed-form M-step", {"m_step": lambda recs, w: {"theta": w @ recs["s"][:, 0]}}),
        ("optax M-step (adam)", {}),
    ]:
        t = time.perf_counter()
        out = mcem(
            jax.random.key(0),
            poisson_count,
            {"theta": 1.0},
            25.0,
            jnp.array(S_DP),
            num_particles=stages,
            tolerances=(1e-3, 1e-4, 1e-5),
            progress_bar=progress,
            **kw,
        )
        lo, hi = out.wald_interval(0.95)["theta"]
        runs.append(
            {
                "M-step": name,
                "θ̂": float(out.params["theta"]),
                "observed information": float(out.information[0, 0]),
                "s.e.": float(out.std_errors["theta"]),
                "95 % Wald interval": f"[{float(lo):.2f}, {float(hi):.2f}]",
                "iterations": int(out.ess.shape[0]),
                "final ESS": float(out.ess[-1]),
                "seconds": time.perf_counter() - t,
            }
        )
    best = runs[0]
    # The seed prints θ̂ to 3 decimals from 10⁷ particles; its MC error is ~0.01. Ours with a final
    # stage of N particles: the IS-MCEM fixed point moves by ~ s.e.(θ̂)/√ESS.
    tol_theta = 0.05 if not quick else 0.2
    comparison = compare(
        [
            {"quantity": "θ̂ (closed-form M-step)", "dpjax": best["θ̂"], "seed": 37.237, "tol": tol_theta},
            {"quantity": "θ̂ (optax M-step)", "dpjax": runs[1]["θ̂"], "seed": 37.237, "tol": tol_theta},
            {
                "quantity": "θ̂ against the exact MLE (numerical)",
                "dpjax": best["θ̂"],
                "seed": mle,
                "tol": tol_theta,
            },
            {
                "quantity": "observed information",
                "dpjax": best["observed information"],
                "seed": 1.582e-2,
                "tol": 0.03 * 1.582e-2,
            },
            {
                "quantity": "observed information against the exact one",
                "dpjax": best["observed information"],
                "seed": info,
                "tol": 0.03 * info,
            },
        ]
    )
    return Report(
        title="IS-MCEM, Poisson example (Gong §5.1)",
        comparison=comparison,
        tables={"Runs": pd.DataFrame(runs)},
        settings={"stages": stages, "tolerances": (1e-3, 1e-4, 1e-5), "s_dp": S_DP, "epsilon": EPS},
        notes=(
            f"s ~ Pois(θ), Laplace noise with ε = {EPS}, s_dp = {S_DP}; stages N = "
            f"{', '.join(f'{n:,}' for n in stages)} particles from θ⁽¹⁾ = 1. The naive answer (s_dp taken "
            "as exact) is θ̂ = 37.4 with information 2.674e-2. "
            f"Exact values by summation over the count: θ̂ = {mle:.3f}, information {info:.4e}. "
            'The rows "against the exact" put the numerical answer in the seed column.'
        ),
    )
