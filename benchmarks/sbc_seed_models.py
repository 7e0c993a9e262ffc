"""Simulation-based calibration (``dpjax.testing.sbc``) of the engines on the seeds' models at
ε ∈ {0.1, 1, 10}: 256 simulations per setting (fewer where a case says why), 99 ranks, one chain of 500 + 1 000 (2 000 where 1 000 left the ESS
below 99),
one results file (``results/sbc_seed_models.json``, rendered on the docs' SBC page) and one figure
per case. A case marked ``x64`` runs in float64 (``jax.enable_x64``), the rest in float32.

    python benchmarks/sbc_seed_models.py [CASE ...]      # default: every case

A case that fails SBC is a defect to fix, not a result to report.
"""

import json
import time
import warnings

import jax
import matplotlib
import numpyro.distributions as dist
from _common import RESULTS, chosen_cases, in_order, write_results

import dpjax
import dpjax.models as m
from dpjax.testing import sbc

matplotlib.use("Agg")
EPSILONS = [0.1, 1.0, 10.0]
SIMULATIONS = 256


def poisson(alpha, epsilon, release=None):
    """Gong's Poisson count (Gamma(α, 1) prior) at a traced ε."""
    m.poisson_count(alpha, release, epsilon=epsilon)


def poisson_gamma(key, records, params):
    return {"theta": dist.Gamma(25.0 + records["s"].sum(), 2.0).sample(key)}


def unknown_n(capacity, eps, s_dp=None, n_dp=None):
    """Awan et al.'s §6.1 regression with an unknown n (ε_s = ε_n = ε)."""
    m.unknown_n_regression(capacity, s_dp, n_dp, eps_s=eps, eps_n=eps)


def unknown_n_eps_n(capacity, eps_n, s_dp=None, n_dp=None):
    """Awan et al.'s §6.1 regression with an unknown n at ε_s = 1 and ε_n = eps_n."""
    m.unknown_n_regression(capacity, s_dp, n_dp, eps_s=1.0, eps_n=eps_n)


def compositional(epsilon, release=None):
    """Guo et al.'s Dirichlet records (n = 100, d = 3, a = 0.01, prior p1) and their censored mean-log release."""
    m.dirichlet_mean_log(100, 0.01, epsilon, release, d=3)


def lalonde(epsilon, release=None):
    """Gong's Lalonde summaries with the seed's Laplace scales (3, 3, 6, 6) divided by ε (ε = 1: the seed's)."""
    mechanism = dpjax.LaplaceMechanism(
        sensitivity=m.LALONDE_MECHANISM.sensitivity, scale=m.LALONDE_MECHANISM.scale / epsilon
    )
    m.lalonde_summaries(release, mechanism=mechanism)


