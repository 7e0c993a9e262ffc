"""The stages' contracts (issue 87): each is a pure function of its inputs, built from static settings,
with its Info NamedTuple; the engines' exact answers and the golden draws test them in composition."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.infer import mh, size_step, theta_block
from dpjax.infer.spec import ModelSpec


def test_theta_block_held_keeps_theta_and_reports_a_sure_step():
    kernel = theta_block.build_kernel(("p",), update="held")
    theta = {"p": jnp.array(0.3)}
    new, state, info = kernel(jax.random.key(0), (), theta, {"x": jnp.ones(3)}, {}, {}, (), {})
    assert float(new["p"]) == pytest.approx(0.3) and state == ()
    assert float(info.accept_prob) == 1.0 and not bool(info.diverging)


def test_theta_block_exact_update_keeps_dtypes_and_refuses_wrong_keys():
    draw = lambda key, records, params: {"p": jnp.sum(records["x"]) / 10}  # a float from int records
    kernel = theta_block.build_kernel(("p",), update=draw)
    new, _, _ = kernel(
        jax.random.key(0), (), {"p": jnp.array(0.5, jnp.float32)}, {"x": jnp.ones(3, int)}, {}, {}, (), {}
    )
    assert new["p"].dtype == jnp.float32 and float(new["p"]) == pytest.approx(0.3)
    bad = theta_block.build_kernel(("p",), update=lambda key, records, params: {"q": 1.0})
    with pytest.raises(ValueError, match=r"keys \['p'\]"):
        bad(jax.random.key(0), (), {"p": jnp.array(0.5)}, {"x": jnp.ones(3)}, {}, {}, (), {})


def test_theta_block_support_check_sees_nan_and_the_support():
    from numpyro.distributions import constraints

    supports = {"p": constraints.unit_interval}
    assert bool(theta_block.in_support({"p": jnp.array(0.5)}, supports))
    assert not bool(theta_block.in_support({"p": jnp.array(1.5)}, supports))
    assert not bool(theta_block.in_support({"p": jnp.array(jnp.nan)}, supports))


def test_random_walk_adaptation_learns_only_where_told_with_the_robbins_monro_gain():
    state = mh.init_rw(2, jnp.float32, 0.5)
    held = mh.adapt(state, jnp.ones(2), 0.9, 0.234, learn=False)
    assert jax.tree.all(jax.tree.map(lambda a, b: bool(jnp.all(a == b)), held, state))
    gains = []
    for _ in range(3):
        gains.append(float(mh.gain(state)))
        state = mh.adapt(state, jnp.ones(2), 0.9, 0.234, learn=True)
    np.testing.assert_allclose(gains, np.arange(1.0, 4.0) ** -0.6, rtol=1e-6)
    assert float(state.count) == 3 and float(state.log_step) > np.log(0.5)  # accepting too often: longer


def test_size_step_helpers_read_the_spec_only():
    spec = ModelSpec((), ("p",), ("x",), (), {}, False, size="n", size_bounds=(1, 200))
    assert np.asarray(size_step.active_slots(spec, 3)).sum() == 3
    assert bool(size_step.near_capacity(spec, {"n": jnp.array(199)}))
    assert not bool(size_step.near_capacity(spec, {"n": jnp.array(150)}))
    known = spec._replace(size=None)
    assert not bool(size_step.near_capacity(known, {}))
    assert float(size_step.initial_jump_scale(known, {}, {})) == 0.0
    # no noisy n: √n, at least 1, at most a quarter of the capacity
    assert float(size_step.initial_jump_scale(spec, {}, {"n": jnp.array(100)})) == pytest.approx(10.0)
    assert float(size_step.initial_jump_scale(spec, {}, {"n": jnp.array(10_000)})) == pytest.approx(50.0)
