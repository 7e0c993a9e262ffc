"""The Poisson CDF of the inverse-CDF noise map (float64): ns per value of ``dpjax.infer.poisson_cdf``
(Temme's expansion from a rate of 10³) against JAX's ``gammaincc``, which it replaces there, and the
largest error of each against mpmath's values at 40 digits (``tests/data/poisson_cdf_reference.json``).

    python benchmarks/poisson_cdf.py
"""

import json
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)  # a benchmark process of its own: the map's float64 path

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import best_time, table, write_results  # noqa: E402
from jax.scipy.special import gammaincc  # noqa: E402

from dpjax.infer.poisson_cdf import poisson_cdf  # noqa: E402

VALUES = 10_000
REFERENCE = Path(__file__).resolve().parents[1] / "tests" / "data" / "poisson_cdf_reference.json"


def main():
    ours = jax.jit(poisson_cdf)
    theirs = jax.jit(lambda k, rate: gammaincc(k + 1.0, rate))
    ref = json.loads(REFERENCE.read_text())
    k_ref, rate_ref, cdf_ref = (np.asarray(ref[name]) for name in ("k", "rate", "cdf"))
    err_ours = np.abs(np.asarray(ours(jnp.asarray(k_ref), jnp.asarray(rate_ref))) - cdf_ref)
    err_theirs = np.abs(np.asarray(theirs(jnp.asarray(k_ref), jnp.asarray(rate_ref))) - cdf_ref)
    rows = []
    for rate in (1e2, 1e3, 1e4, 1e5, 1e6, 1e7):
        z = np.random.default_rng(0).uniform(-5, 5, VALUES)  # k within ±5 sd, as the quantile's bisection
        k = jnp.asarray(np.floor(rate + np.sqrt(rate) * z))
        r = jnp.full(VALUES, rate)
        band = (rate_ref >= rate / np.sqrt(10)) & (rate_ref < rate * np.sqrt(10))
        ns = [best_time(f, k, r) / VALUES * 1e9 for f in (ours, theirs)]
        rows.append({
            "rate": f"{rate:g}", "dpjax ns/value": round(ns[0], 1), "gammaincc ns/value": round(ns[1], 1),
            "speed-up": round(ns[1] / ns[0], 1), "reference points": int(band.sum()),
            "dpjax max error": f"{err_ours[band].max():.1e}", "gammaincc max error": f"{err_theirs[band].max():.1e}",
        })  # fmt: skip
    columns = [(name, lambda r, name=name: r[name]) for name in rows[0]]
    md = "\n".join(["# The Poisson CDF of the noise map (float64)", "", *table(rows, columns)])
    write_results("poisson_cdf", {"rows": rows}, md)
    print(md)


if __name__ == "__main__":
    main()
