"""Real targets for tests, and the skips, with their reasons, where a backend cannot run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cryptbench.backends import REGISTRY, Target, TargetSpec
from cryptbench.session import Session

requires_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to attach loop devices and mount")


@contextmanager
def provisioned(
    target_dir: Path, backend: str, size: int, state: str | None = None, fs: str = "ext4"
) -> Iterator[tuple[Session, Target]]:
    """A real target in its own session; skips, with the reason, where the backend cannot run."""
    avail = REGISTRY[backend].probe()
    if not avail.ok:
        pytest.skip(f"{backend} unavailable here: {avail.reason}")
    session = Session.create(target_dir)
    try:
        spec = TargetSpec(backend, state if REGISTRY[backend].stateful else None, fs)
        with REGISTRY[backend].provision(session, spec, size) as target:
            yield session, target
    finally:
        session.close()


def need_backend(name: str) -> None:
    """Skip with the reason `cryptbench backends` gives when the backend cannot run here."""
    avail = REGISTRY[name].probe()
    if not avail.ok:
        pytest.skip(f"{name} unavailable here: {avail.reason}")


def available(names: Iterator[str] | list[str] | tuple[str, ...]) -> list[str]:
    """The backends of `names` that can run here. A module that runs only these also
    declares `test_includes` with `includes(names)`, so each one left out shows as a
    skip with its reason instead of shrinking the list silently."""
    return [n for n in names if REGISTRY[n].probe().ok]


def includes(names: list[str] | tuple[str, ...]):  # type: ignore[no-untyped-def]
    """A test, one case per backend, that skips with the reason where the backend is
    missing: the module's runs then cover the rest, and the report says what they lack."""

    @pytest.mark.parametrize("backend", list(names))
    def test_includes(backend: str) -> None:
        # Nothing to check where it runs: the module's tests include the backend then.
        need_backend(backend)

    return test_includes
