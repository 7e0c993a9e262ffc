"""Re-run the failing cases of the third reliability review (shared/reviews/reliability_t3.md, a probe
of commit 840f5ad): every row whose verdict is not plain "OK" (WRONG, wrong (warned), crash, PRIVACY,
unclear error), the OK-with-a-note rows C-mcem-mcmc-n25, C-RJ-eps0.01, C-abc-unknown-n,
B-study-resume-*, and two cases the review's text mentions without a row (odp-chain: OpenDP chains
through ``from_opendp``; az-public-outside-plate: ArviZ on a DA run with public data outside the
records plate).

Each case builds the review's model (its priors, n, mechanisms, releases, keys and chain lengths; where
the review gives none, 1 000 warmup and 2 000 draws in 4 vectorized chains), runs it, and decides its
verdict by code: exact answers are computed here with numpy/scipy only (enumeration over counts,
quadrature over T, Gaussian closed forms, double enumeration over n), MCMC draws pass an MCSE z-test
(numpyro's effective_sample_size over the chains, |z| < 4 for the mean and the sd), refusals must be
ValueError/RuntimeError raised in dpjax's own code (and name what the case says they should name), and
the privacy cases search messages and release objects for the confidential values.

Every case runs in its own subprocess (x64 cases with JAX_ENABLE_X64=1, device-count cases with
XLA_FLAGS=--xla_force_host_platform_device_count=N in further subprocesses), with a timeout, so one
failure never stops the run.

    python lab/reliability_t3.py --tag before|after [--only ID ...] [--list]

writes lab/results/reliability_t3_<tag>.json and .md. Run it against the old code with
``PYTHONPATH=/tmp/before`` (a checkout of 840f5ad).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
SCRIPT = Path(__file__).resolve()
X64 = {"JAX_ENABLE_X64": "1"}

# ------------------------------------------------------------------------------------------ registry

CASES: dict[str, dict] = {}


def case(cid, group, review, *, env=None, timeout=600):
    def deco(fn):
        CASES[cid] = dict(id=cid, group=group, review=review, fn=fn, env=env or {}, timeout=timeout)
        return fn

    return deco


# the warnings recorded while the current case runs (set by the child runner)
CAUGHT: list = []


# ------------------------------------------------------------------------------------------ helpers


def setup_jax():
    import jax

    cache = Path(tempfile.gettempdir()) / "rt3_jax_cache"
    try:
        jax.config.update("jax_compilation_cache_dir", str(cache))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 2.0)
    except Exception:  # an older/newer JAX without these options: compile every time
        pass


def dpjax_root() -> Path:
    import dpjax

    return Path(dpjax.__file__).resolve().parent


def readme_text() -> str:
    p = dpjax_root().parent / "README.md"
    return p.read_text() if p.exists() else ""


def exc_text(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    where = raised_at(e)
    return f"{type(e).__name__}: {msg[:200]}" + (f" [{where}]" if where else "")


def raised_at(e: BaseException) -> str:
    """The innermost dpjax frame of the traceback, as file:line."""
    frames = traceback.extract_tb(e.__traceback__)
    for fr in reversed(frames):
        if "/dpjax/" in fr.filename.replace("\\", "/"):
            i = fr.filename.replace("\\", "/").rfind("/dpjax/")
            return f"{fr.filename[i + 1 :]}:{fr.lineno}"
    return ""


def raised_in_dpjax(e: BaseException) -> bool:
    """Whether the exception was raised by dpjax's own code (its innermost frame is in dpjax)."""
    frames = traceback.extract_tb(e.__traceback__)
    return bool(frames) and "/dpjax/" in frames[-1].filename.replace("\\", "/")


def clear_refusal(e: BaseException, *keywords, all_of=False) -> bool:
    """A ValueError/RuntimeError written by dpjax whose message names one of ``keywords``."""
    if not isinstance(e, (ValueError, RuntimeError)) or not raised_in_dpjax(e):
        return False
    if not keywords:
        return True
    msg = str(e).lower()
    hits = [k.lower() in msg for k in keywords]
    return all(hits) if all_of else any(hits)


NOISE_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, FutureWarning, ResourceWarning)


def relevant_warnings():
    out = []
    for w in CAUGHT:
        cat = w.category
        if issubclass(cat, NOISE_WARNINGS):
            continue
        fname = str(w.filename).replace("\\", "/")
        if cat.__module__.startswith("dpjax") or "/dpjax/" in fname:
            out.append(w)
        elif issubclass(cat, UserWarning) and "/numpyro/" not in fname and "/jax/" not in fname:
            out.append(w)
    return out


def warned(*names) -> bool:
    ws = relevant_warnings()
    if not names:
        return bool(ws)
    return any(w.category.__name__ in names for w in ws)


def warning_names() -> str:
    seen, out = set(), []
    for w in CAUGHT:
        if issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning, ResourceWarning)):
            continue
        key = (w.category.__name__, " ".join(str(w.message).split())[:90])
        if key not in seen:
            seen.add(key)
            out.append(f"{key[0]}: {key[1]}")
    return "; ".join(out[:5])


def fmt(x, d=4):
    try:
        return f"{float(x):.{d}f}"
    except Exception:
        return str(x)


MIN_ESS = 100


def mc_check(draws, mean, sd):
    """MCSE z-test of the mean and the sd of ``draws`` (chains, samples) against exact values."""
    import numpy as np
    from numpyro.diagnostics import effective_sample_size

    x = np.asarray(draws, dtype=np.float64)
    if x.ndim == 1:
        x = x[None]
    x = x.reshape(x.shape[0], x.shape[1], -1)[..., 0] if x.ndim > 2 else x
    m, s = float(x.mean()), float(x.std())
    if not np.all(np.isfinite(x)):
        return dict(mean=m, sd=s, ess=float("nan"), z_mean=float("nan"), z_sd=float("nan"), ok=False)
    with np.errstate(all="ignore"):
        ess = float(effective_sample_size(x))
        dev = (x - m) ** 2
        ess2 = float(effective_sample_size(dev))
    if s == 0 or not np.isfinite(ess):
        z_m = 0.0 if m == mean else float("inf")
        z_s = 0.0 if abs(sd) < 1e-3 else float("inf")
    else:
        z_m = (m - mean) / (s / math.sqrt(ess))
        se_var = float(dev.std()) / math.sqrt(ess2 if np.isfinite(ess2) and ess2 > 0 else ess)
        z_s = (s - sd) / (se_var / (2 * s)) if se_var > 0 else float("inf")
    # a z-test on a handful of effective draws (e.g. frozen chains) cannot show agreement: ESS ≥ MIN_ESS
    ok = bool(abs(z_m) < 4 and abs(z_s) < 4 and np.isfinite(ess) and ess >= MIN_ESS)
    return dict(mean=m, sd=s, ess=ess, z_mean=z_m, z_sd=z_s, ok=ok)


def mc_text(name, r, mean, sd):
    return (
        f"{name}: mean {r['mean']:.4f} (exact {mean:.4f}, z {r['z_mean']:+.1f}), sd {r['sd']:.4f} "
        f"(exact {sd:.4f}, z {r['z_sd']:+.1f}), ESS {r['ess']:.0f}"
        + (f" (below {MIN_ESS}: no evidence of agreement)" if not r["ess"] >= MIN_ESS else "")
    )


def cached(name, fn):
    """Run ``fn`` once per script run (shared by cases that judge the same computation)."""
    d = os.environ.get("RT3_CACHE")
    if not d:
        return fn()
    p = Path(d) / f"{name}.json"
    if p.exists():
        return json.loads(p.read_text())
    out = fn()
    p.write_text(json.dumps(out))
    return out


def worker(args, env_extra, timeout=900):
    env = dict(os.environ)
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--worker", *args],
        env=env,
        timeout=timeout,
        capture_output=True,
        text=True,
    )


# ---------------------------------------------------------------------------- exact answers (numpy/scipy)


def _normalise(lw):
    import numpy as np

    w = np.exp(lw - np.max(lw))
    return w / w.sum()


def exact_count_posterior(n, s, lap_scale, a=1.0, b=1.0):
    """p | s for p ~ Beta(a, b), K ~ Binomial(n, p), s = K + Laplace(lap_scale): enumeration over K."""
    import numpy as np
    from scipy.special import betaln, gammaln

    k = np.arange(n + 1)
    lw = (
        gammaln(n + 1)
        - gammaln(k + 1)
        - gammaln(n - k + 1)
        + betaln(a + k, b + n - k)
        - np.abs(s - k) / lap_scale
    )
    w = _normalise(lw)
    m = w @ ((a + k) / (a + b + n))
    m2 = w @ ((a + k) * (a + k + 1) / ((a + b + n) * (a + b + n + 1)))
    return float(m), float(math.sqrt(m2 - m * m))


def exact_count_mle(n, s, lap_scale):
    """MLE of p for K ~ Binomial(n, p), s = K + Laplace(lap_scale), and its observed-information sd."""
    import numpy as np
    from scipy.optimize import minimize_scalar
    from scipy.special import gammaln, logsumexp

    k = np.arange(n + 1)
    c = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1) - np.abs(s - k) / lap_scale

    def nll(p):
        return -logsumexp(c + k * np.log(p) + (n - k) * np.log1p(-p))

    r = minimize_scalar(nll, bounds=(1e-10, 1 - 1e-10), method="bounded", options=dict(xatol=1e-12))
    p, h = float(r.x), 1e-5
    d2 = (nll(p + h) - 2 * nll(p) + nll(p - h)) / h**2
    return p, float(1 / math.sqrt(d2)) if d2 > 0 else float("nan")


def exact_unknown_n(s, n_dp, scale_s, scale_n, log_prior_n, n_max, n_min=0, stat="sum", a=1.0, b=1.0):
    """p ~ Beta(a, b), n from log_prior_n on n_min..n_max, K ~ Binomial(n, p); releases
    s = T + Laplace(scale_s) with T = K ('sum') or K / n ('mean'), n_dp = n + Laplace(scale_n).
    Double enumeration over (n, K). Returns E p, sd p, E n, sd n, and P(n = n_max)."""
    import numpy as np
    from scipy.special import betaln, gammaln

    n = np.arange(n_min, n_max + 1)[:, None].astype(float)
    k = np.arange(n_max + 1)[None, :].astype(float)
    ok = k <= n
    kk, nn = np.where(ok, k, 0), np.where(ok, n, 0)
    lw = gammaln(nn + 1) - gammaln(kk + 1) - gammaln(nn - kk + 1) + betaln(a + kk, b + nn - kk) - betaln(a, b)
    t = k if stat == "sum" else np.where(n > 0, k / np.maximum(n, 1), 0.0)
    lw = lw - np.abs(s - t) / scale_s
    if n_dp is not None:
        lw = lw - np.abs(n_dp - n) / scale_n
    lw = lw + np.array([log_prior_n(int(m)) for m in n[:, 0]])[:, None]
    lw = np.where(ok, lw, -np.inf)
    w = _normalise(lw)
    pm = float(np.sum(w * (a + k) / (a + b + n)))
    p2 = float(np.sum(w * (a + k) * (a + k + 1) / ((a + b + n) * (a + b + n + 1))))
    wn = w.sum(1)
    nm = float(wn @ n[:, 0])
    n2 = float(wn @ n[:, 0] ** 2)
    return pm, math.sqrt(p2 - pm * pm), nm, math.sqrt(n2 - nm * nm), float(wn[-1])


def exact_poisson_K(a, b, blocks, residual, lap_scale=1.0):
    """K = Σ x for `blocks` Poisson(λ) records, λ ~ Gamma(a, rate b), release residual = K + Laplace
    (pmf ∝ exp(-|residual - K| / scale) on the integers: discrete or continuous Laplace alike)."""
    import numpy as np
    from scipy.special import gammaln

    K = np.arange(0, int(max(400, 4 * residual)))
    lw = (
        gammaln(a + K)
        - gammaln(a)
        - gammaln(K + 1)
        + a * np.log(b / (b + blocks))
        + K * np.log(blocks / (b + blocks))
    )
    lw = lw - np.abs(residual - K) / lap_scale
    w = _normalise(lw)
    m = float(w @ K)
    return m, math.sqrt(float(w @ K**2) - m * m)


