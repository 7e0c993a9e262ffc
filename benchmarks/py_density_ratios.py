"""Lazzarini Algorithm 2, Figures 1–4: density ratios q_n(z | x) / q_n(z | y) of the Pitman–Yor
release over neighbouring datasets y (the last record of x replaced by another value of x, a value
of z, or a fresh draw from H), for K confidential datasets x ~ PY(σ, θ, U[0, 1]) of n records,
L releases z each and J neighbours per release. The seed uses K = L = J = 100; the default here
is 10 × 20 × 20 (the check runs in Python); flags raise it.
"""

import argparse

import jax
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from _common import RESULTS, table, write_results

from dpjax.synthetic import density_ratios, sample_pitman_yor

CASES = [  # (figure, theta, sigma, n, m, the seed's reading)
    (1, 1.0, 0.0, 1000, 500, "ε = 1.9 bounds every ratio and its inverse"),
    (2, 10.0, 0.0, 1000, 500, "a few ratios need ε > 4; ε ≈ 3 bounds all but a low-probability event"),
    (3, 2.0, 0.5, 1000, 100, "ε > 6 needed"),
    (4, 3.0, 0.2, 1000, 100, "smaller than Figure 3"),
]


def main(k_data, l_synth, j_neigh):
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    rows = []
    for (figure, theta, sigma, n, m, seed_note), ax in zip(CASES, axes):
        logs = []
        for k in range(k_data):
            x = np.asarray(sample_pitman_yor(jax.random.key(1000 * figure + k), n, sigma, theta))
            r, _ = density_ratios(
                jax.random.key(k), x, m, sigma, theta, num_synthetic=l_synth, num_neighbours=j_neigh
            )
            logs.append(r.ravel())
        logs = np.concatenate(logs)
        ax.plot(np.exp(logs), ".", ms=1.5, color="C0", label="ratio")
        ax.plot(np.exp(-logs), ".", ms=1.5, color="C1", alpha=0.5, label="inverse")
        for eps in (1, 2, 3, 4, 6):
            ax.axhline(np.exp(eps), ls="--", lw=0.7, color="grey")
        ax.set(
            yscale="log", title=f"Fig. {figure}: θ = {theta:g}, σ = {sigma:g}, m = {m}", xlabel="iteration"
        )
        rows.append(
            {
                "figure": figure, "theta": theta, "sigma": sigma, "n": n, "m": m,
                "eps_all": float(np.abs(logs).max()), "eps_99": float(np.quantile(np.abs(logs), 0.99)),
                "eps_999": float(np.quantile(np.abs(logs), 0.999)), "seed": seed_note,
            }
        )  # fmt: skip
        print(rows[-1], flush=True)
    axes[0].legend(markerscale=6)
    fig.tight_layout()
    fig.savefig(RESULTS / "py_density_ratios.png", dpi=110)
    md = [
        "# Algorithm 2: density ratios over neighbouring datasets (Lazzarini Figures 1–4)",
        "",
        f"{k_data} datasets × {l_synth} releases × {j_neigh} neighbours per case. The ε that bounds the ratio and "
        "its inverse: max |log ratio| over all, and its 99 % and 99.9 % quantiles.",
        "",
    ]
    md += table(
        rows,
        [
            ("figure", lambda r: r["figure"]),
            ("θ", lambda r: r["theta"]),
            ("σ", lambda r: r["sigma"]),
            ("n", lambda r: r["n"]),
            ("m", lambda r: r["m"]),
            ("ε bounding all", lambda r: f"{r['eps_all']:.2f}"),
            ("99 %", lambda r: f"{r['eps_99']:.2f}"),
            ("99.9 %", lambda r: f"{r['eps_999']:.2f}"),
            ("seed", lambda r: r["seed"]),
        ],
    )
    md += ["", "Figure: `py_density_ratios.png` (dashed lines: e^ε for ε = 1, 2, 3, 4, 6)."]
    write_results("py_density_ratios", {"rows": rows}, "\n".join(md))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--datasets", type=int, default=10)
    ap.add_argument("--releases", type=int, default=20)
    ap.add_argument("--neighbours", type=int, default=20)
    a = ap.parse_args()
    main(a.datasets, a.releases, a.neighbours)
