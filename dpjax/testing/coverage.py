"""Coverage of an estimator's Wald intervals at a fixed θ: the frequentist check of MLEs with standard
errors (:func:`~dpjax.infer.mcem` and Louis's observed information), where SBC checks posteriors.

:func:`wald_coverage` simulates ``num_simulations`` releases from the model at θ₀ (``truth``, one
compiled, vmapped draw), runs the estimator on each (a host loop: :func:`~dpjax.infer.mcem` has a
stopping rule) and counts the intervals θ̂ ± z·s.e. that contain θ₀. The verdict
(:func:`coverage_test`) is an exact two-sided binomial test of that count against ``level``,
Bonferroni-split over the coordinates, so :attr:`CoverageResult.passed` is one test at level
``1 − prob``. It also reports the mean and standard deviation of the z-scores (θ̂ − θ₀)/s.e., which are
0 and 1 when θ̂ is unbiased and its standard errors are right: a mean away from 0 is a bias, a standard
deviation above 1 standard errors that are too small.

Wald intervals are asymptotic: coverage below the level at a small n or near the edge of θ's space
can be the interval's, not the estimator's. Stochastic EM (:func:`~dpjax.infer.stochastic_em`) gives
no standard errors of θ̂ (only its Monte Carlo error); for intervals run :func:`~dpjax.infer.mcem`
from its θ̂.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._validate import positive_int
from ._common import release_sites

__all__ = ["CoverageResult", "coverage_test", "wald_coverage"]


class CoverageResult(NamedTuple):
    """- **table** – one row per simulation: the estimate and standard error of every coordinate
      (``p``, ``p_se``; ``beta[1]``, ``beta_se[1]``);
    - **verdicts** – per coordinate: ``simulations`` (with a finite estimate), ``coverage``,
      ``p_value`` (exact binomial, two-sided), ``inside`` (``p_value`` above the Bonferroni-split
      ``1 − prob``), ``mean_z`` and ``sd_z`` of (θ̂ − θ₀)/s.e.;
    - **level** – the intervals' nominal coverage; **prob** – the test's confidence."""

    table: object
    verdicts: object
    level: float
    prob: float

    @property
    def passed(self) -> bool:
        """Every coordinate's coverage agrees with ``level``."""
        return bool(self.verdicts["inside"].all())

    def plot(self, ax=None):
        """The z-scores of every coordinate against the standard normal density."""
        import matplotlib.pyplot as plt
        from scipy.stats import norm

        if ax is None:
            _, ax = plt.subplots(figsize=(5, 3.5))
        grid = np.linspace(-4, 4, 201)
        for row in self.verdicts.itertuples():
            z = _z(self.table, row.coordinate, self.truth_of(row.coordinate))
            ax.hist(z[np.isfinite(z)], bins=20, density=True, histtype="step", label=row.coordinate)
        ax.plot(grid, norm.pdf(grid), "k--", label="N(0, 1)")
        ax.set(xlabel="(θ̂ − θ₀) / s.e.", ylabel="density", title=f"Wald z-scores, {self.level:.0%} intervals")
        ax.legend(fontsize="small")
        return ax.figure

    def truth_of(self, coordinate: str) -> float:
        return float(self.verdicts.set_index("coordinate").loc[coordinate, "truth"])


