"""Is `benchmarks/table1_ridge.py`'s "840f5ad" row (today's ReversibleJumpKernel with `size_jumps=0`) the
sampler that issue 85 was filed against? Runs the table's cell (awan-table1 dataset, ε_s = 1,
ε_n = 0.001, capacity 3 000, 4 releases × 2 chains × 8 000 iterations, half warmup, 100 births/deaths
and 5 joint (θ, n) moves per iteration, the table's key) with the checkout's dpjax and appends one
row to ``lab/results/table1_start_check.{json,md}``. Run it with each commit's dpjax installed (an
editable install wins over ``PYTHONPATH``, so give the old checkout its own environment):

    git clone . ../old && git -C ../old checkout 840f5ad
    python -m venv ../old/.venv && ../old/.venv/bin/pip install -e ../old
    ../old/.venv/bin/python lab/table1_start_check.py --tag 840f5ad
    python lab/table1_start_check.py --tag HEAD

``--best`` runs today's best configuration of `benchmarks/table1_ridge.py` instead (20 surrogate transitions
of 3 ridge steps with 3 walk steps around each, 1 joint move, no size jumps), and ``--key`` another study key
than the benchmark's (11): at a median ESS(n) of a few dozen one key's estimate of the 840f5ad sampler moves
by 2×, so its ESS(n)/s is taken over keys, each run next to the others on the same machine:

    for k in 11 12 13; do ../old/.venv/bin/python lab/table1_start_check.py --key $k --tag "840f5ad, key $k"; done
    for k in 11 12; do python lab/table1_start_check.py --best --key $k --tag "best, key $k"; done
"""

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

import jax

import dpjax
import dpjax.reproduce.unknown_n as u
from dpjax.studies import posterior_summaries, run_study

RELEASES, ITERATIONS, CAPACITY = 4, 8_000, 3_000
#: written by hand, not with ``_common.write_results``: that imports helpers 840f5ad's dpjax lacks
RESULTS = Path(__file__).resolve().parent / "results"


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tag", required=True, help="the row's name (the commit)")
    parser.add_argument("--best", action="store_true", help="today's best configuration (module docstring)")
    parser.add_argument("--key", type=int, default=11, help="the study's key (11: the benchmark's)")
    args = parser.parse_args()
    _, _, T = u.confidential_regression_data(u.N)
    half = ITERATIONS // 2
    if args.best:
        cell = u.regression_cells(
            u.N, T, CAPACITY, half, half, num_chains=2, noncentred_moves=1, size_jumps=0, ridge_moves=20,
            surrogate_steps=3, surrogate_ridge_steps=3,
        )  # fmt: skip
    elif hasattr(u, "regression_cells"):  # today's code: the size jumps turned off
        cell = u.regression_cells(
            u.N, T, CAPACITY, half, half, num_chains=2, noncentred_moves=5, size_jumps=0
        )
    else:  # 840f5ad: no size jumps yet
        cell = u._regression_cells(u.N, T, CAPACITY, half, half, num_chains=2, noncentred_moves=5)
    df = run_study(
        cell, {"eps_s": [1.0], "eps_n": [0.001]}, replicates=RELEASES, rng_key=jax.random.key(args.key),
        summaries=posterior_summaries({"n": ("mean", "sd", "rhat", "ess")}), progress_bar=False,
    )  # fmt: skip
    root = Path(dpjax.__file__).resolve().parents[1]
    commit = subprocess.run(
        ["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    seconds = float(df["seconds"].iloc[0])
    row = {
        "run": args.tag,
        "dpjax commit": commit.stdout.strip(),
        "key": args.key,
        "E n per release": ", ".join(f"{v:.0f}" for v in df["n_mean"]),
        "sd n per release": ", ".join(f"{v:.0f}" for v in df["n_sd"]),
        "median ESS(n)": round(float(df["n_ess"].median()), 1),
        "largest R-hat(n)": round(float(df["n_rhat"].max()), 3),
        "seconds": round(seconds, 1),
        "ESS(n)/s": round(float(df["n_ess"].sum()) / seconds, 2),
    }
    print(row, flush=True)
    row["machine"] = (
        f"{platform.machine()}, {jax.device_count()} {jax.default_backend()} device(s), jax {jax.__version__}"
    )
    row["date"] = time.strftime("%Y-%m-%d")
    path = RESULTS / "table1_start_check.json"
    rows = [
        r for r in (json.loads(path.read_text())["rows"] if path.exists() else []) if r["run"] != args.tag
    ]
    rows.append(row)
    path.write_text(json.dumps({"rows": rows}, indent=2))
    columns = list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(columns) + " |", "|---" * len(columns) + "|"]
    lines += ["| " + " | ".join(str(r.get(k, "")) for k in columns) + " |" for r in rows]
    (RESULTS / "table1_start_check.md").write_text(
        "# The 840f5ad sampler on Table 1's hardest cell, at 840f5ad and today (`size_jumps=0`), and today's "
        "best configuration\n\n"
        f"ε_s = 1, ε_n = 0.001, {RELEASES} releases × 2 chains × {ITERATIONS:,} iterations (half warmup), "
        "100 births/deaths and 5 joint (θ, n) moves per iteration (the best configuration: 1 joint move, no "
        "size jumps, 20 surrogate transitions of 3 ridge steps), capacity 3 000, the key of "
        "`benchmarks/table1_ridge.py`; one run per row, each in its own process.\n\n"
        + "\n".join(lines)
        + f"\n\n_`{' '.join(['python', 'lab/table1_start_check.py', *sys.argv[1:]])}` (last row's command)._\n"
    )


if __name__ == "__main__":
    main()