def cases():
    da = dpjax.infer.DataAugmentationKernel
    unknown_n_rj = dict(
        seed="Awan et al. (2024), §6.1 regression with an unknown n (n ~ U{1..100}, ε_s = ε_n)",
        engine="reversible jump", model=unknown_n, release={"s_dp": "summary", "n_dp": "n_dp"},
        args=lambda epsilon: (100, epsilon), params=("beta", "tau", "n"), num_samples=2000,
        engine_fn=lambda: dpjax.infer.ReversibleJumpKernel(unknown_n, theta_update=m.unknown_n_regression_update()),
    )  # fmt: skip
    return {
        "awan-regression-da": dict(
            seed="Awan et al. (2024), §5 regression (n = 100)", engine="DA, exact β-step",
            model=m.clamped_regression, release="release", args=lambda epsilon: (100, epsilon),
            engine_fn=lambda: da(m.clamped_regression, theta_update=m.regression_update()),
        ),
        "clamped-normal-da": dict(
            seed="`dpjax demo`'s model: Normal records clamped to [0, 100], (Σu, Σu²) released (n = 50)",
            engine="DA, NUTS θ-step", model=m.clamped_normal, release="release",
            args=lambda epsilon: (50, epsilon), engine_fn=lambda: da(m.clamped_normal),
        ),
        "gong-poisson-abc": dict(
            seed="Gong (2022), Poisson count (Gamma(25, 1) prior)", engine="exact ABC",
            # at ε = 10 a release in the prior's tail accepts ~1e-4 of the proposals, and 256 vmapped
            # ABC loops run at the pace of the slowest: not run there (DA covers ε = 10)
            epsilons=[0.1, 1.0],
            model=poisson, release="release", args=lambda epsilon: (25.0, epsilon),
            engine_fn=lambda: dpjax.infer.exact_abc_sampler(poisson, num_samples=99, batch_size=2_000),
        ),
        "gong-poisson-da": dict(
            seed="Gong (2022), Poisson count (Gamma(25, 1) prior)", engine="DA, exact Gamma step",
            model=poisson, release="release", args=lambda epsilon: (25.0, epsilon),
            engine_fn=lambda: da(poisson, theta_update=poisson_gamma),
        ),
        "gong-poisson-pm": dict(
            seed="Gong (2022), Poisson count (Gamma(25, 1) prior)", engine="pseudo-marginal ABC (64 simulations)",
            # 2 000 kept draws: at ε = 10 the estimate is noisier (s.d. ≈ 2.6 in some chains) and
            # 1 000 left the median ESS at 96
            model=poisson, release="release", args=lambda epsilon: (25.0, epsilon), num_samples=2000,
            engine_fn=lambda: dpjax.infer.PseudoMarginalABC(poisson, num_simulations=64),
        ),
        "ju-naive-bayes-da": dict(
            seed="Ju et al. (2022), naive Bayes log-linear model (n = 100; p ranked)",
            engine="DA, exact Dirichlet step", model=m.naive_bayes, release="release",
            args=lambda epsilon: (100, epsilon), params="p", num_samples=2000,  # ESS ≥ 99 at ε = 0.1
            engine_fn=lambda: da(m.naive_bayes, theta_update=m.naive_bayes_update()),
        ),
        # float64: the seed's Wishart(2, I) prior of Φ (d = p, the least proper) reaches Φ whose
        # eigenvalues differ by over 10⁷, which float32 cannot hold as a positive-definite matrix; the
        # float32 run is kept as a finding (its lost simulations are those chains)
        "awan-unknown-n-rj": dict(**unknown_n_rj, x64=True),
        "awan-unknown-n-rj-eps-n": dict(
            **{**unknown_n_rj, "seed": unknown_n_rj["seed"].replace("ε_s = ε_n", "ε_s = 1, ε = ε_n"),
               "args": lambda epsilon: (100, epsilon), "model": unknown_n_eps_n,
               "engine_fn": lambda: dpjax.infer.ReversibleJumpKernel(unknown_n_eps_n, theta_update=m.unknown_n_regression_update())},
            epsilons=[0.1, 10.0], x64=True,
        ),
        "guo-compositional-da": dict(
            seed="Guo et al. (2024), Dirichlet records (n = 100, d = 3, a = 0.01, prior p1)", engine="DA, NUTS α-step",
            model=compositional, release="release", args=lambda epsilon: (epsilon,),
            engine_fn=lambda: da(compositional),
            # 64, not 256: vmapped NUTS α-steps run at the pace of the deepest tree (~8 s per simulation
            # on 2 cores; a 256-simulation run had not finished after 65 minutes); the band is wider (the
            # test detects coarser errors), the verdict as valid
            simulations=64,
        ),
        "guo-compositional-da-eps10": dict(
            seed="Guo et al. (2024), Dirichlet records (n = 100, d = 3, a = 0.01, prior p1), ε = 10 only",
            engine="DA, NUTS α-step, 3 000 draws", model=compositional, release="release",
            args=lambda epsilon: (epsilon,), engine_fn=lambda: da(compositional), epsilons=[10.0],
            # the case above with 1 000 draws left the median ESS of α at 36 (below the 99 ranks) at ε = 10
            num_samples=3000, simulations=64,
        ),
        "gong-lalonde-da": dict(
            seed="Gong (2022) §5.2, Lalonde summaries (Laplace scales (3, 3, 6, 6)/ε; ε = 1 the seed's)",
            engine="DA, NUTS θ-step, defaults (warmup 500, moves 'auto') and 30 record sweeps per iteration",
            model=lalonde, release="release", args=lambda epsilon: (epsilon,),
            engine_fn=lambda: da(lalonde, record_sweeps=30),
            note="The four summaries are one record. At ε = 10 the variances' release pins s_c² far inside its "
            "spread given σ_c, so a proposal of the whole record is accepted ~3 % of the time, and ȳ_t, s_t², "
            "which the release pins less than their spread and which σ_t, τ follow, seldom move: with one record "
            "step per iteration SBC failed at ε = 10 (1/4 inside, even with warmup 2 000 and 5 moves); 30 record "
            "steps per θ-step (`record_sweeps=30`) move them. At ε = 1 the defaults failed too (τ's ESS 4 of 4 000 "
            "on one release) because `noncentred_moves='auto'` measured the moves' gain as 2.1× (blocks of 50 "
            "draws cap it) and dropped them; its trial now reads a lag-1 estimate too and keeps them, yet their "
            "random walk adapts in a short warmup: τ's ESS 21–40 of 4 000 with the defaults against 416–451 with "
            "warmup 2 000 (`lab/results/lalonde_da_mixing.md`). So at ε = 1 the median ESS of τ and μ here "
            "(55–64) is below the 99 ranks and the pass is the weaker for it; warmup 2 000 with 5 moves and 30 "
            "sweeps also passed at every ε (ESS ≥ 100).",
        ),
        "awan-unknown-n-rj-float32": dict(
            **unknown_n_rj, lost_because="float32: these chains reached a Φ with eigenvalues over 10⁷ "
            "apart (records ~10⁴), which float32 cannot hold; 0 lost in float64 (the case above)",
        ),
    }  # fmt: skip


