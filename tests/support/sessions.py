"""A scratch session for a test: created in a directory of the test's, closed after."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cryptbench.machine.session import Session


@contextmanager
def scratch_session(root: Path) -> Iterator[Session]:
    """A session under `root`, its registry beside it, closed however the test ends."""
    s = Session.create(root, registry=root / "reg")
    try:
        yield s
    finally:
        s.close()