def exact_poisson_lambda(a, b, blocks, s, lap_scale):
    """λ | s for λ ~ Gamma(a, rate b), K ~ Poisson(blocks λ), s = K + Laplace(lap_scale)."""
    import numpy as np
    from scipy.special import gammaln

    mean_k = a / b * blocks
    sd_k = math.sqrt(mean_k + a / b**2 * blocks**2)
    lo = max(0, int(min(s, mean_k) - 12 * sd_k - 60 * lap_scale))
    K = np.arange(lo, int(max(s, mean_k) + 12 * sd_k + 60 * lap_scale))
    lw = (
        gammaln(a + K)
        - gammaln(a)
        - gammaln(K + 1)
        + a * np.log(b / (b + blocks))
        + K * np.log(blocks / (b + blocks))
    )
    lw = lw - np.abs(s - K) / lap_scale
    w = _normalise(lw)
    mu = (a + K) / (b + blocks)
    m = float(w @ mu)
    v = float(w @ ((a + K) / (b + blocks) ** 2 + mu**2)) - m * m
    return m, math.sqrt(v)


# ================================================================================= A. old failures' variants


def thstat_model(n, s=None):
    import numpyro
    import numpyro.distributions as dist

    import dpjax

    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    with numpyro.plate("people", n):
        u = numpyro.sample("u", dist.Normal(0.0, 1.0))
    dpjax.privatized(
        "total", dpjax.LaplaceMechanism(scale=2.0), lambda r: mu + r["u"], {"u": u}, plate="people", obs=s
    )


def exact_thstat():
    """μ ~ N(0, 1), T | μ ~ N(20 μ, 20), s = T + Laplace(2) at s = 10: quadrature over T."""
    import numpy as np

    T = np.linspace(10 - 120, 10 + 120, 240_001)
    d = np.exp(-0.5 * T**2 / 420) * np.exp(-np.abs(10 - T) / 2)
    Z = np.trapezoid(d, T)
    m = np.trapezoid(d * 20 * T / 420, T) / Z
    m2 = np.trapezoid(d * (20 / 420 + (20 * T / 420) ** 2), T) / Z
    return float(m), float(math.sqrt(m2 - m * m))


def _thstat_da(**kw):
    import jax
    import numpy as np
    from numpyro.infer import MCMC

    import dpjax

    mean, sd = exact_thstat()
    expected = (
        f"exact posterior of mu {mean:.3f} ± {sd:.3f} (quadrature over T), or a refusal naming the θ site"
    )
    try:
        mcmc = MCMC(dpjax.infer.DataAugmentationKernel(thstat_model, **kw), num_warmup=1000, num_samples=2000,
                    progress_bar=False)  # fmt: skip
        mcmc.run(jax.random.key(0), 20, 10.0)
    except Exception as e:
        ok = clear_refusal(e, "mu", "statistic", "θ")
        return dict(expected=expected, observed=exc_text(e), verdict="OK" if ok else "crash")
    r = mc_check(np.asarray(mcmc.get_samples(group_by_chain=True)["mu"]), mean, sd)
    verdict = "OK" if r["ok"] else ("wrong (warned)" if warned() else "WRONG")
    return dict(expected=expected, observed=mc_text("mu", r, mean, sd), verdict=verdict)


@case("A-thstat-NC0", "A", "WRONG")
def a_thstat_nc0():
    return _thstat_da(noncentred_moves=0)


@case("A-thstat-auto", "A", "WRONG")
def a_thstat_auto():
    return _thstat_da()


@case("A-nonint-jit-DL-stat", "A", "wrong (warned)")
def a_nonint_jit_dl_stat():
    import jax
    import jax.numpy as jnp
    import numpy as np
    import numpyro
    import numpyro.distributions as dist

    import dpjax
    from dpjax.infer import DataAugmentationKernel, run_chain

    def model(n, s=None):
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        with numpyro.plate("people", n):
            yes = numpyro.sample("yes", dist.Bernoulli(p))
        dpjax.privatized("count", dpjax.DiscreteLaplaceMechanism(epsilon=1.0), lambda r: r["yes"] * 0.5,
                         {"yes": yes}, plate="people", obs=s)  # fmt: skip

    expected = (
        "valid=False (an impossible non-integer T for an integer mechanism) / NaN draws, or a clear error"
    )
    try:
        kernel = DataAugmentationKernel(model)  # NUTS θ-step (the review reports its acceptance)
        constrain = kernel.postprocess_fn((30,), {})
        run = lambda key, s: run_chain(kernel, key, (30, s), num_warmup=100, num_samples=200,
                                       collect=lambda st: (constrain(st.z)["p"], st.valid, st.accept_prob))  # fmt: skip
        p, valid, acc = jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(0), 2), jnp.array([4.0, 4.0]))
        p, valid, acc = np.asarray(p), np.asarray(valid), np.asarray(acc)
    except Exception as e:
        ok = clear_refusal(e, "integer")
        return dict(expected=expected, observed=exc_text(e), verdict="OK" if ok else "unclear error")
    obs = "; ".join(
        f"chain {i}: p mean {np.nanmean(p[i]):.3f} sd {np.nanstd(p[i]):.3f}, NaN {int(np.isnan(p[i]).sum())}/200, "
        f"valid {bool(valid[i].all())}, acc {np.nanmean(acc[i]):.3f}"
        for i in range(2)
    )
    if not valid.any() and np.isnan(p).all():
        verdict = "OK"
    else:
        verdict = "wrong (warned)" if warned() else "WRONG"
    return dict(expected=expected, observed=obs, verdict=verdict)


@case("A-vec-eps-(1,)", "A", "PRIVACY")
def a_vec_eps():
    import jax
    import jax.numpy as jnp
    import numpy as np
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC

    import dpjax

    expected = (
        "refused (ε shape (1,) against T of shape (3,)), or a guarantee of ε = 3 (three entries at ε = 1)"
    )
    try:
        mech = dpjax.LaplaceMechanism(epsilon=[1.0], sensitivity=1.0)

        def model(n, s=None):
            mu = numpyro.sample("mu", dist.Normal(0.0, 3.0).expand([3]).to_event(1))
            with numpyro.plate("people", n):
                x = numpyro.sample("x", dist.Normal(mu, 1.0).to_event(1))
            dpjax.privatized("total", mech, lambda r: r["x"], {"x": x}, plate="people", obs=s)

        mcmc = MCMC(
            dpjax.infer.DataAugmentationKernel(model), num_warmup=50, num_samples=50, progress_bar=False
        )
        mcmc.run(jax.random.key(0), 20, jnp.array([1.0, 2.0, 3.0]))
        _ = np.asarray(mcmc.get_samples()["mu"])
    except Exception as e:
        ok = clear_refusal(e, "shape", "epsilon", "ε")
        return dict(expected=expected, observed=exc_text(e), verdict="OK" if ok else "unclear error")
    g = mech.guarantee
    eps = float(np.sum(g.epsilon))
    obs = f"ran; guarantee {g} (three entries each released with scale {np.asarray(mech.scale).tolist()})"
    return dict(expected=expected, observed=obs, verdict="OK" if eps >= 3 - 1e-9 else "PRIVACY")


# ---- x64: dpjax's int32 Poisson records


def _poisson_K_model(stat, mech, blocks=10, prior=(50.0, 10.0)):
    import numpyro
    import numpyro.distributions as dist

    import dpjax

    def model(s=None):
        lam = numpyro.sample("lam", dist.Gamma(*prior))
        with numpyro.plate("blocks", blocks):
            x = numpyro.sample("x", dist.Poisson(lam))
        dpjax.privatized("total", mech, stat, {"x": x}, plate="blocks", obs=s)

    return model


def _gamma_update(a, b, blocks):
    import numpyro.distributions as dist

    return lambda key, records, params: {"lam": dist.Gamma(a + records["x"].sum(), b + blocks).sample(key)}


def _K_case(stat, mech, release, residual, expected_extra, lap_scale=1.0, refusal_ok=()):
    """10 Poisson records, λ ~ Gamma(50, 10); the posterior of K = Σx (records stored) against the
    exact one given the release's residual over the public offset."""
    import jax
    import numpy as np
    from numpyro.infer import MCMC

    import dpjax

    mean, sd = exact_poisson_K(50.0, 10.0, 10, residual, lap_scale)
    expected = f"exact posterior of K = Σx: {mean:.2f} ± {sd:.2f}{expected_extra}"
    try:
        model = _poisson_K_model(stat, mech)
        kern = dpjax.infer.DataAugmentationKernel(model, theta_update=_gamma_update(50.0, 10.0, 10),
                                                  store_records=True)  # fmt: skip
        mcmc = MCMC(kern, num_warmup=1000, num_samples=2000, num_chains=4, chain_method="vectorized",
                    progress_bar=False)  # fmt: skip
        mcmc.run(jax.random.key(0), release)
        x = np.asarray(mcmc.get_samples(group_by_chain=True)["x"])
    except Exception as e:
        if refusal_ok and clear_refusal(e, *refusal_ok):
            return dict(expected=expected, observed=exc_text(e), verdict="OK")
        return dict(expected=expected, observed=exc_text(e),
                    verdict="unclear error" if isinstance(e, (ValueError, RuntimeError)) else "crash")  # fmt: skip
    K = x.reshape(x.shape[0], x.shape[1], -1).sum(-1).astype(np.float64)
    r = mc_check(K, mean, sd)
    obs = mc_text("K", r, mean, sd) + f"; record dtype {x.dtype}; odd-K share {np.mean(K % 2 == 1):.2f}"
    verdict = "OK" if r["ok"] else ("wrong (warned)" if warned() else "WRONG")
    return dict(expected=expected, observed=obs, verdict=verdict)


@case("A-x64-int32-offset", "A", "wrong (warned)", env=X64)
def a_x64_int32_offset():
    import dpjax

    return _K_case(lambda r: r["x"] + 10**14, dpjax.DiscreteLaplaceMechanism(epsilon=1.0), 10**15 + 47, 47,
                   " (integer offset 10**14 per record, T ≈ 1e15 < 2**53: exact integers in int64)",
                   refusal_ok=("int32", "overflow"))  # fmt: skip


@case("A-x64-2p53-float-offset", "A", "WRONG", env=X64)
def a_x64_2p53():
    import jax.numpy as jnp

    import dpjax

    OFF = 900719925474100  # 10 records: T = 2**53 + 8 + K
    return _K_case(lambda r: r["x"].astype(jnp.float64) + OFF, dpjax.DiscreteLaplaceMechanism(epsilon=1.0),
                   10 * OFF + 47, 47, ", or a ValueError (float64 holds integers exactly only to 2**53)",
                   refusal_ok=("2**53", "2⁵³", "x64", "float64", "spacing", "exact integers"))  # fmt: skip


@case("A-x64-cont-1e17-float-offset", "A", "WRONG", env=X64)
def a_x64_cont_1e17():
    import jax.numpy as jnp
    import numpy as np

    import dpjax

    release = np.float64(1e17 + 47)  # float64 spacing 16 at 1e17: the release is 1e17 + 48
    residual = int(release) - 10 * int(1e16)
    return _K_case(lambda r: r["x"].astype(jnp.float64) + 1e16, dpjax.LaplaceMechanism(scale=1.0), release,
                   residual, f" (release 1e17+47 is {int(release)} in float64: residual {residual}), or a "
                   "ValueError (spacing 16 > scale/100)",
                   refusal_ok=("spacing", "float64", "x64", "precision"))  # fmt: skip


def _int32_da_run(w, scale, s):
    import jax
    import numpy as np
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC

    import dpjax

    def model(s=None):
        lam = numpyro.sample("lam", dist.Gamma(4.0, 4.0 / 3000.0))
        with numpyro.plate("blocks", 20):
            x = numpyro.sample("x", dist.Poisson(lam))
        dpjax.privatized("total", dpjax.LaplaceMechanism(scale=scale), lambda r: r["x"] * w, {"x": x},
                         plate="blocks", obs=s)  # fmt: skip

    upd = lambda k, r, p: {"lam": dist.Gamma(4.0 + r["x"].sum(), 4.0 / 3000.0 + 20).sample(k)}
    m = MCMC(dpjax.infer.DataAugmentationKernel(model, theta_update=upd, noncentred_moves=0), num_warmup=300,
             num_samples=600, progress_bar=False)  # fmt: skip
    m.run(jax.random.key(0), s)
    return np.asarray(m.get_samples(group_by_chain=True)["lam"])


