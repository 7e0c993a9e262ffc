"""Why SBC of the §6.1 reversible-jump engine loses simulations in float32 (issue 89).

Draws θ̃ and the releases from the prior (the seed's model, ε_s = ε_n = EPS), runs the RJ kernel for
500 + 2 000 iterations on each, and for every chain that stops (θ turns NaN) prints the state just
before: n, Φ's eigenvalues and the size of the imputed records.
"""

import argparse

import jax
import numpy as np
from jax import lax
from numpyro.handlers import seed, trace

import dpjax
import dpjax.models as m

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("eps", nargs="?", type=float, default=1.0)
parser.add_argument("--simulations", type=int, default=256)
EPS, SIMS = vars(parser.parse_args()).values()
model = m.unknown_n_regression
kernel = dpjax.infer.ReversibleJumpKernel(model, theta_update=m.unknown_n_regression_update())


def chain(key):
    """The trajectory of θ, n and the largest |x| of the first n records, and the prior's Φ."""
    k_prior, k_engine = jax.random.split(key)
    tr = trace(seed(model, k_prior)).get_trace(100, eps_s=EPS, eps_n=EPS)
    kwargs = {"s_dp": tr["summary"]["value"], "n_dp": tr["n_dp"]["value"], "eps_s": EPS, "eps_n": EPS}
    state = kernel.init(k_engine, 500, None, (100,), kwargs)

    def step(s, _):
        live = jax.numpy.arange(100)[:, None] < s.z["n"]
        return kernel.sample(s, (100,), kwargs), (s.z, jax.numpy.max(jax.numpy.abs(s.records["x"]) * live))

    return lax.scan(step, state, None, length=2_500)[1], tr["Phi"]["value"]


(z, xmax), prior_phi = jax.device_get(jax.jit(jax.vmap(chain))(jax.random.split(jax.random.key(0), SIMS)))
bad = ~np.isfinite(z["beta"]).all(-1) | ~np.isfinite(z["Phi"]).all((-1, -2))
lost = np.flatnonzero(bad.any(1))
print(f"ε = {EPS:g}: {len(lost)} of {SIMS} chains stop")
for j in lost:
    t = np.argmax(bad[j]) - 1
    eig = np.linalg.eigvalsh(z["Phi"][j, t])
    print(
        f"sim {j}: stops at iteration {t + 1}; before: n {int(z['n'][j, t])}, Φ eigenvalues {eig[0]:.2g}, "
        f"{eig[1]:.2g} (prior draw {np.linalg.eigvalsh(prior_phi[j])[0]:.2g}), max |x| {xmax[j, t]:.3g}"
    )
ok = ~bad.any(1)
smallest = np.linalg.eigvalsh(z["Phi"][ok]).min(-1).min(-1)
print(
    "chains that run to the end: smallest eigenvalue of Φ visited, quantiles 0/5/50 %:",
    np.quantile(smallest, [0, 0.05, 0.5]),
)
