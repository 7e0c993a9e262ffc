"""Cost of DPMCMC's record sweep on Dirichlet records (Guo et al., §3.3.1): ns per record update.

One DataAugmentationKernel iteration on ``dpjax.models.dirichlet_mean_log`` (d parts, n records,
ε₁ = 0.375, a = 10⁻³), compiled, compile time excluded, for:
- ``sweep``: α held (a θ-update that returns α): all n proposals xᵢ* ~ Dirichlet(α) in one model call,
  t(x*) = log max(x*, a) / n, and the ``lax.scan`` over the records — the record sweep alone;
- ``proposals alone``: the n draws xᵢ* ~ Dirichlet(α) by ``dpjax.infer.samplers.dirichlet`` and their
  t(x*), nothing else (d Gamma variates, a softmax and d logs per record);
- ``scan alone``: ``dpjax.infer.record_sweep`` on given (n, d) statistics with the Laplace density: the
  ``lax.scan`` over the d-dimensional residual and the vectorised bookkeeping around it;
- ``sweep, jax.random.dirichlet``: the same with the proposals drawn by ``jax.random.dirichlet``
  (what the kernel did before ``dpjax.infer.samplers``);
- ``iteration (NUTS α-step)``: the seed's DPMCMC iteration, α by NUTS (tree depth ≤ 5) then the sweep;
- ``iteration + 5 α-moves``: what ``compositional.dp_mcmc`` runs by default, the same iteration and then
  5 non-centred α-moves with the records held through their Dirichlet transport map (drawing the
  noise u given the records, then per move rebuilding the n records from u and the new α);
- ``reference: regression kernel``: the existing sweep, measured in the same run —
  ``sweep_speed.py``'s ``kernel`` column (one iteration on the seed's clamped regression, dim T = 9,
  a conjugate β-step; it has no d, so each d's row measures it again).
The plain sweep on a low-dimensional statistic (``sweep_speed.py``) is the reference: tens of ns for
the scan, and for a whole iteration the reference column. The scan on a d-part Dirichlet
statistic costs the same tens of ns; a Dirichlet proposal costs d Gamma variates, and a Gamma variate
costs two threefry words (1.4–2.6 ns each since ``dpjax.infer.samplers`` unrolls threefry's rounds;
``jax.random``'s rolled ones cost ~4× more), an erf⁻¹, three logs, and the redraw rounds' pass over
the whole array to find the few elements left unfinished. The proposals are most of the sweep.
With ``--chains C`` (C > 1) every measurement runs C chains vmapped and reports ns per record update
per chain, the cost that a GPU-batched simulation study pays. ``--work-scale`` scales the number of
timed iterations (a GPU's scan steps cost microseconds each, so fewer are timed there).
"""

import argparse

import jax
import jax.numpy as jnp
from _common import best_time, write_results
from jax import lax
from numpyro.infer import NUTS
from sweep_speed import kernel_ns

import dpjax.infer.data_augmentation as da
from dpjax.infer import DataAugmentationKernel
from dpjax.infer.record_sweep import record_sweep
from dpjax.infer.samplers import dirichlet
from dpjax.models import dirichlet_mean_log

SIZES = [1_000, 5_000, 20_000]
PARTS = [3, 5]
A, EPS1 = 1e-3, 0.375


