"""Test-session setup: two host CPU devices, so ``chain_method="parallel"`` really runs chains on
separate devices (pyproject turns NumPyro's "not enough devices" fallback warning into an error)."""

import os

_FLAG = "--xla_force_host_platform_device_count=2"
if _FLAG.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_FLAG}".strip()
