"""The shared whole run's record (tests/integration/conftest.py makes it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support import sentinels


@dataclass
class WholeRun:
    """A finished run of every backend here, beside a sentinel tree."""

    doc: dict[str, Any]  # the run's document, as `run --json` printed it
    db: Path  # its results database
    env: dict[str, str]  # the environment it ran in (its own state and data dirs)
    before: sentinels.Snapshot  # the target directory outside the scratch space, before the run
    after: sentinels.Snapshot  # the same, after it
    left: list[str]  # what the run left mounted, attached or running under its target
