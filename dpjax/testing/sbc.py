"""Simulation-based calibration (SBC; Talts et al. 2018) of any engine on any model whose prior can be
simulated, run as one compiled, vmapped study, with the graphical test of Säilynoja, Bürkner & Vehtari
(2022) as its verdict.

For each simulation :func:`sbc` draws θ̃ and a release s̃ from the model's prior predictive (the
``privatized`` site with ``obs=None``), runs the engine on s̃, thins its draws to ``num_ranks`` evenly
spaced ones and records the rank of θ̃ among them, ``#{draws < θ̃}`` (ties, as for a discrete n, broken
at random). When the engine draws from the exact posterior and the thinned draws are independent, every
rank is uniform on 0 … L. The simulations of one setting are the replicates of one
:func:`dpjax.studies.run_study` cell: one ``jit(vmap(...))``, sharded over the devices, resumable from
``out``.

The verdict (:func:`rank_ecdf_test`) asks whether the empirical CDF of the ranks stays inside the
simultaneous band within which a uniform ECDF stays with probability ``prob`` (ArviZ's optimized band,
``arviz.stats.ecdf_utils.ecdf_confidence_band``); the band is Bonferroni-split over every coordinate of
every setting, so :attr:`SBCResult.passed` is one test at level ``1 − prob``. Too wide a posterior puts
the ranks in the middle (the ECDF difference dips then rises), too narrow a one at the ends, a biased one
on one side.

Draws that are autocorrelated make the ranks non-uniform even for an exact engine: the result keeps each
simulation's effective sample size and warns when the median is below ``num_ranks``.
"""

from __future__ import annotations

import functools
import itertools
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._validate import positive_int
from ._common import release_sites

__all__ = ["ECDFTest", "SBCResult", "rank_ecdf_test", "sbc"]

_ONE_CELL = "sbc_setting"  # the grid run_study needs when the user gives none


class ECDFTest(NamedTuple):
    """The ECDF of ranks on 0 … L at z_k = k / (L + 1), k = 1 … L, and its simultaneous band."""

    inside: bool  # the ECDF stays inside the band
    z: np.ndarray
    ecdf: np.ndarray
    lower: np.ndarray
    upper: np.ndarray


