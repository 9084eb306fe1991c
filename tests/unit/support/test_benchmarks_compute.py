"""Every script in benchmarks/ has a smoke mode, and those that compute only (no target,
no root) run in it here, beside the integration tests (tests/support/benchmark_smoke.py)."""

from __future__ import annotations

import pytest

from tests.support import benchmark_smoke
from tests.support.benchmark_smoke import BENCHMARKS, COMPUTE_ONLY, SMOKE


def test_every_benchmark_has_a_smoke_mode() -> None:
    assert sorted(p.name for p in BENCHMARKS.glob("*.py")) == sorted({s.split()[0] for s in SMOKE})
    assert set(SMOKE) >= COMPUTE_ONLY


@pytest.mark.parametrize("script", sorted(COMPUTE_ONLY))
def test_the_benchmark_runs(script: str) -> None:
    benchmark_smoke.run(script, None)
