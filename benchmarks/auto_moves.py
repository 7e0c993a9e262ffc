"""What ``noncentred_moves="auto"`` chooses, and what it gains, over the benchmark models.

For each model and ε: the minimum ESS per second of sampling (4 vmapped chains, 1 000 warmup and
5 000 draws each, compile time apart) of plain DA (``noncentred_moves=0``) and of DA + 5
non-centred moves; then what "auto" chose at the end of warmup (its trial: the last half of warmup
alternates blocks without and with the moves) for 4 vectorized chains under ``numpyro.infer.MCMC``,
and its estimate of the moves' ESS per draw over plain DA's. After warmup "auto" is the variant it
chose, so its ESS/s is that variant's. Models:
- Beta–Bernoulli count (Laplace on the count): n = 50 with the default NUTS θ-step (the review's
  case), n = 1 000 with the conjugate Beta draw;
- the naive-Bayes log-linear model (N = 100, categorical records, conjugate Dirichlet step);
- the clamped regression (p = 2, n = 100 and 1 000, conjugate β step);
- Gong's Lalonde summaries (one record of four summaries, Laplace scales (3, 3, 6, 6)/ε, NUTS θ-step).
"""

import argparse

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from _common import measure_ess, table, write_results
from numpyro.infer import MCMC, Predictive

import dpjax
import dpjax.models as m
from dpjax.infer import DataAugmentationKernel, auto_moves


def count_model(n, epsilon, release=None):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("people", n):
        x = numpyro.sample("x", dist.Bernoulli(p))
    mech = dpjax.LaplaceMechanism(epsilon=epsilon, sensitivity=1.0)
    dpjax.privatized("count", mech, lambda r: r["x"], {"x": x}, plate="people", obs=release)


def beta_update(key, records, params):
    x = records["x"]
    return {"p": jax.random.beta(key, 1.0 + x.sum(), 1.0 + x.shape[0] - x.sum())}


def cases(eps_list):
    """(model name, n, ε, kernel factory, model args, site)."""
    for n, update in [(50, None), (1000, beta_update)]:
        count = int(0.3 * n)
        for eps in eps_list:
            release = dpjax.LaplaceMechanism(eps, 1.0).release(jax.random.key(n), jnp.array(float(count)))
            step = "NUTS" if update is None else "conjugate"
            make = lambda moves, update=update: DataAugmentationKernel(
                count_model, theta_update=update, noncentred_moves=moves
            )
            yield f"count ({step} θ-step)", n, eps, make, (n, eps, release), "p"
    sim = Predictive(m.naive_bayes, num_samples=1)(jax.random.key(11), 100, 1.0)
    counts = jax.vmap(m.naive_bayes_counts(5, 3))({"y": sim["y"][0], "x": sim["x"][0]}).sum(0)
    for eps in eps_list:
        release = dpjax.LaplaceMechanism(eps, m.naive_bayes_sensitivity(5)).release(
            jax.random.key(int(eps * 10)), counts
        )
        make = lambda moves: DataAugmentationKernel(
            m.naive_bayes, theta_update=m.naive_bayes_update(), noncentred_moves=moves
        )
        yield "log-linear", 100, eps, make, (100, eps, release), "p"
    truth = {"beta": jnp.array(m.regression.SEED_BETA)[None]}
    for n in (100, 1000):
        data = Predictive(m.clamped_regression, posterior_samples=truth, return_sites=["x", "y"])(
            jax.random.key(2023), n, 1.0
        )
        T = jax.vmap(m.regression_statistic())({"x": data["x"][0], "y": data["y"][0]}).sum(0)
        for eps in dict.fromkeys([*eps_list, 10.0]):  # ε = 10 always, once
            release = dpjax.LaplaceMechanism(eps, m.regression_sensitivity(2)).release(
                jax.random.key(int(eps * 10)), T
            )
            make = lambda moves: DataAugmentationKernel(
                m.clamped_regression, theta_update=m.regression_update(), noncentred_moves=moves
            )
            yield "regression", n, eps, make, (n, eps, release), "beta"
    for eps in eps_list:
        release = Predictive(lalonde, num_samples=1)(jax.random.key(3), eps)["s_dp"][0]
        make = lambda moves: DataAugmentationKernel(lalonde, noncentred_moves=moves)
        yield "Lalonde summaries", 1, eps, make, (eps, release), ("tau", "mu", "sigma_t", "sigma_c")


def lalonde(epsilon, release=None):
    mechanism = dpjax.LaplaceMechanism(
        sensitivity=m.LALONDE_MECHANISM.sensitivity, scale=m.LALONDE_MECHANISM.scale / epsilon
    )
    m.lalonde_summaries(release, mechanism=mechanism)


def main(eps_list, scale):
    warm, samples = int(1000 * scale), int(5000 * scale)
    rows = []
    for model, n, eps, make, args, site in cases(eps_list):
        plain = measure_ess(make(0), args, site, warm, samples)
        moves = measure_ess(make(5), args, site, warm, samples)
        mcmc = MCMC(
            make("auto"),
            num_warmup=warm,
            num_samples=1,
            num_chains=4,
            chain_method="vectorized",
            progress_bar=False,
        )
        mcmc.run(jax.random.key(0), *args)
        kept, gain = auto_moves.choice(mcmc.last_state)
        chosen = moves if kept else plain
        rows.append(
            {
                "model": model,
                "n": n,
                "epsilon": eps,
                "plain": plain["min_ess_per_s"],
                "moves": moves["min_ess_per_s"],
                "chosen_moves": 5 if kept else 0,
                "trial_gain": gain,
                "auto": chosen["min_ess_per_s"],
            }
        )
        print(rows[-1], flush=True)
    write(rows, warm, samples)


def write(rows, warm, samples):
    cols = [
        ("model", lambda r: r["model"]),
        ("n", lambda r: r["n"]),
        ("ε", lambda r: f"{r['epsilon']:g}"),
        ("plain DA ESS/s", lambda r: f"{r['plain']:.1f}"),
        ("DA + 5 moves ESS/s", lambda r: f"{r['moves']:.1f}"),
        ("trial's ESS/draw gain", lambda r: f"{r['trial_gain']:.2f}×"),
        ("auto chose", lambda r: f"{r['chosen_moves']} moves"),
        ("auto / plain", lambda r: f"{r['auto'] / r['plain']:.2f}"),
        ("auto / best", lambda r: f"{r['auto'] / max(r['plain'], r['moves']):.2f}"),
    ]
    md = [
        '# `noncentred_moves="auto"`: choice and ESS per second',
        "",
        f"Minimum ESS per second of sampling, 4 vmapped chains × ({warm} warmup + {samples} draws), compile "
        "time apart. `trial's ESS/draw gain`: what the warmup trial of `auto` (4 vectorized chains) "
        f"estimated for the moves' ESS per draw over plain DA's (kept from {auto_moves.GAIN_TO_KEEP:g}×); "
        "after warmup `auto` runs the variant it chose, whose ESS/s it gets. `auto / plain` should not "
        "fall below 0.9; `auto / best` shows the gains kept.",
        "",
        *table(rows, cols),
    ]
    write_results("auto_moves", {"rows": rows}, "\n".join(md))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epsilon", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply all chain lengths")
    a = ap.parse_args()
    main(a.epsilon, a.scale)