@functools.lru_cache(maxsize=64)
def _band(num_simulations: int, num_ranks: int, prob: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from arviz.stats.ecdf_utils import ecdf_confidence_band

    z = np.arange(1, num_ranks + 1) / (num_ranks + 1)
    lower, upper = ecdf_confidence_band(num_simulations, z, z, prob=prob, method="optimized")
    return z, lower, upper


def rank_ecdf_test(ranks, num_ranks: int, prob: float = 0.95) -> ECDFTest:
    """Whether SBC ranks on 0 … ``num_ranks`` look uniform: their ECDF at k / (L + 1) against the band a
    uniform ECDF stays inside, at every point at once, with probability ``prob`` (Säilynoja et al. 2022).
    The ECDF of discrete ranks at these points is that of the continuous (rank + U) / (L + 1), so the band
    for continuous uniform draws holds exactly.

    >>> rng = np.random.default_rng(0)
    >>> rank_ecdf_test(rng.integers(0, 100, 500), num_ranks=99).inside
    True
    >>> rank_ecdf_test(rng.integers(20, 80, 500), num_ranks=99).inside  # too wide a posterior
    False
    """
    ranks = np.asarray(ranks)
    num_ranks = positive_int(num_ranks, "num_ranks")
    if ranks.ndim != 1 or ranks.size < 2 or ranks.dtype.kind not in "iu":
        raise ValueError(
            f"ranks must be a 1-d int array of at least 2 ranks, got {ranks.dtype} {ranks.shape}"
        )
    if ranks.min() < 0 or ranks.max() > num_ranks:
        raise ValueError(f"ranks must lie in 0 .. num_ranks={num_ranks}; got {ranks.min()} .. {ranks.max()}")
    if not 0 < prob < 1:
        raise ValueError(f"prob must be in (0, 1), got {prob!r}")
    z, lower, upper = _band(int(ranks.size), num_ranks, float(prob))
    ecdf = (ranks[:, None] < np.arange(1, num_ranks + 1)).mean(0)
    inside = bool(np.all((lower <= ecdf) & (ecdf <= upper)))
    return ECDFTest(inside, z, ecdf, lower, upper)


@dataclass(frozen=True)
class SBCResult:
    """What :func:`sbc` returns.

    - **table** – one row per simulation: the grid parameters, ``replicate``, and per coordinate
      ``<site>_rank`` (``<site>_rank[i]`` for an entry of a vector site; −1 where the engine returned no
      draws) and ``<site>_ess`` (the effective sample size of that simulation's draws).
    - **verdicts** – one row per setting × coordinate: ``simulations``, ``inside`` (the ECDF inside its
      band), ``max_gap`` (the largest |ECDF − z| in units of the band's half-width at that point; > 1 is
      outside) and ``median_ess``.
    - **num_ranks**, **prob**, **coordinates**, **grid** – the settings.
    """

    table: Any
    verdicts: Any
    num_ranks: int
    prob: float
    coordinates: tuple[str, ...]
    grid: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """Every coordinate of every setting inside its band (one test at level 1 − prob)."""
        return bool(self.verdicts["inside"].all())

    def ranks(self, coordinate: str, **setting) -> np.ndarray:
        """The ranks of ``coordinate`` in the setting given by grid values (every setting when there is
        one), e.g. for ``arviz.plot_ecdf(ranks / (L + 1), ...)`` or a histogram."""
        rows = self.table
        for k, v in setting.items():
            rows = rows[rows[k] == v]
        ranks = rows[_column(coordinate, "rank")].to_numpy()
        return ranks[ranks >= 0]

    def plot(self, axes=None):
        """The ECDF difference (ECDF − z) of each coordinate's ranks, one panel per setting × coordinate,
        inside its simultaneous band (shaded); returns the matplotlib figure."""
        import matplotlib.pyplot as plt

        grid = list(self.grid)
        settings = self.verdicts.drop_duplicates(grid)[grid].to_dict("records") if grid else [{}]
        rows, cols = len(settings), len(self.coordinates)
        if axes is None:
            _, axes = plt.subplots(rows, cols, figsize=(2.6 * cols + 0.6, 2.2 * rows + 0.4), squeeze=False)
        axes = np.asarray(axes).reshape(rows, cols)
        level = _per_test(self.prob, len(self.verdicts))
        for row, setting in zip(axes, settings):
            for ax, coordinate in zip(row, self.coordinates):
                test = rank_ecdf_test(self.ranks(coordinate, **setting), self.num_ranks, level)
                ax.fill_between(test.z, test.lower - test.z, test.upper - test.z, color="0.85", step="post")
                color = "C0" if test.inside else "C3"
                ax.step(test.z, test.ecdf - test.z, where="post", color=color)
                ax.axhline(0, color="0.5", lw=0.5)
                label = ", ".join(f"{k}={v}" for k, v in setting.items())
                ax.set_title(f"{coordinate}" + (f" ({label})" if label else ""), fontsize=9)
                ax.set_xlabel("rank / (L + 1)", fontsize=8)
        axes[0, 0].set_ylabel("ECDF − uniform", fontsize=8)
        fig = axes[0, 0].figure
        fig.tight_layout()
        return fig


def _per_test(prob: float, tests: int) -> float:
    return 1 - (1 - prob) / tests


def _sites(model, release: dict, model_args: tuple, params) -> tuple[dict, list[str]]:
    """``({keyword: site}, θ sites to rank)``: the release keywords resolved (one keyword names the one
    privatized site) and checked, and the θ sites (default every latent site outside the records, and
    n), read from the model's spec on a release drawn from its prior predictive."""
    release, releases, spec = release_sites(model, release, model_args)
    fixed = sorted({*releases, *spec.observed} - set(release.values()))
    if fixed:
        raise ValueError(
            f"release: the model observes {fixed} with fixed values; SBC draws θ from its prior, which is "
            "the posterior's reference only if every observed site is simulated with it. Map the model "
            f"keyword that takes each of them to its site, e.g. release={{'s_dp': {fixed[0]!r}, ...}}."
        )
    latent = [*spec.theta, *spec.size_sites]
    if params is None:
        return release, latent
    params = [params] if isinstance(params, str) else list(params)
    unknown = sorted(set(params) - set(latent))
    if not params or unknown:
        raise ValueError(f"params: {unknown or params} are not θ sites of the model; choose from {latent}")
    return release, params


def _thinned_ranks(key, draws, truth, num_ranks: int):
    """``(ranks, nan)``: the ranks of ``truth`` among ``num_ranks`` evenly spaced draws (chains, samples,
    ...), and whether any of those draws is NaN (an engine that returned no draws)."""
    flat = draws.reshape((-1,) + draws.shape[2:])
    if flat.shape[0] < num_ranks:
        raise ValueError(
            f"num_ranks={num_ranks} needs at least as many draws per simulation; the engine returned "
            f"{flat.shape[0]}: raise num_samples (or the ABC sampler's) or lower num_ranks"
        )
    picks = flat[np.round(np.linspace(0, flat.shape[0] - 1, num_ranks)).astype(int)]
    below = (picks < truth).sum(0)
    ties = (picks == truth).sum(0)
    rank = below + jnp.floor(jax.random.uniform(key, jnp.shape(truth)) * (ties + 1)).astype(below.dtype)
    return rank, jnp.isnan(picks.astype(float)).any()


def _engine_draws(engine, num_warmup: int, num_samples: int, num_chains: int, names) -> tuple[Callable, bool]:
    """``(draws, iid)``: ``draws(key, args, kwargs) -> {name: (chains, samples, ...)}`` for an MCMC kernel,
    an exact-ABC sampler (``iid``: independent draws) or a function."""
    from numpyro.infer.mcmc import MCMCKernel

    from ..infer import ABCSampler, run_chain

    if isinstance(engine, MCMCKernel):

        def draws(key, args, kwargs):
            constrain = engine.postprocess_fn(args, kwargs)

            def collect(state):  # constrain once per draw, keep the ranked sites
                z = constrain(state.z)
                return {k: z[k] for k in names}

            run = lambda k: run_chain(
                engine, k, args, kwargs, num_warmup=num_warmup, num_samples=num_samples, collect=collect
            )
            return jax.vmap(run)(jax.random.split(key, num_chains))

        return draws, False
    if isinstance(engine, ABCSampler):

        def draws(key, args, kwargs):
            state = engine.run(key, args, kwargs)
            full = state.count >= state.samples[names[0]].shape[0]
            nan = lambda v: jnp.where(full, v.astype(jnp.result_type(v, float)), jnp.nan)[None]
            return {k: nan(state.samples[k]) for k in names}

        return draws, True
    if callable(engine):
        return engine, False
    raise ValueError(
        "engine must be an MCMC kernel (DataAugmentationKernel, ReversibleJumpKernel, PseudoMarginalABC, "
        "NUTS, ...), an exact-ABC sampler (dpjax.infer.exact_abc_sampler) or a function (key, model_args, "
        f"model_kwargs) -> {{site: draws (chains, samples, ...)}}; got {engine!r}"
    )


def sbc(
    model,
    engine,
    *,
    release: str | Mapping[str, str],
    rng_key,
    model_args: tuple | Callable = (),
    grid: Mapping[str, Sequence] | None = None,
    num_simulations: int = 256,
    num_warmup: int = 500,
    num_samples: int = 1000,
    num_chains: int = 1,
    num_ranks: int = 99,
    params: str | Sequence[str] | None = None,
    prob: float = 0.95,
    out=None,
    progress_bar: bool = True,
) -> SBCResult:
    """Simulation-based calibration of ``engine`` on ``model``: ``num_simulations`` draws of θ and a
    release from the prior predictive, the engine's posterior draws given each release, and the ranks of
    the true θ among them, tested for uniformity (see the module's docstring).

    :param model: the model that simulates: its prior predictive, with the release keyword(s) None.
    :param engine: what infers θ given a release: an MCMC kernel (dpjax's DA, reversible-jump and
        pseudo-marginal kernels, or NumPyro's; ``num_chains`` vmapped chains of ``num_warmup`` +
        ``num_samples``), an exact-ABC sampler (:func:`dpjax.infer.exact_abc_sampler`; its own
        ``num_samples``), or a function ``(key, model_args, model_kwargs) -> {site: draws}`` with draws
        shaped (chains, samples, ...). An engine built on another model (say with the sensitivity off by
        2×) is checked against the simulating model: that is how SBC shows a misspecification.
    :param release: the model's keyword argument that takes the release of its privatized site, or
        ``{keyword: site}`` for several releases (and for any other observed site, all simulated).
    :param model_args: the model's positional arguments, or a function of the grid parameters
        returning them (``model_args(**setting)``; floats arrive traced, as in
        :func:`~dpjax.studies.run_study`).
    :param grid: ``{name: [values]}`` settings (e.g. ε), one study cell each; default one setting.
    :param num_ranks: L; each simulation's draws are thinned to L evenly spaced ones (ranks 0 … L).
    :param params: the θ sites to rank (default every latent site outside the records, and n).
    :param prob: the verdict's level: every coordinate of every setting stays inside its band with this
        probability when the engine is exact.
    :param out: a ``.csv`` to write the simulations to and resume from (:func:`~dpjax.studies.run_study`).
    :returns: an :class:`SBCResult`; ``.passed`` is the verdict, ``.plot()`` the graphical test.

    >>> import jax, numpyro, numpyro.distributions as dist, dpjax
    >>> def model(n, s_dp=None):
    ...     p = numpyro.sample("p", dist.Beta(1.0, 1.0))
    ...     with numpyro.plate("people", n):
    ...         x = numpyro.sample("x", dist.Bernoulli(p))
    ...     dpjax.privatized("count", dpjax.LaplaceMechanism(epsilon=1.0, sensitivity=1.0),
    ...                      lambda r: r["x"], {"x": x}, plate="people", obs=s_dp)
    >>> abc = dpjax.infer.exact_abc_sampler(model, num_samples=49, batch_size=1_000)
    >>> result = sbc(model, abc, release="s_dp", model_args=(20,), num_simulations=32, num_ranks=49,
    ...              rng_key=jax.random.key(0), progress_bar=False)
    >>> result.passed, result.verdicts[["coordinate", "simulations", "inside"]].values.tolist()
    (True, [['p', 32, True]])
    """
    import pandas as pd

    from ..studies import run_study

    if isinstance(release, str):
        release = {release: None}
    if not isinstance(release, Mapping) or not release or not all(isinstance(k, str) for k in release):
        raise ValueError(
            f"release must be the model's keyword for the release, or {{keyword: site}}; got {release!r}"
        )
    num_simulations = positive_int(num_simulations, "num_simulations", minimum=2)
    num_ranks = positive_int(num_ranks, "num_ranks")
    num_warmup = positive_int(num_warmup, "num_warmup", minimum=0)
    num_samples = positive_int(num_samples, "num_samples")
    num_chains = positive_int(num_chains, "num_chains")
    if not 0 < prob < 1:
        raise ValueError(f"prob must be in (0, 1), got {prob!r}")
    if grid is not None and (
        not isinstance(grid, Mapping)
        or not grid
        or not all(
            isinstance(v, Sequence | np.ndarray) and len(v) and not isinstance(v, str) for v in grid.values()
        )
    ):
        raise ValueError(f"grid must be a non-empty dict {{name: [values, ...]}}, got {grid!r}")
    grid = {_ONE_CELL: ["default"]} if grid is None else dict(grid)
    settings = [dict(zip(grid, v)) for v in itertools.product(*grid.values())]
    args_of = model_args if callable(model_args) else (lambda **_: model_args)
    first_args = args_of(**{k: v for k, v in settings[0].items() if k != _ONE_CELL})
    if not isinstance(first_args, tuple):
        raise ValueError(f"model_args must be a tuple (or return one), got {type(first_args).__name__}")
    release, names = _sites(model, dict(release), first_args, params)
    draws_of, iid = _engine_draws(engine, num_warmup, num_samples, num_chains, names)

    def cell(key, **setting):
        from numpyro.handlers import seed, trace

        setting.pop(_ONE_CELL, None)
        k_prior, k_engine, k_ties = jax.random.split(key, 3)
        args = args_of(**setting)
        tr = trace(seed(model, k_prior)).get_trace(*args, **dict.fromkeys(release))
        kwargs = {kw: tr[site]["value"] for kw, site in release.items()}
        draws = draws_of(k_engine, args, kwargs)
        truth = {k: tr[k]["value"] for k in names}
        keys = dict(zip(names, jax.random.split(k_ties, len(names))))
        ranked = {k: _thinned_ranks(keys[k], jnp.asarray(draws[k]), truth[k], num_ranks) for k in names}
        # a simulation with NaN draws of any site (a chain that left the support) ranks none of them:
        # an integer n would otherwise be ranked from a chain whose θ is gone
        failed = jnp.any(jnp.stack([nan for _, nan in ranked.values()]))
        ranks = {k: jnp.where(failed, -1, rank) for k, (rank, _) in ranked.items()}
        return {"draws": {k: draws[k] for k in names}, "rank": ranks}

    def summaries(outputs, setting):
        from numpyro.diagnostics import effective_sample_size

        cols = {}
        for k in names:
            x = np.asarray(outputs["draws"][k], np.float64)
            if iid:  # exact ABC: independent draws
                ess = np.full(x.shape[:1] + x.shape[3:], float(x.shape[1] * x.shape[2]))
            else:
                ess = np.stack(
                    [effective_sample_size(r) if r.shape[1] > 3 else np.full(r.shape[2:], np.nan) for r in x]
                )
            cols[f"{k}_rank"], cols[f"{k}_ess"] = np.asarray(outputs["rank"][k]), ess
        return cols

    table = run_study(
        cell, grid, replicates=num_simulations, rng_key=rng_key, summaries=summaries, out=out,
        progress_bar=progress_bar,
    )  # fmt: skip
    ranked = [re.fullmatch(rf"({'|'.join(map(re.escape, names))})_rank(\[.*\])?", c) for c in table.columns]
    coordinates = tuple(m[1] + (m[2] or "") for m in ranked if m)
    tests = len(settings) * len(coordinates)
    level = _per_test(prob, tests)
    rows = []
    for setting in settings:
        sel = np.ones(len(table), bool)
        for k, v in setting.items():
            sel &= (table[k] == v).to_numpy()
        for c in coordinates:
            ranks = table.loc[sel, _column(c, "rank")].to_numpy()
            failed = int((ranks < 0).sum())
            if failed:
                warnings.warn(
                    f"sbc: the engine returned no draws for {c} in {failed} of {len(ranks)} simulations "
                    f"({_label(setting)}); the verdict uses the rest, which may be a biased subset",
                    stacklevel=2,
                )
            ranks = ranks[ranks >= 0].astype(int)
            test = rank_ecdf_test(ranks, num_ranks, level)
            half = np.maximum((test.upper - test.lower) / 2, 1e-12)
            mid = (test.upper + test.lower) / 2
            ess = float(np.nanmedian(table.loc[sel, _column(c, "ess")]))
            rows.append({
                **{k: v for k, v in setting.items() if k != _ONE_CELL},
                "coordinate": c, "simulations": len(ranks), "inside": test.inside,
                "max_gap": float(np.max(np.abs(test.ecdf - mid) / half)), "median_ess": ess,
            })  # fmt: skip
            if ess < num_ranks:
                warnings.warn(
                    f"sbc: the median effective sample size of {c} is {ess:.0f} ({_label(setting)}), below "
                    f"num_ranks={num_ranks}: ranks of autocorrelated draws are not uniform even for an exact "
                    "engine; raise num_samples or lower num_ranks",
                    stacklevel=2,
                )
    grid_names = tuple(k for k in grid if k != _ONE_CELL)
    table = table.drop(columns=[_ONE_CELL], errors="ignore")
    verdicts = pd.DataFrame(rows)
    return SBCResult(table, verdicts, num_ranks, float(prob), coordinates, grid_names)


def _label(setting: Mapping) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in setting.items() if k != _ONE_CELL) or "the one setting"


def _column(coordinate: str, what: str) -> str:
    """The table's column of a coordinate's ``what`` (``rank`` or ``ess``): ``beta[1]`` → ``beta_rank[1]``
    (:func:`~dpjax.studies.run_study` names the entries of an array output so)."""
    head, bracket, index = coordinate.partition("[")
    return f"{head}_{what}{bracket}{index}"