def _iterations(n, work):
    return max(2, int(work // n))


def _loop_ns(step, n, iters, chains):
    """ns per record per chain of ``iters`` compiled calls of ``step(key) -> array`` on each of
    ``chains`` vmapped chains, each summed (so nothing is left out by dead-code elimination)."""
    loop = lambda k: lax.fori_loop(0, iters, lambda i, c: c + jnp.sum(step(jax.random.fold_in(k, i))), 0.0)
    keys = jax.random.split(jax.random.key(0), chains)
    return 1e9 * best_time(jax.jit(jax.vmap(loop)), keys) / (iters * n * chains)


def part_ns(n, d, mode, chains, work_scale):
    """The sweep's two parts on their own: the proposals and their statistics, or the scan."""
    alpha = jnp.linspace(2.0, 4.0, d)
    iters = _iterations(n, 2e6 * work_scale)
    if mode == "proposals":
        step = lambda key: jnp.log(jnp.maximum(dirichlet(key, alpha, (n,)), A)) / n
        return _loop_ns(step, n, iters, chains)
    t_old = jnp.log(jnp.maximum(dirichlet(jax.random.key(1), alpha, (n,)), A)) / n
    t_new = jnp.log(jnp.maximum(dirichlet(jax.random.key(2), alpha, (n,)), A)) / n
    scale = -d * jnp.log(A) / (n * EPS1)
    noise = lambda r: -jnp.abs(r) / scale
    residual = 0.3 * scale * jnp.ones(d)
    step = lambda key: record_sweep(key, [t_old], [t_new], [residual], [noise]).residuals[0]
    return _loop_ns(step, n, iters, chains)


def iteration_ns(n, d, mode, chains, work_scale):
    alpha = jnp.linspace(2.0, 4.0, d)
    held = lambda key, records, params: {"alpha": params["alpha"]}  # α held: the iteration is the sweep
    if mode in ("nuts", "moves"):
        moves = 5 if mode == "moves" else 0
        kernel = DataAugmentationKernel(NUTS(dirichlet_mean_log, max_tree_depth=5), noncentred_moves=moves)
    else:
        kernel = DataAugmentationKernel(dirichlet_mean_log, theta_update=held, noncentred_moves=0)
    release = jnp.log(jnp.maximum(alpha / alpha.sum(), A))  # a plausible S_L
    args = (n, A, EPS1, release)
    work = 2e5 if mode in ("nuts", "moves") else 2e6
    iters = _iterations(n, work * work_scale)
    key, init = jax.random.key(0), {"alpha": alpha}
    if chains > 1:  # the kernel's own vectorised chains, as numpyro.infer.MCMC(chain_method="vectorized")
        key, init = jax.random.split(key, chains), {"alpha": jnp.broadcast_to(alpha, (chains, d))}

    plain = da.fast_sampling
    if mode == "jax":
        da.fast_sampling = lambda model: model
    try:
        state = kernel.init(key, 0, init, args, {})  # eager: init_params are checked
        run = jax.jit(lambda s: lax.fori_loop(0, iters, lambda i, s: kernel.sample(s, args, {}), s))
        total = best_time(run, state)
    finally:
        da.fast_sampling = plain
    return 1e9 * total / (iters * n * chains)


MODES = {
    "sweep": (iteration_ns, "held"),
    "proposals alone": (part_ns, "proposals"),
    "scan alone": (part_ns, "scan"),
    "sweep, jax.random.dirichlet": (iteration_ns, "jax"),
    "iteration (NUTS α-step)": (iteration_ns, "nuts"),
    "iteration + 5 α-moves": (iteration_ns, "moves"),
    "reference: regression kernel": (lambda n, d, mode, chains, work: kernel_ns(n, chains, work), None),
}


def write_table(
    rows, work_scale, name, title="DPMCMC on Dirichlet records: ns per record update", intro=None
):
    cols = list(rows[0])
    md = [
        f"# {title}",
        "",
        __doc__.split("\n\n", 1)[1].strip() if intro is None else intro,
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    md += [
        "| " + " | ".join(f"{r[c]:.1f}" if isinstance(r[c], float) else str(r[c]) for c in cols) + " |"
        for r in rows
    ]
    write_results(name, {"rows": rows, "work_scale": work_scale}, "\n".join(md))


def main(sizes, parts, chain_counts, modes, work_scale, name):
    rows = []
    for chains in chain_counts:
        for d in parts:
            for n in sizes:
                row = {"chains": chains, "d": d, "n": n}
                for label in modes:
                    timer, mode = MODES[label]
                    row[label] = timer(n, d, mode, chains, work_scale)
                print(row, flush=True)
                rows.append(row)
                write_table(rows, work_scale, name)  # after each row: a run cut short keeps it


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--sizes", type=int, nargs="*", default=SIZES)
    p.add_argument("--parts", type=int, nargs="*", default=PARTS)
    p.add_argument(
        "--chains", type=int, nargs="*", default=[1], help="vmapped chains (a list: one table row each)"
    )
    p.add_argument("--modes", nargs="*", default=list(MODES), choices=list(MODES))
    p.add_argument("--work-scale", type=float, default=1.0, help="scales the number of timed iterations")
    p.add_argument("--name", default="compositional_speed", help="results/<name>.{md,json}")
    a = p.parse_args()
    main(a.sizes, a.parts, a.chains, a.modes, a.work_scale, a.name)
