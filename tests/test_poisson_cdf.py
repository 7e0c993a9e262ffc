"""The Poisson CDF of the inverse-CDF noise map against mpmath's at 40 digits (the values are made by
``python lab/temme_coefficients.py --reference``)."""

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.infer.poisson_cdf import TEMME_COEFFICIENTS, TEMME_MIN_SHAPE, poisson_cdf

REFERENCE = json.loads((Path(__file__).parent / "data" / "poisson_cdf_reference.json").read_text())


def _errors(cdf=poisson_cdf):
    k, rate, want = (np.asarray(REFERENCE[name]) for name in ("k", "rate", "cdf"))
    with jax.enable_x64():
        traced_anew = jax.jit(lambda k, rate: cdf(k, rate))
        got = np.asarray(traced_anew(jnp.asarray(k), jnp.asarray(rate)))
    return rate, np.abs(got - want)


def test_float64_cdf_is_exact_to_round_off():
    rate, err = _errors()
    assert err[rate >= TEMME_MIN_SHAPE].max() <= 2e-16  # Temme's expansion
    assert err[rate < TEMME_MIN_SHAPE].max() <= 1e-12  # gammaincc


def test_a_wrong_coefficient_fails(monkeypatch):
    """The reference can tell: the c_1 term off by 1 % is seen at rates of 10³."""
    rows = [list(row) for row in TEMME_COEFFICIENTS]
    rows[1][0] *= 1.01
    monkeypatch.setattr("dpjax.infer.poisson_cdf.TEMME_COEFFICIENTS", tuple(map(tuple, rows)))
    rate, err = _errors()
    assert err[rate >= TEMME_MIN_SHAPE].max() > 1e-12


@pytest.mark.parametrize("rate", [1e3, 1e6])
def test_edges(rate):
    with jax.enable_x64():
        k = jnp.array([-1.0, 0.0, rate, 10 * rate])
        cdf = np.asarray(poisson_cdf(k, jnp.full(4, rate)))
    assert cdf[0] == 0.0 and 0.0 <= cdf[1] < 1e-300 + np.exp(-min(rate, 700)) and 0.5 < cdf[2] < 0.51
    assert cdf[3] == 1.0
