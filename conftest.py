"""Test-session setup: four host CPU devices, so ``chain_method="parallel"`` really runs chains on
separate devices (pyproject turns NumPyro's "not enough devices" fallback warning into an error);
and the ``x64`` marker, put here on the tests listed in ``X64_TESTS``."""

import os
from pathlib import Path

import pytest

# One persistent XLA compilation cache per checkout, shared by the xdist workers and test_reproduce's
# subprocesses: a program that several tests build afresh (each its own MCMC object) compiles once,
# about 10 % of the suite's CPU time. A test-session setting only: the library never sets JAX config.
# Unbounded (a size limit needs the `filelock` package); delete `.jax_cache/` to reclaim the space.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(Path(__file__).resolve().parent / ".jax_cache"))

# XLA's CPU backend with LLVM's cheap passes only: the suite is mostly compilation (hundreds of small
# programs, each run briefly), and this cuts its time by more than a third (the whole suite on 2 cores
# with a cold compilation cache: 21.7 → 13.3 min). A test-session setting only, like the cache.
# XLA's own graph optimizations are unchanged; only LLVM's code generation is cheaper (slower programs).
FAST_COMPILE_FLAGS = ("--xla_backend_optimization_level=0", "--xla_llvm_disable_expensive_passes=true")
DEVICES_FLAG = "--xla_force_host_platform_device_count=4"
for _flag in (*FAST_COMPILE_FLAGS, DEVICES_FLAG):
    if _flag.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_flag}".strip()

# The CI's second run, `JAX_ENABLE_X64=1 pytest -m x64` (about 1.5 min): the tests whose answers
# depend on the float width, fast enough to run twice. Entries are node ids: a file (all its tests),
# a test function (all its parametrizations) or one parametrization. In a plain `pytest` run an
# entry that matches nothing (a renamed test or file) adds a failing test, x64_tests_entries_match,
# so nothing leaves the x64 run silently.
X64_TESTS = (
    # mechanisms: exact densities, pmfs, normalizers, samplers, parameter validation
    "tests/test_mechanisms.py",
    "tests/test_mechanism_properties.py",
    # privatized: validation of releases and statistics (the float32 magnitude checks among them)
    "tests/test_primitives.py",
    # exact integer releases (integer arithmetic, int64 and beyond)
    "tests/test_exact_release.py",
    # DA kernel against exact posteriors, small models, exact θ-step (the NUTS ones are 3x slower)
    "tests/test_data_augmentation.py::test_beta_bernoulli_exact_posterior[exact-discrete-laplace]",
    "tests/test_data_augmentation.py::test_beta_bernoulli_exact_posterior[exact-two-sites]",
    "tests/test_data_augmentation.py::test_normal_sum_gaussian_noise_exact_posterior[exact]",
    # the truncated-Laplace step of DPBoots (its loop counters stay int32 under x64)
    "tests/test_compositional.py::test_truncated_laplace_never_leaves_range",
    "tests/test_compositional.py::test_truncated_laplace_gives_up_with_nan_not_an_out_of_range_value",
    # the samplers' float32 fast path keeps float32 under x64
    "tests/test_samplers.py::test_float32_draws_stay_float32_under_x64",
    # float precision: integer values, large totals, noise scales, the Poisson noise map's limit
    "tests/test_reliability.py::test_non_integer_release_for_a_discrete_mechanism_is_refused_by_every_engine",
    "tests/test_reliability.py::test_non_integer_statistic_for_a_discrete_mechanism_is_refused",
    "tests/test_reliability.py::test_nan_and_inf_releases_under_jit_vmap_flag_the_chain_and_give_nan_draws",
    "tests/test_reliability.py::test_poisson_large_rates_keep_the_imputed_total_exact",
    "tests/test_reliability.py::test_census_scale_count_is_imputed_exactly_in_x64",
    "tests/test_reliability.py::test_float32_refusals_are_accepted_in_x64",
    "tests/test_reliability.py::test_poisson_noncentred_moves_exact_across_the_representable_region",
)


def _selected(nodeid: str, entry: str) -> bool:
    return nodeid == entry or nodeid.startswith((entry + "::", entry + "["))


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(config, items):
    matched = set()
    for item in items:
        for entry in X64_TESTS:
            if _selected(item.nodeid, entry):
                item.add_marker(pytest.mark.x64)
                matched.add(entry)
    if config.args_source != pytest.Config.ArgsSource.TESTPATHS:  # not a plain `pytest` run
        return
    modules = {i.nodeid.split("::")[0]: i.parent for i in items if isinstance(i.parent, pytest.Module)}
    files = [e.split("::")[0] for e in X64_TESTS]
    stale = [
        e
        for e, f in zip(X64_TESTS, files)
        if e not in matched and (f in modules or not (config.rootpath / f).exists())
    ]
    if stale and modules:  # a failing test in both runs (an error raised here is lost in an xdist worker)

        def x64_tests_entries_match():
            pytest.fail(f"conftest.py X64_TESTS entries that match no test: {stale}", pytrace=False)

        in_file = [modules[e.split("::")[0]] for e in stale if e.split("::")[0] in modules]
        parent = (in_file or list(modules.values()))[0]  # the stale entry's file where it exists
        check = pytest.Function.from_parent(
            parent, name="x64_tests_entries_match", callobj=x64_tests_entries_match
        )
        check.add_marker(pytest.mark.x64)
        items.append(check)


def pytest_report_header(config):
    import jax

    return f"jax_enable_x64: {jax.config.jax_enable_x64}"


# Every compiled XLA CPU program keeps memory mappings alive while JAX caches it, and Linux allows
# vm.max_map_count (65 530 by default) per process: an xdist worker that runs half the suite crosses
# that, and XLA's next compile or cache write segfaults (seen in CI: tests/test_stochastic_em.py and
# tests/test_mcem_mcmc.py alone leave 10 600 mappings). After a test module, when the worker holds
# more than MAX_MAPPINGS, drop JAX's caches (1 100 mappings remain); the persistent cache makes the
# recompiles cheap.
MAX_MAPPINGS = 30_000


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    yield
    maps = Path("/proc/self/maps")
    if maps.exists() and sum(1 for _ in maps.open()) > MAX_MAPPINGS:
        import gc

        import jax

        jax.clear_caches()
        gc.collect()
