"""Where do two commits' RJ chains part? Runs the awan-table1-seed-code chain (seed-code likelihood,
capacity 3 000, 5 joint (θ, n) moves, ε_s = 0.1, ε_n = 0.001) for ITERS iterations from one key and
saves n and τ per iteration; compare the files of two checkouts:

    PYTHONPATH=<checkout> python lab/rj_commit_drift.py OUT.npz
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import dpjax.models as m
from dpjax.infer import ReversibleJumpKernel
from dpjax.reproduce.unknown_n import seed_code_regression

ITERS, CAPACITY, N = 300, 3000, 1000
T = jnp.array([1000.0, -300.0, 300.0, 900.0, 100.0, 900.0, 200.0, -100.0, 500.0])
s_dp, n_dp = T + 3.0, jnp.array(1200.0)


def model(s_dp, n_dp):
    seed_code_regression(CAPACITY, s_dp, n_dp, eps_s=0.1, eps_n=0.001, n_exact=N)


kernel = ReversibleJumpKernel(model, theta_update=m.unknown_n_regression_update(), size_moves=100, noncentred_moves=5)
state = kernel.init(jax.random.key(7), 150, None, (s_dp, n_dp), {})


def body(s, _):
    s = kernel.sample(s, (s_dp, n_dp), {})
    return s, (s.z["n"], s.z["tau"], s.z["beta"])


_, (n, tau, beta) = jax.jit(lambda s: lax.scan(body, s, None, length=ITERS))(state)
np.savez(sys.argv[1], n=np.asarray(n), tau=np.asarray(tau), beta=np.asarray(beta))
print("saved", sys.argv[1])