@case("A-x64-int32-DA", "A", "WRONG", env=X64)
def a_x64_int32_da():
    mean, sd = exact_poisson_lambda(4.0, 4.0 / 3000.0, 20, 60_123.0, 5.0)
    expected = (
        f"identical posteriors of lam for the same release in units 1 and 1e-6: exact {mean:.2f} ± {sd:.2f}"
    )
    parts, oks = [], []
    for w, scale, s in [(1, 5.0, 60_123.0), (10**6, 5e6, 60_123e6)]:
        try:
            lam = _int32_da_run(w, scale, s)
        except Exception as e:
            parts.append(f"w={w}: {exc_text(e)}")
            oks.append(clear_refusal(e, "int32", "overflow"))
            continue
        r = mc_check(lam, mean, sd)
        parts.append(f"w={w:g}: " + mc_text("lam", r, mean, sd))
        oks.append(r["ok"])
    verdict = "OK" if all(oks) else ("wrong (warned)" if warned() else "WRONG")
    return dict(expected=expected, observed="; ".join(parts), verdict=verdict)


@case("A-x64-int32-dtype", "A", "WRONG", env=X64)
def a_x64_int32_dtype():
    import numpyro
    import numpyro.distributions as dist
    from numpyro import handlers

    from dpjax.infer.samplers import fast_sampling

    def model():
        lam = numpyro.sample("lam", dist.Gamma(4.0, 4.0 / 3000.0))
        with numpyro.plate("blocks", 20):
            numpyro.sample("x", dist.Poisson(lam))

    t1 = handlers.trace(handlers.seed(model, 0)).get_trace()["x"]["value"].dtype
    t2 = handlers.trace(handlers.seed(fast_sampling(model), 0)).get_trace()["x"]["value"].dtype
    obs = f"numpyro Poisson record dtype {t1}; dpjax fast_sampling record dtype {t2}"
    return dict(
        expected="the same dtype (int64 under x64)", observed=obs, verdict="OK" if t1 == t2 else "WRONG"
    )


@case("A-x64-int32-abc", "A", "unclear error", env=X64, timeout=900)
def a_x64_int32_abc():
    import jax
    import numpy as np
    import numpyro
    import numpyro.distributions as dist

    import dpjax

    def make(w, scale):
        def model(s=None):
            lam = numpyro.sample("lam", dist.Gamma(400.0, 400.0 / 3000.0))
            with numpyro.plate("blocks", 20):
                x = numpyro.sample("x", dist.Poisson(lam))
            dpjax.privatized("total", dpjax.LaplaceMechanism(scale=scale), lambda r: r["x"] * w, {"x": x},
                             plate="blocks", obs=s)  # fmt: skip

        return model

    mean, sd = exact_poisson_lambda(400.0, 400.0 / 3000.0, 20, 60_123.0, 500.0)
    expected = (f"identical posteriors of lam (the same release in units 1 and 1e-6): exact {mean:.1f} ± {sd:.1f}; "
                "or a clear error naming the integer overflow")  # fmt: skip
    parts, oks, unclear = [], [], False
    for w, scale, s in [(1, 500.0, 60_123.0), (10**6, 5e8, 60_123e6)]:
        try:
            out = dpjax.infer.exact_abc(jax.random.key(0), make(w, scale), s, num_samples=1000, max_seconds=120,
                                        progress_bar=False)  # fmt: skip
        except Exception as e:
            parts.append(f"w={w:g}: {exc_text(e)}")
            ok = clear_refusal(e, "int32", "overflow", "dtype")
            oks.append(ok)
            unclear = unclear or not ok
            continue
        r = mc_check(np.asarray(out.samples["lam"])[None], mean, sd)
        parts.append(f"w={w:g}: acceptance {out.acceptance_rate:.3g}; " + mc_text("lam", r, mean, sd))
        oks.append(r["ok"])
    if all(oks):
        verdict = "OK"
    elif unclear:
        verdict = "unclear error"
    else:
        verdict = "wrong (warned)" if warned() else "WRONG"
    return dict(expected=expected, observed="; ".join(parts), verdict=verdict)


@case("A-thstat-scale", "A", "WRONG")
def a_thstat_scale():
    import jax
    import numpy as np
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC
    from scipy.stats import binom, gamma

    import dpjax

    def model(n, s=None):
        w = numpyro.sample("w", dist.Gamma(4.0, 4.0))
        with numpyro.plate("people", n):
            x = numpyro.sample("x", dist.Bernoulli(0.3))
        dpjax.privatized("total", dpjax.LaplaceMechanism(scale=1.0), lambda r: w * r["x"], {"x": x},
                         plate="people", obs=s)  # fmt: skip

    grid = np.linspace(1e-6, 8, 80_001)
    K = np.arange(41)
    lik = (binom.pmf(K, 40, 0.3)[None] * np.exp(-np.abs(24 - grid[:, None] * K[None]))).sum(1)
    d = gamma.pdf(grid, 4, scale=0.25) * lik
    d /= np.trapezoid(d, grid)
    mean = float(np.trapezoid(d * grid, grid))
    sd = float(math.sqrt(np.trapezoid(d * grid**2, grid) - mean**2))
    expected = f"exact posterior of w {mean:.3f} ± {sd:.3f} (grid; prior mean 1.0), or a refusal naming 'w'"
    try:
        mcmc = MCMC(dpjax.infer.DataAugmentationKernel(model), num_warmup=1000, num_samples=2000, num_chains=4,
                    chain_method="vectorized", progress_bar=False)  # fmt: skip
        mcmc.run(jax.random.key(0), 40, 24.0)
    except Exception as e:
        ok = clear_refusal(e, "'w'", "statistic", "θ")
        return dict(expected=expected, observed=exc_text(e), verdict="OK" if ok else "crash")
    r = mc_check(np.asarray(mcmc.get_samples(group_by_chain=True)["w"]), mean, sd)
    verdict = "OK" if r["ok"] else ("wrong (warned)" if warned() else "WRONG")
    return dict(expected=expected, observed=mc_text("w", r, mean, sd), verdict=verdict)


@case("A-thstat-latent-n", "A", "WRONG", timeout=900)
def a_thstat_latent_n():
    import jax
    import jax.numpy as jnp
    import numpy as np
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC

    import dpjax

    cap = 80

    def model(s=None, n_dp=None):
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        n = numpyro.sample("n", dist.DiscreteUniform(1, cap))
        people = dpjax.records_plate("people", n, cap)
        with people:
            x = numpyro.sample("x", dist.Bernoulli(p))
        dpjax.privatized("mean", dpjax.LaplaceMechanism(scale=0.05), lambda r: r["x"] / n, {"x": x},
                         plate=people, obs=s)  # fmt: skip
        dpjax.privatized("n_dp", dpjax.LaplaceMechanism(scale=3.0), lambda r: jnp.ones(()), {"x": x},
                         plate=people, obs=n_dp)  # fmt: skip

    settings = [(0.3, 20.0), (0.7, 10.0)]
    exact = {
        k: exact_unknown_n(k[0], k[1], 0.05, 3.0, lambda m: 0.0, cap, n_min=1, stat="mean") for k in settings
    }
    expected = (
        "exact posterior of p by double enumeration: "
        + "; ".join(
            f"n_dp={nd:g}, s={s:g}: {exact[(s, nd)][0]:.3f} ± {exact[(s, nd)][1]:.3f}" for s, nd in settings
        )
        + " (for every key); or a refusal naming 'n'"
    )
    parts, oks = [], []
    for s, nd in settings:
        for key in (0, 1):
            try:
                mcmc = MCMC(dpjax.infer.ReversibleJumpKernel(model), num_warmup=1000, num_samples=2000,
                            progress_bar=False)  # fmt: skip
                mcmc.run(jax.random.key(key), s, nd)
            except Exception as e:
                ok = clear_refusal(e, "'n'", "statistic")
                return dict(expected=expected, observed=exc_text(e), verdict="OK" if ok else "crash")
            smp = mcmc.get_samples(group_by_chain=True)
            pm, psd = exact[(s, nd)][0], exact[(s, nd)][1]
            r = mc_check(np.asarray(smp["p"]), pm, psd)
            oks.append(r["ok"])
            parts.append(f"n_dp={nd:g}, s={s:g}, key {key}: p {r['mean']:.3f} (exact {pm:.3f}, z {r['z_mean']:+.1f}), "
                         f"n mean {float(np.mean(smp['n'])):.1f} (exact {exact[(s, nd)][2]:.1f})")  # fmt: skip
    verdict = "OK" if all(oks) else ("wrong (warned)" if warned() else "WRONG")
    return dict(expected=expected, observed="; ".join(parts), verdict=verdict)


def _mcem_thstat(e_step, **kw):
    import jax

    import dpjax

    expected = "the exact MLE of mu, s/n = 0.5000 (T | mu ~ N(20 mu, 20) is symmetric about 20 mu), or a refusal naming mu"
    try:
        res = dpjax.infer.mcem(jax.random.key(0), thstat_model, {"mu": 0.0}, 20, 10.0, e_step=e_step,
                               progress_bar=False, **kw)  # fmt: skip
        mu = float(res.params["mu"])
    except Exception as e:
        ok = clear_refusal(e, "mu", "statistic", "θ")
        return dict(expected=expected, observed=exc_text(e), verdict="OK" if ok else "crash")
    obs = f"mcem(e_step={e_step!r}) mu_hat {mu:.4f} (exact MLE 0.5000), {len(res.history['mu'])} iterations"
    verdict = "OK" if abs(mu - 0.5) < 0.05 else ("wrong (warned)" if warned() else "WRONG")
    return dict(expected=expected, observed=obs, verdict=verdict)


@case("A-thstat-mcem-importance", "A", "WRONG")
def a_thstat_mcem_is():
    return _mcem_thstat("importance", num_particles=(1000, 10_000), tolerances=(1e-2, 1e-3))


@case("A-thstat-mcem-mcmc", "A", "crash")
def a_thstat_mcem_mcmc():
    return _mcem_thstat("mcmc", num_particles=(1000, 4000), tolerances=(1e-2, 3e-3))


# ================================================================================= B. new engines, bad input


def unknown_n_bernoulli(n_prior, capacity, mech_s, mech_n):
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    import dpjax

    def model(s=None, n_dp=None):
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        n = numpyro.sample("n", n_prior)
        people = dpjax.records_plate("people", n, capacity)
        with people:
            x = numpyro.sample("x", dist.Bernoulli(p))
        dpjax.privatized("count", mech_s, lambda r: r["x"], {"x": x}, plate=people, obs=s)
        dpjax.privatized("n_dp", mech_n, lambda r: jnp.ones(()), {"x": x}, plate=people, obs=n_dp)

    return model


@case("B-RJ-neg-prior", "B", "WRONG")
def b_rj_neg_prior():
    import jax
    import numpy as np
    import numpyro.distributions as dist
    from numpyro.infer import MCMC

    import dpjax

    lap = dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    model = unknown_n_bernoulli(dist.DiscreteUniform(-10, 50), 60, lap, lap)
    expected = "a ValueError (n must be ≥ 0), or draws with n ≥ 0 only"
    try:
        mcmc = MCMC(
            dpjax.infer.ReversibleJumpKernel(model), num_warmup=300, num_samples=300, progress_bar=False
        )
        mcmc.run(jax.random.key(0), 1.0, 2.0)
        n = np.asarray(mcmc.get_samples()["n"])
    except Exception as e:
        ok = clear_refusal(e, "n")
        return dict(expected=expected, observed=exc_text(e), verdict="OK" if ok else "unclear error")
    obs = f"n mean {n.mean():.3f} sd {n.std():.3f} (min {n.min()}, max {n.max()}); share of draws with n < 0: {np.mean(n < 0):.3f}"
    return dict(expected=expected, observed=obs, verdict="OK" if n.min() >= 0 else "WRONG")


def plate_index_model(capacity, cov=False):
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    import dpjax

    lap2 = dpjax.LaplaceMechanism(scale=2.0)

    def model(s_dp=None, n_dp=None):
        b = numpyro.sample("b", dist.Normal(0.0, 1.0))
        n = numpyro.sample("n", dist.DiscreteUniform(1, capacity))
        people = dpjax.records_plate("people", n, capacity)
        if cov:
            c = 0.1 * jnp.arange(capacity)  # a public covariate sized by the capacity
            with people:
                x = numpyro.sample("x", dist.Normal(b + c, 1.0))
        else:
            with people as i:  # record i has mean b + 0.1 i
                x = numpyro.sample("x", dist.Normal(b + 0.1 * i, 1.0))
        dpjax.privatized("total", lap2, lambda r: r["x"], {"x": x}, plate=people, obs=s_dp)
        dpjax.privatized("n_dp", lap2, lambda r: jax.numpy.ones(()), {"x": x}, plate=people, obs=n_dp)

    return model


