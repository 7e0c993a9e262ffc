"""A part of Guo, Barrientos & Peña's §4.1 simulation study that fits in a session on this machine:
the cells α × n × ε named on the command line, ``--datasets`` data sets each, chains at ``--scale`` ×
the seed's length (5 chains; warm-up, kept iterations and thinning alike), every method of
`dpjax reproduce guo-simulation` (its code: `dpjax.reproduce.compositional.simulation_study`).
Writes results/guo_simulation_part{_TAG}.{md,json,png}. The full study is days on 2 CPUs: each
finished cell is kept in results/guo_simulation_part{_TAG}.cells/ (committed with the results), so the
same command resumes after the last finished cell, in this session or a later one (delete that folder
to start afresh, e.g. after a change to the methods).

    python lab/guo_simulation_part.py [--alpha α₃] [--n 1000] [--eps 0.25 0.5 1.5 1e10]
        [--datasets 10] [--scale 0.05] [--tag TAG]
"""

import argparse

from _common import RESULTS, guo_chains, write_report

from dpjax.reproduce import cells_folder
from dpjax.reproduce.compositional import ALPHAS, METHODS, simulation_study


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--alpha", nargs="+", default=["α₃"], choices=list(ALPHAS))
    parser.add_argument("--n", nargs="+", type=int, default=[1000])
    parser.add_argument("--eps", nargs="+", type=float, default=[0.25, 0.5, 1.5, 1e10])
    parser.add_argument("--datasets", type=int, default=10)
    parser.add_argument("--scale", type=float, default=0.05, help="chain length as a fraction of the seed's")
    parser.add_argument("--tag", default="", help="suffix of the output files (keeps other parts' results)")
    args = parser.parse_args()
    name = "guo_simulation_part" + (f"_{args.tag}" if args.tag else "")
    cfg = guo_chains(args.scale)
    with cells_folder(RESULTS / f"{name}.cells"):
        report = simulation_study(
            args.alpha, args.n, args.eps, args.datasets, 10_000, cfg, METHODS, progress=True
        )
    report.figures[""].savefig(RESULTS / f"{name}.png", dpi=110, bbox_inches="tight")
    command = (
        f"python lab/guo_simulation_part.py --alpha {' '.join(args.alpha)} --n {' '.join(map(str, args.n))} "
        f"--eps {' '.join(f'{e:g}' for e in args.eps)} --datasets {args.datasets} --scale {args.scale:g}"
        + (f" --tag {args.tag}" if args.tag else "")
    )
    extra = ["", f"![{name}.png]({name}.png)"]
    write_report(name, report, f"{report.title}: a part of the grid", command, extra)


if __name__ == "__main__":
    main()