def coverage_test(estimates, std_errors, truth: float, level: float = 0.95, prob: float = 0.95) -> dict:
    """The verdict on one coordinate: do the intervals ``estimates ± z·std_errors`` contain ``truth``
    in a fraction ``level`` of the simulations? An exact two-sided binomial test at level ``1 − prob``.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> est = rng.normal(1.0, 0.1, 400)
    >>> coverage_test(est, np.full(400, 0.1), 1.0)["inside"]
    True
    >>> coverage_test(est, np.full(400, 0.05), 1.0)["inside"]  # standard errors half the true ones
    False
    """
    from scipy.stats import binomtest, norm

    _check_level(level, "level")
    _check_level(prob, "prob")
    est, se = np.asarray(estimates, float), np.asarray(std_errors, float)
    ok = np.isfinite(est) & np.isfinite(se)
    z = (est[ok] - truth) / se[ok]
    hits = int((np.abs(z) <= norm.ppf(0.5 + level / 2)).sum())
    n = int(ok.sum())
    p_value = binomtest(hits, n, level).pvalue if n else np.nan
    return {
        "simulations": n, "coverage": hits / n if n else np.nan, "p_value": float(p_value),
        "inside": bool(p_value > 1 - prob), "mean_z": float(np.mean(z)) if n else np.nan,
        "sd_z": float(np.std(z, ddof=1)) if n > 1 else np.nan,
    }  # fmt: skip


