"""Why n mixes slowly on ATUS at ε_n = 0.01: the ridge through a chain's state with the record noise held.

A ridge move (:mod:`dpjax.infer.joint_size_moves`) changes n by k and solves for α so that the
release statistics S of the records g(α, u₁..u_{n+k}) stay exactly where they are, the noise u held.
This script takes the state of a warmed-up ReversibleJumpKernel chain (the release of
``benchmarks/atus_ridge.py``: ε_s = 10, ε_n = 0.01, R = 3 ridge moves) and walks that curve over a grid of k,
splitting the change of the log target (volume factor included) into its terms: the prior of α with
the log-Jacobian of log α, Σ log q_α(u) over every slot (the Wilson–Hilferty noise law of Dirichlet
records is not quite α-free), log η of n_dp (log η of s stays put by construction); with the plain
Wilson–Hilferty map (m = 0 shape-raising steps) and the default one, from the same state. The spread of n
along the curve at fixed u is what one iteration's ridge moves can reach; the record sweep must
renew u before n moves further. Needs 64-bit floats:
``JAX_ENABLE_X64=1 python lab/atus_ridge_curve.py`` (~3 min).
"""

import argparse
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from _common import benchmark, table, write_results
from numpyro.infer import MCMC

from dpjax.compositional import dirichlet_mle
from dpjax.infer import ReversibleJumpKernel, noncentred
from dpjax.infer.noncentred import dirichlet_log_density, noise_of, unconstrained_target
from dpjax.reproduce.awan_atus import atus_model

EPS_N = 0.01
ATUS_RIDGE = benchmark("atus_ridge")  # benchmarks/atus_ridge.py: its ε_s and release
EPS_S, release = ATUS_RIDGE.EPS_S, ATUS_RIDGE.release
GRID = list(range(-240, 241, 20))
DEFAULT_STEPS = noncentred.DIRICHLET_SHAPE_STEPS


def curve(kernel, model, args, state, key):
    """The terms of the log target along S(φ*, n + k) = S(φ, n), u held, for k in GRID."""
    theta, n = {"alpha": state.z["alpha"]}, state.z["n"]
    noise = noise_of(key, model, {**theta, "n": n}, state.records, args, {})
    dtypes = {k: v.dtype for k, v in state.records.items()}
    phi, target = unconstrained_target(model, noise, dtypes, kernel._spec.supports, theta, args, {})
    statistic = kernel._ridge_statistic({})
    S = jax.jit(lambda p, m: statistic(target(p, {"n": m}, releases=False)[2], m))
    jac = jax.jit(jax.jacfwd(S))
    log_target = jax.jit(lambda p, m: target(p, {"n": m}, True)[0])
    prior = lambda p: float(jnp.sum(dist.Gamma(1.0, 0.1).log_prob(jnp.exp(p))) + jnp.sum(p))
    log_q = lambda p: float(
        jnp.sum(dirichlet_log_density(dist.Dirichlet(jnp.exp(p), validate_args=False), noise["x"]))
    )
    log_eta_n = lambda m: -abs(float(args[1]) - m) * EPS_N
    goal, base = S(phi, n), (float(log_target(phi, n)), prior(phi), log_q(phi), log_eta_n(int(n)))
    log_det = float(jnp.linalg.slogdet(jac(phi, n))[1])
    rows = []
    for k in GRID:
        p = phi
        for _ in range(60):  # Newton (not the kernel's chord iterations: this only maps the curve)
            step = jnp.linalg.solve(jac(p, n + k), S(p, n + k) - goal)
            p = p - step
            if not bool(jnp.all(jnp.isfinite(p))) or float(jnp.max(jnp.abs(step))) < 1e-12:
                break
        value = float(log_target(p, n + k)) if bool(jnp.all(jnp.isfinite(p))) else -np.inf
        solved = np.isfinite(value) and float(jnp.max(jnp.abs(S(p, n + k) - goal))) < 1e-6
        row = {"k": k, "solved": solved}
        if solved:
            volume = log_det - float(jnp.linalg.slogdet(jac(p, n + k))[1])
            row |= {
                "α*": np.round(np.exp(np.asarray(p)), 2).tolist(),
                "Δ log target": value - base[0] + volume,
                "Δ prior": prior(p) - base[1],
                "Δ Σ log q": log_q(p) - base[2],
                "Δ log η(n_dp)": log_eta_n(int(n) + k) - base[3],
                "volume": volume,
            }
        rows.append(row)
    w = np.array([np.exp(r["Δ log target"]) if r["solved"] else 0.0 for r in rows])
    w /= w.sum()
    ks = np.array(GRID, float)
    sd = float(np.sqrt(w @ (ks - w @ ks) ** 2))
    return int(n), np.asarray(theta["alpha"]).tolist(), rows, sd


