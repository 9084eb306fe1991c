"""The kernel lab's hooks, as a pytest plugin (tests/conftest.py loads it; the
stand-ins' own tests load it into a pytest of their own): on the host, each lab test
becomes a stand-in, the guest boots when the tests begin, beside them, and no guest
outlives the session. In the guest, nothing here applies."""

from __future__ import annotations

import pytest

from tests import kernel_lab


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "lab: runs inside the kernel lab (tests/kernel_lab.py)")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # On the host, each lab test is a stand-in whose outcome the guest decides.
    if not kernel_lab.IN_GUEST:
        items[:] = kernel_lab.stand_in(items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """The kernel lab boots now, beside the host's tests, not after them: its stand-ins
    run last and collect what it found (kernel_lab.Background)."""
    if not kernel_lab.IN_GUEST and not session.config.option.collectonly:
        kernel_lab.start(session.config)


def pytest_unconfigure(config: pytest.Config) -> None:
    # However the session ends (an error, Ctrl-C, SIGTERM), no guest outlives it.
    if not kernel_lab.IN_GUEST:
        kernel_lab.stop(config)
