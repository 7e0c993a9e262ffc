"""Unknown n (ReversibleJumpKernel): how many birth/death moves and joint (θ, n) moves per
iteration n needs, and what a move and a record update cost as n grows.

- ``moves``: ESS(n)/s and ESS(p)/s for K = 1 (the seed's code), 10, 100 (the default) and 300
  birth/death moves per iteration, without and with J joint (θ, n) moves (5: the default), on
  Bernoulli records with a noisy count (ε_s = 1) and a noisy n (ε_n = 0.01, so the posterior sd of
  n is about 140), n ≈ 1 000, a flat prior on 1..capacity, exact θ-step; 4 vmapped chains, compile
  time apart.
- ``regression``: Table 1's model (awan-table1's dataset, n = 1 000, ε_n = 0.01, capacity 3 000),
  4 releases per ε_s, 2 chains × (1 000 warmup + 1 000 draws) each: ESS and split R-hat of n over
  the two chains, without and with the joint moves, and the study's seconds.
- ``cost``: ns per birth/death move (``birth_death`` alone, 1 000 moves, dim T = 2) and ns per
  record update of one full iteration (θ-step, record sweep over the n active of capacity slots,
  100 moves), for n = 10² … 10⁶ (capacity 1.2 n): both must stay flat in n.
"""

import argparse

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from _common import best_time, measure_ess, table, write_results

import dpjax
from dpjax.infer import ReversibleJumpKernel, birth_death

EPS_S, EPS_N = 1.0, 0.01


def model(capacity, s_dp, n_dp):
    p = numpyro.sample("p", dist.Beta(2.0, 2.0))
    n = numpyro.sample("n", dist.DiscreteUniform(1, capacity))
    people = dpjax.records_plate("people", n, capacity)
    with people:
        x = numpyro.sample("x", dist.Bernoulli(p))
    count = dpjax.LaplaceMechanism(epsilon=EPS_S, sensitivity=1.0)
    size = dpjax.LaplaceMechanism(epsilon=EPS_N, sensitivity=1.0)
    dpjax.privatized("count", count, lambda r: r["x"], {"x": x}, plate=people, obs=s_dp)
    dpjax.privatized("n_dp", size, lambda r: jnp.ones(()), {"x": x}, plate=people, obs=n_dp)


def beta_update(key, records, params):
    active = jnp.arange(records["x"].shape[0]) < params["n"]
    ones = jnp.sum(jnp.where(active, records["x"], 0))
    return {"p": jax.random.beta(key, 2.0 + ones, 2.0 + params["n"] - ones)}


def moves_rows(num_warmup, num_samples):
    args = (2_000, jnp.array(312.4), jnp.array(1_043.0))
    rows = []
    for k, j in ((1, 0), (10, 0), (100, 0), (300, 0), (1, 5), (100, 5), (100, 20)):
        kernel = ReversibleJumpKernel(model, theta_update=beta_update, size_moves=k, noncentred_moves=j)
        res = {"K": k, "J": j}
        for site in ("n", "p"):
            r = measure_ess(kernel, args, site, num_warmup, num_samples)
            res[site] = r
        rows.append(res)
        print(k, j, {s: round(res[s]["min_ess_per_s"], 1) for s in ("n", "p")}, flush=True)
    return rows


def regression_rows(releases, iterations):
    """Table 1's model at ε_n = 0.01: ESS and R-hat of n without and with the joint moves."""
    from dpjax.reproduce.unknown_n import N, confidential_regression_data, regression_cells
    from dpjax.studies import posterior_summaries, run_study

    _, _, T = confidential_regression_data(N)
    summaries = posterior_summaries({"n": ("mean", "sd", "ess", "rhat")})
    rows = []
    for j in (0, 5):
        cell = regression_cells(
            N, T, 3_000, iterations // 2, iterations // 2, num_chains=2, noncentred_moves=j
        )
        df = run_study(
            cell, {"eps_s": [0.1, 1.0], "eps_n": [0.01]}, replicates=releases, rng_key=jax.random.key(11),
            summaries=summaries, progress_bar=False,
        )  # fmt: skip
        for es, g in df.groupby("eps_s"):
            rows.append(
                {
                    "J": j,
                    "ε_s": es,
                    "ESS(n): median": g["n_ess"].median(),
                    "min": g["n_ess"].min(),
                    "R-hat(n): median": g["n_rhat"].median(),
                    "max": g["n_rhat"].max(),
                    "posterior sd of n: mean": g["n_sd"].mean(),
                    "seconds": g["seconds"].iloc[0],
                }
            )
            print(rows[-1], flush=True)
    return rows


