"""Real targets for tests, and the skips, with their reasons, where a backend cannot run."""

from __future__ import annotations

import functools
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cryptbench.backends import REGISTRY, Target, TargetSpec
from cryptbench.machine.session import Session
from tests.support.paths import REPO

# Set by .ci/run: a backend whose package scripts/install-system-deps.sh installs must
# be available, and its test fails instead of skipping. The rule CRYPTBENCH_REQUIRE_LAB
# applies to the lab, for the host: a skip must not hide a broken install or a broken
# probe. (What this kernel lacks still skips: the lab runs it.)
REQUIRE_INSTALLED = os.environ.get("CRYPTBENCH_REQUIRE_INSTALLED") == "1"
INSTALL_SCRIPT = REPO / "scripts" / "install-system-deps.sh"
# Every probe names the package that would mend it: "gocryptfs is not installed (apt-get install gocryptfs)".
MISSING_PACKAGE = re.compile(r"apt-get install ([\w.+-]+)\)")


@functools.cache
def installed_by_make() -> frozenset[str]:
    """The Debian packages make test installs (scripts/install-system-deps.sh --test)."""
    out = subprocess.run(
        [str(INSTALL_SCRIPT), "--test", "--list"], capture_output=True, text=True, check=True
    )
    return frozenset(out.stdout.split())


def skip_unavailable(name: str, reason: str) -> None:
    """Skip, with the reason `cryptbench backends` gives; or fail, where make test
    installed what the reason says is missing and CRYPTBENCH_REQUIRE_INSTALLED is set."""
    missing = MISSING_PACKAGE.search(reason)
    if REQUIRE_INSTALLED and missing and missing.group(1) in installed_by_make():
        pytest.fail(
            f"{name} is unavailable although make test installs {missing.group(1)}: {reason}", pytrace=False
        )
    pytest.skip(f"{name} unavailable here: {reason}")


requires_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to attach loop devices and mount")
# what build_plan says without root (planning/plan._ram_bytes)
ram_requires_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="--ram needs root (to mount the tmpfs the RAM twins live on)"
)


@contextmanager
def provisioned(
    target_dir: Path, backend: str, size: int, state: str | None = None, fs: str = "ext4"
) -> Iterator[tuple[Session, Target]]:
    """A real target in its own session; skips, with the reason, where the backend cannot run."""
    need_backend(backend)
    session = Session.create(target_dir)
    try:
        spec = TargetSpec(backend, state if REGISTRY[backend].stateful else None, fs)
        with REGISTRY[backend].provision(session, spec, size) as target:
            yield session, target
    finally:
        session.close()


def need_backend(name: str) -> None:
    """Skip with the reason `cryptbench backends` gives when the backend cannot run here
    (fail where make test installed what it lacks: skip_unavailable)."""
    avail = REGISTRY[name].probe()
    if not avail.ok:
        skip_unavailable(name, avail.reason)


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
