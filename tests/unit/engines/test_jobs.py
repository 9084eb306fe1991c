"""Job rendering is a pure function; golden files pin its output (tests/golden/*.fio,
written by tests/support/golden.py's JOBS). The test only reads them; to accept a
deliberate change, write them again and read the diff it prints:
    .venv/bin/python -m tests.support.golden
"""

from pathlib import Path

import pytest

from cryptbench.engines.jobs import JobOptions, render_job, render_layout
from cryptbench.planning.suite import builtin_suites, load_suite
from tests.support.golden import JOBS
from tests.support.paths import TESTS

GOLDEN = TESTS / "golden"


@pytest.mark.parametrize("name", sorted(JOBS))
def test_job_files_match_golden(name: str) -> None:
    assert JOBS[name]() == (GOLDEN / name).read_text()


def test_writes_end_durable_and_reads_do_not_fsync() -> None:
    opts = JobOptions(Path("/x/d"), 1 << 20, False, "psync", False, 1)
    for w in load_suite("quick").workloads:
        text = render_job(w, opts)
        assert ("end_fsync=1" in text) == w.is_write
        assert "refill_buffers=0" in text  # data generated before the clock starts


def test_colon_in_path_is_escaped() -> None:
    text = render_layout(JobOptions(Path("/a:b/d"), 1 << 20, True, "psync", False, 1))
    assert "filename=/a\\:b/d" in text


def test_backing_reads_are_read_only() -> None:
    opts = JobOptions(Path("/x/image.raw"), 1 << 20, True, "psync", False, 1)
    for w in load_suite("study-002").workloads:
        text = render_job(w, opts)
        assert ("--readonly" in text) == (w.view == "backing")
        assert "end_fsync" not in text


def test_every_builtin_suite_loads_and_says_what_it_follows() -> None:
    for name in builtin_suites():
        suite = load_suite(name)
        assert suite.description
        if name.startswith("study-"):
            assert suite.follows and suite.corrects, name
