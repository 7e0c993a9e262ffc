"""A shorter run of Guo, Barrientos & Peña's §4.2 (ATUS, Table 2) that fits in a session on this machine:
``--runs`` releases per sex instead of 100, chains at ``--scale`` × the seed's length (5 chains; warm-up,
kept iterations and thinning alike), every method of `dpjax reproduce guo-atus` (its code:
`dpjax.reproduce.compositional.atus_study`). Writes results/guo_atus_part.{md,json}. The full run is
about a day on 2 CPUs: it goes in batches of 10 runs, each kept in results/guo_atus_part.cells/ when
done (committed with the results), so the same command resumes after the last finished batch, in this
session or a later one (delete that folder to start afresh, e.g. after a change to the methods).

    python lab/guo_atus_part.py [--runs 10] [--scale 0.05]
"""

import argparse

from _common import RESULTS, guo_chains, write_report

from dpjax.reproduce import cells_folder
from dpjax.reproduce.compositional import METHODS, atus_study


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--scale", type=float, default=0.05, help="chain length as a fraction of the seed's")
    args = parser.parse_args()
    cfg = guo_chains(args.scale)
    with cells_folder(RESULTS / "guo_atus_part.cells"):
        report = atus_study(args.runs, cfg, METHODS, progress=True)
    command = f"python lab/guo_atus_part.py --runs {args.runs} --scale {args.scale:g}"
    heading = f"{report.title}: {args.runs} runs per sex, chains at {args.scale:g} × the seed's length"
    write_report("guo_atus_part", report, heading, command)


if __name__ == "__main__":
    main()
