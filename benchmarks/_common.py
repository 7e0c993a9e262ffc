"""Shared helpers for the benchmark scripts: where results go and how they are written."""

import json
import shlex
import sys
import time
from pathlib import Path

import jax
import numpy as np

from dpjax.reproduce import commit, machine

RESULTS = Path(__file__).resolve().parent / "results"


def write_results(name: str, payload: dict, markdown: str, command: str | None = None) -> None:
    """Write ``results/<name>.json`` and ``results/<name>.md`` (markdown table + provenance; ``command``:
    the command that made them, by default this process's own: ``python benchmarks/<script> <args>``,
    ``lab/`` for the scripts there). Both record the dpjax commit that was measured."""
    RESULTS.mkdir(exist_ok=True)
    payload = {"machine": machine(), "date": time.strftime("%Y-%m-%d"), "commit": commit(), **payload}
    (RESULTS / f"{name}.json").write_text(
        json.dumps(payload, indent=2, default=lambda o: np.asarray(o).tolist())
    )
    command = command or shlex.join(
        ["python", f"{RESULTS.parent.name}/{Path(sys.argv[0]).name}", *sys.argv[1:]]
    )
    sha = payload["commit"]
    at = f", dpjax {sha[:7]}{'+dirty' if sha.endswith('+dirty') else ''}" if sha else ""
    footer = f"\n\n_Measured on {payload['machine']}, {payload['date']}{at}; `{command}`._\n"
    (RESULTS / f"{name}.md").write_text(markdown.rstrip() + footer)


def write_report(name: str, report, heading: str, command: str, extra_md=()) -> None:
    """Write a :class:`dpjax.reproduce.Report` (its notes, comparison and tables, then ``extra_md``
    lines) as ``results/<name>.{md,json}`` under ``heading``."""
    from dpjax.reproduce import markdown_table

    md = [
        f"# {heading}",
        "",
        report.notes,
        "",
        "## dpjax next to the seed",
        "",
        markdown_table(report.comparison),
    ]
    for key, df in report.tables.items():
        md += ["", f"## {key}", "", markdown_table(df)]
    payload = {"settings": report.settings, "comparison": report.comparison, "tables": report.tables}
    payload = json.loads(
        json.dumps(payload, default=lambda o: o.to_dict("records") if hasattr(o, "to_dict") else str(o))
    )
    write_results(name, payload, "\n".join([*md, *extra_md]), command)


def best_time(fn, *args, repeats=3):
    """Fastest of ``repeats`` calls of ``fn(*args)`` in seconds, after one compiling call."""
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t)
    return min(times)


def measure_ess(kernel, args, site, num_warmup, num_samples, chains=4, seed=0):
    """Min bulk ESS over the entries of ``site`` (a name, or a tuple of scalar sites) per second of
    sampling, 4 vmapped chains; compile time measured apart (ahead-of-time compilation)."""
    import numpy as np
    from numpyro.diagnostics import effective_sample_size

    from dpjax.infer import run_chain

    pick = (lambda z: z[site]) if isinstance(site, str) else (lambda z: jax.numpy.stack([z[k] for k in site]))
    run = lambda key: run_chain(
        kernel, key, args, num_warmup=num_warmup, num_samples=num_samples, collect=lambda s: pick(s.z)
    )
    keys = jax.random.split(jax.random.key(seed), chains)
    t = time.perf_counter()
    compiled = jax.jit(jax.vmap(run)).lower(keys).compile()
    compile_s = time.perf_counter() - t
    t = time.perf_counter()
    draws = np.asarray(jax.block_until_ready(compiled(keys)))
    run_s = time.perf_counter() - t
    flat = draws.reshape(chains, num_samples, -1)
    ess = min(float(effective_sample_size(flat[..., j])) for j in range(flat.shape[-1]))
    return {
        "min_ess": ess,
        "seconds": run_s,
        "compile_seconds": compile_s,
        "min_ess_per_s": ess / run_s,
        "draws_per_chain": num_samples,
    }


ESS_COLUMNS = [
    ("draws/chain", lambda r: r["draws_per_chain"]),
    ("min ESS", lambda r: f"{r['min_ess']:.0f}"),
    ("sampling s", lambda r: f"{r['seconds']:.2f}"),
    ("min ESS/s", lambda r: f"{r['min_ess_per_s']:.1f}"),
    ("compile s", lambda r: f"{r['compile_seconds']:.1f}"),
]


def table(rows, columns):
    """Markdown table of ``rows`` with ``columns = [(header, row -> cell), ...]``."""
    lines = ["| " + " | ".join(h for h, _ in columns) + " |", "|---" * len(columns) + "|"]
    lines += ["| " + " | ".join(str(f(r)) for _, f in columns) + " |" for r in rows]
    return lines


def guo_chains(scale: float) -> dict:
    """Guo et al.'s chain settings (``dpjax.reproduce.compositional``) with warm-up, kept iterations and
    thinning at ``scale`` × the seed's length (at least 1 each)."""
    from dpjax.reproduce.compositional import chain_settings

    cfg = chain_settings(False)
    return cfg | {k: max(1, round(cfg[k] * scale)) for k in ("warmup", "samples", "thin")}


def median_se(values, rng, boots=2000):
    """Median of the finite ``values`` and its bootstrap s.e. (``boots`` resamples drawn from ``rng``);
    NaN, NaN when none is finite."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return np.nan, np.nan
    return float(np.median(v)), float(np.std(np.median(rng.choice(v, size=(boots, len(v))), axis=1)))


def chosen_cases(doc: str, names) -> list[str]:
    """The ``CASE ...`` of a script's command line (``--help`` shows ``doc``), each one of ``names``;
    none: every case."""
    import argparse

    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", choices=[[], *names], metavar="CASE", help=", ".join(names))
    return parser.parse_args().cases


def in_order(results: dict, names) -> dict:
    """``results`` (a dict keyed by case) in the order of ``names``, the script's cases."""
    names = list(names)
    return dict(sorted(results.items(), key=lambda kv: names.index(kv[0])))
