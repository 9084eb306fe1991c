"""The kernel lab's hooks, as a pytest plugin (tests/conftest.py loads it; the
stand-ins' own tests load it into a pytest of their own): on the host, each lab test
becomes a stand-in, the guest boots when the tests begin, beside them, and no guest
outlives the session. In the guest, nothing here applies."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator

import pytest

from tests.support import kernel_lab


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "lab: runs inside the kernel lab (tests/support/kernel_lab.py)")
    config.addinivalue_line(
        "markers",
        "guest(*nodeids): the host test boots a guest of its own on these tests, begun in the "
        "background when the session's tests begin (kernel_lab.own_guest)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # On the host, each lab test is a stand-in per kernel whose outcome that kernel's guest
    # decides; made before deselection (-k, -m), so that -k can name a kernel.
    if not kernel_lab.IN_GUEST:
        items[:] = kernel_lab.stand_in(items)


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_last(config: pytest.Config, items: list[pytest.Item]) -> None:
    # After deselection (a second implementation of the hook, named apart: pytest takes
    # only names that begin with pytest_): what is left is what each guest runs.
    if not kernel_lab.IN_GUEST:
        items[:] = kernel_lab.gather(items)
        kernel_lab.own_guests(items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """The kernel lab boots now, beside the host's tests, not after them: its stand-ins
    run last and collect what it found (kernel_lab.Background)."""
    if not kernel_lab.IN_GUEST and not session.config.option.collectonly:
        kernel_lab.start(session.config)


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[object]) -> Generator[None, None, None]:
    """In the guest, how long each shared run (a session fixture of the lab's) took: the
    time table names them apart from the test that happened to set them up first. Here,
    not in a conftest: a session fixture is set up through the session's hooks, which
    leave out every conftest below the root directory."""
    start = time.monotonic()
    yield
    results = os.environ.get("CRYPTBENCH_LAB_RESULTS")
    if kernel_lab.IN_GUEST and results and fixturedef.scope == "session" and fixturedef.baseid:
        with open(results, "a") as f:
            f.write(json.dumps({"fixture": fixturedef.argname, "seconds": time.monotonic() - start}) + "\n")


def pytest_unconfigure(config: pytest.Config) -> None:
    # However the session ends (an error, Ctrl-C, SIGTERM), no guest outlives it.
    if not kernel_lab.IN_GUEST:
        kernel_lab.stop(config)