def exact_plate_index(cap=60, s=60.0, ndp=31.0, bs=2.0, bn=2.0):
    """b ~ N(0, 1), n ~ U{1..cap}, x_i ~ N(b + 0.1 i, 1) for i < n, s = Σx + Laplace(2), n_dp = n +
    Laplace(2): enumeration over n, quadrature over T (T | n ~ N(0.05 n(n-1), n + n²))."""
    import numpy as np

    T = np.linspace(s - 100, s + 100, 40_001)
    rows = []
    for n in range(1, cap + 1):
        c, v = 0.1 * n * (n - 1) / 2, n + n * n
        d = np.exp(-0.5 * (T - c) ** 2 / v) / np.sqrt(2 * np.pi * v) * np.exp(-np.abs(s - T) / bs) / (2 * bs)
        m = np.trapezoid(d, T)
        eb = np.trapezoid(d * n * (T - c) / (n * n + n), T) / m
        rows.append((n, m * np.exp(-abs(ndp - n) / bn), eb))
    rows = np.array(rows)
    w = rows[:, 1] / rows[:, 1].sum()
    nm = float(w @ rows[:, 0])
    return nm, float(math.sqrt(w @ rows[:, 0] ** 2 - nm * nm)), float(w @ rows[:, 2])


def _plate_index_run(noncentred, cov=False):
    import jax
    import numpy as np
    from numpyro.infer import MCMC

    import dpjax

    def go():
        try:
            kw = {} if noncentred is None else dict(noncentred_moves=noncentred)
            m = MCMC(dpjax.infer.ReversibleJumpKernel(plate_index_model(60, cov), **kw), num_warmup=1000,
                     num_samples=3000, progress_bar=False)  # fmt: skip
            m.run(jax.random.key(1), 60.0, 31.0)
            smp = m.get_samples(group_by_chain=True)
            return dict(n=np.asarray(smp["n"], float).tolist(), b=np.asarray(smp["b"], float).tolist(),
                        warnings=[w.category.__name__ for w in relevant_warnings()])  # fmt: skip
        except Exception as e:
            return dict(error=exc_text(e), type=type(e).__name__, clear=clear_refusal(e, "capacity", "plate", "slot", "index"),
                        dpjax=raised_in_dpjax(e))  # fmt: skip

    return cached(f"plate_index_{noncentred}_{cov}", go)


def _plate_index_case(noncentred, only_n=False, cov=False):
    import numpy as np

    nm, nsd, eb = exact_plate_index()
    expected = (
        f"exact posterior of n {nm:.2f} ± {nsd:.2f}, E b {eb:.3f} (enumeration over n, quadrature over T)"
    )
    if only_n:
        expected = f"|z| < 4 for n against the exact {nm:.2f} ± {nsd:.2f}"
    if cov:
        expected = ("a clear error that records must not use arrays sized by the capacity, or the exact posterior "
                    f"n {nm:.2f} ± {nsd:.2f}")  # fmt: skip
    out = _plate_index_run(noncentred, cov)
    if "error" in out:
        if out["clear"]:
            verdict = "OK"
        elif cov or out["type"] in ("ValueError", "RuntimeError"):
            verdict = "unclear error"
        else:
            verdict = "crash"
        return dict(expected=expected, observed=out["error"], verdict=verdict)
    n, b = np.asarray(out["n"]), np.asarray(out["b"])
    rn = mc_check(n, nm, nsd)
    # E b: z of the mean only (its exact sd is not computed)
    from numpyro.diagnostics import effective_sample_size

    ess_b = float(effective_sample_size(b))
    zb = (b.mean() - eb) / (b.std() / math.sqrt(ess_b))
    obs = mc_text("n", rn, nm, nsd) + f"; b mean {b.mean():.3f} (exact {eb:.3f}, z {zb:+.1f})"
    ok = (abs(rn["z_mean"]) < 4) if only_n else (rn["ok"] and abs(zb) < 4)
    if out["warnings"]:
        obs += " ⟨warnings: " + ", ".join(sorted(set(out["warnings"]))) + "⟩"
    verdict = "OK" if ok else ("wrong (warned)" if out["warnings"] else "WRONG")
    return dict(expected=expected, observed=obs, verdict=verdict)


@case("B-RJ-plate-index", "B", "WRONG")
def b_rj_plate_index():
    return _plate_index_case(None)


@case("B-RJ-plate-index-nc0", "B", "WRONG")
def b_rj_plate_index_nc0():
    return _plate_index_case(0)


@case("B-RJ-cov-array", "B", "unclear error")
def b_rj_cov_array():
    return _plate_index_case(None, cov=True)


@case("B-RJ-plate-index-z", "B", "WRONG")
def b_rj_plate_index_z():
    return _plate_index_case(None, only_n=True)


S_OK = [-1.6968868970870972, -1.206357717514038, -0.8774945735931396]  # ψ(α) − ψ(α₀), α = (2.2, 3.3, 4.4)


def _dpboots_tiny(n):
    import jax
    import jax.numpy as jnp
    import numpy as np

    from dpjax import compositional as comp

    expected = "wide finite intervals without NaN draws, or a clear error / warning when bootstrap draws fail"
    parts, verdicts = [], []
    stats = [("s_ok", S_OK)] + ([("README item 10", [-1.3, -1.1, -0.95])] if n == 1 else [])
    for name, s in stats:
        try:
            n_warn = len(relevant_warnings())
            res = comp.dpboots(jax.random.key(0), jnp.array(s), 0.01, n, 0.5, num_boot=50)
            draws, lo, hi = np.asarray(res.draws), np.asarray(res.lower), np.asarray(res.upper)
        except Exception as e:
            parts.append(f"{name}: {exc_text(e)}")
            verdicts.append("OK" if clear_refusal(e) else "unclear error")
            continue
        nan = int(np.isnan(draws).sum())
        parts.append(
            f"{name}: lower {np.round(lo, 3).tolist()} upper {np.round(hi, 3).tolist()}, NaN draw entries {nan} of {draws.size}"
        )
        new_warn = len(relevant_warnings()) > n_warn
        good = nan == 0 and np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo < hi)
        verdicts.append("OK" if good or (new_warn and nan) else "WRONG")
    verdict = next((v for v in ("WRONG", "unclear error") if v in verdicts), "OK")
    return dict(expected=expected, observed="; ".join(parts), verdict=verdict)


@case("B-dpboots-tiny-n1", "B", "WRONG")
def b_dpboots_n1():
    return _dpboots_tiny(1)


@case("B-dpboots-tiny-n2", "B", "WRONG")
def b_dpboots_n2():
    return _dpboots_tiny(2)


def _dpmcmc_init(kind):
    import jax
    import numpy as np

    from dpjax import compositional as comp

    x0 = np.random.default_rng(0).dirichlet([2.2, 3.3, 4.4], size=20)
    if kind == "bad":
        x0 = x0 * 1.1  # rows sum to 1.1
    else:
        x0[0] = [0.0, 0.5, 0.5]  # a zero part: Dirichlet density −∞
    expected = "a ValueError naming init_records"
    try:
        mcmc = comp.dp_mcmc(jax.random.key(0), np.array(S_OK), n=20, a=0.01, epsilon1=1.0, num_warmup=20,
                            num_samples=20, init_records=x0)  # fmt: skip
        a = np.asarray(mcmc.get_samples()["alpha"])
    except Exception as e:
        ok = clear_refusal(e, "init_records")
        return dict(expected=expected, observed=exc_text(e), verdict="OK" if ok else "unclear error")
    return dict(
        expected=expected, observed=f"ran: alpha mean {np.round(a.mean(0), 3).tolist()}", verdict="WRONG"
    )


@case("B-dpmcmc-init-bad", "B", "unclear error")
def b_dpmcmc_init_bad():
    return _dpmcmc_init("bad")


@case("B-dpmcmc-init-zeros", "B", "unclear error")
def b_dpmcmc_init_zeros():
    return _dpmcmc_init("zeros")


@case("B-study-float32-merge", "B", "WRONG")
def b_study_float32_merge():
    import jax
    import numpy as np

    from dpjax.studies import run_study

    cell = lambda key, mu: {"m": mu + jax.random.normal(key, (100,)).mean(), "d": (mu - 1.0) * 1e9}
    expected = (
        "a ValueError (the values merge in float32), or the cells computed at their own values (d = 0 and 1)"
    )
    try:
        df = run_study(
            cell, {"mu": [1.0, 1.0 + 1e-9]}, replicates=2, rng_key=jax.random.key(0), progress_bar=False
        )
    except Exception as e:
        ok = clear_refusal(e, "float32", "grid", "mu")
        return dict(expected=expected, observed=exc_text(e), verdict="OK" if ok else "unclear error")
    d = df.groupby("mu", sort=False)["d"].mean()
    means = df.groupby("mu", sort=False)["m"].apply(lambda v: np.round(v.to_numpy(), 4).tolist())
    obs = f"cells {list(map(repr, d.index))}: d = (mu - 1)·1e9 {np.round(d.to_numpy(), 3).tolist()}; m {means.tolist()}"
    ok = abs(d.iloc[0]) < 0.5 and abs(d.iloc[1] - 1.0) < 0.5
    return dict(expected=expected, observed=obs, verdict="OK" if ok else "WRONG")


def _study_resume(grid):
    import jax

    from dpjax.studies import run_study

    name = next(iter(grid))
    cell = lambda key, **kw: {"m": jax.random.normal(key)}
    expected = "nothing recomputed on resume (or the value refused); a complete table without duplicates"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "s.csv"
        runs = []
        try:
            for _ in range(2):
                calls = []
                df = run_study(cell, grid, replicates=2, rng_key=jax.random.key(0), out=out, progress_bar=False,
                               on_cell=lambda p, f: calls.append(dict(p)))  # fmt: skip
                runs.append((calls, len(df)))
        except Exception as e:
            ok = clear_refusal(e, name, "grid")
            return dict(expected=expected, observed=exc_text(e), verdict="OK" if ok else "unclear error")
        file_rows = sum(1 for _ in out.open()) - 1
        import pandas as pd

        keys = pd.Series([f"{v!r}|{r}" for v, r in zip(df[name], df["replicate"])])
    recomputed = runs[1][0]
    obs = f"recomputed on resume: {recomputed}; rows {runs[1][1]}; file rows {file_rows}; duplicate rows {int(keys.duplicated().sum())}"
    ok = runs[1][1] == 4 and file_rows == 4 and not keys.duplicated().any()
    note = "minor: a cell is recomputed on every resume" if recomputed else ""
    return dict(expected=expected, observed=obs, verdict="OK" if ok else "WRONG", note=note)


@case("B-study-resume-nan-value", "B", "OK (minor: recomputed on every resume)")
def b_resume_nan():
    return _study_resume({"mu": [float("nan"), 1.0]})


@case("B-study-resume-str-NA", "B", "OK (minor: recomputed on every resume)")
def b_resume_na():
    return _study_resume({"name": ["NA", "b"]})


@case("B-study-resume-str-empty", "B", "OK (minor: recomputed on every resume)")
def b_resume_empty():
    return _study_resume({"name": ["", "b"]})


def count_model_readme(n, release=None):
    import numpyro
    import numpyro.distributions as dist

    import dpjax

    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("respondents", n):
        yes = numpyro.sample("yes", dist.Bernoulli(p))
    dpjax.privatized("count", dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=1.0), statistic=lambda r: r["yes"],
                     records={"yes": yes}, plate="respondents", obs=release)  # fmt: skip


def simulate_readme(key, p_true):
    import jax

    k_x, k_noise = jax.random.split(key)
    count = jax.random.bernoulli(k_x, p_true, (60,)).sum()
    return 60, count + jax.random.laplace(k_noise) / 0.5


def beta_draw_yes(key, records, params):
    import numpyro.distributions as dist

    k, n = records["yes"].sum(), records["yes"].shape[0]
    return {"p": dist.Beta(1 + k, 1 + n - k).sample(key)}