def main(names):
    path = RESULTS / "sbc_seed_models.json"
    payload = json.loads(path.read_text()) if path.exists() else {"cases": {}}
    for name, case in cases().items():
        if names and name not in names:
            continue
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught, jax.enable_x64(case.get("x64", False)):
            warnings.simplefilter("always")
            result = sbc(
                case["model"], case["engine_fn"](), release=case["release"], model_args=case["args"],
                grid={"epsilon": case.get("epsilons", EPSILONS)}, params=case.get("params"), num_simulations=case.get("simulations", SIMULATIONS),
                num_samples=case.get("num_samples", 1000), num_warmup=case.get("num_warmup", 500), rng_key=jax.random.key(0), progress_bar=False,
            )  # fmt: skip
        fig = result.plot()
        fig.savefig(RESULTS / f"sbc_{name}.png", dpi=80)
        payload["cases"][name] = {
            "seed": case["seed"],
            "engine": case["engine"],
            "simulations": case.get("simulations", SIMULATIONS),
            "num_samples": case.get("num_samples", 1000),
            "num_warmup": case.get("num_warmup", 500),
            "num_ranks": result.num_ranks,
            "passed": result.passed,
            "verdicts": result.verdicts.to_dict("records"),
            "ranks": {
                c: {str(e): result.ranks(c, epsilon=e).tolist() for e in case.get("epsilons", EPSILONS)}
                for c in result.coordinates
            },
            "seconds": round(time.perf_counter() - start, 1),
            "warnings": sorted({str(w.message) for w in caught if "sbc:" in str(w.message)}),
            "figure": f"sbc_{name}.png",
            "dtype": "float64" if case.get("x64") else "float32",
            **{k: case[k] for k in ("lost_because", "note") if k in case},
        }
        print(name, result.passed, payload["cases"][name]["seconds"], "s", flush=True)
        print(result.verdicts.to_string(), flush=True)
        payload["cases"] = in_order(payload["cases"], cases())
        write(payload)  # after every case: a long run keeps what it has done


def write(payload):
    md = ["# SBC of the engines on the seeds' models", "", "| case | engine | ε | coordinates inside | passed |",
          "|---|---|---|---|---|"]  # fmt: skip
    for name, c in payload["cases"].items():
        for e in sorted({v["epsilon"] for v in c["verdicts"]}):
            rows = [v for v in c["verdicts"] if v["epsilon"] == e]
            inside = sum(v["inside"] for v in rows)
            md.append(f"| {name} | {c['engine']} | {e:g} | {inside}/{len(rows)} | {inside == len(rows)} |")
    write_results("sbc_seed_models", payload, "\n".join(md))


if __name__ == "__main__":
    main(chosen_cases(__doc__, cases()))
