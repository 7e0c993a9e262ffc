"""How many scan steps per loop iteration should the record sweep run? ns per record update (per chain)
of the record sweep at each ``lax.scan`` unroll, on this machine's backend:

- ``scan alone``: ``dpjax.infer.record_sweep`` on given (n, d) Dirichlet statistics with the Laplace
  density (`compositional_speed.py`'s mode of that name);
- ``Dirichlet sweep``: one DataAugmentationKernel iteration on ``dpjax.models.dirichlet_mean_log`` with α
  held: the n proposals and the scan (`compositional_speed.py`'s ``sweep``);
- ``Dirichlet iteration + 5 α-moves``: what ``compositional.dp_mcmc`` runs per iteration;
- ``regression kernel``: the clamped-regression DataAugmentationKernel iteration (`sweep_speed.py`).

The unroll changes how XLA lays the loop out, not the update: on XLA:CPU the same draws for any value
(`tests/test_data_augmentation.py`); on a GPU `lab/sweep_unroll_check.py` compares them.
``dpjax.infer.record_sweep.UNROLL`` holds the value each backend uses by default; this script sets it in
turn.

    python benchmarks/sweep_unroll.py [--unrolls 1 2 4 8 16 32] [--chains 1 1024] [--n 5000] [--parts 5]
        [--modes ...] [--work-scale 1] [--name sweep_unroll]
"""

import argparse

import jax
from compositional_speed import iteration_ns, part_ns, write_table
from sweep_speed import kernel_ns

from dpjax.infer.record_sweep import UNROLL

TITLE = "Record sweep: ns per record update against the scan's unroll"

MODES = {
    "scan alone": lambda n, d, chains, work: part_ns(n, d, "scan", chains, work),
    "Dirichlet sweep": lambda n, d, chains, work: iteration_ns(n, d, "held", chains, work),
    "Dirichlet iteration + 5 α-moves": lambda n, d, chains, work: iteration_ns(n, d, "moves", chains, work),
    "regression kernel": lambda n, d, chains, work: kernel_ns(n, chains, work),
}


def main(unrolls, chain_counts, n, d, modes, work_scale, name):
    backend = jax.default_backend()
    default = UNROLL.get(backend, 1)
    intro = f"{__doc__.split(chr(10) * 2)[0]}\n\n``UNROLL['{backend}']`` at the time of the run: {default}."
    rows = []
    try:
        for chains in chain_counts:
            for unroll in unrolls:
                UNROLL[backend] = unroll
                row = {"backend": backend, "chains": chains, "d": d, "n": n, "unroll": unroll}
                for label in modes:
                    row[label] = MODES[label](n, d, chains, work_scale)
                print(row, flush=True)
                rows.append(row)
                write_table(rows, work_scale, name, TITLE, intro)  # after each row: a run cut short keeps it
    finally:
        UNROLL[backend] = default


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--unrolls", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    p.add_argument("--chains", type=int, nargs="+", default=[1])
    p.add_argument("--n", type=int, default=5000)
    p.add_argument("--parts", type=int, default=5)
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    p.add_argument("--work-scale", type=float, default=1.0, help="scales the number of timed iterations")
    p.add_argument("--name", default="sweep_unroll", help="results/<name>.{md,json}")
    a = p.parse_args()
    main(a.unrolls, a.chains, a.n, a.parts, a.modes, a.work_scale, a.name)
