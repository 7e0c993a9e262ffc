"""Coefficients of Temme's uniform expansion of the regularized incomplete gamma function, for
``dpjax/infer/poisson_cdf.py``, and reference values of the Poisson CDF for its test.

Q(a, x) = ½ erfc(η √(a/2)) + e^(−aη²/2) / √(2πa) · Σ_k c_k(η) a^(−k)   (DLMF 8.12.3–4)
with λ = x/a = 1 + μ, ½η² = μ − ln(1 + μ), c_0 = 1/μ − 1/η and
c_k = (1/η) c'_{k−1} + (−1)^k g_k / μ   (DLMF 8.12.9; g_k of Γ's Stirling series, DLMF 5.11.3).
Each c_k is a power series in η; μ(η) comes from Lagrange inversion of η = μ φ(μ), φ² = 2(μ − ln(1+μ))/μ².
Exact rational arithmetic throughout.

    python lab/temme_coefficients.py              # the table, degree 0 … 18 of c_0 … c_4
    python lab/temme_coefficients.py --reference  # tests/data/poisson_cdf_reference.json (needs mpmath)
"""

import json
import sys
from fractions import Fraction as F

K, N = 5, 18
M = N + 2 * K + 6  # working order of the series


def mul(a, b):
    return [sum(a[i] * b[n - i] for i in range(n + 1)) for n in range(M)]


def inv(a):
    out = [F(1) / a[0]] + [F(0)] * (M - 1)
    for n in range(1, M):
        out[n] = -sum(a[i] * out[n - i] for i in range(1, n + 1)) / a[0]
    return out


def sqrt1(a):  # a series with a[0] == 1
    out = [F(1)] + [F(0)] * (M - 1)
    for n in range(1, M):
        out[n] = (a[n] - sum(out[i] * out[n - i] for i in range(1, n))) / 2
    return out


def coefficients():
    phi_inv = inv(sqrt1([F(2 * (-1) ** j, j + 2) for j in range(M)]))  # 1/φ(μ)
    mu = [F(0)] * M  # [η^n] μ = (1/n) [μ^(n−1)] φ^(−n)
    power = [F(1)] + [F(0)] * (M - 1)
    for n in range(1, M):
        power = mul(power, phi_inv)
        mu[n] = power[n - 1] / n
    eta_over_mu = inv(mu[1:] + [F(0)])
    c = eta_over_mu[1:] + [F(0)]  # c_0 = (η/μ − 1)/η
    g = [F(1), F(1, 12), F(1, 288), F(-139, 51840), F(-571, 2488320)]
    rows = [c]
    for k in range(1, K):
        laurent = [F(0)] * (M + 1)  # index i ↔ η^(i−1)
        for n in range(1, M):
            laurent[n - 1] += n * c[n]  # (1/η) c'
        for n in range(M):
            laurent[n] += (-1) ** k * g[k] * eta_over_mu[n]  # (−1)^k g_k / μ
        assert laurent[0] == 0  # the 1/η terms cancel
        c = laurent[1 : M + 1]
        rows.append(c)
    return [[float(v) for v in row[: N + 1]] for row in rows]


def reference(path="tests/data/poisson_cdf_reference.json", count=400, seed=0):
    import mpmath
    import numpy as np

    mpmath.mp.dps = 40
    rng = np.random.default_rng(seed)
    rates = 10 ** rng.uniform(2, 9.5, count)
    ks = np.maximum(np.floor(rates + np.sqrt(rates) * rng.uniform(-30, 30, count)), 0)
    cdf = [float(mpmath.gammainc(k + 1, r, mpmath.inf, regularized=True)) for k, r in zip(ks, rates)]
    with open(path, "w") as f:
        json.dump({"k": ks.tolist(), "rate": rates.tolist(), "cdf": cdf}, f)


if __name__ == "__main__":
    if "--reference" in sys.argv:
        reference()
    else:
        print("(")
        for row in coefficients():
            print("    (\n" + "".join(f"        {v!r},\n" for v in row) + "    ),")
        print(")")
