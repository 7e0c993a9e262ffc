"""Where the README quickstart's cold-process time goes (issue 88): import, the kernel's init (host
checks, the first state, the moves pilot) and the run, each split into tracing, lowering and XLA
compilation through jax.monitoring's duration events.

    PYTHONPATH=. python lab/quickstart_profile.py [--moves 0|auto] [--twice]
"""

import argparse
import collections
import time

t_start = time.perf_counter()
import jax  # noqa: E402
from jax._src import monitoring  # noqa: E402

EVENTS = collections.defaultdict(float)
COUNTS = collections.Counter()


def listen(event, duration, **kw):
    EVENTS[event] += duration
    COUNTS[event] += 1


monitoring.register_event_duration_secs_listener(listen)

import jax.numpy as jnp  # noqa: E402
import numpyro  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
from numpyro.infer import MCMC  # noqa: E402

t_jax = time.perf_counter()
import dpjax  # noqa: E402

t_dpjax = time.perf_counter()


def model(n, release=None):
    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("respondents", n):
        yes = numpyro.sample("yes", dist.Bernoulli(p))
    dpjax.privatized("count", dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=1.0), statistic=lambda r: r["yes"],
                     records={"yes": yes}, plate="respondents", obs=release)


def phase(name, fn):
    before = dict(EVENTS), dict(COUNTS)
    t = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t
    parts = {k.split("/")[-1]: (EVENTS[k] - before[0].get(k, 0.0), COUNTS[k] - before[1].get(k, 0)) for k in EVENTS}
    parts = {k: f"{v:.2f}s/{c}" for k, (v, c) in parts.items() if c and ("duration" in k)}
    print(f"{name:28s} {wall:6.2f} s  {parts}", flush=True)
    return out


ap = argparse.ArgumentParser()
ap.add_argument("--moves", default="auto")
ap.add_argument("--twice", action="store_true")
ap.add_argument("--jit-args", action="store_true")
ap.add_argument("--split-init", action="store_true")
a = ap.parse_args()
moves = "auto" if a.moves == "auto" else int(a.moves)
print(f"import jax+numpyro {t_jax - t_start:.2f} s, dpjax {t_dpjax - t_jax:.2f} s")
kernel = dpjax.infer.DataAugmentationKernel(model, noncentred_moves=moves)
if a.split_init:  # time each step of the kernel's init
    from dpjax.infer import chains, da_core, data_augmentation as da

    def timed(owner, name):
        fn = getattr(owner, name)
        setattr(owner, name, lambda *x, **k: phase(f"  init: {name}", lambda: fn(*x, **k)))

    for name in ("prototype", "model_spec", "check_records_feed_only_releases", "check_release_reads_records",
                 "resolve_moves", "pilot"):
        timed(da, name)
    timed(da.da_core, "check_start")
    timed(chains.PerChainKernel, "_start")
mcmc = MCMC(kernel, num_warmup=1000, num_samples=2000, progress_bar=False, jit_model_args=a.jit_args)
state = phase("init", lambda: kernel.init(jax.random.key(0), 1000, None, (60, jnp.array(17.4)), {}))
if kernel.moves_pilot is not None:
    print("pilot", kernel.moves_pilot)
phase("run (init again + sample)", lambda: mcmc.run(jax.random.key(0), 60, jnp.array(17.4)))
phase("summary", lambda: mcmc.print_summary())
if a.twice:
    phase("second run, new release", lambda: mcmc.run(jax.random.key(1), 60, jnp.array(20.4)))
print(f"total {time.perf_counter() - t_start:.2f} s")
