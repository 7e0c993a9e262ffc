"""The curator's side keeps confidential data out of what it returns and says (shared/reviews/
reliability_t3.md, items 4, 5 and 12 of its ranking): releases meant for publication draw from the
operating system's randomness, published objects hold only what may be published, and no error
message repeats a confidential value. Each failed at 840f5ad."""

import re

import jax
import numpy as np
import pytest

import dpjax
from dpjax import compositional as comp
from dpjax import synthetic as syn

SECRET = "7654321"  # a confidential number that must not come back in any message


@pytest.mark.parametrize(
    "call",
    [
        lambda: dpjax.DiscreteLaplaceMechanism(epsilon=1.0).release(None, 7654321.5),
        lambda: dpjax.DiscreteLaplaceMechanism(epsilon=1.0).release(
            None, np.array([7654321.0, 4242.0, np.nan])
        ),
        lambda: dpjax.DiscreteGaussianMechanism(sigma=2.0).release(None, [7654321.25]),
        lambda: comp.dpss(
            jax.random.key(0),
            np.array([[0.2, 0.3, 0.5]] * 5 + [[0.7654321, 0.3, 0.5]]),
            [0.1, 0.01],
            1.0,
            1.0,
        ),
        lambda: comp.censored_mean_log(np.array([[0.2, 0.8], [-0.7654321, 1.7654321]]), 0.01),
        lambda: syn.delta_tilde(jax.random.key(0), [7654321.0, 1.0, 1.0], 5, 0.5, 1.0, 1.0),
        lambda: syn.predictive_release(jax.random.key(0), [7654321.0, np.nan], 5, 0.0, 1.0),
    ],
    ids=["nonint-release", "nan-array", "dg-nonint", "dpss-row-sum", "negative-part", "singletons", "py-nan"],
)
def test_no_error_message_repeats_a_confidential_value(call):
    with pytest.raises(ValueError) as err:
        call()
    message = str(err.value)
    assert SECRET not in message.replace(".", "") and not re.search(
        r"row \d|x\[\d|\d+ values appear", message
    ), message


def test_predictive_release_publishes_with_os_randomness_and_only_publishable_fields():
    """840f5ad took a JAX key only (whoever knows it recomputes the release and tells which data set
    was used) and returned the urn's labels and per-value counts, which reveal the number of distinct
    confidential values."""
    data = [0.1, 0.1, 0.2, 0.2, 0.3, 0.3, 0.4, 0.4]
    a, b = (syn.predictive_release(None, data, 20, 0.0, 2.0) for _ in range(2))
    assert set(a._fields) == {"values", "released"} and not np.array_equal(a.values, b.values)
    key = jax.random.key(3)
    release, urn = (
        syn.predictive_release(key, data, 20, 0.0, 2.0),
        syn.predictive_urn(key, data, 20, 0.0, 2.0),
    )
    np.testing.assert_array_equal(release.values, urn.values)
    np.testing.assert_array_equal(release.released, np.asarray(urn.labels) < 4)
    with pytest.raises(ValueError, match="rng_key"):
        syn.predictive_release("key", data, 20, 0.0, 2.0)


def test_dpss_says_it_is_a_simulation_when_asked_to_publish():
    x = np.random.default_rng(1).dirichlet([2.0, 3.0, 4.0], size=50)
    with pytest.raises(ValueError, match="dpss is a simulation.*release_score\\(None"):
        comp.dpss(None, x, [0.1, 0.01], 0.5, 1.5)
    score = comp.release_score(None, x, [0.1, 0.01], 1.5)  # the exact, publishable part
    assert np.asarray(score).shape == (2,)