def worker_study_writer(out, values):
    import jax

    import dpjax
    from dpjax.studies import mcmc_cell, posterior_summaries, run_study

    setup_jax()
    kern = dpjax.infer.DataAugmentationKernel(
        count_model_readme, theta_update=beta_draw_yes, noncentred_moves=0
    )
    cell = mcmc_cell(kern, simulate_readme, num_warmup=100, num_samples=200)
    summaries = posterior_summaries({"p": ("mean", "coverage")}, truth={"p": lambda p_true: p_true})
    grid = {"p_true": [float(v) for v in values.split(",")]}
    df = run_study(
        cell, grid, replicates=8, rng_key=jax.random.key(1), summaries=summaries, out=out, progress_bar=False
    )
    print(f"rows {len(df)}")


@case("B-study-two-writers-disjoint", "B", "WRONG", timeout=900)
def b_two_writers():
    import pandas as pd

    expected = "all 8 cells (64 rows) in the file, or one process refuses (file in use)"
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "study.csv")
        env = dict(os.environ, JAX_ENABLE_X64="0")
        cmd = lambda vals: [sys.executable, str(SCRIPT), "--worker", "study-writer", out, vals]
        p1 = subprocess.Popen(
            cmd("0.1,0.2,0.3,0.4"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        time.sleep(0.5)
        p2 = subprocess.Popen(
            cmd("0.5,0.6,0.7,0.8"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        o1, e1 = p1.communicate(timeout=800)
        o2, e2 = p2.communicate(timeout=800)
        df = pd.read_csv(out) if Path(out).exists() else pd.DataFrame({"p_true": [], "replicate": []})
    dup = int(df.duplicated(["p_true", "replicate"]).sum())
    cells = sorted(df["p_true"].unique().tolist())
    errs = [
        e.strip().splitlines()[-1]
        for rc, e in ((p1.returncode, e1), (p2.returncode, e2))
        if rc != 0 and e.strip()
    ]
    obs = f"rc {p1.returncode}/{p2.returncode}; final file rows {len(df)}, cells {cells}; duplicates {dup}"
    if errs:
        obs += "; errors: " + " | ".join(x[:200] for x in errs)
    refused = any(re.search(r"in use|lock|another process|concurrent", x, re.I) for x in errs)
    ok = (len(df) == 64 and dup == 0) or (refused and dup == 0)
    return dict(expected=expected, observed=obs, verdict="OK" if ok else "WRONG")


@case("B-odp-k-20", "B", "unclear error")
def b_odp_k20():
    import opendp.prelude as dp

    from dpjax.mechanisms import from_opendp

    dp.enable_features("contrib")
    meas = dp.m.make_laplace(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=1.0, k=-20
    )
    theirs = float(meas.map(1.0))
    expected = "LaplaceMechanism (README: only k with spacing above scale/1000 is refused), or a refusal that states why"
    try:
        mech = from_opendp(meas)
    except Exception as e:
        msg = str(e)
        eps = re.findall(r"ε=([0-9.eE+-]+)", msg)
        distinguishable = len(eps) >= 2 and eps[0] != eps[1]
        names_k = bool(re.search(r"2\*\*-20|k\s*=\s*-20|2⁻²⁰", msg))
        ok = clear_refusal(e) and (distinguishable or names_k or len(eps) < 2)
        return dict(expected=expected, observed=f"OpenDP map(1) = {theirs!r}; from_opendp -> {exc_text(e)}",
                    verdict="OK" if ok else "unclear error")  # fmt: skip
    obs = f"OpenDP map(1) = {theirs!r}; {type(mech).__name__} scale {mech.scale}, ε {mech.guarantee.epsilon}"
    return dict(expected=expected, observed=obs, verdict="OK")


def count_model_n(n, mech):
    import numpyro
    import numpyro.distributions as dist

    import dpjax

    def model(s=None):
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        with numpyro.plate("people", n):
            yes = numpyro.sample("yes", dist.Bernoulli(p))
        dpjax.privatized("count", mech, lambda r: r["yes"], {"yes": yes}, plate="people", obs=s)

    return model


def m_step_yes(recs, w):
    return {"p": w @ recs["yes"].mean(1)}


@case("B-sem-init-outside", "B", "unclear error")
def b_sem_init_outside():
    import jax

    import dpjax

    model = count_model_n(40, dpjax.LaplaceMechanism(scale=2.0))
    expected = "a ValueError naming init_params"
    try:
        r = dpjax.infer.stochastic_em(jax.random.key(0), model, {"p": 1.7}, 14.6, m_step=m_step_yes,
                                      num_iterations=200, progress_bar=False)  # fmt: skip
    except Exception as e:
        ok = clear_refusal(e, "init_params")
        return dict(expected=expected, observed=exc_text(e), verdict="OK" if ok else "unclear error")
    return dict(expected=expected, observed=f"ran: p_hat {float(r.params['p']):.4f}", verdict="WRONG")


@case("B-study-traced-branch", "B", "unclear error")
def b_study_traced_branch():
    import jax

    from dpjax.studies import run_study

    def cell(key, mu):
        if mu > 0:  # a Python branch on a float grid value
            return {"m": mu + jax.random.normal(key)}
        return {"m": -mu + jax.random.normal(key)}

    expected = "a clear error saying float grid values arrive traced (use static=), or it runs"
    try:
        df = run_study(cell, {"mu": [0.5, -0.5]}, replicates=2, rng_key=jax.random.key(0), progress_bar=False)
    except Exception as e:
        ok = "static" in str(e)
        return dict(expected=expected, observed=exc_text(e), verdict="OK" if ok else "unclear error")
    return dict(
        expected=expected, observed=f"ran: {len(df)} rows, m {df['m'].round(3).tolist()}", verdict="OK"
    )


def thetafree_model(n, s=None):
    import numpyro
    import numpyro.distributions as dist

    import dpjax

    p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    with numpyro.plate("people", n):
        x = numpyro.sample("x", dist.Bernoulli(p))
        c = numpyro.sample("c", dist.Bernoulli(0.5))  # θ-free record site
    dpjax.privatized("count", dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=1.0), lambda r: r["x"] * r["c"],
                     {"x": x, "c": c}, plate="people", obs=s)  # fmt: skip


@case("B-thetafree-record-jit", "B", "crash")
def b_thetafree_jit():
    import jax
    import numpy as np

    import dpjax

    expected = "runs (jax.jit(run_chain), the README's study pattern)"
    try:
        kern = dpjax.infer.DataAugmentationKernel(thetafree_model)
        out = jax.jit(lambda k, s: dpjax.infer.run_chain(kern, k, (40, s), num_warmup=50, num_samples=50))(
            jax.random.key(0), 8.0
        )
        p = np.asarray(out["p"])
    except Exception as e:
        return dict(expected=expected, observed=exc_text(e), verdict="crash")
    ok = np.all(np.isfinite(p))
    return dict(expected=expected, observed=f"ran: p mean {p.mean():.3f} sd {p.std():.3f}, finite {bool(ok)}",
                verdict="OK" if ok else "WRONG")  # fmt: skip


@case("B-thetafree-record-study", "B", "crash")
def b_thetafree_study():
    import jax
    import numpy as np

    import dpjax
    from dpjax.studies import mcmc_cell, posterior_summaries, run_study

    def simulate(key, p_true):
        k1, k2, k3 = jax.random.split(key, 3)
        x = jax.random.bernoulli(k1, p_true, (40,))
        c = jax.random.bernoulli(k2, 0.5, (40,))
        return 40, (x * c).sum() + jax.random.laplace(k3) / 0.5

    expected = "runs (run_study(mcmc_cell(DataAugmentationKernel(model), ...)))"
    try:
        cell = mcmc_cell(
            dpjax.infer.DataAugmentationKernel(thetafree_model), simulate, num_warmup=50, num_samples=50
        )
        df = run_study(cell, {"p_true": [0.4]}, replicates=2, rng_key=jax.random.key(0),
                       summaries=posterior_summaries({"p": ("mean",)}), progress_bar=False)  # fmt: skip
    except Exception as e:
        return dict(expected=expected, observed=exc_text(e), verdict="crash")
    m = df["p_mean"].to_numpy()
    return dict(expected=expected, observed=f"ran: p_mean {np.round(m, 3).tolist()}",
                verdict="OK" if np.all(np.isfinite(m)) else "WRONG")  # fmt: skip


# ---- cases the review's text mentions without a table row


def _odp_chain(query: bool):
    import opendp.prelude as dp

    from dpjax.mechanisms import from_opendp

    dp.enable_features("contrib")
    if query:
        ctx = dp.Context.compositor(data=[1, 5, 7, 3, 10, 2], privacy_unit=dp.unit_of(contributions=1),
                                    privacy_loss=dp.loss_of(epsilon=1.0), split_evenly_over=1)  # fmt: skip
        meas = ctx.query().clamp((0, 10)).sum().laplace(scale=20.0)
        theirs = float(meas.resolve().map(1))
        what = "Context query clamp((0, 10)).sum().laplace(scale=20)"
    else:
        t = dp.t.make_sum(dp.vector_domain(dp.atom_domain(bounds=(0, 10))), dp.symmetric_distance())
        meas = t >> dp.m.then_laplace(scale=20.0)
        theirs = float(meas.map(1))
        what = "make_sum(bounded ints (0, 10)) >> then_laplace(scale=20)"
    expected = f"dpjax's guarantee = OpenDP's map(1) of the whole chain ({theirs:g}), or a clear refusal"
    try:
        mech = from_opendp(meas)
    except Exception as e:
        ok = clear_refusal(e, "sensitivity", "stability", "chain", "transformation")
        return dict(expected=expected, observed=f"{what}: OpenDP map(1) = {theirs:g}; {exc_text(e)}",
                    verdict="OK" if ok else "unclear error")  # fmt: skip
    ours = float(mech.guarantee.epsilon)
    obs = f"{what}: OpenDP map(1) = {theirs:g}; dpjax {type(mech).__name__}(scale {mech.scale:g}).guarantee.epsilon = {ours:g}"
    if math.isclose(ours, theirs, rel_tol=1e-9):
        verdict = "OK"
    else:
        verdict = "PRIVACY" if ours < theirs else "WRONG"
    return dict(expected=expected, observed=obs, verdict=verdict)


@case("odp-chain", "extra", "PRIVACY (review text: reports ε 0.05, OpenDP 0.5)")
def x_odp_chain():
    return _odp_chain(False)


@case("odp-chain-context", "extra", "PRIVACY (as odp-chain, through a Context query)")
def x_odp_chain_context():
    return _odp_chain(True)


@case("az-public-outside-plate", "extra", "crash (review text: bare AssertionError)")
def x_az_public():
    import arviz as az
    import jax
    import jax.numpy as jnp
    import numpy as np
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC

    import dpjax

    def model(n, s=None, z_obs=None):
        mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        numpyro.sample("z", dist.Normal(mu, 1.0), obs=z_obs)  # public data outside the records plate
        with numpyro.plate("people", n):
            yes = numpyro.sample("yes", dist.Bernoulli(jax.nn.sigmoid(mu)))
        dpjax.privatized("count", dpjax.LaplaceMechanism(epsilon=0.5, sensitivity=1.0), lambda r: r["yes"],
                         {"yes": yes}, plate="people", obs=s)  # fmt: skip

    expected = "az.from_numpyro(mcmc) works (posterior of mu, observed z)"
    try:
        mcmc = MCMC(
            dpjax.infer.DataAugmentationKernel(model), num_warmup=100, num_samples=100, progress_bar=False
        )
        mcmc.run(jax.random.key(0), 60, 17.4, z_obs=jnp.array(0.3))
    except Exception as e:
        return dict(expected=expected, observed="MCMC: " + exc_text(e), verdict="crash")
    try:
        idata = az.from_numpyro(mcmc)
        mu = np.asarray(idata.posterior["mu"])
    except Exception as e:
        return dict(expected=expected, observed="az.from_numpyro: " + exc_text(e), verdict="crash")
    groups = list(idata.groups())
    return dict(
        expected=expected, observed=f"InferenceData groups {groups}; mu mean {mu.mean():.3f}", verdict="OK"
    )


# ================================================================================= C. exact answers


@case("C-mcem-mcmc-n25", "C", "OK (note: off by 9× the final tolerance, 11× the MC s.e.)", timeout=900)
def c_mcem_mcmc_n25():
    import jax
    import numpy as np

    import dpjax

    mle, sd = exact_count_mle(25, 20.3, 10.0)
    expected = (f"exact MLE {mle:.5f} (enumeration; Louis sd {sd:.4f}); within 10× the final tolerance 1e-3 (the "
                "documented ConvergenceWarning rule), or a ConvergenceWarning")  # fmt: skip
    model = count_model_n(25, dpjax.LaplaceMechanism(scale=10.0))
    try:
        r = dpjax.infer.mcem(jax.random.key(0), model, {"p": 0.5}, 20.3, e_step="mcmc", m_step=m_step_yes,
                             progress_bar=False)  # fmt: skip
    except Exception as e:
        return dict(expected=expected, observed=exc_text(e), verdict="crash")
    p = float(r.params["p"])
    se = float(np.asarray(r.mc_std_errors["p"])[-1])
    louis = float(r.std_errors["p"])
    obs = (f"mcem(mcmc) p̂ {p:.5f} (exact {mle:.5f}, off {p - mle:+.4f} = {abs(p - mle) / 1e-3:.1f}× the final "
           f"tolerance, {abs(p - mle) / se:.1f}× the reported MC s.e. {se:.5f}); Louis sd {louis:.4f}; "
           f"{len(r.history['p'])} iterations")  # fmt: skip
    ok = abs(p - mle) <= 10 * 1e-3 or warned("ConvergenceWarning")
    note = (
        "off by more than 4 MC s.e. (below the documented 10× tolerance rule)"
        if abs(p - mle) > 4 * se
        else ""
    )
    return dict(expected=expected, observed=obs, verdict="OK" if ok else "WRONG", note=note)


def _sem(n, scale, s):
    import jax
    import numpy as np

    import dpjax

    mle, sd = exact_count_mle(n, s, scale)
    expected = (f"exact MLE {mle:.5f} (enumeration; sd {sd:.4f}; a small documented bias allowed), or an error / "
                "NaN when the chains are absorbed at the boundary")  # fmt: skip
    model = count_model_n(n, dpjax.LaplaceMechanism(scale=scale))
    try:
        r = dpjax.infer.stochastic_em(jax.random.key(0), model, {"p": 0.5}, s, m_step=m_step_yes,
                                      progress_bar=False)  # fmt: skip
    except Exception as e:
        ok = clear_refusal(e, "boundary", "absorb", "stuck", "support")
        return dict(expected=expected, observed=exc_text(e), verdict="OK" if ok else "crash")
    p = float(r.params["p"])
    se = float(np.asarray(r.mc_std_errors["p"]))
    at_bound = float(np.mean((np.asarray(r.samples["p"]) == 0) | (np.asarray(r.samples["p"]) == 1)))
    obs = f"stochastic_em p̂ {p:.5f} MC se {se:.5f} (exact MLE {mle:.5f}); share of kept iterates on the boundary {at_bound:.2f}"
    if math.isnan(p):
        verdict = "OK"
    elif math.isfinite(se) and abs(p - mle) <= 4 * se + 0.05 * sd:
        verdict = "OK"
    else:
        verdict = "wrong (warned)" if warned() else "WRONG"
    return dict(expected=expected, observed=obs, verdict=verdict)


@case("C-sem-n25", "C", "wrong (warned)")
def c_sem_n25():
    return _sem(25, 10.0, 20.3)


@case("C-sem-n60", "C", "wrong (warned)")
def c_sem_n60():
    return _sem(60, 1.0, 3.2)


@case("C-sem-small-n-boundary", "C", "wrong (warned)")
def c_sem_small():
    return _sem(10, 2.0, 1.5)


@case("C-RJ-eps0.01", "C", "OK (note: spurious CapacityWarning)", timeout=900)
def c_rj_eps001():
    import jax
    import numpy as np
    import numpyro.distributions as dist
    from numpyro.infer import MCMC
    from scipy.stats import poisson

    import dpjax

    lap = dpjax.LaplaceMechanism(epsilon=0.01, sensitivity=1.0)
    model = unknown_n_bernoulli(dist.Poisson(40.0), 110, lap, lap)
    pm, psd, nm, nsd, _ = exact_unknown_n(20.0, 35.0, 100.0, 100.0, lambda m: poisson.logpmf(m, 40), 110)
    beyond = float(poisson.sf(110, 40))  # prior mass beyond the capacity (the likelihood is ~flat there)
    expected = (f"exact (double enumeration): p {pm:.4f} ± {psd:.4f}, n {nm:.3f} ± {nsd:.3f}; no CapacityWarning "
                f"(prior mass beyond the capacity 110: {beyond:.1e})")  # fmt: skip
    try:
        mcmc = MCMC(dpjax.infer.ReversibleJumpKernel(model), num_warmup=1000, num_samples=2000, num_chains=4,
                    chain_method="vectorized", progress_bar=False)  # fmt: skip
        mcmc.run(jax.random.key(0), 20.0, 35.0)
    except Exception as e:
        return dict(expected=expected, observed=exc_text(e), verdict="crash")
    smp = mcmc.get_samples(group_by_chain=True)
    rp = mc_check(np.asarray(smp["p"]), pm, psd)
    rn = mc_check(np.asarray(smp["n"], float), nm, nsd)
    obs = mc_text("p", rp, pm, psd) + "; " + mc_text("n", rn, nm, nsd)
    note = (
        "spurious CapacityWarning (posterior mass beyond the capacity is negligible)"
        if warned("CapacityWarning")
        else ""
    )
    return dict(
        expected=expected, observed=obs, verdict="OK" if rp["ok"] and rn["ok"] else "WRONG", note=note
    )


@case("C-abc-unknown-n", "C", "OK (note: n not among the samples)")
def c_abc_unknown_n():
    import jax
    import numpy as np
    import numpyro.distributions as dist

    import dpjax

    model = unknown_n_bernoulli(dist.DiscreteUniform(1, 80), 80, dpjax.LaplaceMechanism(scale=3.0),
                                dpjax.LaplaceMechanism(scale=5.0))  # fmt: skip
    pm, psd, nm, nsd, _ = exact_unknown_n(15.0, 40.0, 3.0, 5.0, lambda m: 0.0, 80, n_min=1)
    expected = f"exact: p {pm:.4f} ± {psd:.4f}; n among the samples: {nm:.2f} ± {nsd:.2f}"
    try:
        out = dpjax.infer.exact_abc(
            jax.random.key(0), model, 15.0, 40.0, num_samples=2000, progress_bar=False
        )
    except Exception as e:
        return dict(expected=expected, observed=exc_text(e), verdict="crash")
    sites = sorted(out.samples)
    rp = mc_check(np.asarray(out.samples["p"])[None], pm, psd)
    obs = f"sites returned {sites}; " + mc_text("p", rp, pm, psd)
    ok, note = rp["ok"], ""
    if "n" in out.samples:
        rn = mc_check(np.asarray(out.samples["n"], float)[None], nm, nsd)
        obs += "; " + mc_text("n", rn, nm, nsd)
        ok = ok and rn["ok"]
    else:
        note = "n is not among the samples"
    return dict(expected=expected, observed=obs, verdict="OK" if ok else "WRONG", note=note)


# ================================================================================= D. curator-side privacy


def readme_units():
    """README table rows one by one, the rest paragraph by paragraph."""
    units, para = [], []
    for line in readme_text().splitlines():
        if line.startswith("|"):
            units.append(line)
        elif not line.strip():
            if para:
                units.append(" ".join(para))
            para = []
        else:
            para.append(line)
    if para:
        units.append(" ".join(para))
    return units


def readme_dpss_simulation_only() -> bool:
    """Whether the README, where it presents DPss, says that it is a simulation (not a release)."""
    return any(re.search(r"dpss", u, re.I) and re.search(r"simulat", u, re.I) for u in readme_units())


def count_exact_draws(fn):
    """Run ``fn`` and count the calls of dpjax's exact (host, integer-arithmetic) noise samplers."""
    import dpjax.mechanisms as mechs
    from dpjax.mechanisms import base, exact

    calls = [0]
    patched = []

    def wrap(f):
        def g(*a, **k):
            calls[0] += 1
            return f(*a, **k)

        return g

    for name in ("discrete_laplace", "discrete_gaussian"):
        if hasattr(exact, name):
            patched.append((exact, name, getattr(exact, name)))
            setattr(exact, name, wrap(getattr(exact, name)))
    integer = getattr(base, "IntegerMechanism", None)
    classes = {c for c in vars(mechs).values() if isinstance(c, type) and integer and issubclass(c, integer)}
    for cls in classes:
        if "_exact_draw" in vars(cls):
            orig = vars(cls)["_exact_draw"]
            patched.append((cls, "_exact_draw", orig))
            f = orig.__func__ if isinstance(orig, staticmethod) else orig
            cls._exact_draw = staticmethod(wrap(f))
    try:
        fn()
    finally:
        for obj, name, orig in reversed(patched):
            setattr(obj, name, orig)
    return calls[0]


def _readme_dpss_counts():
    import jax
    import numpy as np

    from dpjax import compositional as comp

    x = np.random.default_rng(0).dirichlet([2.2, 3.3, 4.4], size=500)
    thr = [0.1, 0.01, 0.001, 1e-4]
    default = count_exact_draws(lambda: comp.dpss(jax.random.key(3), x, thr, epsilon1=0.5, epsilon2=1.5))
    try:
        exact_on = count_exact_draws(
            lambda: comp.dpss(jax.random.key(3), x, thr, epsilon1=0.5, epsilon2=1.5, exact_score=True)
        )
    except TypeError:  # no exact_score argument any more
        exact_on = None
    try:
        comp.dpss(None, x, thr, epsilon1=0.5, epsilon2=1.5)
        csprng = "dpss(None, ...) runs"
    except Exception as e:
        csprng = "dpss(None, ...) -> " + exc_text(e)[:120]
    return default, exact_on, csprng


@case("D-dpss-score-exact-default", "D", "PRIVACY")
def d_dpss_exact_default():
    default, exact_on, csprng = _readme_dpss_counts()
    documented = readme_dpss_simulation_only()
    expected = ("the README's dpss example draws the score noise with the exact sampler (README: 'exact two-sided "
                "geometric noise'), or the README says DPss is simulation-only")  # fmt: skip
    obs = (f"exact discrete-Laplace draws made by the README's dpss call (defaults): {default}; with "
           f"exact_score=True: {exact_on}; README presents DPss as simulation-only: {documented}; {csprng}")  # fmt: skip
    return dict(expected=expected, observed=obs, verdict="OK" if default > 0 or documented else "PRIVACY")


@case("D-dpss-score-float-support", "D", "PRIVACY")
def d_dpss_float_support():
    import jax
    import numpy as np

    import dpjax

    mech = dpjax.DiscreteLaplaceMechanism(epsilon=1.5, sensitivity=2)
    scale = float(mech.scale)
    noise = np.asarray(mech(jax.numpy.zeros(2_000_000)).sample(jax.random.key(0)))
    bound = math.floor(scale * (-math.log(2.0**-24)))
    p_tail = 2 * math.exp(-(bound + 1) / scale) / (1 + math.exp(-1 / scale))  # P(|k| > bound), exact law
    default, _, _ = _readme_dpss_counts()
    documented = readme_dpss_simulation_only()
    expected = "the default dpss score noise has unbounded support (pure ε₂-DP), or DPss is documented as simulation-only"
    obs = (f"scale {scale:.4f}; max |noise| in 2e6 float draws {int(np.abs(noise).max())}; float sampler's hard bound "
           f"⌊scale·(−log 2⁻²⁴)⌋ = {bound} (exact law: P(|k| > bound) = {p_tail:.1e}); default dpss exact draws "
           f"{default}; README says simulation-only: {documented}")  # fmt: skip
    return dict(expected=expected, observed=obs, verdict="OK" if default > 0 or documented else "PRIVACY")


@case("D-dpss-mironov", "D", "PRIVACY", timeout=900)
def d_dpss_mironov():
    import jax
    import jax.numpy as jnp
    import numpy as np

    from dpjax import compositional as comp

    n, a, eps1 = 300, 0.01, 1.0
    rng = np.random.default_rng(0)
    x = rng.dirichlet([2.2, 3.3, 4.4], size=n).astype(np.float32)
    x2 = x.copy()
    x2[0] = rng.dirichlet([2.2, 3.3, 4.4]).astype(np.float32)  # the neighbour: one row replaced
    s0 = np.asarray(comp.censored_mean_log(x, a), np.float32)[0]
    s0n = np.asarray(comp.censored_mean_log(x2, a), np.float32)[0]
    scale = jnp.float32(-3 * jnp.log(jnp.float32(a)) / n / eps1)

    # every float32 Laplace draw jax.random.laplace can make: all 2**23 mantissas of its uniform
    @jax.jit
    def outputs(loc):
        mant = jnp.arange(2**23, dtype=jnp.uint32)
        fb = mant | jnp.uint32(0x3F800000)
        f = jax.lax.bitcast_convert_type(fb, jnp.float32) - jnp.float32(1.0)
        lo, hi = jnp.float32(-1.0 + jnp.finfo(jnp.float32).epsneg), jnp.float32(1.0)
        u = jax.lax.max(lo, f * (hi - lo) + lo)
        lap = jax.lax.mul(jax.lax.sign(u), jax.lax.log1p(jax.lax.neg(jax.lax.abs(u))))
        return loc + lap * scale

    set_d = np.unique(np.asarray(outputs(jnp.float32(s0))))
    set_n = np.unique(np.asarray(outputs(jnp.float32(s0n))))

    def one(k):
        try:
            return comp.dpss(k, x, [a], eps1, 1.0, exact_score=False).statistic[0]
        except TypeError:  # no exact_score argument
            return comp.dpss(k, x, [a], eps1, 1.0).statistic[0]

    try:
        run = jax.jit(jax.vmap(one))
        keys = jax.random.split(jax.random.key(0), 200_000)
        draws = np.concatenate([np.asarray(run(keys[i : i + 50_000])) for i in range(0, 200_000, 50_000)])
        in_d = float(np.isin(draws, set_d).mean())
        impossible = float((~np.isin(draws, set_n)).mean())
        sim = f"{in_d:.3f} of {draws.size:.0e} dpss draws lie in the enumerated output set of D; {impossible:.3f} of them can never be produced from the neighbour D'"
    except Exception as e:  # dpss no longer a traceable simulation
        impossible = float("nan")
        sim = "dpss draws under jit(vmap) failed: " + exc_text(e)[:150]
    documented = readme_dpss_simulation_only()
    try:
        comp.dpss(None, x, [a], eps1, 1.0)
        csprng = True
    except Exception:
        csprng = False
    expected = ("DPss documented as simulation-only where the README presents it (its docstring does), or a real "
                "release path whose outputs a neighbour cannot rule out")  # fmt: skip
    obs = (f"S0[0] = {s0!r} vs neighbour {s0n!r} (Δ = {abs(s0 - s0n):.2e}, Laplace scale {float(scale):.4f}); "
           f"{sim}; README says simulation-only: {documented}; dpss(None) runs: {csprng}")  # fmt: skip
    return dict(
        expected=expected,
        observed=obs,
        verdict="OK" if documented or (csprng and impossible == 0) else "PRIVACY",
    )


def _message_leak(calls, secrets):
    """Run each ``calls`` entry (the same mistake on different confidential data); a leak when the
    messages differ between them or contain a confidential value."""
    msgs, texts = [], []
    for f in calls:
        try:
            f()
            msgs.append(None)
            texts.append("no error")
        except Exception as e:
            msgs.append(str(e))
            texts.append(exc_text(e))
    if any(m is None for m in msgs):
        return texts, "WRONG"
    found = [s for s in secrets if any(s in m for m in msgs)]
    differ = len(set(msgs)) > 1
    if found or differ:
        return texts + [
            f"confidential strings found: {found}; messages differ with the data: {differ}"
        ], "PRIVACY"
    return texts, "OK"


@case("D-errmsg-release-nonint", "D", "PRIVACY")
def d_errmsg_nonint():
    import dpjax

    mech = dpjax.DiscreteLaplaceMechanism(epsilon=1.0)
    texts, verdict = _message_leak(
        [lambda: mech.release(None, 1234567.5), lambda: mech.release(None, 7654321.5)], ["1234567", "7654321"]
    )
    return dict(expected="a ValueError that does not echo the confidential value", observed=" || ".join(texts),
                verdict=verdict)  # fmt: skip


@case("D-errmsg-release-nan", "D", "PRIVACY")
def d_errmsg_nan():
    import numpy as np

    import dpjax

    mech = dpjax.DiscreteLaplaceMechanism(epsilon=1.0)
    texts, verdict = _message_leak(
        [lambda: mech.release(None, np.array([7654321.0, 4242.0, np.nan])),
         lambda: mech.release(None, np.array([1111.0, 2222.0, np.nan]))],
        ["7654321", "7.654321", "4242", "1111", "2222"],
    )  # fmt: skip
    return dict(
        expected="a ValueError without the confidential array", observed=" || ".join(texts), verdict=verdict
    )


@case("D-errmsg-dpss-rowsum", "D", "PRIVACY")
def d_errmsg_rowsum():
    import jax
    import numpy as np

    from dpjax import compositional as comp

    base = np.random.default_rng(0).dirichlet([2.2, 3.3, 4.4], size=50)

    def bad(row, factor):
        x = base.copy()
        x[row] *= factor
        return lambda: comp.dpss(jax.random.key(0), x, [0.1, 0.01], 0.5, 1.5)

    texts, verdict = _message_leak([bad(5, 1.123456), bad(9, 1.2)], ["1.123456", "1.12345", "row 5", "row 9"])
    return dict(expected="a ValueError without confidential values (no row index or row sum)",
                observed=" || ".join(texts), verdict=verdict)  # fmt: skip


@case("D-errmsg-PY-singletons", "D", "PRIVACY (low)")
def d_errmsg_py_singletons():
    import jax
    import numpy as np

    from dpjax import synthetic as syn

    d2 = np.array([0.1, 0.1, 0.2, 0.2, 0.3, 0.4])  # 2 values appear once
    d3 = np.array([0.1, 0.1, 0.2, 0.3, 0.4, 0.5])  # 4 values appear once
    texts, verdict = _message_leak(
        [lambda: syn.delta_tilde(jax.random.key(0), d2, 5, 0.0, 1.0, 1.0, num_draws=100),
         lambda: syn.delta_tilde(jax.random.key(0), d3, 5, 0.0, 1.0, 1.0, num_draws=100)],
        ["2 values", "4 values"],
    )  # fmt: skip
    return dict(
        expected="a ValueError without data-dependent counts", observed=" || ".join(texts), verdict=verdict
    )


@case("D-PY-release-fields", "D", "PRIVACY")
def d_py_release_fields():
    import jax
    import numpy as np

    from dpjax import synthetic as syn

    D1 = np.array([0.1, 0.1, 0.2, 0.2, 0.3, 0.3, 0.4, 0.4])
    D2 = np.r_[D1[:-1], 0.9]  # a neighbour with 5 distinct values
    r1 = syn.predictive_release(jax.random.key(0), D1, 6, 0.0, 2.0)
    r2 = syn.predictive_release(jax.random.key(0), D2, 6, 0.0, 2.0)
    fields = getattr(r1, "_fields", None) or [k for k in vars(r1) if not k.startswith("_")]
    public = {"values", "released"}
    leaks = {f: (np.shape(getattr(r1, f)), np.shape(getattr(r2, f))) for f in fields
             if f not in public and np.shape(getattr(r1, f)) != np.shape(getattr(r2, f))}  # fmt: skip
    extra = [f for f in fields if f not in public]
    doc = (type(r1).__doc__ or "").lower()
    flagged = bool(extra) and (
        "confidential" in doc or "not for publication" in doc or "do not publish" in doc
    )
    obs = (f"fields {list(fields)}; data-dependent shapes outside values/released: {leaks}; labels "
           f"{np.asarray(getattr(r1, 'labels', [])).tolist()}; bookkeeping flagged as confidential: {flagged}")  # fmt: skip
    ok = (not extra) or flagged
    return dict(expected="only values (and Algorithm 3's mask) depend on the data; bookkeeping flagged as confidential",
                observed=obs, verdict="OK" if ok else "PRIVACY")  # fmt: skip


@case("D-PY-key", "D", "PRIVACY")
def d_py_key():
    import jax
    import numpy as np

    from dpjax import synthetic as syn

    D1 = np.array([0.1, 0.1, 0.2, 0.2, 0.3, 0.3, 0.4, 0.4])
    D2 = D1.copy()
    D2[-2:] = 0.9
    pub = syn.predictive_release(jax.random.key(0), D2, 20, 0.0, 2.0)
    match = {name: bool(np.array_equal(np.asarray(syn.predictive_release(jax.random.key(0), D, 20, 0.0, 2.0).values),
                                       np.asarray(pub.values))) for name, D in (("D1", D1), ("D2", D2))}  # fmt: skip
    try:
        syn.predictive_release(None, D1, 20, 0.0, 2.0)
        csprng = True
    except Exception:
        csprng = False
    doc = syn.predictive_release.__doc__ or ""
    secret = bool(re.search(r"secret|never publish|must not be (known|shared)", doc, re.I))
    obs = (f"attacker recomputes the release with key(0) for each candidate data set: matches {match}; CSPRNG path "
           f"(rng_key=None): {csprng}; docstring says the key must be secret: {secret}")  # fmt: skip
    return dict(expected="a CSPRNG path (rng_key=None) or a documented warning that the key must be secret",
                observed=obs, verdict="OK" if csprng or secret else "PRIVACY")  # fmt: skip


@case("D-PY-key-none", "D", "unclear error")
def d_py_key_none():
    import numpy as np

    from dpjax import synthetic as syn

    expected = "a CSPRNG release, or a ValueError naming rng_key"
    try:
        r = syn.predictive_release(None, np.array([0.1, 0.1, 0.4, 0.4, 0.4]), 5, 0.0, 1.0)
    except Exception as e:
        ok = clear_refusal(e, "rng_key")
        return dict(expected=expected, observed=exc_text(e), verdict="OK" if ok else "unclear error")
    return dict(
        expected=expected, observed=f"released {np.asarray(r.values).round(3).tolist()}", verdict="OK"
    )


# ================================================================================= E. reproducibility


def worker_devices(out):
    """One device count (XLA_FLAGS): the raw draws of a NUTS-θ and a conjugate DA study cell, the
    summaries of a conjugate study, and (on one device) the same study through an out file."""
    import jax
    import numpy as np

    import dpjax
    from dpjax.studies import mcmc_cell, posterior_summaries, run_study

    setup_jax()
    res = {"devices": jax.device_count()}
    nuts = mcmc_cell(dpjax.infer.DataAugmentationKernel(count_model_readme), simulate_readme, num_warmup=50,
                     num_samples=60)  # fmt: skip
    conj = mcmc_cell(dpjax.infer.DataAugmentationKernel(count_model_readme, theta_update=beta_draw_yes),
                     simulate_readme, num_warmup=50, num_samples=60)  # fmt: skip
    for name, cell in (("nuts", nuts), ("conj", conj)):
        df = run_study(cell, {"p_true": [0.3]}, replicates=5, rng_key=jax.random.key(2), progress_bar=False)
        cols = sorted(c for c in df.columns if c.startswith("p"))
        res[f"draws_{name}"] = df[[c for c in cols if c != "p_true"]].to_numpy(np.float64).tolist()
    summ = posterior_summaries({"p": ("mean", "sd", "quantiles", "ess")})
    cols = ["p_mean", "p_sd", "p_q0.05", "p_q0.5", "p_q0.95", "p_ess"]
    study = dict(replicates=5, rng_key=jax.random.key(3), summaries=summ, progress_bar=False)
    df = run_study(conj, {"p_true": [0.2, 0.5]}, **study)
    res["summaries"] = df[cols].to_numpy(np.float64).tolist()
    if jax.device_count() == 1:
        with tempfile.TemporaryDirectory() as tmp:
            df2 = run_study(conj, {"p_true": [0.2, 0.5]}, out=str(Path(tmp) / "s.csv"), **study)
        res["summaries_out"] = df2[cols].to_numpy(np.float64).tolist()
    Path(out).write_text(json.dumps(res))


def _device_runs():
    def go():
        got = {}
        for nd in (1, 2, 3):
            with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
                path = f.name
            flags = (
                os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={nd}"
            ).strip()
            p = worker(["devices", path], {"XLA_FLAGS": flags, "JAX_ENABLE_X64": "0"}, timeout=900)
            if p.returncode != 0:
                got[str(nd)] = {"error": (p.stderr.strip().splitlines() or ["?"])[-1][:300]}
            else:
                got[str(nd)] = json.loads(Path(path).read_text())
            os.unlink(path)
        return got

    return cached("devices", go)


def readme_claims_bitwise_devices() -> bool:
    t = readme_text()
    return bool(re.search(r"bitwise[^|.]{0,40}one device", t))


def _maxdiff(a, b):
    import numpy as np

    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape:
        return float("inf")
    d = np.abs(a - b)
    both_nan = np.isnan(a) & np.isnan(b)
    return float(np.nanmax(np.where(both_nan, 0.0, d))) if d.size else 0.0


@case("E-study-devices", "E", "WRONG (minor)", timeout=2400)
def e_study_devices():
    import numpy as np

    runs = _device_runs()
    claim = readme_claims_bitwise_devices()
    expected = "bitwise identical summaries on 1, 2 and 3 devices (README), or the README claim narrowed"
    errs = {k: v["error"] for k, v in runs.items() if "error" in v}
    if errs:
        return dict(expected=expected, observed=f"worker errors {errs}", verdict="crash")
    one = np.asarray(runs["1"]["summaries"])
    parts, same = [], True
    cols = ["p_mean", "p_sd", "p_q0.05", "p_q0.5", "p_q0.95", "p_ess"]
    for nd in ("2", "3"):
        other = np.asarray(runs[nd]["summaries"])
        eq = (one == other) | (np.isnan(one) & np.isnan(other))
        bad = [c for j, c in enumerate(cols) if not eq[:, j].all()]
        rel = float(np.nanmax(np.abs(one - other) / np.maximum(np.abs(one), 1e-300))) if bad else 0.0
        parts.append(
            f"1 vs {nd} devices: " + ("identical" if not bad else f"differ in {bad} (max rel {rel:.1e})")
        )
        same = same and not bad
    out = np.asarray(runs["1"]["summaries_out"])
    out_same = bool(((one == out) | (np.isnan(one) & np.isnan(out))).all())
    parts.append(f"1 device vs out-file run: {'identical' if out_same else 'differ'}")
    parts.append(f"README still claims bitwise numbers across devices: {claim}")
    ok = (same and out_same) or (not claim and out_same)
    return dict(expected=expected, observed="; ".join(parts), verdict="OK" if ok else "WRONG")


@case("E-study-devices-draws", "E", "WRONG", timeout=2400)
def e_study_devices_draws():
    runs = _device_runs()
    claim = readme_claims_bitwise_devices()
    expected = "bitwise identical raw draws on 1, 2 and 3 devices (README), or the README claim narrowed"
    errs = {k: v["error"] for k, v in runs.items() if "error" in v}
    if errs:
        return dict(expected=expected, observed=f"worker errors {errs}", verdict="crash")
    parts, same = [], True
    for name, what in (("nuts", "NUTS θ-step DA cells"), ("conj", "conjugate θ-step DA cells")):
        for nd in ("2", "3"):
            d = _maxdiff(runs["1"][f"draws_{name}"], runs[nd][f"draws_{name}"])
            parts.append(f"{what}, 1 vs {nd} devices: max |Δ| {d:.2e}")
            same = same and d == 0
    parts.append(f"README still claims bitwise numbers across devices: {claim}")
    ok = same or not claim
    return dict(expected=expected, observed="; ".join(parts) + " (raw draws, 5 replicates × 60)",
                verdict="OK" if ok else "WRONG")  # fmt: skip


@case("E-reproduce-gong-abc-verdict", "E", "WRONG (minor)", timeout=1200)
def e_gong_abc_verdict():
    from dpjax.reproduce import run_experiment

    with tempfile.TemporaryDirectory() as tmp:
        rep = run_experiment("gong-abc", quick=True, out=tmp, progress=False)
    comp = rep.comparison
    reps = int(rep.settings.get("repetitions", 2))
    draws = int(rep.settings.get("draws", 200))
    expected = "'pass' where the estimate agrees with the exact rate within Monte Carlo error (binomial s.e.)"
    parts, false_fail = [], False
    for _, row in comp.iterrows():
        q = str(row["quantity"])
        if "against the exact rate" not in q:
            continue
        exact = float(row["seed"]) / 100
        # each repetition stops at `draws` acceptances: binomial s.e. of its rate, averaged over reps
        se = 100 * math.sqrt(exact * (1 - exact) / (draws / exact)) / math.sqrt(reps)
        zb = (float(row["dpjax"]) - 100 * exact) / se
        fails = str(row["verdict"]).lower().startswith("fail")
        if "α = 2," in q or fails:
            parts.append(f"'{q}': dpjax {float(row['dpjax']):.4f} ± {float(row['dpjax_se']):.4f}, exact {100 * exact:.4f}, "
                         f"z {float(row['z']):.2f} -> {row['verdict']!r}; binomial s.e. {se:.4f}, z {zb:.2f}")  # fmt: skip
        if fails and abs(zb) < 3.29:
            false_fail = True
    return dict(expected=expected, observed="; ".join(parts), verdict="WRONG" if false_fail else "OK")


# ====================================================================================== runner


def run_case_here(cid):
    """Run one case in this process; returns the case dict."""
    global CAUGHT
    c = CASES[cid]
    t0 = time.time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        CAUGHT = caught
        try:
            setup_jax()
            res = c["fn"]()
        except Exception as e:  # the case itself broke: not a verdict on dpjax
            res = dict(expected="", observed="harness error: " + exc_text(e) + " | " +
                       " ".join(traceback.format_exc().splitlines()[-6:])[:600], verdict="harness error")  # fmt: skip
        names = warning_names()
    import dpjax

    out = dict(id=cid, group=c["group"], expected=res.get("expected", ""), observed=res.get("observed", ""),
               verdict=res["verdict"], note=res.get("note", ""), review_verdict=c["review"])  # fmt: skip
    if names:
        out["observed"] += f" ⟨warnings: {names}⟩"
    out["seconds_in_case"] = round(time.time() - t0, 1)
    out["dpjax_path"] = str(Path(dpjax.__file__).resolve().parent)
    return out


def run_case_subprocess(cid, cache_dir):
    c = CASES[cid]
    env = dict(os.environ, RT3_CACHE=cache_dir, JAX_ENABLE_X64="0")
    env.update(c["env"])
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    t0 = time.time()
    try:
        p = subprocess.run([sys.executable, str(SCRIPT), "--child", cid, path], env=env, timeout=c["timeout"],
                           capture_output=True, text=True)  # fmt: skip
        text = Path(path).read_text() if Path(path).stat().st_size else ""
        if p.returncode == 0 and text:
            res = json.loads(text)
        else:
            tail = " ".join((p.stderr or "").strip().splitlines()[-4:])[:500]
            res = dict(id=cid, group=c["group"], expected="", observed=f"child exited {p.returncode}: {tail}",
                       verdict="harness error", note="", review_verdict=c["review"])  # fmt: skip
    except subprocess.TimeoutExpired:
        res = dict(id=cid, group=c["group"], expected="", observed=f"no result within {c['timeout']} s",
                   verdict="timeout", note="", review_verdict=c["review"])  # fmt: skip
    finally:
        if os.path.exists(path):
            os.unlink(path)
    res["seconds"] = round(time.time() - t0, 1)
    res["env"] = " ".join(f"{k}={v}" for k, v in c["env"].items())
    return res


def base_verdict(v: str) -> str:
    v = v.strip()
    for k in ("wrong (warned)", "unclear error", "PRIVACY", "WRONG", "crash", "OK"):
        if v.startswith(k):
            return k
    return v


def dpjax_location():
    p = subprocess.run([sys.executable, "-c", "import dpjax, os; print(os.path.dirname(os.path.realpath(dpjax.__file__)))"],
                       capture_output=True, text=True, cwd=tempfile.gettempdir())  # fmt: skip
    path = p.stdout.strip()
    root = Path(path).parent if path else None
    commit = "unknown"
    if path.startswith("/tmp/before"):
        commit = "840f5ad"
    if root is not None:
        g = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
        if g.returncode == 0:
            commit = g.stdout.strip()
            d = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "dpjax"], capture_output=True,
                               text=True)  # fmt: skip
            if d.returncode == 0 and d.stdout.strip():
                commit += "+uncommitted changes in dpjax/"
    return path, commit


def write_outputs(tag, rows, path, commit, total):
    RESULTS.mkdir(parents=True, exist_ok=True)
    data = dict(tag=tag, dpjax_commit=commit, dpjax_path=path, total_seconds=round(total, 1), cases=rows)
    (RESULTS / f"reliability_t3_{tag}.json").write_text(json.dumps(data, indent=1, ensure_ascii=False))
    esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
    md = [f"# Reliability review t3: the failing cases rerun ({tag})", "",
          f"dpjax at `{path}` (commit {commit}); {len(rows)} cases; {total / 60:.1f} min in all. "
          "Verdicts are decided by `lab/reliability_t3.py`; *review* is the verdict of "
          "`shared/reviews/reliability_t3.md` at 840f5ad.", "",
          "| id | group | review | verdict | expected | observed | s |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        v = r["verdict"] + (f" ({r['note']})" if r.get("note") else "")
        md.append(f"| {r['id']} | {r['group']} | {esc(r['review_verdict'])} | **{esc(v)}** | {esc(r['expected'])} | "
                  f"{esc(r['observed'])} | {r.get('seconds', '')} |")  # fmt: skip
    counts = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    md += ["", "Verdict counts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))]
    (RESULTS / f"reliability_t3_{tag}.md").write_text("\n".join(md) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tag", default="after")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--inproc", action="store_true", help="run the cases in this process (debugging)")
    ap.add_argument("--child", nargs=2, metavar=("ID", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        kind, *rest = a.worker
        {"study-writer": worker_study_writer, "devices": worker_devices}[kind](*rest)
        return
    if a.child:
        cid, out = a.child
        Path(out).write_text(json.dumps(run_case_here(cid), ensure_ascii=False))
        return
    order = {g: i for i, g in enumerate(("A", "B", "C", "D", "E", "extra"))}
    if a.list:
        for cid in sorted(CASES, key=lambda c: order[CASES[c]["group"]]):
            c = CASES[cid]
            env = " ".join(f"{k}={v}" for k, v in c["env"].items())
            print(f"{cid:34s} {c['group']:6s} review: {c['review']}  {env}")
        return
    ids = sorted(CASES, key=lambda c: order[CASES[c]["group"]]) if not a.only else a.only
    unknown = [i for i in ids if i not in CASES]
    if unknown:
        ap.error(f"unknown case(s) {unknown}; --list lists them")
    path, commit = dpjax_location()
    print(f"dpjax: {path} (commit {commit}); {len(ids)} cases", flush=True)
    cache_dir = tempfile.mkdtemp(prefix="rt3_cache_")
    rows, t_all = [], time.time()
    try:
        for i, cid in enumerate(ids, 1):
            print(f"[{i}/{len(ids)}] {cid} ...", end=" ", flush=True)
            if a.inproc:
                os.environ["RT3_CACHE"] = cache_dir
                t0 = time.time()
                res = run_case_here(cid)
                res["seconds"] = round(time.time() - t0, 1)
            else:
                res = run_case_subprocess(cid, cache_dir)
            rows.append(res)
            note = f" [{res['note']}]" if res.get("note") else ""
            print(f"{res['verdict']}{note} (review: {res['review_verdict']}) {res['seconds']} s", flush=True)
            print(f"      {res['observed'][:300]}", flush=True)
            write_outputs(a.tag, rows, path, commit, time.time() - t_all)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    total = time.time() - t_all
    seen = sorted({r["dpjax_path"] for r in rows if r.get("dpjax_path")})
    if seen and seen != [path]:
        print(f"warning: the cases imported dpjax from {seen}, the parent found {path}")
    write_outputs(a.tag, rows, path, commit, total)
    agree = sum(base_verdict(r["verdict"]) == base_verdict(r["review_verdict"]) for r in rows)
    print(
        f"done: {len(rows)} cases in {total / 60:.1f} min; verdict class as the review's: {agree}/{len(rows)}"
    )


if __name__ == "__main__":
    main()
