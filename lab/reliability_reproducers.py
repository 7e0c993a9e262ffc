"""The reliability probe's reproducers (shared/reviews/reliability.md), each run on the current code:
what it returns now, next to what the probe saw at 4751afd. A row either gives the right answer or a
clear error before any draws."""

import argparse
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from _common import write_results
from numpyro.infer import MCMC

import dpjax
from dpjax.infer import DataAugmentationKernel, exact_abc, run_chain

LAPLACE = dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=2.0)
DLAPLACE = dpjax.DiscreteLaplaceMechanism(epsilon=1.0)


def count_model(n, s=None, mech=LAPLACE, transform=None):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("people", n):
        yes = numpyro.sample("yes", dist.Bernoulli(p))
    records = {"yes": yes if transform is None else transform(yes)}
    dpjax.privatized("count", mech, lambda r: r["yes"], records, plate="people", obs=s)


def poisson_blocks(n, s=None):
    lam = numpyro.sample("lam", dist.Gamma(100.0, 100.0 / 1e5))
    with numpyro.plate("blocks", n):
        x = numpyro.sample("x", dist.Poisson(lam))
    dpjax.privatized("total", DLAPLACE, lambda r: r["x"], {"x": x}, plate="blocks", obs=s)


def da(model, *args, warmup=10, samples=10, **kw):
    mcmc = MCMC(
        DataAugmentationKernel(model, **kw), num_warmup=warmup, num_samples=samples, progress_bar=False
    )
    mcmc.run(jax.random.key(0), *args, extra_fields=("statistics",))
    return mcmc


def poisson_totals():
    s = 10_001_234.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mcmc = da(poisson_blocks, 100, s, warmup=200, samples=300)
    t = np.asarray(mcmc.get_extra_fields()["statistics"]["total"], float) - s
    note = "; warns: moves off" if any("Non-centred" in str(w.message) for w in caught) else ""
    return f"T − s sd {t.std():.2f}, max {np.abs(t).max():.0f}{note}"


def traced_releases():
    def beta_draw(key, records, params):
        k, n = records["yes"].sum(), records["yes"].shape[0]
        return {"p": dist.Beta(1 + k, 1 + n - k).sample(key)}

    kernel = DataAugmentationKernel(count_model, theta_update=beta_draw)
    run = lambda key, s: run_chain(
        kernel, key, (50, s), num_warmup=100, num_samples=200, collect=lambda st: (st.z["p"], st.valid)
    )
    p, valid = jax.jit(jax.vmap(run))(
        jax.random.split(jax.random.key(0), 3), jnp.array([17.4, jnp.nan, jnp.inf])
    )
    means = ", ".join(f"{float(np.mean(x)):.3g}" for x in np.asarray(p))
    return f"p means [{means}], valid {np.asarray(valid).all(1).tolist()}"


def census_release():
    draws = DLAPLACE.release(jax.random.key(0), np.full(100_000, 123_456_789))
    noise = draws - 123_456_789
    return f"P(noise = 0) {np.mean(noise == 0):.3f} (exact 0.462), sd {noise.std():.3f} (exact 1.357), {draws.dtype}"


CASES = [
    ("1", "Poisson blocks λ ≈ 10⁵, DLap ε = 1, default moves", "T − s sd 19.97, max 249", poisson_totals),
    ("2", "records={'yes': 2 * yes}", "DA p mean 0.573 (exact 0.297)",
     lambda: da(lambda n, s: count_model(n, s, transform=lambda y: 2 * y), 60, 34.8)),
    ("3", "release 119 980 108 in float32", "rounded to …112, T − s = +7",
     lambda: da(lambda n, s: count_model(n, s, DLAPLACE), 60, 119_980_108.0)),
    ("4", "DLap release 17.4 (DA)", "NaN acceptance, finite draws", lambda: da(lambda n, s: count_model(n, s, DLAPLACE), 50, 17.4)),
    ("4", "DLap release 17.4 (exact_abc)", "10⁶ proposals, then 'raise the cap'",
     lambda: exact_abc(jax.random.key(0), lambda n, s: count_model(n, s, DLAPLACE), 50, 17.4, num_samples=5, progress_bar=False)),
    ("5", "jit(vmap(run_chain)) over releases [17.4, nan, inf]", "finite draws (p 0.743) for nan/inf", traced_releases),
    ("7", "LaplaceMechanism(epsilon=[1, 1]) on a scalar count", "release counted twice",
     lambda: da(lambda n, s: count_model(n, s, dpjax.LaplaceMechanism(epsilon=[1.0, 1.0], sensitivity=1.0)), 50, 5.0)),
    ("7", "DiscreteLaplaceMechanism(sensitivity=0.5)", "accepted, ε misreported",
     lambda: dpjax.DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=0.5)),
    ("9", "DiscreteLaplace(ε = 1).release at T = 123 456 789", "fl32(T) in 96 %, privacy loss 4.0", census_release),
    ("12", "LaplaceMechanism.release(0, T)", "bare AssertionError", lambda: dpjax.LaplaceMechanism(scale=1.0).release(0, 1.0)),
]  # fmt: skip


def main():
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    rows = []
    for item, case, before, run in CASES:
        start = time.perf_counter()
        try:
            out = run()
            now = out if isinstance(out, str) else f"ran: {type(out).__name__}"
        except Exception as e:  # the point of the table: which error, with which message
            now = f"{type(e).__name__}: {str(e)[:150]}"
        rows.append(
            {"item": item, "case": case, "before": before, "now": now, "seconds": time.perf_counter() - start}
        )
        print(rows[-1], flush=True)
    md = ["# Reliability probe reproducers, before (4751afd, from the probe) and now", "",
          "| item | case | before | now |", "|---|---|---|---|"]  # fmt: skip
    md += [f"| {r['item']} | {r['case']} | {r['before']} | {r['now'].replace('|', '/')} |" for r in rows]
    write_results("reliability_reproducers", {"rows": rows}, "\n".join(md))


if __name__ == "__main__":
    main()
