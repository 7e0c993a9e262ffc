"""The registry, the report every experiment returns, the comparison with a seed's published numbers,
and the writer of ``<out>/<name>.{md,json,png}``."""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

Z_CRIT = 3.29  # two-sided 0.1 %: a table of ~20 comparisons rarely shows a false "fail"

COMPARISON_COLUMNS = ["quantity", "dpjax", "dpjax_se", "seed", "seed_se", "tol", "z", "verdict"]


@dataclass
class Report:
    """What an experiment returns.

    ``comparison`` is the table built by :func:`compare` (dpjax's figure next to the seed's, and a
    verdict); ``tables`` are further tidy tables shown in the markdown, ``figures`` matplotlib figures
    saved as PNG, ``settings`` what was run (written to the JSON), ``notes`` markdown shown under the
    title (say there what differs from the seed's setting)."""

    title: str
    comparison: pd.DataFrame
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, object] = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    notes: str = ""


@dataclass(frozen=True)
class Experiment:
    name: str
    source: str  # the seed and where in it
    title: str
    run: Callable[..., Report]  # run(quick: bool, progress: bool) -> Report
    full_cost: str  # what the full run costs on the 2-core development machine
    needs: tuple[str, ...] = ()  # optional packages (import names) the experiment needs


REGISTRY: dict[str, Experiment] = {}

_CELLS: ContextVar[Path | None] = ContextVar("dpjax_reproduce_cells", default=None)


def study_table(label: str) -> Path | None:
    """The ``out`` an experiment passes to :func:`dpjax.studies.run_study` (``label`` names the study
    within the experiment): under :func:`run_experiment` a table of finished cells in
    ``<out>/.<name>.cells/``, so that a stopped ``dpjax reproduce`` resumes where it stopped; else
    ``None``."""
    cells = _CELLS.get()
    return None if cells is None else cells / f"{label}.csv"


@contextmanager
def cells_folder(path: str | Path) -> Iterator[Path]:
    """Keep the finished cells of the studies run inside in ``path`` (:func:`study_table` names them
    there), as ``dpjax reproduce`` does in ``<out>/.<name>.cells/``: a stopped run resumes after its
    last finished cell. For a study run in parts (``benchmarks/guo_*_part.py``)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    if any(path.iterdir()):
        print(f"resuming the finished cells in {path} (delete it to start afresh)", file=sys.stderr)
    token = _CELLS.set(path)
    try:
        yield path
    finally:
        _CELLS.reset(token)


def atus_dir() -> Path:
    """The folder of the ATUS files ``male.csv`` and ``female.csv``: ``$DPJAX_ATUS_DIR``, else the
    project's ``../shared/data/atus``; a ``FileNotFoundError`` that says so when they are not there."""
    path = Path(os.environ.get("DPJAX_ATUS_DIR", Path(__file__).resolve().parents[3] / "shared/data/atus"))
    if not (path / "male.csv").exists():
        raise FileNotFoundError(
            f"ATUS files not found in {path}: set DPJAX_ATUS_DIR to the folder of male.csv"
        )
    return path


def experiment(name: str, *, source: str, title: str, full_cost: str, needs: tuple[str, ...] = ()):
    """Register ``run(quick: bool, progress: bool) -> Report`` as the experiment ``name``: ``quick`` runs a
    reduced version in seconds, ``progress`` shows the engines' progress bars."""

    def register(run):
        if name in REGISTRY:
            raise ValueError(f"experiment {name!r} is registered twice")
        REGISTRY[name] = Experiment(name, source, title, run, full_cost, needs)
        return run

    return register


def judge(dpjax, dpjax_se=None, seed=None, seed_se=None, tol=None):
    """``(z, verdict)`` for one quantity.

    With a Monte Carlo standard error on either side, ``z = (dpjax − seed) / √(se² + seed_se²)`` and
    the verdict is ``"pass"`` when ``|z| ≤ 3.29``; with an absolute tolerance ``tol`` instead (exact
    quantities, or a seed figure printed to few digits) it is ``"pass"`` when ``|dpjax − seed| ≤ tol``;
    without either (or without a seed figure) no judgement is meaningful and the verdict is ``"—"``.

    >>> judge(0.52, 0.01, 0.50, 0.01)
    (1.414..., 'pass')
    >>> judge(37.24, seed=37.237, tol=0.05)
    (nan, 'pass')
    >>> judge(1.0, 0.01, 2.0)[1]
    'fail'
    """
    if seed is None or dpjax is None or not np.isfinite(dpjax) or not np.isfinite(seed):
        return math.nan, "—"
    se2 = sum(float(s) ** 2 for s in (dpjax_se, seed_se) if s is not None and np.isfinite(s))
    if se2 > 0:
        z = (float(dpjax) - float(seed)) / math.sqrt(se2)
        return z, "pass" if abs(z) <= Z_CRIT else "fail"
    if tol is not None:
        return math.nan, "pass" if abs(float(dpjax) - float(seed)) <= tol else "fail"
    return math.nan, "—"


