"""Every table and figure of the five seeds that dpjax reproduces, one command each.

``dpjax reproduce --list`` lists them; ``dpjax reproduce NAME [--quick] [--out DIR]`` runs one and writes
``DIR/NAME.md`` (dpjax's numbers next to the seed's, with a verdict computed from the Monte Carlo
errors), ``DIR/NAME.json`` and a PNG per figure. From Python::

    from dpjax.reproduce import REGISTRY, run_experiment
    report = run_experiment("gong-mcem", quick=True, out="results")
    report.comparison          # a pandas DataFrame: quantity, dpjax, dpjax_se, seed, seed_se, z, verdict

An experiment is a function ``run(quick) -> Report`` registered with :func:`experiment` in the module of
its seed (``gong``, ``ju``, ``lazzarini``, ``unknown_n`` and ``awan_atus``, ``compositional``);
``quick=True`` runs a reduced version in seconds (the test suite runs every one).
"""

from . import awan_atus, compositional, gong, ju, lazzarini, unknown_n  # noqa: F401  (registers the experiments)
from ._core import (
    REGISTRY,
    Experiment,
    Report,
    cells_folder,
    commit,
    compare,
    experiment,
    freshness,
    judge,
    machine,
    markdown_table,
    render_markdown,
    run_experiment,
    study_table,
    summary_table,
)

__all__ = [
    "REGISTRY",
    "Experiment",
    "Report",
    "cells_folder",
    "commit",
    "compare",
    "experiment",
    "freshness",
    "judge",
    "machine",
    "markdown_table",
    "render_markdown",
    "run_experiment",
    "study_table",
    "summary_table",
]
