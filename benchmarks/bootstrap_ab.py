"""Seconds per data set of the §4.1 bootstraps (Boots and DPBoots, 1 000 draws, n = 5 000, one data set,
compiled once, two timed calls) at α₁, α₂, α₅, for whichever dpjax is imported: an A/B of two commits
puts the older one on the path:

    git archive BASE dpjax | tar -x -C /tmp/base && PYTHONPATH=/tmp/base python benchmarks/bootstrap_ab.py --name bootstrap_ab_base
    python benchmarks/bootstrap_ab.py

(BASE must have ``dpjax.reproduce.compositional.bootstrap`` and ``dpjax.reproduce.machine``, public since
``lab/`` was split off; the A/B of the change from jax.random.dirichlet to dpjax's sampler, 841df28, is in
``lab/guo_compositional.md``.) Writes results/<name>.{md,json} (default ``bootstrap_ab``): the times and
the bootstrap means and spreads (the same law on both sides of an A/B).
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from _common import table, write_results
from jax.scipy.special import digamma

import dpjax
from dpjax.compositional import dpboots
from dpjax.reproduce.compositional import bootstrap

ALPHAS = {"α₁": [3.3, 4.4], "α₂": [0.5, 0.5, 0.5], "α₅": [2.2, 3.3, 4.4, 5.5, 6.6]}


def timed(fn):
    """Seconds of two calls with fresh keys after a compiling call, and the last call's output."""
    fn(jax.random.key(0)).block_until_ready()
    seconds = []
    for r in range(2):
        t = time.perf_counter()
        out = fn(jax.random.key(1 + r)).block_until_ready()
        seconds.append(round(time.perf_counter() - t, 3))
    return seconds, out


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=5000, help="records per data set")
    parser.add_argument("--name", default="bootstrap_ab", help="results/<name>.{md,json}")
    args = parser.parse_args()
    print(dpjax.__file__)
    n, rows = args.n, []
    for name, a in ALPHAS.items():
        a = jnp.array(a)
        s0 = digamma(a) - digamma(a.sum())
        tb, out = timed(jax.jit(lambda k, s0=s0: bootstrap(k, s0, n, 1000)))
        td, dd = timed(lambda k, s0=s0: dpboots(k, s0, 0.01, n, 0.125, num_boot=1000).draws)
        out = np.asarray(out).reshape(-1, a.size)
        rows.append({
            "alpha": name, "Boots s": tb, "DPBoots s": td,
            "Boots mean": np.nanmean(out, 0).round(3).tolist(), "Boots sd": np.nanstd(out, 0).round(3).tolist(),
            "DPBoots median": np.nanmedian(np.asarray(dd), 0).round(3).tolist(),
        })  # fmt: skip
        print(rows[-1], flush=True)
    md = [
        f"# §4.1 bootstraps: seconds per data set (n = {n}, 1 000 draws)",
        "",
        f"dpjax imported from `{dpjax.__file__}`. Two timed calls each after a compiling one.",
        "",
        *table(rows, [(k, lambda r, k=k: r[k]) for k in rows[0]]),
    ]
    write_results(args.name, {"rows": rows, "dpjax": dpjax.__file__, "n": n}, "\n".join(md))


if __name__ == "__main__":
    main()
