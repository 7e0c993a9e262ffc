"""Why DPreMCMC's chains disagree: model (5) of Guo, Barrientos & Peña has no posterior near α_true.

Model (5) is the joint density ∏ⱼ p_Lap(s_L⁽²⁾ | S₀(x₁..x_b)) · ∏ᵢ p_Dir(xᵢ | α)^k · π₀(α), k = n₂/b.
Integrating the b records out leaves π₀(α) · Z(α)^b · E[p_Lap], Z(α) = B(k(α − 1) + 1) / B(α)^k (see
:func:`dpjax.compositional.dirichlet_replicates`). Along a ray α = t·α̂, Z(α)^b grows like
t^{n₂(d − 1)/2}, while the release term is bounded (concentrated records cost it a fixed ~30 nats):
the α-marginal is set by the prior's tail alone. Three measurements at the seed's timed cell
(n = 5 000, α₅, ε = 1.5, b = 5, prior p4 elicited from S_L(D₁, a)):

1. the log α-marginal along the ray (Monte Carlo over the records, 2·10⁵ draws per t);
2. the seed's own sampler (§3.3.2: one-record-at-a-time MH with Dirichlet(α) proposals, then α given
   the records; here a random walk on log α stands in for Neal's slice sampler), 50 000 iterations,
   with and without the power k in the record step (the latter: Ju et al.'s record step unchanged);
3. ``dp_remcmc`` (the exact data-augmentation kernel), 5 chains at 5 % of the seed's length.

    python benchmarks/remcmc_degeneracy.py
"""

import argparse

import numpy as np
from _common import write_results
from jax import config

config.update("jax_enable_x64", True)  # a benchmark script: α reaches 10⁴, float32 gammaln loses it

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
from jax import lax, random  # noqa: E402
from scipy.special import gammaln, logsumexp  # noqa: E402

from dpjax.compositional import (  # noqa: E402
    dirichlet_mle,  # noqa: E402
    dp_remcmc,
    dpss,
    elicit_priors,
)
from dpjax.reproduce.compositional import ALPHAS, THRESHOLDS  # noqa: E402

N, EPSILON, B, ITERS = 5_000, 1.5, 5, 50_000


def log_beta(c):
    """log B(c) = Σⱼ log Γ(cⱼ) − log Γ(Σⱼ cⱼ), the multivariate Beta function (model (5)'s log Z(α) terms)."""
    return np.sum(gammaln(c), -1) - gammaln(np.sum(c, -1))


def ray(s2, a, n2, e1, alpha_hat, ts, draws=200_000):
    """log of Z(α)^b and of E[p_Lap] (without its constant −d log(2·scale)) along α = t·α̂ (the prior left out)."""
    rng, d, k = np.random.default_rng(0), len(s2), n2 / B
    scale = -d * np.log(a) / (n2 * e1)
    rows = []
    for t in ts:
        al = t * alpha_hat
        conc = k * (al - 1) + 1
        x = rng.dirichlet(conc, size=(draws, B))
        l1 = np.abs(np.log(np.maximum(x, a)).mean(1) - s2).sum(-1)
        rows.append({"t": t, "b log Z": float(B * (log_beta(conc) - k * log_beta(al))),
                     "log E[p_Lap] (unnormalized)": float(logsumexp(-l1 / scale) - np.log(draws))})  # fmt: skip
    return rows


def seed_sampler(key, s2, a, n2, e1, prior, x0, alpha0, power=True):
    """The seed's MH-within-Gibbs for model (5); returns α per iteration and the record acceptance."""
    d, k = len(s2), n2 / B
    scale = -d * np.log(a) / (n2 * e1)
    log_lap = lambda x: dist.Laplace(s2, scale).log_prob(jnp.mean(jnp.log(jnp.maximum(x, a)), 0)).sum()
    log_dir = lambda x, alpha: dist.Dirichlet(alpha).log_prob(x)
    log_post = lambda la, x: k * jnp.sum(log_dir(x, jnp.exp(la))) + prior.log_prob(jnp.exp(la)) + la.sum()

    def step(carry, key):
        x, la, acc = carry
        kx, ka = random.split(key)

        def record(i, c):
            x, acc, kk = c
            kk, k1, k2 = random.split(kk, 3)
            al = jnp.exp(la)
            xp = random.dirichlet(k1, al)
            xn = x.at[i].set(xp)
            lr = log_lap(xn) - log_lap(x) + (k - 1) * (log_dir(xp, al) - log_dir(x[i], al)) * power
            ok = jnp.log(random.uniform(k2)) < lr
            return jnp.where(ok, xn, x), acc + ok, kk

        def walk(i, c):
            la, kk = c
            kk, k1, k2 = random.split(kk, 3)
            lp = la + 0.02 * random.normal(k1, (d,))
            ok = jnp.log(random.uniform(k2)) < log_post(lp, x) - log_post(la, x)
            return jnp.where(ok, lp, la), kk

        x, acc, _ = lax.fori_loop(0, B, record, (x, acc, kx))
        la, _ = lax.fori_loop(0, 20, walk, (la, ka))
        return (x, la, acc), jnp.sum(jnp.exp(la))

    run = jax.jit(lambda k_: lax.scan(step, (x0, jnp.log(alpha0), 0), random.split(k_, ITERS)))
    (_, _, acc), alpha_sum = run(key)
    return np.asarray(alpha_sum), int(acc) / (ITERS * B)


