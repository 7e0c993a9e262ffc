"""The grid of the ATUS oracle (``dpjax.reproduce.atus_oracle``) with the exact Laplace noise of s:
its posterior of α has exponential tails, which a ±6-sd grid cut (the sd of α₁ 5–7 % too small,
so the n-known chains of ``awan-atus`` were judged against a wrong sd)."""

import numpy as np

from dpjax.reproduce import atus_oracle as o


def _sd(ev):
    return np.sqrt(ev["ea2"] - ev["ea"] ** 2)


def test_exact_noise_grid_holds_the_tails_and_enough_nodes():
    n, eps_s = 6656, 1.0  # the ATUS size at the noisiest ε_s, α near its posterior there
    s = n * o._moments(np.array([12.0, 1.5, 16.5]))[0] + np.array([20.0, -15.0, 10.0])
    default = o.evidence(s, eps_s, [n], exact_noise=True)
    bs = -3 * o.LOGA / eps_s
    wider = o._integrate(float(n), s, bs, 61, 24.0, o._laplace_mixture(bs, o.NODES - 1))
    np.testing.assert_allclose(default["ea"][0], wider["ea"], rtol=2e-4)
    np.testing.assert_allclose(_sd(default)[0], _sd(wider), rtol=1e-3)
    narrow = o.evidence(s, eps_s, [n], exact_noise=True, K=15, width=6.0)
    assert np.all(_sd(narrow)[0] < 0.97 * _sd(default)[0])  # what the old ±6-sd grid did