def move_ns(capacity, num_moves=1_000):
    """ns per birth/death move: ``birth_death`` alone on a buffer of ``capacity`` records."""
    k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
    records = {"x": jax.random.bernoulli(k1, 0.3, (capacity,)).astype(jnp.int32)}
    t_records = (records["x"].astype(float), jnp.ones(capacity))
    n = int(capacity / 1.2)
    births = {"x": jax.random.bernoulli(k2, 0.3, (num_moves,)).astype(jnp.int32)}
    t_births = (births["x"].astype(float), jnp.ones(num_moves))
    noise = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0).log_noise_density
    log_prior = lambda m: jnp.where((m >= 1) & (m <= capacity), 0.0, -jnp.inf)

    @jax.jit
    def run(key, records, t_records):
        res = (jnp.array(0.3), jnp.array(0.5))
        out = birth_death(
            key, jnp.array(n), records, t_records, res, births, t_births, [noise] * 2, log_prior, lower=1
        )
        return out.size, out.records, out.t_records

    return 1e9 * best_time(run, k3, records, t_records) / num_moves


def iteration_ns(n, joint_moves):
    """ns per active record of one full ReversibleJumpKernel iteration (K = 100, J joint moves)."""
    capacity = int(1.2 * n)
    kernel = ReversibleJumpKernel(model, theta_update=beta_update, noncentred_moves=joint_moves)
    args = (capacity, jnp.array(0.3 * n), jnp.array(float(n)))
    iters = max(2, int(2e6 // n))

    def run(key):
        state = kernel.init(key, 0, None, args, {})
        state = jax.lax.fori_loop(0, iters, lambda i, s: kernel.sample(s, args, {}), state)
        return state.z["n"]

    def init_only(key):
        return kernel.init(key, 0, None, args, {}).z["n"]

    key = jax.random.key(0)
    total = best_time(jax.jit(run), key) - best_time(jax.jit(init_only), key)
    return 1e9 * total / (iters * n)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small runs (seconds), for a smoke test")
    args = parser.parse_args()
    warmup, samples = (200, 500) if args.quick else (1_000, 5_000)
    sizes = [100, 1_000] if args.quick else [100, 1_000, 10_000, 100_000, 1_000_000]
    rows = moves_rows(warmup, samples)
    regression = regression_rows(*((1, 200) if args.quick else (4, 2_000)))
    cost = []
    for n in sizes:
        c = {"n": n, "move_ns": move_ns(int(1.2 * n)), "record_ns": iteration_ns(n, 0)}
        c["record_ns_joint"] = iteration_ns(n, 5)
        cost.append(c)
        print(c, flush=True)
    md = [
        "# Unknown n: birth/death moves per iteration and cost as n grows",
        "",
        "## ESS per second against the numbers of birth/death moves (K) and joint (θ, n) moves (J)",
        "",
        f"Bernoulli records, noisy count (ε_s = {EPS_S}), noisy n (ε_n = {EPS_N}, n_dp = 1043), flat prior on "
        f"1..2000, exact θ-step; 4 vmapped chains × ({warmup} warmup + {samples} draws); compile time apart.",
        "",
        *table(
            rows,
            [
                ("K", lambda r: r["K"]),
                ("J", lambda r: r["J"]),
                ("ESS(n)", lambda r: f"{r['n']['min_ess']:.0f}"),
                ("ESS(n)/s", lambda r: f"{r['n']['min_ess_per_s']:.1f}"),
                ("ESS(p)", lambda r: f"{r['p']['min_ess']:.0f}"),
                ("ESS(p)/s", lambda r: f"{r['p']['min_ess_per_s']:.1f}"),
                ("sampling s", lambda r: f"{r['n']['seconds']:.2f}"),
            ],
        ),
        "",
        "## Table 1's model at ε_n = 0.01, without (J = 0) and with (J = 5) the joint moves",
        "",
        "awan-table1's dataset (n = 1 000), capacity 3 000, per ε_s 4 releases (s, n_dp), 2 chains × "
        "(1 000 warmup + 1 000 draws) each; ESS and split R-hat of n over a release's two chains (median "
        "and worst over releases); seconds: the whole ε_s cell, compile time included.",
        "",
        *table(
            regression,
            [
                (k, lambda r, k=k: f"{r[k]:.3g}" if isinstance(r[k], float) else str(r[k]))
                for k in regression[0]
            ],
        ),
        "",
        "## Cost as n grows (capacity 1.2 n)",
        "",
        *table(
            cost,
            [
                ("n", lambda r: f"{r['n']:,}"),
                ("ns per birth/death move", lambda r: f"{r['move_ns']:.0f}"),
                ("ns per record, full iteration (K = 100, J = 0)", lambda r: f"{r['record_ns']:.1f}"),
                ("(K = 100, J = 5)", lambda r: f"{r['record_ns_joint']:.1f}"),
            ],
        ),
    ]
    results = {"moves": rows, "regression": regression, "cost": cost, "quick": args.quick}
    write_results("unknown_n", results, "\n".join(md))


if __name__ == "__main__":
    main()
