"""Mixing per second on the seed's clamped regression (p = 2, n = 100 and 1 000): minimum ESS over
β per second of sampling (compile time measured apart) at ε ∈ {0.1, 1, 10}, for
- plain DA: the seed's Algorithm 1 with the conjugate β | x, y draw (``noncentred_moves=0``);
- DA + NC: the same plus 5 non-centred θ-moves per iteration (dpjax's default);
- DA + NC, NUTS β-step: the default kernel, inner NUTS for β;
- joint NUTS: what a NumPyro user writes today, NUTS on (β, x, y) of the same model.
Four vmapped chains, one fixed release per ε of one confidential dataset per n.
"""

import argparse

import jax
import jax.numpy as jnp
from _common import ESS_COLUMNS, measure_ess, table, write_results
from numpyro.infer import NUTS, Predictive

import dpjax
import dpjax.models as m
from dpjax.infer import DataAugmentationKernel

METHODS = {
    "plain DA": lambda: DataAugmentationKernel(
        m.clamped_regression, theta_update=m.regression_update(), noncentred_moves=0
    ),
    "DA + NC": lambda: DataAugmentationKernel(m.clamped_regression, theta_update=m.regression_update()),
    "DA + NC, NUTS β-step": lambda: DataAugmentationKernel(m.clamped_regression),
    "joint NUTS": lambda: NUTS(m.clamped_regression),
}
LENGTHS = {  # (warmup, samples) per chain at n = 100; joint NUTS is shortened at n = 1 000
    "plain DA": (2000, 10000),
    "DA + NC": (1000, 5000),
    "DA + NC, NUTS β-step": (1000, 5000),
    "joint NUTS": (500, 1000),
}


def main(sizes, eps_list, scale):
    rows = []
    truth = {"beta": jnp.array(m.regression.SEED_BETA)[None]}
    for n in sizes:
        data = Predictive(m.clamped_regression, posterior_samples=truth, return_sites=["x", "y"])(
            jax.random.key(2023), n, 1.0
        )
        T = jax.vmap(m.regression_statistic())({"x": data["x"][0], "y": data["y"][0]}).sum(0)
        for eps in eps_list:
            release = dpjax.LaplaceMechanism(eps, m.regression_sensitivity(2)).release(
                jax.random.key(int(eps * 10)), T
            )
            for name, make in METHODS.items():
                warm, samples = LENGTHS[name]
                if name == "joint NUTS" and n > 100:
                    warm, samples = 300, 500
                r = measure_ess(make(), (n, eps, release), "beta", int(warm * scale), int(samples * scale))
                rows.append({"n": n, "epsilon": eps, "method": name, **r})
                print(rows[-1], flush=True)
    md = [
        "# Mixing per second, clamped regression (p = 2)",
        "",
        "Minimum over β of the bulk ESS (4 vmapped chains) per second of sampling; compile time apart. "
        "`plain DA` is the seed's Algorithm 1; `DA + NC` adds 5 non-centred θ-moves per iteration.",
        "",
    ]
    md += table(
        rows,
        [("n", lambda r: r["n"]), ("ε", lambda r: f"{r['epsilon']:g}"), ("method", lambda r: r["method"])]
        + ESS_COLUMNS,
    )
    write_results("regression_ess", {"rows": rows}, "\n".join(md))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--epsilon", type=float, nargs="+", default=[0.1, 1.0, 10.0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply all chain lengths")
    a = ap.parse_args()
    main(a.n, a.epsilon, a.scale)
