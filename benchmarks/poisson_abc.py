"""Proposals per second of exact rejection ABC on Gong's Poisson example (§5.1: s ~ Pois(θ),
θ ~ Gamma(α, 1), Laplace release with ε = 0.2, s_dp = 37.4) at α = 2, where proposals dominate: the
vectorised path, the per-key fallback and NumPy running the same simulation; and the draws per second of
the samplers behind the vectorised path against ``jax.random``'s. Table 1 and Figure 1 of
the seed: ``dpjax reproduce gong-abc``. ``exact_mean`` is the exact posterior mean (used by
``poisson_pseudo_marginal.py``).
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from _common import best_time, write_results

from dpjax.infer import exact_abc
from dpjax.models import poisson_count as model
from dpjax.reproduce.gong import poisson_count_posterior

S_DP, EPS = 37.4, 0.2
SPEED_REPEATS = 7


def exact_mean(alpha):
    """The exact posterior mean of θ (summation over the confidential count)."""
    k, w = poisson_count_posterior(alpha)
    return float(w @ (alpha + k) / 2)


def numpy_speed(batch=1_000_000, batches=3, repeats=SPEED_REPEATS):
    """Proposals per second of the same rejection sampler in NumPy (θ ~ Gamma(2, 1), s ~ Pois(θ),
    accept with probability η(s_dp | s) / max η), best of ``repeats``."""
    rng, b, best, accepted = np.random.default_rng(0), 1 / EPS, 0.0, 0
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(batches):
            s = rng.poisson(rng.gamma(2.0, size=batch))
            accepted += int(np.sum(np.log(rng.random(batch)) < -np.abs(S_DP - s) / b))
        best = max(best, batch * batches / (time.perf_counter() - t))
    return best


def sampler_speeds(size=1_000_000, repeats=SPEED_REPEATS):
    """Draws per second of dpjax.infer.samplers against jax.random (compiled, best of ``repeats``)."""
    from dpjax.infer import samplers

    alpha = jnp.array([2.2, 3.3, 4.4])
    rates = samplers.gamma(jax.random.key(9), 2.0, (size,))  # the example's θ ~ Gamma(2, 1)
    cases = {
        "Uniform[0, 1)": (lambda k: samplers.uniform(k, (size,)), lambda k: jax.random.uniform(k, (size,))),
        "N(0, 1)": (lambda k: samplers.normal(k, (size,)), lambda k: jax.random.normal(k, (size,))),
        "Gamma(2)": (lambda k: samplers.gamma(k, 2.0, (size,)), lambda k: jax.random.gamma(k, 2.0, (size,))),
        "Poisson(θ), θ ~ Gamma(2)": (
            lambda k: samplers.poisson(k, rates),
            lambda k: jax.random.poisson(k, rates),
        ),
        "Dirichlet(2.2, 3.3, 4.4), per part": (
            lambda k: samplers.dirichlet(k, alpha, (size // 3,)),
            lambda k: jax.random.dirichlet(k, alpha, (size // 3,)),
        ),
    }
    out = {}
    for name, fns in cases.items():
        out[name] = [size / best_time(jax.jit(fn), jax.random.key(1), repeats=repeats) for fn in fns]
    return out


def main():
    # speed: proposals per second at α = 2 (low acceptance, so proposals dominate), compile apart, for
    # the vectorised path (one key per batch, through a leading plate) and the per-key fallback (one key
    # per proposal); NumPy runs the same simulation. The machine is shared and noisy: the vectorised
    # path and NumPy run in turn, and the ratio is the median of the pairs' ratios
    speeds, pairs = {}, []
    for label, vectorize in [("vectorized", True), ("per_key", False)]:
        run = lambda k, n: exact_abc(
            jax.random.key(k), model, 2.0, jnp.array(S_DP), num_samples=n, batch_size=1_000_000,
            vectorize=vectorize, progress_bar=False,
        )  # fmt: skip
        run(0, 2000)  # compiles: num_samples is part of the compiled program, so warm up with the timed one
        best = 0.0
        for r in range(SPEED_REPEATS if vectorize else 1):
            t = time.perf_counter()
            out = run(1 + r, 2000)
            rate = out.num_proposals / (time.perf_counter() - t)
            best = max(best, rate)
            if vectorize:
                pairs.append(rate / numpy_speed(repeats=1))
        speeds[label] = best
    speeds["numpy"] = numpy_speed()
    ratio = float(np.median(pairs))
    draws = sampler_speeds()
    print(speeds, draws, flush=True)
    md = [
        "# Exact ABC, Poisson example: proposals per second",
        "",
        "Table 1 and Figure 1 of the seed: `dpjax reproduce gong-abc` (`gong-abc.md`).",
    ]
    md += [
        "",
        "Speed (α = 2, batches of 10⁶, runs of 2 000 draws, compile apart; vectorised and NumPy best of "
        f"{SPEED_REPEATS}, the per-key fallback one run), proposals per second:",
        "",
        f"- vectorised (one key per batch, through a leading plate; the default): {speeds['vectorized']:,.0f}",
        f"- per-key fallback (`vectorize=False`, one key per proposal): {speeds['per_key']:,.0f}",
        f"- NumPy, the same simulation and accept step: {speeds['numpy']:,.0f}",
        "",
        f"Vectorised path / NumPy, run in turn ({len(pairs)} pairs), median ratio: **{ratio:.2f}**.",
    ]
    md += [
        "",
        "The samplers behind the vectorised path (`dpjax.infer.samplers`, used through `fast_sampling`) against "
        "`jax.random`, draws per second (10⁶ per call, compiled, best of "
        f"{SPEED_REPEATS}):",
        "",
        "| law | dpjax.infer.samplers | jax.random |",
        "|---|---|---|",
        *[f"| {k} | {a:,.0f} | {b:,.0f} |" for k, (a, b) in draws.items()],
    ]
    write_results(
        "poisson_abc",
        {
            "proposals_per_second": speeds["vectorized"],
            "speeds": speeds,
            "ratio_to_numpy": ratio,
            "pair_ratios": pairs,
            "sampler_draws_per_second": draws,
        },
        "\n".join(md),
    )


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__).parse_args()
    main()
