"""The cost of simulation-based calibration (``dpjax.testing.sbc``) for the seeds' regression model
(Awan et al., ε = 1, DA with the exact conjugate β-step, one chain of 500 + 1 000 per simulation,
ranks among 99 thinned draws): simulations per minute at n = 100 and 1 000, with the compile time
apart, and the verdict of that run.

    python benchmarks/sbc_cost.py [simulations]

On a GPU the same command measures the device (``jax.devices()`` decides); more simulations then
fill it better (e.g. ``python benchmarks/sbc_cost.py 1024``).
"""

import sys
import time
import warnings

import jax
from _common import table, write_results

import dpjax
import dpjax.models as m
from dpjax.testing import sbc

SIMULATIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 64


def main():
    rows = []
    for n in (100, 1000):
        kernel = dpjax.infer.DataAugmentationKernel(m.clamped_regression, theta_update=m.regression_update())
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the ESS warning is reported in the table instead
            result = sbc(
                m.clamped_regression, kernel, release="release", model_args=(n, 1.0),
                num_simulations=SIMULATIONS, rng_key=jax.random.key(0), progress_bar=False,
            )  # fmt: skip
        wall = time.perf_counter() - start
        compile_s = float(result.table["compile_seconds"].iloc[0])
        run_s = float(result.table["seconds"].iloc[0])
        rows.append({
            "n": n,
            "simulations": SIMULATIONS,
            "compile (s)": round(compile_s, 1),
            "run (s)": round(run_s, 1),
            "simulations / min": round(SIMULATIONS / run_s * 60, 1),
            "with compile, / min": round(SIMULATIONS / wall * 60, 1),
            "ns / record update": round(run_s / (SIMULATIONS * n * 1500) * 1e9, 1),
            "median ESS of β": round(float(result.verdicts["median_ess"].min()), 0),
            "SBC passed": result.passed,
        })  # fmt: skip
        print(rows[-1], flush=True)
    md = [
        "# The cost of SBC: the seeds' regression model",
        "",
        f"`dpjax.testing.sbc` on `dpjax.models.clamped_regression` (ε = 1), {SIMULATIONS} simulations as one "
        "vmapped study, DA with the exact β-step, one chain of 500 + 1 000, 99 ranks. `ns / record update` "
        "divides the run time by simulations × n × 1 500 iterations.",
        "",
        *table(rows, [(k, lambda r, k=k: r[k]) for k in rows[0]]),
    ]
    write_results("sbc_cost", {"simulations": SIMULATIONS, "rows": rows}, "\n".join(md))


if __name__ == "__main__":
    main()
