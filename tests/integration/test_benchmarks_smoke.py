"""Every script in benchmarks/ that runs the tool on targets runs, in its tiny smoke mode
(tests/support/benchmark_smoke.py); those that compute only run with the unit tests
(tests/unit/support/test_benchmarks_compute.py)."""

# Over 60 s of make test (224 s in the fresh-clone run of 6754047, 2026-11-29): every
# script in benchmarks/ that runs the tool, end to end in its smoke mode, each with real
# runs (fidelity.py three ways).
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import benchmark_smoke

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("script", sorted(set(benchmark_smoke.SMOKE) - benchmark_smoke.COMPUTE_ONLY))
def test_the_benchmark_runs(script: str, target_dir: Path) -> None:
    benchmark_smoke.run(script, target_dir)