def main():
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    alpha_true = np.asarray(ALPHAS["α₅"])
    x = np.random.default_rng(7).dirichlet(alpha_true, size=N)
    e1, e2, n1 = 0.25 * EPSILON, 0.75 * EPSILON, N // 4
    n2 = N - n1
    split = dpss(random.key(0), jnp.asarray(x), np.asarray(THRESHOLDS), e1, e2, n1=n1)
    a = float(split.threshold)
    s1, s2 = (np.asarray(s, float) for s in split.statistic)
    alpha_hat = np.asarray(dirichlet_mle(jnp.asarray(s2), check=False).alpha, float)
    pri = elicit_priors(random.key(1), jnp.asarray(s1), n1=n1, a=a, epsilon1=e1, num_boot=1000)

    ray_rows = ray(s2, a, n2, e1, alpha_hat, [1, 2, 10, 100, 1_000, 10_000])
    ray_rows = [{**r, "total": r["b log Z"] + r["log E[p_Lap] (unnormalized)"]} for r in ray_rows]

    seed_rows = []
    starts = {
        "x₀ ~ Dirichlet(α̂)": random.dirichlet(random.key(3), alpha_hat, (B,)),
        "x₀ = 5 rows of D₂": x[n1 : n1 + B],
    }
    # (power in the record step, prior, chain key); p3: p4's Gamma marginals without the copula
    runs = [(True, "p4", 2), (False, "p4", 2), (False, "p3", 2), (False, "p3", 1)]
    for power, prior, seed in runs:
        for name, x0 in starts.items():
            tr, acc = seed_sampler(
                random.key(seed),
                jnp.asarray(s2),
                a,
                n2,
                e1,
                getattr(pri, prior),
                jnp.asarray(x0),
                alpha_hat,
                power,
            )
            seed_rows.append({"record step": "with the power k (model (5))" if power else "without it (Ju et al.'s)",
                              "prior": prior, "key": seed, "start": name, "record acceptance": acc,
                              **{f"α₀ at {i:,}": float(tr[i - 1]) for i in (1_000, 10_000, 50_000)}})  # fmt: skip

    m = dp_remcmc(random.key(4), jnp.asarray(s2), b=B, n2=n2, a=a, epsilon1=e1, prior=pri.p4,
                  num_warmup=1_250, num_samples=1_250, num_chains=5)  # fmt: skip
    chains = np.asarray(m.get_samples(group_by_chain=True)["alpha"]).sum(-1)
    da_rows = [{"chain": c, "α₀ mean, first half": float(v[: len(v) // 2].mean()),
                "α₀ mean, second half": float(v[len(v) // 2 :].mean())} for c, v in enumerate(chains)]  # fmt: skip

    fmt = lambda v: f"{v:,.3g}" if isinstance(v, float) else str(v)
    table = lambda rows: "\n".join(
        ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        + ["| " + " | ".join(fmt(v) for v in r.values()) + " |" for r in rows]
    )
    md = (
        "# DPreMCMC's model (5) is degenerate: α runs off\n\n"
        f"n = {N:,}, α_true = α₅ (α₀ = {alpha_true.sum():g}), ε = {EPSILON} (ε₁ = {e1}), n₂ = {n2:,}, b = {B}, "
        f"k = n₂/b = {n2 / B:g}, a = {a:g}, prior p4 elicited from S_L(D₁, a); the MLE of S_L(D₂, a) has "
        f"α₀ = {alpha_hat.sum():.1f}.\n\n"
        f"## 1. log α-marginal of model (5) along α = t·α̂ (prior left out)\n\nZ(α)^b grows like t^(n₂(d−1)/2) = "
        f"t^{n2 * (len(s2) - 1) / 2:g}, {n2 * (len(s2) - 1) / 2 * np.log(10):,.0f} nats per decade; the release "
        "term stays bounded.\n\n"
        + table(ray_rows)
        + f"\n\n## 2. The seed's sampler, {ITERS:,} iterations (α₀ = Σⱼ αⱼ along the chain)\n\n"
        + table(seed_rows)
        + "\n\n## 3. `dp_remcmc` (exact data augmentation), 5 chains × 2 500 iterations (1 250 warm-up)\n\n"
        + table(da_rows)
        + "\n\nEvery sampler of model (5) drifts to α₀ in the thousands to tens of thousands (α_true: 22), "
        "further with more iterations: the chains of `compositional_method_times` disagree (split-R̂ "
        "1.5·10⁴) because they sample this target, not because of a sampler defect, and `dp_remcmc` warns "
        "when its median draw of α₀ exceeds 3× the release's MLE α₀. The chain without the power k in the "
        "record step (Ju et al.'s record update unchanged, α updated with the powered likelihood) stays "
        "near the MLE: it samples neither model (5) nor any joint distribution (its two conditionals are "
        "incompatible), but it is the reading of §3.3.2 under which the seed's DPreMCMC figures (MSEs near "
        "DPMCMC's) are possible. The seed's figures cannot come from model (5) run to convergence."
    )
    write_results("remcmc_degeneracy", {"ray": ray_rows, "seed_sampler": seed_rows, "dp_remcmc": da_rows}, md)
    print(md)


if __name__ == "__main__":
    main()
