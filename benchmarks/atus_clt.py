"""Semi-analytic posterior of (n, α) for the ATUS unbounded-DP model (large-n CLT): the oracle that
``atus_ridge.py`` checks the ReversibleJumpKernel chains against.

α_j ~ Gamma(1, rate 0.1); n flat; xᵢ ~ Dirichlet(α); t(x) = log max(x, a), a = 0.0006;
s = Σᵢ t(xᵢ) + Laplace(b_s), b_s = −3 log(a)/ε_s; n_dp = n + Laplace(1/ε_n). Given n the sum is
Normal to high accuracy (n ≈ 6 600), so p(s | n) = ∫ p(α) N(s; n m(α), n Σ(α) + 2 b_s² I) dα, with
m(α) the exact clamped mean of t and Σ(α) its covariance (the clamp's joint events neglected). The
integral runs in φ = log α around its mode: a Laplace approximation and a 25³ grid over ±6 sd along
the Hessian's eigen-directions, which must agree (``laplace_minus_grid``). The Laplace noise of s is
replaced by its variance, which is 3–5 % of n·Σ at ε_s = 10.
"""

import numpy as np
from scipy import optimize, special

A = 0.0006
LOGA = np.log(A)
UL = [special.roots_genlaguerre(40, k) for k in (1.0, 2.0)]  # weights u e^-u, u^2 e^-u


def clamp_moments(p, q):
    """E[v 1{x<a}], E[v^2 1{x<a}] for x ~ Beta(p, q), v = log a - log x (x = a e^-v, u = p v)."""
    out = []
    for k, (u, w) in zip((1, 2), UL):
        g = np.exp((q[..., None] - 1) * np.log1p(-A * np.exp(-u / p[..., None])))
        logpre = p * LOGA - special.betaln(p, q) - (k + 1) * np.log(p)
        out.append(np.exp(logpre) * (g @ w))
    return out


def moments(al, cov="clamped"):
    """m(alpha) (..., 3) exact clamped mean; Sigma(alpha) (..., 3, 3)."""
    a0 = al.sum(-1, keepdims=True)
    el = special.digamma(al) - special.digamma(a0)  # E log x_j
    e1, e2 = clamp_moments(al, a0 - al)
    m = el + e1
    S = -special.polygamma(1, a0)[..., None] * np.ones(al.shape[:-1] + (3, 3))
    S = S + np.einsum("...j,jk->...jk", special.polygamma(1, al), np.eye(3))
    if cov == "clamped":  # Y = L + D, D = v 1{x<a}; joint events {x_j<a, x_k<a} neglected
        cLD_diag = LOGA * e1 - e2 - el * e1  # Cov(L_j, D_j)
        cLD = (special.digamma(a0) - special.digamma(a0 - al)) * e1  # Cov(L_j, D_k), j != k
        C = np.broadcast_to(cLD[..., None, :], S.shape).copy()  # C[j,k] = Cov(L_j, D_k)
        C[..., [0, 1, 2], [0, 1, 2]] = cLD_diag
        S = S + C + np.swapaxes(C, -1, -2) - e1[..., :, None] * e1[..., None, :]
        S[..., [0, 1, 2], [0, 1, 2]] += e2
    return m, S, e1


def logf(phi, n, s, bs, cov):
    """log [p(alpha) N(s; n m, n Sigma + 2 bs^2 I) |d alpha/d phi|], vectorised over phi (..., 3)."""
    al = np.exp(phi)
    m, S, _ = moments(al, cov)
    V = n * S + 2 * bs**2 * np.eye(3)
    L = np.linalg.cholesky(V)
    r = np.linalg.solve(L, (s - n * m)[..., None])[..., 0]
    ld = 2 * np.log(np.diagonal(L, axis1=-2, axis2=-1)).sum(-1)
    prior = (np.log(0.1) - 0.1 * al + phi).sum(-1)
    return prior - 0.5 * (r**2).sum(-1) - 0.5 * ld - 1.5 * np.log(2 * np.pi)