def _cell(row, key):
    return f"{row[key]:.2f}" if key in row else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--states", type=int, default=2, help="chains, each giving one state")
    args = parser.parse_args()
    if not jax.config.jax_enable_x64:
        raise SystemExit("run with JAX_ENABLE_X64=1")
    n0, s, n_dp = release(EPS_N)
    capacity = int(n0 + 12 / EPS_N + 10)
    model = partial(atus_model, capacity)
    kernel = ReversibleJumpKernel(model, noncentred_moves=5, ridge_moves=3)
    model_args = (s, n_dp, EPS_S, EPS_N)
    md, payload = [], []
    for i in range(args.states):
        mcmc = MCMC(kernel, num_warmup=args.warmup, num_samples=1, progress_bar=False)
        mcmc.run(jax.random.key(3 + i), *model_args, init_params={"alpha": dirichlet_mle(s / n_dp).alpha})
        state = mcmc.last_state
        sigma = float(np.exp(state.nc.log_ridge))
        cols = [("k", lambda r: r["k"]), ("α*", lambda r: r.get("α*", "no solution"))]
        cols += [
            (c, partial(_cell, key=c))
            for c in ("Δ log target", "Δ prior", "Δ Σ log q", "Δ log η(n_dp)", "volume")
        ]
        for m in (0, DEFAULT_STEPS):  # the plain Wilson–Hilferty map, and the shape-raised default
            noncentred.DIRICHLET_SHAPE_STEPS = m  # read when the noise map is traced
            n, alpha, rows, sd = curve(kernel, model, model_args, state, jax.random.key(5))
            noncentred.DIRICHLET_SHAPE_STEPS = DEFAULT_STEPS
            payload.append(
                {"n": n, "alpha": alpha, "shape_steps": m, "ridge_sigma": sigma, "sd_k": sd, "rows": rows}
            )
            md += [
                f"## State {i + 1}, m = {m} shape-raising steps: n = {n}, α = {np.round(alpha, 2).tolist()}",
                "",
                f"sd of n along the curve at fixed u (the normalised exp(Δ log target) on the grid): **{sd:.0f}**; "
                f"the chain's adapted ridge step σ = {sigma:.0f} (m = {DEFAULT_STEPS})",
                "",
                *table(rows, cols),
                "",
            ]
            print(f"state {i + 1}, m = {m}: n = {n}, sd of n along the curve {sd:.0f}", flush=True)
    head = (
        f"# ATUS, ε_s = {EPS_S:g}, ε_n = {EPS_N:g}: the ridge at fixed record noise\n\n"
        f"n = {n0}, n_dp = {float(n_dp):.1f}; the oracle's posterior sd of n is 99 (`benchmarks/results/atus_ridge.md`). "
        "Each state is the last of a chain after "
        f"{args.warmup} warmup iterations (ReversibleJumpKernel, J = 5 joint and R = 3 ridge moves). "
        "Δ: change from the state along S(α*, n + k) = S(α, n) with u held; Δ log target includes the "
        "volume factor (the ridge move's acceptance is min(1, exp Δ)); log η(s) is constant along the curve.\n"
    )
    write_results("atus_ridge_curve", {"states": payload, "settings": vars(args)}, head + "\n" + "\n".join(md),
                  "JAX_ENABLE_X64=1 python lab/atus_ridge_curve.py")  # fmt: skip


if __name__ == "__main__":
    main()
