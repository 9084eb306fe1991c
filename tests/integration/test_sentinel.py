"""A whole run writes nothing outside its scratch directory.

A sentinel tree (files, a directory, symbolic links, one pointing into where
the scratch space will be) is laid next to the scratch root; after a run of a
read and a write on every available backend (the shared whole run,
tests/integration/conftest.py) each entry must be byte-for-byte, mode-for-mode
and mtime-for-mtime what it was.
"""

from __future__ import annotations

import stat

import pytest

from cryptbench.backends import REGISTRY
from tests.support.reliability import count
from tests.support.targets import includes
from tests.support.whole_run import WholeRun

pytestmark = pytest.mark.integration

test_includes = includes(list(REGISTRY))


def test_a_whole_run_changes_nothing_outside_scratch(whole_run: WholeRun) -> None:
    before, after = whole_run.before, whole_run.after
    assert {"docs/thesis.tex", "ro.bin", "link-into-scratch"} <= set(before)  # the sentinels were laid
    sizes = sum(v[2] for v in before.values() if v[0] == stat.S_IFREG)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    # Bytes of every entry that differs in any way (content, mode, time, presence).
    gone = (0, 0, 0, 0, None)
    changed_bytes = sum(max(before.get(k, gone)[2], after.get(k, gone)[2]) for k in changed)
    count("sentinel bytes checked outside scratch", sizes)
    count("bytes outside scratch changed", changed_bytes)
    assert changed == []
    assert whole_run.left == []
