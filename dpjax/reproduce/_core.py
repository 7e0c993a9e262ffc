"""The registry, the report every experiment returns, the comparison with a seed's published numbers,
and the writer of ``<out>/<name>.{md,json,png}``."""

from __future__ import annotations

import json
import math
import os
import platform
import re
import shutil
import subprocess
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
    full_cost: str  # an estimate of what the full run costs, shown until a results file records it
    needs: tuple[str, ...] = ()  # optional packages (import names) the experiment needs
    quick_verdicts: bool = False  # whether the --quick run's errors make its verdicts sound


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
    last finished cell. For a study run in parts (``lab/guo_*_part.py``)."""
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


def experiment(
    name: str, *, source: str, title: str, full_cost: str, needs: tuple[str, ...] = (), quick_verdicts=False
):
    """Register ``run(quick: bool, progress: bool) -> Report`` as the experiment ``name``: ``quick`` runs a
    reduced version in seconds, ``progress`` shows the engines' progress bars. A quick run's verdicts
    are withheld ("—", with the seed's figures shown for orientation) unless ``quick_verdicts``: say so
    only where the quick run's standard errors or tolerances are as sound as the full run's."""

    def register(run):
        if name in REGISTRY:
            raise ValueError(f"experiment {name!r} is registered twice")
        REGISTRY[name] = Experiment(name, source, title, run, full_cost, needs, quick_verdicts)
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


def commit() -> str | None:
    """The git commit of the dpjax source in use (``+dirty`` when ``dpjax/`` has uncommitted changes), or
    ``None`` outside a git checkout: every results file records the code that produced it."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(
            ["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30
        )
        if head.returncode:
            return None
        dirty = subprocess.run(
            ["git", "-C", root, "status", "--porcelain", "--untracked-files=no", "--", "dpjax"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty else "")


def render_markdown(payload: dict, figures: str = "") -> str:
    """The markdown page of one results file (the JSON that :func:`run_experiment` writes): title,
    notes, dpjax next to the seed with the verdicts, the further tables and the figures (their paths
    prefixed by ``figures``). The results pages of the docs are rendered by this function."""
    comparison = pd.DataFrame(payload["comparison"], columns=COMPARISON_COLUMNS)
    verdicts = comparison["verdict"].value_counts().to_dict()
    quick = (
        "**Quick run** (reduced settings; verdicts only where its errors are sound). "
        if payload.get("quick")
        else ""
    )
    md = [f"# {payload['title']}", "", f"_{payload['source']}._ {quick}"]
    if payload.get("notes"):
        md += ["", payload["notes"]]
    md += ["", "## dpjax next to the seed", "", markdown_table(comparison), ""]
    md += [
        f"Verdicts: {', '.join(f'{v} {k}' for k, v in sorted(verdicts.items()))} (pass: |z| ≤ {Z_CRIT} "
        "with z over the Monte Carlo standard errors, or within the stated tolerance; —: no judgement)."
    ]
    for key, rows in payload.get("tables", {}).items():
        md += ["", f"## {key}", "", markdown_table(pd.DataFrame(rows))]
    md += [""] + [f"![{p}]({figures}{p})" for p in payload.get("figures", [])]
    flag = " --quick" if payload.get("quick") else ""
    code = payload.get("commit") or "an unrecorded commit"
    md += [
        "",
        f"_{payload['machine']}, {payload['date']}, {payload['seconds']:.0f} s, dpjax at {code}; "
        f"`dpjax reproduce {payload['experiment']}{flag}`._",
        "",
    ]
    return "\n".join(md)


def _produced(payload: dict) -> str:
    commit = payload.get("commit")
    return f"{payload.get('date', '?')}, " + (f"dpjax {commit[:7]}" if commit else "commit not recorded")


def freshness(payload: dict) -> str:
    """Whether a results file was produced by the dpjax code of this checkout: ``"current"`` when no file
    of ``dpjax/`` changed between the commit it records and HEAD (other experiments' modules in
    ``dpjax/reproduce/`` aside), else ``"stale (…)"`` saying why."""
    recorded = payload.get("commit")
    if not recorded:
        return f"stale (written {payload.get('date', '?')}, before results recorded their commit)"
    if recorded.endswith("+dirty"):
        return f"stale (uncommitted code on {recorded[:10]})"
    root = Path(__file__).resolve().parents[2]
    try:
        diff = subprocess.run(
            ["git", "-C", root, "diff", "--name-only", recorded, "HEAD", "--", "dpjax"],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return f"unknown (no git; written at {recorded[:10]})"
    if diff.returncode:
        return f"unknown (commit {recorded[:10]} not in this checkout)"
    exp = REGISTRY.get(payload.get("experiment"))
    own = f"dpjax/reproduce/{exp.run.__module__.rsplit('.', 1)[-1]}.py" if exp else None
    others = {f"dpjax/reproduce/{m}.py" for m in _experiment_modules()} - {own}
    changed = [f for f in diff.stdout.split() if f not in others]
    return "current" if not changed else f"stale (dpjax changed since {recorded[:10]})"


def _experiment_modules() -> set[str]:
    return {e.run.__module__.rsplit(".", 1)[-1] for e in REGISTRY.values()}


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _cost(exp: Experiment, payload: dict | None) -> str:
    """A full run's cost: the time its results file records, with its devices (and float64), else the
    registry's estimate."""
    if payload is None or payload.get("quick"):
        return f"{exp.full_cost} (estimate)"
    parts = [p for p in payload["machine"].split(", ")[1:] if not p.startswith("jax ")]  # "1 cpu device(s)"
    count, rest = re.match(r"(\d+) (.*) device\(s\)", parts[0]).groups()
    parts[0] = f"{count} {rest.replace('cpu', 'CPU')} device{'s' * (count != '1')}"
    return f"{_duration(payload['seconds'])} on {', '.join(parts)}"


def summary_table(folder: str | Path, link: str = "", status: bool = True) -> str:
    """The reproductions table (experiment, seed, verdicts passed/total, full-run cost, whether the
    results are current) of the results files in ``folder``, one row per registered experiment: the
    README's table and the docs' results index are rendered by this function. The full-run cost is the
    time the results file records (an estimate where there is none). ``link`` prefixes each
    experiment's link (``""``: no links); ``status=False`` gives each file's date and commit instead of
    comparing it with HEAD (a table that does not change with every commit, for the README)."""
    rows = ["| experiment | seed | verdicts passed | full run | results |", "|---|---|---|---|---|"]
    for exp in REGISTRY.values():
        path = Path(folder) / f"{exp.name}.json"
        name = f"[`{exp.name}`]({link}{exp.name}.md)" if link and path.exists() else f"`{exp.name}`"
        if not path.exists():
            rows.append(f"| {name} | {exp.source} | — | {_cost(exp, None)} | not run at full settings |")
            continue
        payload = json.loads(path.read_text())
        verdicts = [r["verdict"] for r in payload["comparison"]]
        judged = sum(v in ("pass", "fail") for v in verdicts)
        quick = " (quick run)" if payload.get("quick") else ""
        rows.append(
            f"| {name} | {exp.source} | {verdicts.count('pass')}/{judged}{quick} | {_cost(exp, payload)} "
            f"| {freshness(payload) if status else _produced(payload)} |"
        )
    return "\n".join(rows)


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
    if quick and not exp.quick_verdicts:  # reduced settings: errors too rough for a verdict
        report.comparison = report.comparison.assign(z=math.nan, verdict="—")
    pngs = []
    for key, fig in report.figures.items():
        png = f"{name}.png" if key == "" else f"{name}_{key}.png"
        fig.savefig(out / png, dpi=110, bbox_inches="tight")
        pngs.append(png)
        import matplotlib.pyplot as plt

        plt.close(fig)
    payload = {
        "experiment": name,
        "source": exp.source,
        "title": report.title,
        "quick": quick,
        "machine": machine(),
        "commit": commit(),
        "date": time.strftime("%Y-%m-%d"),
        "seconds": seconds,
        "settings": report.settings,
        "notes": report.notes.strip(),
        "comparison": report.comparison,
        "tables": report.tables,
        "figures": pngs,
    }
    text = json.dumps(payload, indent=2, default=_jsonable)
    (out / f"{name}.json").write_text(text)
    (out / f"{name}.md").write_text(render_markdown(json.loads(text)))
    shutil.rmtree(cells)  # the results are written: a later run starts afresh
    return report
