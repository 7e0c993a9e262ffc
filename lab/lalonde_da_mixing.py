"""Why does DA fail SBC on Gong's Lalonde summaries at ε ≥ 1 with its defaults (issue 89)? Four chains of DA
(1 000 draws; the defaults, warmup 500 and `noncentred_moves="auto"`; warmup 2 000 with 5 non-centred
moves per iteration; that with 30 record steps per iteration, `record_sweeps=30`; and the defaults with
30 record steps) on one release simulated from the prior at each ε (Laplace scales (3, 3, 6, 6)/ε): R̂
and ESS per site, the records' acceptance rate, and dpjax's warnings.
"""

import argparse
import itertools
import warnings

import jax
import numpy as np
from _common import table, write_results
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin
from numpyro.handlers import seed, trace
from numpyro.infer import MCMC

import dpjax
import dpjax.models as m

argparse.ArgumentParser(
    description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
).parse_args()


def lalonde(epsilon, release=None):
    scale = m.LALONDE_MECHANISM.scale / epsilon
    m.lalonde_summaries(
        release, mechanism=dpjax.LaplaceMechanism(sensitivity=m.LALONDE_MECHANISM.sensitivity, scale=scale)
    )


SETTINGS = [
    ("defaults (warmup 500, moves 'auto')", 500, "auto", 1),
    ("warmup 2 000, 5 moves", 2000, 5, 1),
    ("warmup 2 000, 5 moves, 30 record sweeps", 2000, 5, 30),
    ("defaults, 30 record sweeps (the SBC case)", 500, "auto", 30),
]
rows = []
for eps, (setting, warmup, moves, sweeps) in itertools.product([0.1, 1.0, 10.0], SETTINGS):
    release = trace(seed(lalonde, jax.random.key(3))).get_trace(eps)["s_dp"]["value"]
    kernel = dpjax.infer.DataAugmentationKernel(lalonde, noncentred_moves=moves, record_sweeps=sweeps)
    mcmc = MCMC(
        kernel,
        num_warmup=warmup,
        num_samples=1000,
        num_chains=4,
        chain_method="vectorized",
        progress_bar=False,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mcmc.run(jax.random.key(0), eps, release, extra_fields=("record_accept_rate",))
    draws = mcmc.get_samples(group_by_chain=True)
    row = {
        "ε": eps,
        "setting": setting,
        "record acceptance": float(np.mean(mcmc.get_extra_fields()["record_accept_rate"])),
    }
    for k in ("tau", "mu", "sigma_t", "sigma_c"):
        x = np.asarray(draws[k])
        row[f"R̂ {k}"], row[f"ESS {k}"] = float(split_gelman_rubin(x)), float(effective_sample_size(x))
    row["warnings"] = "; ".join(
        sorted({type(w.message).__name__ for w in caught if "dpjax" in type(w.message).__module__})
    )
    rows.append(row)
    print(row, flush=True)
fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else v
columns = [(k, lambda r, k=k: fmt(r[k])) for k in rows[0]]
md = "\n".join(
    [
        "# DA on Gong's Lalonde summaries: mixing per ε and setting (4 chains × 1 000)",
        "",
        *table(rows, columns),
    ]
)
write_results("lalonde_da_mixing", {"rows": rows}, md)
