"""Seconds per data set of the §4.1 bootstraps (Boots and DPBoots, 1 000 draws, n = 5 000, one data set,
compiled once, two timed calls) at α₁, α₂, α₅, for whichever dpjax is imported: an A/B of two commits
puts the older one on the path, e.g. for the change from jax.random.dirichlet to dpjax's sampler:

    git archive 841df28 dpjax | tar -x -C /tmp/base && PYTHONPATH=/tmp/base python benchmarks/bootstrap_ab.py
    python benchmarks/bootstrap_ab.py

Prints the times and the bootstrap means and spreads (the same law either way). No results file: the
figures are in the README.
"""

import time

import jax
import jax.numpy as jnp
from jax.scipy.special import digamma

import dpjax
from dpjax.compositional import dpboots
from dpjax.reproduce.compositional import _bootstrap


def timed(fn):
    """Seconds of two calls with fresh keys after a compiling call, and the last call's output."""
    fn(jax.random.key(0)).block_until_ready()
    seconds = []
    for r in range(2):
        t = time.perf_counter()
        out = fn(jax.random.key(1 + r)).block_until_ready()
        seconds.append(round(time.perf_counter() - t, 3))
    return seconds, out


print(dpjax.__file__)
n = 5000
for name, a in {"α₁": [3.3, 4.4], "α₂": [0.5, 0.5, 0.5], "α₅": [2.2, 3.3, 4.4, 5.5, 6.6]}.items():
    a = jnp.array(a)
    s0 = digamma(a) - digamma(a.sum())
    tb, out = timed(jax.jit(lambda k: _bootstrap(k, s0, n, 1000)))
    td, dd = timed(lambda k: dpboots(k, s0, 0.01, n, 0.125, num_boot=1000).draws)
    out = out.reshape(-1, a.size)
    print(
        name,
        "Boots s",
        tb,
        "DPBoots s",
        td,
        "Boots mean",
        jnp.nanmean(out, 0),
        "sd",
        jnp.nanstd(out, 0),
        "DPBoots median",
        jnp.nanmedian(dd, 0),
        flush=True,
    )
