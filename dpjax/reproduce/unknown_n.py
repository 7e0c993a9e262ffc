"""Awan, Barrientos & Ju, inference when the sample size is private: the linear-regression simulations
(§6.1, Table 1 with the Monte Carlo standard errors of Table 3; Table 2, the MLEs by stochastic EM),
and the parametric-bootstrap baseline with the plug-in size n_dp + r (Appendix C.2, Table 4). The ATUS
application (§6.2) is in :mod:`.awan_atus`."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..infer.stochastic_em import records_at
from ._core import Report, compare, experiment, study_table

N = 1_000
EPS_S = (0.1, 1.0)
EPS_N = (0.001, 0.01, 0.1, 1.0, 10.0, float("inf"))
# capacity of the records plate per ε_n, far above the posterior of n (the seed's flat prior on n ≥ 1
# is improper; ours is uniform on 1..capacity); ε_n = ∞ needs exactly n slots
CAPACITY = {0.001: 3_000, 0.01: 2_000, 0.1: 1_200, 1.0: 1_200, 10.0: 1_200}
# joint (θ, n) moves per iteration per ε_n: where n_dp is this noisy, n drifts along the ridge
# n·E_θ[t] ≈ s that birth/death moves cross slowly (ESS(n) 6–12 per 5 000 draws without the moves,
# 38–330 with them); at ε_n ≥ 0.1 n_dp pins n and the birth/death moves alone give ESS(n) > 400, so
# the moves' O(capacity) passes (1.5–2.0× a cell's time in the full run) would buy nothing
JOINT_MOVES = {0.001: 5, 0.01: 5, 0.1: 0, 1.0: 0, 10.0: 0}
STATS = ("E β0", "Var β0", "E β1", "Var β1", "E β2", "Var β2", "E τ", "Var τ", "E n", "Var n")
_COLUMNS = [f"{s}_{k}" for s in ("beta[0]", "beta[1]", "beta[2]", "tau", "n") for k in ("mean", "var")]

INF = float("inf")
# The seed's Table 1 (posterior mean and variance averaged over 100 replicates) and Table 3 (their
# Monte Carlo standard errors), keyed by (ε_s, ε_n), in the order of STATS.
SEED_TABLE1 = {
    (0.1, 0.001): [-0.716, 6.098, -0.568, 5.559, 0.665, 3.797, 1.052, 0.633, 1116.219, 1005.443],
    (0.1, 0.01): [-0.729, 1.263, -0.507, 1.024, 0.517, 0.925, 1.057, 0.623, 987.717, 762.425],
    (0.1, 0.1): [-0.705, 1.178, -0.540, 1.053, 0.541, 0.992, 1.025, 0.531, 998.707, 145.776],
    (0.1, 1.0): [-0.730, 1.118, -0.550, 0.942, 0.514, 0.884, 1.042, 0.548, 999.874, 1.924],
    (0.1, 10.0): [-0.707, 1.184, -0.457, 0.936, 0.551, 0.992, 1.026, 0.535, 1000.000, 0.005],
    (0.1, INF): [-0.689, 1.117, -0.523, 0.879, 0.490, 0.787, 1.052, 0.544, 1000.000, 0.000],
    (1.0, 0.001): [-0.282, 0.411, -0.921, 0.205, 0.777, 0.253, 1.234, 0.351, 1217.458, 4051.367],
    (1.0, 0.01): [-0.131, 0.287, -0.942, 0.190, 0.880, 0.272, 1.095, 0.291, 1000.015, 258.795],
    (1.0, 0.1): [-0.115, 0.317, -0.952, 0.198, 0.886, 0.273, 1.107, 0.296, 999.109, 66.134],
    (1.0, 1.0): [-0.134, 0.309, -0.946, 0.196, 0.875, 0.265, 1.081, 0.274, 999.871, 1.665],
    (1.0, 10.0): [-0.134, 0.307, -0.946, 0.197, 0.873, 0.273, 1.090, 0.286, 1000.000, 0.005],
    (1.0, INF): [-0.127, 0.304, -0.956, 0.195, 0.867, 0.253, 1.093, 0.293, 1000.000, 0.000],
}
SEED_TABLE3 = {
    (0.1, 0.001): [0.080, 3.497, 0.079, 3.593, 0.120, 1.804, 0.045, 0.042, 101.040, 96.843],
    (0.1, 0.01): [0.040, 0.120, 0.062, 0.109, 0.065, 0.105, 0.043, 0.048, 13.060, 47.688],
    (0.1, 0.1): [0.044, 0.112, 0.057, 0.137, 0.052, 0.150, 0.039, 0.036, 1.351, 9.806],
    (0.1, 1.0): [0.045, 0.095, 0.048, 0.100, 0.053, 0.103, 0.039, 0.042, 0.140, 0.027],
    (0.1, 10.0): [0.044, 0.092, 0.060, 0.102, 0.057, 0.138, 0.040, 0.037, 0.002, 0.002],
    (0.1, INF): [0.041, 0.101, 0.048, 0.094, 0.057, 0.072, 0.039, 0.032, 0.000, 0.000],
    (1.0, 0.001): [0.031, 0.039, 0.027, 0.014, 0.031, 0.015, 0.043, 0.021, 76.632, 372.407],
    (1.0, 0.01): [0.027, 0.013, 0.030, 0.010, 0.032, 0.014, 0.030, 0.017, 1.328, 44.712],
    (1.0, 0.1): [0.026, 0.016, 0.028, 0.011, 0.028, 0.012, 0.030, 0.018, 0.627, 4.963],
    (1.0, 1.0): [0.025, 0.014, 0.029, 0.011, 0.028, 0.013, 0.029, 0.015, 0.129, 0.023],
    (1.0, 10.0): [0.027, 0.014, 0.028, 0.012, 0.031, 0.012, 0.030, 0.016, 0.002, 0.002],
    (1.0, INF): [0.025, 0.015, 0.028, 0.012, 0.030, 0.012, 0.031, 0.017, 0.000, 0.000],
}
# The seed's Table 4 (Appendix C.2; parametric bootstrap, averaged over 100 replicates, no MCSE
# published), keyed by (ε_s, ε_n), in the order of TABLE4_STATS.
TABLE4_STATS = (
    "E β0",
    "Var β0",
    "E β1",
    "Var β1",
    "E β2",
    "Var β2",
    "E τ⁻¹",
    "E max(n_dp, p+1)",
    "E n_dp + r",
)
SEED_TABLE4 = {
    (0.1, 0.001): [-0.176, 1.357, -0.232, 0.773, 0.176, 0.905, 1.539, 4429.898, 15316.610],
    (0.1, 0.01): [-0.282, 0.715, -0.259, 0.977, 0.242, 1.004, 1.539, 1046.249, 9129.091],
    (0.1, 0.1): [-0.303, 1.682, -0.275, 1.443, 0.247, 1.486, 1.481, 982.472, 9037.576],
    (0.1, 1.0): [-0.305, 2.322, -0.280, 1.614, 0.248, 1.991, 1.456, 998.247, 9041.638],
    (0.1, 10.0): [-0.305, 2.452, -0.280, 1.642, 0.248, 2.001, 1.455, 999.825, 9042.245],
    (0.1, INF): [-0.305, 2.468, -0.280, 1.646, 0.248, 2.003, 1.455, 1000.000, 9042.319],
    (1.0, 0.001): [-0.154, 16.238, -0.609, 1.644, 0.508, 1.871, 1.435, 4429.898, 10052.274],
    (1.0, 0.01): [-0.306, 12.353, -0.801, 2.177, 0.691, 2.015, 1.470, 1046.249, 1744.212],
    (1.0, 0.1): [-0.251, 2.485, -0.921, 1.246, 0.825, 1.442, 0.985, 982.472, 1152.750],
    (1.0, 1.0): [-0.110, 1.216, -0.960, 0.499, 0.870, 0.619, 0.977, 998.247, 1158.295],
    (1.0, 10.0): [-0.107, 1.186, -0.960, 0.487, 0.871, 0.604, 0.976, 999.825, 1159.423],
    (1.0, INF): [-0.107, 1.183, -0.960, 0.485, 0.871, 0.603, 0.976, 1000.000, 1159.551],
}


def eps_label(v: float) -> str:
    """An ε as the reports print it: ``"∞"`` for infinity, else ``f"{v:g}"``."""
    return "∞" if np.isinf(v) else f"{v:g}"


#: the covariates' mean in the seed's code (all three §6.1 scripts); its text says (−1, 1)
CODE_MU = (1.0, -1.0)


def confidential_regression_data(n: int, seed: int = 2025, mu=None):
    """One dataset of the seed's §6.1 (xᵢ ~ N(μ, Φ⁻¹), yᵢ ~ N((1, xᵢ)β, 1/τ) with β = (0, −1, 1), τ = 1,
    μ = (−1, 1) as the text says or ``mu`` (:data:`CODE_MU` is the code's), Φ = I) and its confidential
    statistic T (the 9 released entries, clamped to [−5, 5] and normalised; n is not among them). Drawn
    directly: the model's Predictive would compile the priors. The same ``seed`` draws the same noise
    for either μ."""
    import dpjax.models as m

    truth = {k: jnp.asarray(v, jnp.float32) for k, v in m.SEED_UNKNOWN_N_TRUTH.items()}
    if mu is not None:
        truth["mu"] = jnp.asarray(mu, jnp.float32)

    @jax.jit  # one compilation, not one per operation
    def draw(key):
        k_x, k_y = jax.random.split(key)
        chol = jnp.linalg.cholesky(jnp.linalg.inv(truth["Phi"]))
        x = truth["mu"] + jax.random.normal(k_x, (n, 2)) @ chol.T
        beta = truth["beta"]
        y = beta[0] + x @ beta[1:] + jax.random.normal(k_y, (n,)) / jnp.sqrt(truth["tau"])
        return x, y, jax.vmap(m.unknown_n_regression_statistic())({"x": x, "y": y}).sum(0)

    return draw(jax.random.key(seed))


def seed_code_regression(capacity, s_dp=None, n_dp=None, *, eps_s, eps_n, n_exact):
    """THE SEED CODE'S VARIANT of :func:`dpjax.models.unknown_n_regression`, for the reproduction only:
    the same priors and records, but the release density of the seed's R code, whose index
    ``diag(T3)[2:length(T2)]`` (R's ``2:1``) drops the Σx̃₂² entry of the release and scores the state's n
    against the *exact* n with the release's Laplace scale Δ/ε_s — as if the exact n were released with
    the summary. Never an analysis of a real release: it reads the confidential n."""
    import numpyro
    import numpyro.distributions as dist

    import dpjax.models as m
    from dpjax import LaplaceMechanism, privatized, records_plate

    tau = numpyro.sample("tau", dist.Gamma(1.0, 1.0))  # the seed's a = b = 2: Gamma(a/2, b/2)
    beta = numpyro.sample("beta", dist.MultivariateNormal(jnp.zeros(3), precision_matrix=tau * jnp.eye(3)))
    phi = numpyro.sample("Phi", dist.Wishart(2.0, scale_matrix=jnp.eye(2)))
    mu = numpyro.sample("mu", dist.MultivariateNormal(jnp.zeros(2), covariance_matrix=jnp.eye(2)))
    n = numpyro.sample("n", dist.DiscreteUniform(1, capacity))
    plate = records_plate("records", n, capacity)
    with plate:
        x = numpyro.sample("x", dist.MultivariateNormal(mu, precision_matrix=phi))
        y = numpyro.sample("y", dist.Normal(beta[0] + x @ beta[1:], 1.0 / jnp.sqrt(tau)))
    records, statistic = {"x": x, "y": y}, m.unknown_n_regression_statistic()
    laplace = LaplaceMechanism(eps_s, m.unknown_n_regression_sensitivity(2))
    kept = None if s_dp is None else s_dp[:8]
    privatized("summary", laplace, lambda r: statistic(r)[:8], records, plate=plate, obs=kept)
    n_obs = jnp.asarray(float(n_exact))
    privatized("n_exact", laplace, lambda r: jnp.ones(()), records, plate=plate, obs=n_obs)
    if eps_n is not None:
        privatized(
            "n_dp", LaplaceMechanism(eps_n, 1.0), lambda r: jnp.ones(()), records, plate=plate, obs=n_dp
        )


# ------------------------------------------------------------------------------ Table 1 (RJMCMC)
def regression_cells(
    n,
    T,
    capacity,
    num_warmup,
    num_samples,
    stochastic_em=False,
    num_chains=1,
    noncentred_moves="auto",
    ridge_moves=0,
    likelihood="paper",
    fixed_phi=False,
    ridge_surrogate=True,
    surrogate_steps=0,
    size_jumps=None,
    surrogate_ridge_steps=1,
):
    """``cell_fn(key, eps_s, eps_n)``: a new release (s, n_dp) of the fixed dataset and ``num_chains``
    chains of β, τ and n; capacity ``None``: n public (ε_n = ∞), DataAugmentationKernel on the model
    with n conditioned; else ReversibleJumpKernel with ``noncentred_moves`` joint (θ, n) moves.
    ``likelihood="seed-code"``: :func:`seed_code_regression` instead of the paper's model;
    ``fixed_phi``: the M-step holds Φ at its data-generating value (the seed code's MCEM).
    ``ridge_surrogate``: the ridge moves (if any) solve with the model's unclamped statistics
    (:func:`~dpjax.models.unknown_n_regression_ridge_surrogate`), else with the exact ones;
    ``surrogate_steps``, ``surrogate_ridge_steps``: ReversibleJumpKernel's (with the surrogate only);
    ``size_jumps``: its (default: the kernel's; 0: births and deaths of one record only, the sampler
    of 840f5ad).
    ``stochastic_em``: θ set to the closed-form M-step at every iteration (the chain of stochastic EM),
    not drawn from its conditional, starting from the data-generating θ and records drawn there."""
    from numpyro import handlers

    import dpjax.models as m
    from dpjax.infer import DataAugmentationKernel, ReversibleJumpKernel, m_step_update
    from dpjax.infer.size_step import SIZE_JUMPS
    from dpjax.studies import mcmc_cell

    def theta_update(size_site, num_records=None):
        if stochastic_em:
            return m_step_update(_fixed_phi_m_step if fixed_phi else _capped_m_step, size_site)
        return m.unknown_n_regression_update(num_records)

    delta = m.unknown_n_regression_sensitivity(2)

    def args_fn(key, eps_s, eps_n):
        k_s, k_n = jax.random.split(key)
        s = T + jax.random.laplace(k_s, T.shape) * delta / eps_s
        n_dp = n + jax.random.laplace(k_n) / eps_n  # 1/∞ = 0: n itself
        return (s, n_dp, eps_s, eps_n)

    if capacity is None:

        def model(s_dp, n_dp, eps_s, eps_n):
            with handlers.condition(data={"n": jnp.array(n)}):
                if likelihood == "seed-code":
                    seed_code_regression(n, s_dp, eps_s=eps_s, eps_n=None, n_exact=n)
                else:
                    m.unknown_n_regression(n, s_dp, eps_s=eps_s, eps_n=None)

        kernel = DataAugmentationKernel(model, theta_update=theta_update(None, n), noncentred_moves=0)
        size = lambda state: jnp.asarray(float(n))
    else:

        def model(s_dp, n_dp, eps_s, eps_n):
            if likelihood == "seed-code":
                seed_code_regression(capacity, s_dp, n_dp, eps_s=eps_s, eps_n=eps_n, n_exact=n)
            else:
                m.unknown_n_regression(capacity, s_dp, n_dp, eps_s=eps_s, eps_n=eps_n)

        # stochastic EM: θ is the M-step's, which joint (θ, n) moves would overwrite
        moves = 0 if stochastic_em else noncentred_moves
        surrogate = ridge_moves and ridge_surrogate and not stochastic_em and likelihood == "paper"
        kernel = ReversibleJumpKernel(
            model,
            theta_update=theta_update("n"),
            size_moves=100,
            noncentred_moves=moves,
            ridge_moves=0 if stochastic_em else ridge_moves,
            ridge_surrogate=m.unknown_n_regression_ridge_surrogate() if surrogate else None,
            surrogate_steps=surrogate_steps if surrogate else 0,
            surrogate_ridge_steps=surrogate_ridge_steps if surrogate and surrogate_steps else 1,
            size_jumps=SIZE_JUMPS if size_jumps is None else size_jumps,
        )
        size = lambda state: state.z["n"].astype(state.z["tau"].dtype)

    collect = lambda state: {
        "beta": state.z["beta"],
        "tau": state.z["tau"],
        "n": size(state),
        "near_capacity": state.near_capacity.astype(state.z["tau"].dtype),  # n within 1 % of it
    }
    init = None
    if stochastic_em:
        init = {k: jnp.asarray(v, jnp.float32) for k, v in m.SEED_UNKNOWN_N_TRUTH.items()}
        release = (T, float(n), 1.0, 1.0)
        init.update(records_at(model, init, ("x", "y"), jax.random.key(0), release))
    return mcmc_cell(
        kernel,
        args_fn,
        num_warmup=num_warmup,
        num_samples=num_samples,
        num_chains=num_chains,
        collect=collect,
        init_params=init,
    )


def _regression_study(
    T, eps_s, eps_n, num_warmup, num_samples, replicates, seed, summaries, progress, stochastic_em=False,
    likelihood="paper", fixed_phi=False,
):  # fmt: skip
    """``run_study`` of :func:`regression_cells` over ε_s × ε_n, one compilation per capacity and
    number of joint moves (ε traced); the tidy table with each row's capacity."""
    from dpjax.studies import run_study

    groups: dict = {}
    for en in eps_n:
        key = (None, 0) if np.isinf(en) else (CAPACITY[en], JOINT_MOVES[en])
        groups.setdefault(key, []).append(en)
    frames = []
    for (capacity, moves), members in groups.items():
        cell = regression_cells(
            N,
            T,
            capacity,
            num_warmup,
            num_samples,
            stochastic_em,
            noncentred_moves=moves,
            likelihood=likelihood,
            fixed_phi=fixed_phi,
        )
        df = run_study(
            cell,
            {"eps_s": list(eps_s), "eps_n": members},
            replicates=replicates,
            rng_key=jax.random.key(seed),
            summaries=summaries,
            progress_bar=progress,
            out=study_table(
                f"{'stochastic-em' if stochastic_em else 'rjmcmc'}-{capacity}-{moves}-{likelihood}"
                f"{'-fixed-phi' if fixed_phi else ''}"
            ),
        )
        frames.append(df.assign(capacity=N if capacity is None else capacity))
    return pd.concat(frames, ignore_index=True)


@experiment(
    "awan-table1",
    source="Awan, Barrientos & Ju, §6.1, Table 1 and Table 3 (Table C1)",
    title="Linear regression with a private sample size: posterior means and variances by RJMCMC",
    full_cost="~1 h on one core (12 cells × 100 replicates × 10 000 iterations, n = 1 000)",
)
def awan_table1(quick: bool, progress: bool) -> Report:
    """Per replicate a new release of one dataset (n = 1 000) and a new chain; per cell the mean over
    replicates of the posterior mean and variance, with MCSE = sd over replicates / √R (as the seed's
    Table 3)."""
    return _table1(quick, progress)


@experiment(
    "awan-table1-code-mu",
    source="Awan, Barrientos & Ju, §6.1, Table 1, with the covariates' mean of the seed's code",
    title="Table 1 with μ = (1, −1), the sign of the seed's code (its text says (−1, 1))",
    full_cost="~1 h on one core (as awan-table1)",
)
def awan_table1_code_mu(quick: bool, progress: bool) -> Report:
    """:func:`awan_table1` on a dataset drawn with the seed code's μ = (1, −1) (same noise)."""
    return _table1(quick, progress, mu=CODE_MU)


@experiment(
    "awan-table1-seed-code",
    source="Awan, Barrientos & Ju, §6.1, Table 1, as the seed's code computes it",
    title="Table 1 as the seed's code computes it: μ = (1, −1) and its release density (Σx̃₂² dropped, "
    "n scored against the exact n) — the seed code's variant, not an analysis",
    full_cost="~17 min on one core (25 replicates per cell)",
)
def awan_table1_seed_code(quick: bool, progress: bool) -> Report:
    """:func:`awan_table1` with μ = (1, −1) and :func:`seed_code_regression` (25 replicates per cell)."""
    return _table1(quick, progress, mu=CODE_MU, likelihood="seed-code", replicates=25)


def _variant(mu, likelihood) -> str:
    if likelihood == "seed-code":
        return " — the seed code's variant"
    return "" if mu is None else " — μ = (1, −1), the seed code's sign"


def _variant_note(mu, likelihood) -> str:
    """What a variant changes, said first in its report."""
    note = ""
    if mu is not None:
        note += (
            f"**Variant: μ = {tuple(mu)}**, the covariates' mean in all three of the seed's §6.1 scripts "
            "(its text says (−1, 1), which `awan-table1` follows); the same seed draws the same noise, "
            "so only the sign of x differs. "
        )
    if likelihood == "seed-code":
        note += (
            "**The seed code's release density, not an analysis**: its index `diag(T3)[2:length(T2)]` "
            "(R's `2:1`) drops the Σx̃₂² entry and scores the state's n against the *exact* n with scale "
            "Δ/ε_s, as if the exact n were released with the summary (`seed_code_regression`); fewer "
            "replicates per cell. "
        )
    return note + ("\n\n" if note else "")


def _table1(quick, progress, mu=None, likelihood="paper", replicates=100):
    import dpjax.models as m
    from dpjax.studies import posterior_summaries

    if quick:  # one compilation (one capacity), short chains; the seed's n and dataset size
        eps_s, eps_n, replicates, iterations = (1.0,), (1.0, 10.0), 3, 200
    else:
        eps_s, eps_n, iterations = EPS_S, EPS_N, 10_000
    num_warmup = iterations // 2
    _, _, T = confidential_regression_data(N, mu=mu)
    truth = {"beta": np.array(m.SEED_UNKNOWN_N_TRUTH["beta"]), "tau": 1.0, "n": float(N)}
    summaries = posterior_summaries(
        {
            "beta": ("mean", "var", "coverage"),
            "tau": ("mean", "var", "coverage"),
            "n": ("mean", "var", "max", "ess"),
            "near_capacity": ("mean",),
        },
        truth=truth,
        level=0.9,
    )
    df = _regression_study(
        T, eps_s, eps_n, num_warmup, iterations - num_warmup, replicates, 2025, summaries, progress,
        likelihood=likelihood,
    )  # fmt: skip
    rows, cells = [], []
    for (es, en), everyone in df.groupby(["eps_s", "eps_n"], sort=True):
        # a replicate whose chain left the support (float32, records far out) has NaN draws: left out,
        # and counted in the cells table
        g = everyone[everyone[_COLUMNS].notna().all(axis=1)]
        mean = g[_COLUMNS].mean().to_numpy()
        se = (g[_COLUMNS].std(ddof=1) / np.sqrt(len(g))).to_numpy() if len(g) > 1 else np.full(10, np.nan)
        for j, stat in enumerate(STATS):
            exact = np.isinf(en) and stat in ("E n", "Var n")  # n public: no Monte Carlo error
            rows.append(
                {
                    "quantity": f"ε_s={eps_label(es)}, ε_n={eps_label(en)}: {stat}",
                    "dpjax": float(mean[j]),
                    "dpjax_se": None if exact else float(se[j]),
                    "seed": SEED_TABLE1[(es, en)][j],
                    "seed_se": None if exact else SEED_TABLE3[(es, en)][j],
                    "tol": 1e-9 if exact else None,
                }
            )
        cap = int(everyone["capacity"].iloc[0])
        cells.append(
            {
                "ε_s": es,
                "ε_n": eps_label(en),
                "replicates": len(everyone),
                "left the support (left out)": len(everyone) - len(g),
                "capacity": cap,
                "joint moves": 0 if np.isinf(en) else JOINT_MOVES[en],
                "max n drawn": float(g["n_max"].max()),
                # the posterior mass within 1 % of the capacity: mean and largest over the replicates
                "mass near capacity, mean": float(g["near_capacity_mean"].mean()),
                "mass near capacity, largest": float(g["near_capacity_mean"].max()),
                "median ESS(n)": float(g["n_ess"].median()) if np.isfinite(en) else None,
                **{
                    f"90 % coverage {k}": float(g[f"{c}_covered"].mean())
                    for k, c in (("β0", "beta[0]"), ("β1", "beta[1]"), ("β2", "beta[2]"), ("τ", "tau"))
                },
                "seconds": float(everyone["seconds"].iloc[0]),
                "compile s": float(everyone["compile_seconds"].iloc[0]),
            }
        )
    comparison = compare(rows)
    return Report(
        title="Unknown n, linear regression (Awan, Barrientos & Ju §6.1, Tables 1 and 3)"
        + _variant(mu, likelihood),
        comparison=comparison,
        tables={
            "Cells (coverage of the data-generating values; capacity of the records plate)": pd.DataFrame(
                cells
            )
        },
        figures={"": _table1_figure(comparison, eps_s, eps_n)},
        settings={
            "n": N,
            "mu": list(mu or m.SEED_UNKNOWN_N_TRUTH["mu"]),
            "likelihood": likelihood,
            "eps_s": list(eps_s),
            "eps_n": [eps_label(e) for e in eps_n],
            "replicates": replicates,
            "iterations": iterations,
            "burn_in": num_warmup,
            "size_moves": 100,
            "joint_moves": {eps_label(k): v for k, v in JOINT_MOVES.items()},
            "capacity": {eps_label(k): v for k, v in CAPACITY.items()},
        },
        notes=_variant_note(mu, likelihood)
        + (
            f"n = {N} records from the seed's data-generating values, one dataset; per replicate a "
            "new release "
            "s = T + Laplace(9/ε_s) (9 clamped-normalised entries, n not among them), n_dp = n + "
            "Laplace(1/ε_n), "
            f"and a new chain of {iterations} iterations ({num_warmup} burn-in). Unknown n: "
            "ReversibleJumpKernel "
            "with the exact θ-step, 100 birth/death moves per iteration (the seed's code makes "
            "one) and, at ε_n ≤ 0.01, 5 joint (θ, n) moves with the record noise held; ε_n = ∞: "
            "n public, DataAugmentationKernel. Prior of n: uniform on 1..capacity (the seed's flat prior is "
            "improper); the cells table gives the largest n drawn. Our figure: mean over replicates "
            "± sd/√R, over the replicates whose float32 chain kept to the model's support (the cells "
            "table counts the others, left out: their draws are NaN); the "
            "seed's: Table 1 ± Table 3. Our dataset is another draw from the same model than the seed's, so "
            "differences of the order of the data's own sampling error (≈ 0.03 for β, the OLS s.e.) are "
            "expected on top of the MCSEs. Coverage is of the data-generating values by the central 90 % "
            "posterior interval, over releases of one dataset (no seed figure)."
        ),
    )


# ------------------------------------------------------------------------------ Table 2 (stochastic EM)
# The seed's Table 2 (ε_s = 1): mean and (sd) over 100 replicates of the MLEs of β0, β1, β2 and τ.
SEED_TABLE2 = {
    0.001: [(-0.400, 0.751), (-0.977, 0.579), (0.770, 0.702), (1.17, 0.710)],
    0.01: [(-0.192, 0.433), (-0.914, 0.408), (0.847, 0.390), (1.01, 0.426)],
    0.1: [(-0.111, 0.374), (-0.968, 0.345), (0.871, 0.365), (1.14, 0.562)],
    1.0: [(-0.115, 0.369), (-0.952, 0.338), (0.883, 0.387), (1.17, 0.664)],
    10.0: [(-0.131, 0.435), (-0.941, 0.352), (0.875, 0.465), (1.15, 0.571)],
    INF: [(-0.167, 0.434), (-0.955, 0.385), (0.828, 0.483), (1.14, 0.554)],
}
TABLE2_PARAMS = (("β0", "beta[0]"), ("β1", "beta[1]"), ("β2", "beta[2]"), ("τ", "tau"))
# Table 2's M-step caps τ (the residual precision): the release's likelihood is nearly flat in τ up to
# infinity (see awan_table2), and a stochastic-EM chain that follows it there overflows to NaN.
TAU_CAP = 1e4
# A chain whose β̂ has an entry beyond this ran off along the collinear direction (0, 1, 1) (see awan_table2),
# 25 times the largest sd of the seed's β̂: counted in the cells table and left out of the mean rows, whose
# z-test it would otherwise pass by inflating their standard error (β̂₀ −154 ± 152 at ε_n = 1, dc090db).
RUNAWAY_BETA = 20.0


def _capped_m_step(records, weights):
    import dpjax.models as m

    fit = m.unknown_n_regression_m_step(records, weights)
    return {**fit, "tau": jnp.minimum(fit["tau"], TAU_CAP)}


def _fixed_phi_m_step(records, weights):
    """The seed code's M-step: Φ held at its data-generating value (``state$params$phi <- diag(p)``)."""
    fit = _capped_m_step(records, weights)
    return {**fit, "Phi": jnp.eye(fit["Phi"].shape[-1], dtype=fit["Phi"].dtype)}


@experiment(
    "awan-table2",
    source="Awan, Barrientos & Ju, §6.1, Table 2",
    title="Linear regression with a private sample size: MLEs of β and τ by stochastic EM",
    full_cost="~25 min on one core (6 ε_n × 100 replicates × 10 000 iterations, n = 1 000)",
)
def awan_table2(quick: bool, progress: bool) -> Report:
    """Per replicate a new release (s, n_dp) of the Table 1 dataset (ε_s = 1) and one stochastic-EM
    chain (`dpjax.infer.stochastic_em`'s chain through the study runner): the reversible-jump sweep
    (ε_n = ∞: the DA sweep) with θ set to the closed-form M-step every iteration, from the
    data-generating θ; θ̂ the mean of the iterates after a 30 % burn-in; per ε_n the mean and sd of
    θ̂ over replicates."""
    return _table2(quick, progress)


@experiment(
    "awan-table2-seed-code",
    source="Awan, Barrientos & Ju, §6.1, Table 2, the estimand of the seed's code",
    title="Table 2 as the seed's code estimates it: μ = (1, −1) and Φ held at I in the M-step",
    full_cost="~7 min on one core (25 replicates per ε_n)",
)
def awan_table2_seed_code(quick: bool, progress: bool) -> Report:
    """:func:`awan_table2` with the seed code's μ = (1, −1) and Φ fixed at its true value, I (the
    seed's "MCEM" never estimates Φ), 25 replicates per ε_n."""
    return _table2(quick, progress, mu=CODE_MU, fixed_phi=True, replicates=25)


def _table2_rows(eps_n, g):
    """The mean and sd rows of θ̂ at one ε_n from its replicates ``g`` (columns ``{param}_mean``), and the
    masks of the replicates that overflowed to NaN and that ran off (|β̂ⱼ| > RUNAWAY_BETA): both left out."""
    finite = g[[f"{c}_mean" for _, c in TABLE2_PARAMS]].notna().all(axis=1)
    runaway = finite & (g[[f"{c}_mean" for _, c in TABLE2_PARAMS[:3]]].abs() > RUNAWAY_BETA).any(axis=1)
    rows = []
    for j, (name, col) in enumerate(TABLE2_PARAMS):
        seed_mean, seed_sd = SEED_TABLE2[eps_n][j]
        values = g.loc[finite & ~runaway, f"{col}_mean"]
        sd = float(values.std(ddof=1)) if len(values) > 1 else float("nan")
        label = eps_label(eps_n)
        rows.append(
            {
                "quantity": f"ε_n={label}: mean θ̂ {name}",
                "dpjax": float(values.mean()),
                "dpjax_se": sd / np.sqrt(len(values)) if len(values) > 1 else None,
                "seed": seed_mean,
                "seed_se": seed_sd / np.sqrt(100),
            }
        )
        rows.append({"quantity": f"ε_n={label}: sd of θ̂ {name}", "dpjax": sd, "seed": seed_sd})
    return rows, finite, runaway


def _table2(quick, progress, mu=None, fixed_phi=False, replicates=100):
    from dpjax.studies import posterior_summaries

    if quick:  # one compilation (one capacity), two replicates, 3 000 iterations
        eps_n, replicates, iterations = (1.0,), 2, 3_000
    else:  # the seed's 100 replicates: a batch of 50 chains per device costs little more than one of 10
        eps_n, iterations = EPS_N, 10_000
    num_warmup = round(0.3 * iterations)
    _, _, T = confidential_regression_data(N, mu=mu)
    summaries = posterior_summaries(
        {"beta": ("mean",), "tau": ("mean", "quantiles", "max"), "n": ("mean",), "near_capacity": ("mean",)},
        quantiles=(0.5,),
    )
    df = _regression_study(
        T, (1.0,), eps_n, num_warmup, iterations - num_warmup, replicates, 2026, summaries, progress,
        stochastic_em=True, fixed_phi=fixed_phi,
    )  # fmt: skip
    rows, cells = [], []
    for en, g in df.groupby("eps_n", sort=True):
        cell_rows, finite, runaway = _table2_rows(en, g)
        rows += cell_rows
        cells.append(
            {
                "ε_n": eps_label(en),
                "replicates": len(g),
                "chains that overflowed (NaN)": int((~finite).sum()),
                f"chains that ran off (|β̂ⱼ| > {RUNAWAY_BETA:g})": int(runaway.sum()),
                "mean E n": float(g["n_mean"].mean()),
                "median of the median τ iterate": float(g["tau_q0.5"].median()),
                "share of chains with τ > 10": float((g["tau_max"] > 10).mean()),
                f"share reaching the cap {TAU_CAP:g}": float((g["tau_max"] >= TAU_CAP).mean()),
                "seconds": float(g["seconds"].iloc[0]),
                "compile s": float(g["compile_seconds"].iloc[0]),
            }
        )
    return Report(
        title="Unknown n, linear regression (Awan, Barrientos & Ju §6.1, Table 2): MLEs by stochastic EM"
        + (" — the seed code's estimand (Φ = I)" if fixed_phi else ""),
        comparison=compare(rows),
        tables={"Cells: where τ's iterates went (the data-generating τ is 1)": pd.DataFrame(cells)},
        settings={
            "n": N,
            "eps_s": 1.0,
            "eps_n": [eps_label(e) for e in eps_n],
            "replicates": replicates,
            "iterations": iterations,
            "burn_in": num_warmup,
            "size_moves": 100,
            "mu": list(mu or (-1.0, 1.0)),
            "fixed_phi": fixed_phi,
            "tau_cap": TAU_CAP,
            "runaway_beta": RUNAWAY_BETA,
            "capacity": {eps_label(k): v for k, v in CAPACITY.items()},
        },
        notes=_variant_note(mu, "paper")
        + (
            "**Φ held at I**, its data-generating value, in every M-step, as the seed's code does "
            "(`state$params$phi <- diag(p)`; the seed's MCEM also starts with a Bayesian burn-in of a "
            "third of its rounds, where ours starts at the data-generating θ). Fewer replicates per ε_n.\n\n"
            if fixed_phi
            else ""
        )
        + (
            f"The dataset of awan-table1 (n = {N}); per replicate a new release s = T + Laplace(9/ε_s), "
            f"ε_s = 1, n_dp = n + Laplace(1/ε_n), and one chain of {iterations:,} iterations, the first "
            f'{num_warmup:,} (30 %) discarded, as the seed\'s "MCEM chains". Each iteration is one record '
            "sweep given the release at θ⁽ᵗ⁾ (with 100 birth/death moves when n is unknown; ε_n = ∞: n "
            "public, the DA sweep) and θ⁽ᵗ⁺¹⁾ = the closed-form M-step on the imputed records "
            "(`dpjax.models.unknown_n_regression_m_step`, the non-private MLEs, as the seed); θ̂ = the "
            "mean of the kept iterates (stochastic EM, `dpjax.infer.stochastic_em`). The chains start at "
            "the data-generating θ with records simulated there (the seed does not say where it starts). "
            "Why not `mcem` with large E-steps: the release holds under 1 % of the records' information "
            "about β, so EM closes under 1 % of its distance to the MLE per iteration.\n\n"
            "**Finding: this release does not pin down the MLE.** Within the Laplace(9) noise, the "
            "clamped sums of ỹ², x̃ỹ and x̃x̃ barely change as the residual precision τ grows (β "
            "adjusting), nor as x₁ and x₂ become collinear. Measured (`python "
            "lab/unknown_n_likelihood.py`, n public): along two chains from the data-generating "
            "θ, the Monte Carlo log p(s | θ) (20 000 simulations per θ, ESS of the weights ≥ 2 000) "
            "stays within 5 of its value there (−9.1 and −8.7) while τ climbs from 1 to 10⁵ in one chain "
            "and 10⁷ in the other, and is highest (−4.3 to −5.4) away from it; in the first chain "
            "corr(x₁, x₂) then went to −0.9999, after which β ran off along (0, 1, 1), the direction that "
            "collinear predictors cannot see (β = (−0.3, −162, −134)), and the chain overflowed. "
            "Stochastic-EM iterates behave like draws from a flat-prior posterior, so they drift along "
            f"these directions (τ capped at {TAU_CAP:g} in the M-step, past which the chains overflow to "
            "NaN; chains that still overflowed, and chains whose β̂ ran off along (0, 1, 1) beyond "
            f"|β̂ⱼ| = {RUNAWAY_BETA:g}, are counted in the cells table and left out of the rows, since one "
            "such chain inflates a mean row's standard error until its z-test cannot fail): the rows "
            "below say where the chains went in 10 000 iterations, not a converged "
            "MLE, and we doubt that the seed's (τ̂ ≈ 1.15) are one. The Bayesian posterior of Table 1 "
            "is proper: its priors β | τ ~ N(0, I/τ) and Φ ~ Wishart(2, I) penalise both directions. "
            "Mean rows: a z-test with the seed's sd/√100 beside ours; the sd rows carry no verdict. "
            "Full run: 100 replicates per ε_n, as the seed."
        ),
    )


def _table1_figure(comparison, eps_s, eps_n):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(15, 3.4))
    xs = np.arange(len(eps_n))
    for es, marker in zip(eps_s, "os"):
        for ax, stat in zip(axes, ("E β0", "E β1", "E β2", "Var n")):
            sel = [
                comparison[comparison["quantity"] == f"ε_s={eps_label(es)}, ε_n={eps_label(en)}: {stat}"]
                for en in eps_n
            ]
            for col, se, dx, ls, label in (
                ("dpjax", "dpjax_se", 0, "-", "dpjax"),
                ("seed", "seed_se", 0.12, ":", "seed"),
            ):
                y = [float(r[col].iloc[0]) for r in sel]
                e = [2 * float(np.nan_to_num(r[se].astype(float).iloc[0])) for r in sel]
                ax.errorbar(
                    xs + dx,
                    y,
                    yerr=e,
                    marker=marker,
                    ls=ls,
                    mfc="none" if dx else None,
                    label=f"{label} ε_s={eps_label(es)}",
                )
            ax.set_title(stat)
            ax.set_xticks(xs, [eps_label(e) for e in eps_n])
            ax.set_xlabel("ε_n")
            if stat == "Var n":
                ax.set_yscale("symlog", linthresh=1.0)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------- Table 4 (parametric bootstrap)


def _affine(p: int, lower: float, upper: float):
    """K with A = Ã K: the columns (1, x̃, ỹ) normalised to [−1, 1] back to (1, x, y)."""
    half, mid = (upper - lower) / 2, (upper + lower) / 2
    K = jnp.eye(p + 2) * jnp.concatenate([jnp.ones(1), jnp.full(p + 1, half)])
    return K.at[0, 1:].set(mid)


def _noise(key, size, eps_s, eps_n, delta):
    """Symmetric Laplace noise on the normalised AᵀA: scale 1/ε_n at (1, 1), Δ/ε_s elsewhere."""
    scale = jnp.full((size, size), delta / eps_s).at[0, 0].set(1.0 / eps_n)
    e = jnp.triu(jax.random.laplace(key, (size, size)) * scale)
    return e + jnp.triu(e, 1).T


def _plug_in(M, p):
    """The regularised DP estimates from a noisy AᵀA on the data's scale: r = max(0, −2 λ_min),
    n_dp + r (its (1, 1) entry after adding rI), β̂ = (XᵀX)⁻¹Xᵀy and τ̂⁻¹ = (yᵀy − yᵀXβ̂)/(n_dp + r − p)."""
    r = jnp.maximum(0.0, -2.0 * jnp.linalg.eigvalsh(M)[0])
    M = M + r * jnp.eye(M.shape[0])
    q = p + 1
    beta = jnp.linalg.solve(M[:q, :q], M[:q, q])
    n_hat = M[0, 0]
    tau_inv = (M[q, q] - M[q, :q] @ beta) / (n_hat - p)
    return M, r, n_hat, beta, tau_inv


def dp_parametric_bootstrap(
    key, gram, eps_s, eps_n, *, num_bootstrap: int, sensitivity: float, bounds=(-5.0, 5.0)
):
    """The seed's Table 4 baseline: parametric bootstrap (Ferrando, Wang & Sheldon 2022, as adapted by
    Barrientos et al. 2024) for linear regression from a DP release of AᵀA, A = (1, x̃, ỹ) clamped and
    normalised to [−1, 1], with the plug-in sample size n_dp + r.

    ``gram`` is the confidential normalised AᵀA ((p+2) × (p+2); its (1, 1) entry is n). The release adds
    symmetric Laplace noise, scale 1/ε_n at (1, 1) (so n_dp = n + E₁₁; ε_n = ∞ for a public n) and
    ``sensitivity``/ε_s elsewhere; the analyst maps it back to the data's scale, adds rI with
    r = max(0, −2λ_min) and reads off n_dp + r, β̂ and τ̂⁻¹ (see the seed's C.2). The bootstrap holds the
    DP estimate of XᵀX fixed (Ferrando et al.'s regression variant): each of ``num_bootstrap`` draws
    simulates Xᵀy* ~ N(XᵀX β̂, τ̂⁻¹ XᵀX) and y*ᵀy* from the normal model with n_dp + r records, releases
    them again with fresh noise, and re-estimates β̂*. Returns ``{"beta_hat", "tau_inv", "n_plus_r",
    "r", "n_max", "boot_mean", "boot_var"}`` (n_max = max(n_dp, p + 1)). Clamping is ignored in the
    bootstrap (its sufficient statistics come from the unclamped normal model).

    Without noise it is the classical parametric bootstrap of OLS: its variance is τ̂⁻¹ (XᵀX)⁻¹.

    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(500, 2)) * 0.2
    >>> y = 0.1 + x @ np.array([-0.5, 0.5]) + 0.1 * rng.normal(size=500)
    >>> A = np.c_[np.ones(500), x, y]
    >>> out = dp_parametric_bootstrap(jax.random.key(0), jnp.asarray(A.T @ A), 1e9, 1e9,
    ...                               num_bootstrap=4000, sensitivity=9.0, bounds=(-1.0, 1.0))
    >>> classical = float(out["tau_inv"]) * np.diag(np.linalg.inv(A[:, :3].T @ A[:, :3]))
    >>> bool(np.all(np.abs(np.asarray(out["boot_var"]) / classical - 1) < 0.1))
    True
    """
    size = gram.shape[0]
    p, q = size - 2, size - 1
    K = _affine(p, *bounds)
    K_inv = jnp.linalg.inv(K)
    k_release, k_boot = jax.random.split(key)
    noisy = gram + _noise(k_release, size, eps_s, eps_n, sensitivity)
    M, r, n_hat, beta, tau_inv = _plug_in(K.T @ noisy @ K, p)
    n_dp = noisy[0, 0]
    XX = M[:q, :q]
    chol = jnp.linalg.cholesky(XX)
    XX_inv = jnp.linalg.inv(XX)
    tau_inv_pos = jnp.maximum(tau_inv, 0.0)
    dof = jnp.maximum(n_hat - q, 1.0)

    def one(k):
        k_u, k_chi, k_e = jax.random.split(k, 3)
        u = jnp.sqrt(tau_inv_pos) * chol @ jax.random.normal(k_u, (q,), XX.dtype)  # Xᵀε ~ N(0, τ⁻¹XᵀX)
        xy = XX @ beta + u
        # εᵀε = εᵀPε + εᵀ(I − P)ε, the latter τ⁻¹ χ²(n − p − 1) independent of Xᵀε
        yy = (
            beta @ XX @ beta
            + 2 * beta @ u
            + u @ XX_inv @ u
            + tau_inv_pos * 2 * jax.random.gamma(k_chi, dof / 2)
        )
        G = jnp.zeros((size, size), XX.dtype).at[:q, :q].set(XX).at[:q, q].set(xy).at[q, :q].set(xy)
        G = G.at[q, q].set(yy)
        released = K_inv.T @ G @ K_inv + _noise(k_e, size, eps_s, eps_n, sensitivity)
        return _plug_in(K.T @ released @ K, p)[3]

    boot = jax.vmap(one)(jax.random.split(k_boot, num_bootstrap))
    return {
        "beta_hat": beta,
        "tau_inv": tau_inv,
        "n_plus_r": n_hat,
        "r": r,
        "n_max": jnp.maximum(n_dp, p + 1.0),
        "boot_mean": boot.mean(0),
        "boot_var": boot.var(0, ddof=1),
    }


@experiment(
    "awan-table4",
    source="Awan, Barrientos & Ju, Appendix C.2, Table 4",
    title="Linear regression with a private sample size: DP parametric bootstrap with the plug-in n_dp + r",
    full_cost="~1 min (12 cells × 100 replicates × 10 000 bootstrap draws)",
)
def awan_table4(quick: bool, progress: bool) -> Report:
    """The comparison method of the seed's C.2 on the same dataset and release design as Table 1."""
    return _table4(quick, progress)


@experiment(
    "awan-table4-code-mu",
    source="Awan, Barrientos & Ju, Appendix C.2, Table 4, with the covariates' mean of the seed's code",
    title="Table 4 with μ = (1, −1), the sign of the seed's code (its text says (−1, 1))",
    full_cost="~1 min",
)
def awan_table4_code_mu(quick: bool, progress: bool) -> Report:
    """:func:`awan_table4` on the dataset of ``awan-table1-code-mu``."""
    return _table4(quick, progress, mu=CODE_MU)


def _table4(quick, progress, mu=None):
    from dpjax.models import unknown_n_regression_sensitivity
    from dpjax.studies import run_study

    eps_s, eps_n = (EPS_S, EPS_N)
    replicates, num_bootstrap = (10, 500) if quick else (100, 10_000)
    x, y, _ = confidential_regression_data(N, mu=mu)
    xt = (jnp.clip(x, -5.0, 5.0) + 5.0) / 5.0 - 1.0
    yt = (jnp.clip(y, -5.0, 5.0) + 5.0) / 5.0 - 1.0
    A = jnp.concatenate([jnp.ones((N, 1)), xt, yt[:, None]], axis=1)
    gram = A.T @ A
    delta = unknown_n_regression_sensitivity(2)

    def cell(key, eps_s, eps_n):
        return dp_parametric_bootstrap(
            key, gram, eps_s, eps_n, num_bootstrap=num_bootstrap, sensitivity=delta
        )

    df = run_study(
        cell,
        {"eps_s": list(eps_s), "eps_n": list(eps_n)},
        replicates=replicates,
        rng_key=jax.random.key(2025),
        progress_bar=progress,
        out=study_table("bootstrap"),
    )
    cols = [
        "boot_mean[0]", "boot_var[0]", "boot_mean[1]", "boot_var[1]", "boot_mean[2]", "boot_var[2]",
        "tau_inv", "n_max", "n_plus_r",
    ]  # fmt: skip
    rows, extra = [], []
    for (es, en), g in df.groupby(["eps_s", "eps_n"], sort=True):
        for j, stat in enumerate(TABLE4_STATS):
            v = g[cols[j]]
            exact = np.isinf(en) and cols[j] == "n_max"
            rows.append(
                {
                    "quantity": f"ε_s={eps_label(es)}, ε_n={eps_label(en)}: {stat}",
                    "dpjax": float(v.mean()),
                    "dpjax_se": None if exact else float(v.std(ddof=1) / np.sqrt(len(v))),
                    "seed": SEED_TABLE4[(es, en)][j],
                    "tol": 1e-9 if exact else None,
                }
            )
        extra.append(
            {
                "ε_s": es,
                "ε_n": eps_label(en),
                "E r": float(g["r"].mean()),
                "median Var β̂*0": float(g["boot_var[0]"].median()),
                "max Var β̂*0": float(g["boot_var[0]"].max()),
                **{f"E β̂{j} (point)": float(g[f"beta_hat[{j}]"].mean()) for j in range(3)},
            }
        )
    return Report(
        title="Unknown n, DP parametric bootstrap with plug-in n_dp + r (Awan, Barrientos & Ju, Table 4)"
        + _variant(mu, "paper"),
        comparison=compare(rows),
        tables={"Regularisation and point estimates": pd.DataFrame(extra)},
        settings={
            "n": N,
            "replicates": replicates,
            "num_bootstrap": num_bootstrap,
            "sensitivity": delta,
            "mu": list(mu or (-1.0, 1.0)),
        },  # fmt: skip
        notes=_variant_note(mu, "paper")
        + (
            f"The dataset of awan-table1{'-code-mu' if mu else ''} (n = {N}); per replicate a new release of "
            "the normalised AᵀA, "
            "A = (1, x̃, ỹ): symmetric Laplace noise, scale 1/ε_n on the (1, 1) entry (n_dp = n + "
            "E₁₁) and 9/ε_s "
            "elsewhere — the same information as (s, n_dp) of Table 1. Estimates on the data's scale after "
            "adding rI, r = max(0, −2λ_min); the seed writes rI_{p+1}, but only a regularised (p+2)-square "
            "matrix keeps τ̂⁻¹ > 0, which is the stated purpose. E β and Var β: mean and variance of "
            f"{num_bootstrap} bootstrap re-estimates β̂* (the caption's \"computed using 10,000 bootstrap "
            "samples\"); the bootstrap holds the DP XᵀX fixed (Ferrando et al.'s regression variant) and "
            "ignores clamping. The seed does not spell out its bootstrap nor publish MCSEs: the verdicts use "
            'our MCSE only, and the seed\'s exclusion of one replicate with an "extremely inflated" Var β is '
            "not applied (the table shows the median and max of Var β̂*0). The seed's E max(n_dp, p+1) is "
            "the same for both ε_s and is far from n at ε_n = 0.001 (4 430 where E max(n + Laplace(1000), 3) "
            "≈ 1 185); E n_dp + r ≈ 9 042 at ε_s = 0.1 suggests r was taken on a scale other than ours."
        ),
    )