def hessian(fun, x, h=1e-4):
    E = np.eye(3) * h
    pts = np.array(
        [x + E[i] * si + E[j] * sj for i in range(3) for j in range(3) for si in (1, -1) for sj in (1, -1)]
    )
    v = fun(pts).reshape(3, 3, 2, 2)
    return -(v[:, :, 0, 0] - v[:, :, 0, 1] - v[:, :, 1, 0] + v[:, :, 1, 1]) / (4 * h * h)  # of -logf


def start_phi(mlog):  # Dirichlet (unclamped) log-moment match
    f = lambda ph: special.digamma(np.exp(ph)) - special.digamma(np.exp(ph).sum()) - mlog
    return optimize.root(f, np.zeros(3)).x


def integrate_n(n, s, bs, cov, phi0, grid=True, K=25):
    fun = lambda ph: logf(ph, n, s, bs, cov)
    res = optimize.minimize(lambda ph: -fun(ph), phi0, method="BFGS", options=dict(gtol=1e-7))
    ph = res.x
    for _ in range(3):  # Newton polish with finite differences
        H = hessian(fun, ph)
        g = np.array([(fun(ph + e) - fun(ph - e)) / 2e-6 for e in np.eye(3) * 1e-6])
        ph = ph + np.linalg.solve(H, g)
    H = hessian(fun, ph)
    lam, U = np.linalg.eigh(H)
    lap = fun(ph) + 1.5 * np.log(2 * np.pi) - 0.5 * np.log(lam).sum()
    if not grid:
        return dict(phi=ph, lap=lap)
    z = np.linspace(-6, 6, K)
    Z = np.stack(np.meshgrid(z, z, z, indexing="ij"), -1).reshape(-1, 3)
    P = ph + (Z / np.sqrt(lam)) @ U.T
    lv = fun(P)
    lg = special.logsumexp(lv) + 3 * np.log(z[1] - z[0]) - 0.5 * np.log(lam).sum()
    w = np.exp(lv - lv.max())
    w /= w.sum()
    al = np.exp(P)
    edge = max(np.exp(lv[np.abs(Z).max(1) > 5.9] - lv.max()).max(), 0)
    return dict(phi=ph, lap=lap, grid=lg, ea=w @ al, ea2=w @ al**2, edge=edge)


def clt_posterior(s, n_dp, eps_s, eps_n, cov="clamped"):
    """E, sd and 5/50/95 % quantiles of n, and E, sd of α, under the CLT posterior (module doc)."""
    s = np.asarray(s, float)
    bs = -3 * LOGA / eps_s
    half = max(600.0, 15 / eps_n)
    coarse = np.arange(max(1, int(np.floor(n_dp - half))), int(np.ceil(n_dp + half)) + 1, 2)
    order = np.argsort(np.abs(coarse - n_dp))  # warm starts outward from n_dp
    lap = np.full(len(coarse), -np.inf)
    phi_at = {}
    for side in (order[coarse[order] >= n_dp], order[coarse[order] < n_dp]):
        ph = start_phi(s / max(n_dp, 1))
        for i in side:
            try:
                r = integrate_n(coarse[i], s, bs, cov, ph, grid=False)
            except (np.linalg.LinAlgError, ValueError):  # past the upper edge: s/n is no Dirichlet mean
                continue
            ph, lap[i] = r["phi"], r["lap"]
            phi_at[coarse[i]] = ph
    post = lap - eps_n * np.abs(n_dp - coarse)
    keep = coarse[post > post.max() - 16]
    fine = np.arange(keep.min(), keep.max() + 1, 2)
    near = lambda n: phi_at[min(phi_at, key=lambda k: abs(k - n))]
    out = [integrate_n(n, s, bs, cov, near(n)) for n in fine]
    grid = np.array([o["grid"] for o in out])
    ns = np.arange(fine[0], fine[-1] + 1)
    log_post = np.interp(ns, fine, grid) - eps_n * np.abs(n_dp - ns)
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    ea = np.stack([np.interp(ns, fine, [o["ea"][j] for o in out]) for j in range(3)], 1)
    ea2 = np.stack([np.interp(ns, fine, [o["ea2"][j] for o in out]) for j in range(3)], 1)
    mean_n = w @ ns
    mean_a = w @ ea
    cdf = np.cumsum(w)
    return {
        "mean_n": float(mean_n),
        "sd_n": float(np.sqrt(w @ (ns - mean_n) ** 2)),
        "q_n": [float(ns[np.searchsorted(cdf, p)]) for p in (0.05, 0.5, 0.95)],
        "mean_alpha": mean_a,
        "sd_alpha": np.sqrt(w @ ea2 - mean_a**2),
        "laplace_minus_grid": float(np.ptp([o["lap"] - o["grid"] for o in out])),
    }


