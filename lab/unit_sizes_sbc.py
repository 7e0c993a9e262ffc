"""Is ReversibleJumpKernel calibrated with one unknown n per unit across the prior, not only at the
releases of the exact tests? SBC (`dpjax.testing.sbc`) of tests/test_unit_sizes.py's model: p shared by
3 units, n_g ~ Uniform{0..12}, a noisy count and a noisy n per unit (Laplace, ε = 1), p by its exact
conditional; 300 warmup + 1 000 draws per simulation, 19 ranks, one row per (key, simulations).

    python lab/unit_sizes_sbc.py --runs 0:256 1:512 2:1024 3:2048

Each verdict holds with probability 0.95 for an exact engine (all four coordinates together), so one
failing run in several is expected by chance; a failure that persists as simulations grow is not.
"""

import argparse
import sys
from pathlib import Path

import jax
import numpy as np
from _common import write_results

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_unit_sizes import beta_update, blocks  # noqa: E402

from dpjax.infer import ReversibleJumpKernel  # noqa: E402
from dpjax.testing import sbc  # noqa: E402


def main(runs, name):
    engine = ReversibleJumpKernel(blocks, theta_update=beta_update)
    rows = []
    for key, sims in runs:
        result = sbc(
            blocks, engine, release={"s_dp": "count", "n_dp": "n_dp"}, rng_key=jax.random.key(key),
            num_simulations=sims, num_ranks=19, num_warmup=300, num_samples=1000, progress_bar=False,
        )  # fmt: skip
        v = result.verdicts.set_index("coordinate")
        row = {"key": key, "simulations": sims}
        for c in v.index:
            row[c] = {"inside": bool(v.loc[c, "inside"]), "max_gap": float(v.loc[c, "max_gap"])}
        row["p_ranks"] = np.bincount(np.asarray(result.table["p_rank"]), minlength=20).tolist()
        rows.append(row)
        print(row, flush=True)
    coords = [c for c in rows[0] if c not in ("key", "simulations", "p_ranks")]
    md = [
        "# SBC of ReversibleJumpKernel with one unknown n per unit (3 units, p shared)",
        "",
        "max gap: the ECDF difference's largest excursion over its simultaneous band (≤ 1: inside).",
        "",
        "| key | simulations | " + " | ".join(f"{c}: max gap" for c in coords) + " | verdict |",
        "|---:|---:|" + "---:|" * len(coords) + "---|",
    ]
    for r in rows:
        ok = all(r[c]["inside"] for c in coords)
        md.append(
            f"| {r['key']} | {r['simulations']} | "
            + " | ".join(f"{r[c]['max_gap']:.2f}" for c in coords)
            + f" | {'pass' if ok else 'FAIL'} |"
        )
    write_results(name, {"rows": rows}, "\n".join(md))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--runs", nargs="+", default=["0:256", "1:512", "2:1024", "3:2048"], help="key:simulations"
    )
    ap.add_argument("--name", default="unit_sizes_sbc", help="results/<name>.{md,json}")
    a = ap.parse_args()
    main([tuple(int(x) for x in r.split(":")) for r in a.runs], a.name)