def compare(rows) -> pd.DataFrame:
    """The comparison table from dicts with ``quantity``, ``dpjax`` and optionally ``dpjax_se``,
    ``seed``, ``seed_se`` and ``tol`` (see :func:`judge`); ``z`` and ``verdict`` are computed here.

    >>> compare([{"quantity": "θ̂", "dpjax": 37.24, "seed": 37.237, "tol": 0.05}])[["quantity", "verdict"]]
      quantity verdict
    0       θ̂    pass
    """
    out = []
    for r in rows:
        unknown = set(r) - set(COMPARISON_COLUMNS[:6])
        if unknown:
            raise ValueError(f"compare: unknown fields {sorted(unknown)}")
        z, verdict = judge(r["dpjax"], r.get("dpjax_se"), r.get("seed"), r.get("seed_se"), r.get("tol"))
        out.append({**{c: r.get(c) for c in COMPARISON_COLUMNS[:6]}, "z": z, "verdict": verdict})
    return pd.DataFrame(out, columns=COMPARISON_COLUMNS)


def _cell(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, (float, np.floating)):
        a = abs(v)
        return f"{v:.3g}" if a and (a < 1e-3 or a >= 1e5) else f"{v:.4g}"
    return str(v)


def markdown_table(df: pd.DataFrame) -> str:
    """A pipe table (pandas' ``to_markdown`` needs ``tabulate``, which we do not depend on)."""
    lines = ["| " + " | ".join(map(str, df.columns)) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def machine() -> str:
    """Where a result was measured, for the reports here and the tables of ``benchmarks/``."""
    import jax

    backend = jax.default_backend()
    kind = "" if backend == "cpu" else f" ({jax.devices()[0].device_kind})"  # e.g. NVIDIA H100 80GB HBM3
    x64 = ", float64" if jax.config.jax_enable_x64 else ""  # JAX_ENABLE_X64=1: not JAX's default precision
    return (
        f"{platform.processor() or platform.machine()}, {jax.device_count()} {backend} device(s){kind}, "
        f"jax {jax.__version__}{x64}"
    )


def _jsonable(o):
    if isinstance(o, pd.DataFrame):
        return json.loads(o.to_json(orient="records"))
    return np.asarray(o).tolist()


def run_experiment(name: str, *, quick: bool = False, out: str | Path = ".", progress: bool = True) -> Report:
    """Run one registered experiment and write ``<out>/<name>.md``, ``.json`` and one PNG per figure.

    Its studies keep their finished cells in ``<out>/.<name>.cells/`` (``.<name>.quick.cells/`` with
    ``quick``, ``….x64.cells/`` in 64-bit floats) until the experiment is done: run it again after an
    interruption and it resumes there (delete that folder to start afresh, e.g. after changing the
    code)."""
    if name not in REGISTRY:
        raise ValueError(f"unknown experiment {name!r}; `dpjax reproduce --list` lists them")
    exp = REGISTRY[name]
    for module in exp.needs:
        try:
            __import__(module)
        except ImportError as err:
            raise ImportError(
                f"experiment {name!r} needs the package {module!r}: pip install 'dpjax[examples]'"
            ) from err
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    import jax

    # one folder per float width: the same keys draw other numbers in x64, so cells must not mix
    cells = out / f".{name}{'.quick' if quick else ''}{'.x64' if jax.config.jax_enable_x64 else ''}.cells"
    start = time.perf_counter()
    with cells_folder(cells):
        report = exp.run(quick, progress)
    seconds = time.perf_counter() - start
    if list(report.comparison.columns) != COMPARISON_COLUMNS:
        raise RuntimeError(f"{name}: the comparison table must come from dpjax.reproduce.compare")
    pngs = []
    for key, fig in report.figures.items():
        png = f"{name}.png" if key == "" else f"{name}_{key}.png"
        fig.savefig(out / png, dpi=110, bbox_inches="tight")
        pngs.append(png)
        import matplotlib.pyplot as plt

        plt.close(fig)
    verdicts = report.comparison["verdict"].value_counts().to_dict()
    when = time.strftime("%Y-%m-%d")
    md = [f"# {report.title}", "", f"_{exp.source}._ {'**Quick run** (reduced settings). ' if quick else ''}"]
    if report.notes:
        md += ["", report.notes.strip()]
    md += ["", "## dpjax next to the seed", "", markdown_table(report.comparison), ""]
    md += [
        f"Verdicts: {', '.join(f'{v} {k}' for k, v in sorted(verdicts.items()))} (pass: |z| ≤ {Z_CRIT} "
        "with z over the Monte Carlo standard errors, or within the stated tolerance; —: no judgement)."
    ]
    for key, df in report.tables.items():
        md += ["", f"## {key}", "", markdown_table(df)]
    md += [""] + [f"![{p}]({p})" for p in pngs]
    flag = " --quick" if quick else ""
    md += ["", f"_{machine()}, {when}, {seconds:.0f} s; `dpjax reproduce {name}{flag}`._", ""]
    (out / f"{name}.md").write_text("\n".join(md))
    payload = {
        "experiment": name,
        "source": exp.source,
        "title": report.title,
        "quick": quick,
        "machine": machine(),
        "date": when,
        "seconds": seconds,
        "settings": report.settings,
        "comparison": report.comparison,
        "tables": report.tables,
        "figures": pngs,
    }
    (out / f"{name}.json").write_text(json.dumps(payload, indent=2, default=_jsonable))
    shutil.rmtree(cells)  # the results are written: a later run starts afresh
    return report
