"""The helpers of ``benchmarks/_common.py`` for the scripts here, writing under ``lab/results/``; and
:func:`benchmark`, which imports a script of ``benchmarks/`` (its release, its model) by name."""

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_shared = _load("benchmarks_common", BENCHMARKS / "_common.py")
_shared.RESULTS = RESULTS = Path(__file__).resolve().parent / "results"  # write_results writes here

guo_chains = _shared.guo_chains
median_se = _shared.median_se
table = _shared.table
write_report = _shared.write_report
write_results = _shared.write_results


def benchmark(name: str):
    """The module of ``benchmarks/<name>.py`` (its ``from _common import …`` gets this module's helpers)."""
    return _load(f"benchmarks_{name}", BENCHMARKS / f"{name}.py")