def wald_coverage(
    model,
    estimator: Callable,
    truth: Mapping,
    *,
    release: str | Mapping[str, str],
    rng_key,
    model_args: tuple = (),
    num_simulations: int = 200,
    level: float = 0.95,
    prob: float = 0.95,
    progress_bar: bool = True,
) -> CoverageResult:
    """The coverage of ``estimator``'s Wald intervals on releases simulated from ``model`` at ``truth``.

    :param model: a dpjax model (its release sites ``privatized(..., obs=...)`` take model keywords).
    :param estimator: ``(rng_key, model_args, model_kwargs) -> result`` with ``result.params`` and
        ``result.std_errors`` (``{site: value}``; an :class:`~dpjax.infer.MCEMResult`), or a pair
        ``(params, std_errors)``; ``model_kwargs`` holds the simulated release(s).
    :param truth: θ₀, ``{site: constrained value}``: every θ site the model samples (each release is
        drawn with them fixed). Coverage is reported for the sites the estimator returns.
    :param release: the model keyword that takes the release (the model's one privatized site), or
        ``{keyword: site}`` for several (a noisy n beside a noisy statistic).
    :param num_simulations: releases; the binomial test then detects a coverage off by about
        ``3·sqrt(level(1 − level)/num_simulations)`` (0.046 at 200 and 95 %).
    :param level: the intervals' nominal coverage; ``prob``: the test's confidence (Bonferroni over
        the coordinates).

    >>> import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist, dpjax
    >>> def model(s_dp=None):
    ...     mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    ...     with numpyro.plate("people", 50):
    ...         x = numpyro.sample("x", dist.Normal(mu, 1.0))
    ...     dpjax.privatized("sum", dpjax.GaussianMechanism(sigma=5.0), lambda r: r["x"], {"x": x},
    ...                      plate="people", obs=s_dp)
    >>> mle = lambda key, args, kw: ({"mu": kw["s_dp"] / 50}, {"mu": (50 + 25) ** 0.5 / 50})
    >>> out = wald_coverage(model, mle, {"mu": 1.0}, release="s_dp", rng_key=jax.random.key(0),
    ...                     progress_bar=False)
    >>> out.passed, float(out.verdicts.loc[0, "coverage"])
    (True, 0.945)
    """
    import pandas as pd
    from numpyro.handlers import condition, seed, trace
    from tqdm.auto import tqdm

    if not callable(estimator):
        raise ValueError(
            f"estimator must be a function (rng_key, model_args, model_kwargs) -> result, got {estimator!r}"
        )
    if not isinstance(truth, Mapping) or not truth:
        raise ValueError(f"truth must be a non-empty dict {{site: value}}, got {truth!r}")
    release = {release: None} if isinstance(release, str) else dict(release)
    if not release or not all(isinstance(k, str) for k in release):
        raise ValueError(f"release must be a model keyword or a dict {{keyword: site}}, got {release!r}")
    num_simulations = positive_int(num_simulations, "num_simulations")
    _check_level(level, "level")
    _check_level(prob, "prob")
    if not isinstance(model_args, tuple):
        raise ValueError(f"model_args must be a tuple, got {type(model_args).__name__}")
    release, _, spec = release_sites(model, release, model_args)
    missing = sorted(set(spec.theta) - set(truth))
    unknown = sorted(set(truth) - {*spec.theta, *spec.size_sites})  # a latent n is a site truth may fix
    if missing or unknown:
        raise ValueError(
            f"truth: give every θ site the model samples and only those; missing {missing}, unknown {unknown}"
        )

    def simulate(key):
        tr = trace(seed(condition(model, dict(truth)), key)).get_trace(*model_args, **dict.fromkeys(release))
        return {kw: tr[site]["value"] for kw, site in release.items()}

    k_sim, k_est = jax.random.split(rng_key)
    releases = jax.device_get(jax.jit(jax.vmap(simulate))(jax.random.split(k_sim, num_simulations)))
    rows, caught_any = [], []
    for i, key in enumerate(
        tqdm(jax.random.split(k_est, num_simulations), desc="wald_coverage", disable=not progress_bar)
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # jax arrays, not numpy scalars: an estimator that treats non-array arguments as static
            # (compiled per value) would recompile for every simulation
            out = estimator(key, model_args, {kw: jnp.asarray(v[i]) for kw, v in releases.items()})
        caught_any += [str(w.message) for w in caught[:1]]
        params, se = (out.params, out.std_errors) if hasattr(out, "std_errors") else out
        unknown = sorted(set(params) - set(truth))
        if unknown or not params:
            raise ValueError(
                f"estimator returned sites {unknown or 'none'}; give estimates of sites truth fixes"
            )
        row = {}
        for k, v in params.items():
            row.update(_cells(k, v))
            row.update(_cells(k, se[k], "_se"))
        rows.append(row)
    coordinates = [c for k, v in params.items() for c in _cells(k, v)]
    if caught_any:
        warnings.warn(
            f"wald_coverage: the estimator warned in {len(caught_any)} of {num_simulations} simulations, "
            f"e.g. {caught_any[0]!r}",
            stacklevel=2,
        )
    table = pd.DataFrame(rows)
    per_test = 1 - (1 - prob) / len(coordinates)
    verdicts = []
    for c in coordinates:
        t = _truth(truth, c)
        verdicts.append(
            {"coordinate": c, "truth": t, **coverage_test(table[c], table[_se(c)], t, level, per_test)}
        )
    verdicts = pd.DataFrame(verdicts)
    lost = num_simulations - verdicts["simulations"].min()
    if lost:
        warnings.warn(
            f"wald_coverage: {lost} of {num_simulations} simulations gave a non-finite estimate or standard "
            "error; the verdict uses the rest, which may be a biased subset",
            stacklevel=2,
        )
    return CoverageResult(table, verdicts, float(level), float(prob))


def _check_level(value, name):
    if not (isinstance(value, (int, float)) and 0.0 < value < 1.0):
        raise ValueError(f"{name} must be a float in (0, 1), got {value!r}")


def _cells(site: str, value, suffix: str = "") -> dict:
    """``{column: value}``: ``site + suffix`` for a scalar, ``site + suffix + [i,j]`` per entry."""
    value = np.asarray(value, float)
    if value.ndim == 0:
        return {site + suffix: float(value)}
    return {f"{site}{suffix}[{','.join(map(str, i))}]": float(value[i]) for i in np.ndindex(value.shape)}


def _se(coordinate: str) -> str:
    head, bracket, index = coordinate.partition("[")
    return f"{head}_se{bracket}{index}"


def _truth(truth: Mapping, coordinate: str) -> float:
    head, _, index = coordinate.partition("[")
    value = np.asarray(truth[head], float)
    return float(value[tuple(int(i) for i in index.rstrip("]").split(","))] if index else value)


def _z(table, coordinate: str, truth: float) -> np.ndarray:
    return (table[coordinate].to_numpy() - truth) / table[_se(coordinate)].to_numpy()
