"""How far stochastic EM's target is from the MLE, computed exactly (no simulation) for the two
releases of `tests/test_stochastic_em.py`: Bernoulli records with a Laplace(1) count, n = 30 known, or n
unknown (flat on 1..60) with a Laplace(1) n_dp. With E-step draws exact, θ⁽ᵗ⁾ = K⁽ᵗ⁾/n⁽ᵗ⁾ is a Markov chain
on (n, K); its stationary law (restricted to 0 < K < n, since K = 0 and K = n are absorbing and
unreachable in practice) is the leading left eigenvector of the transition matrix. Also the exact MLE,
its standard error (observed information) and EM's rate (the derivative of the EM map at the MLE).

    python benchmarks/stochastic_em_bias.py
"""

import argparse

import numpy as np
from _common import table, write_results
from scipy.optimize import minimize_scalar
from scipy.stats import binom


def analyse(label, sizes, log_prior_n, s):
    """``sizes``: the possible n; the count's noise is Laplace(1), n's is ``log_prior_n`` (its prior times
    the n_dp likelihood)."""
    sizes = np.asarray(sizes)
    k = np.arange(sizes.max() + 1)

    def joint(p):  # p(n, K | s, θ = p) up to a constant, shape (sizes, K)
        w = np.exp(log_prior_n(sizes))[:, None] * binom.pmf(k[None], sizes[:, None], p)
        return w * np.exp(-np.abs(s - k))[None]

    nll = lambda p: -np.log(joint(p).sum())
    mle = minimize_scalar(nll, bounds=(1e-6, 1 - 1e-6), method="bounded", options={"xatol": 1e-11}).x
    h = 1e-4
    sd = ((nll(mle + h) - 2 * nll(mle) + nll(mle - h)) / h**2) ** -0.5
    em = lambda p: (joint(p) * k[None] / sizes[:, None]).sum() / joint(p).sum()
    rate = (em(mle + h) - em(mle - h)) / (2 * h)
    states = [(i, kk) for i, n in enumerate(sizes) for kk in range(1, n)]
    P = np.empty((len(states), len(states)))
    for row, (i, kk) in enumerate(states):
        w = joint(kk / sizes[i])
        P[row] = [w[j, kj] for j, kj in states]
        P[row] /= P[row].sum()
    vals, vecs = np.linalg.eig(P.T)
    pi = np.abs(np.real(vecs[:, np.argmax(np.real(vals))]))
    pi /= pi.sum()
    theta = np.array([kk / sizes[i] for i, kk in states])
    mean = pi @ theta
    return {
        "release": label,
        "MLE": mle,
        "sd of the MLE": sd,
        "EM rate": rate,
        "stochastic-EM mean": mean,
        "stochastic-EM sd": np.sqrt(pi @ theta**2 - mean**2),
        "bias / sd of the MLE": (mean - mle) / sd,
    }


def main():
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    rows = [
        analyse("n = 30 known, s = 12.3", [30], lambda n: np.zeros(len(n)), 12.3),
        analyse(
            "n unknown (1..60), s = 13.4, n_dp = 31.7", np.arange(1, 61), lambda n: -np.abs(31.7 - n), 13.4
        ),
    ]
    for r in rows:
        print(r)
    names = list(rows[0])
    fmt = lambda v: f"{v:.6g}" if isinstance(v, float) else str(v)
    md = (
        "# Stochastic EM's stationary mean against the MLE, computed exactly\n\n"
        "Bernoulli(p) records, Laplace(1) noise on the count (and on n); the stochastic-EM chain with exact "
        "E-step draws (its stationary law by the leading eigenvector of the (n, K) transition matrix).\n\n"
        + "\n".join(table(rows, [(c, lambda r, c=c: fmt(r[c])) for c in names]))
    )
    write_results("stochastic_em_bias", {"rows": rows}, md)


if __name__ == "__main__":
    main()