def verdict_check(eps_s, eps_n=0.01, realisations=10, draws=4000, seed=0):
    """How the awan-atus verdict "sd of E n over the n_dp realisations ≤ mean posterior sd of n" fares
    under this posterior itself: p(s | n) on a grid of n (Laplace approximation), then the posterior
    of n for ``draws`` values n_dp = n + Laplace(1/ε_n), and the share of sets of ``realisations``
    among them in which the verdict fails."""
    import jax
    import jax.numpy as jnp

    from dpjax.reproduce.unknown_n import _load_atus

    x, _ = _load_atus(0)
    n = len(x)
    # s exactly as awan-atus builds it (float32 sum, the run's own float type for the Laplace draw)
    t = jnp.asarray(np.log(np.clip(x, A, 1.0)).sum(0), jnp.float32)
    s = np.asarray(t + jax.random.laplace(jax.random.key(2019), (3,)) * (-3 * LOGA) / eps_s, float)
    bs = -3 * LOGA / eps_s
    # upwards from well below n, warm-started; past the upper edge s/n is no Dirichlet mean (-inf)
    grid, log_evidence, phi = np.arange(n - 1400, n + 400, 4), [], start_phi(s / (n - 1400))
    for m in grid:
        try:
            r = integrate_n(m, s, bs, "clamped", phi, grid=False)
        except (np.linalg.LinAlgError, ValueError):
            r = {"lap": -np.inf}
        if np.isfinite(r["lap"]):
            phi = r["phi"]
        log_evidence.append(r["lap"] if np.isfinite(r["lap"]) else -np.inf)
    keep = np.isfinite(log_evidence)
    ns = np.arange(grid[keep].min(), grid[keep].max() + 1)
    log_p = np.interp(ns, grid[keep], np.asarray(log_evidence)[keep])
    rng = np.random.default_rng(seed)
    means, sds = [], []
    for n_dp in n + rng.laplace(0.0, 1.0 / eps_n, draws):
        w = np.exp(log_p - eps_n * np.abs(n_dp - ns) - np.max(log_p - eps_n * np.abs(n_dp - ns)))
        w /= w.sum()
        means.append(w @ ns)
        sds.append(np.sqrt(w @ (ns - means[-1]) ** 2))
    means, sds = np.array(means), np.array(sds)
    sets = rng.integers(0, draws, (draws, realisations))
    fails = np.mean(means[sets].std(1, ddof=1) > sds[sets].mean(1))
    return {
        "eps_s": eps_s,
        "sd of E n": means.std(),
        "mean posterior sd of n": sds.mean(),
        "verdict fails": fails,
    }


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from _common import table, write_results

    rows = [verdict_check(eps_s) for eps_s in (1.0, 10.0)]
    columns = [(k, lambda r, k=k: f"{r[k]:.3g}") for k in rows[0]]
    write_results(
        "atus_clt",
        {"rows": rows},
        "The awan-atus verdict at ε_n = 0.01 under the large-n posterior itself (ATUS, 4 000 n_dp draws, "
        "sets of 10 realisations):\n\n" + "\n".join(table(rows, columns)),
        "JAX_ENABLE_X64=1 python benchmarks/atus_clt.py",
    )
    print(rows)
