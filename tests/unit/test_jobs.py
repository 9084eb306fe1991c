"""Job rendering is a pure function; golden files pin its output.

To accept a deliberate change: CRYPTBENCH_UPDATE_GOLDEN=1 pytest tests/unit/test_jobs.py
"""

import os
from pathlib import Path

import pytest

from cryptbench.engines.jobs import JobOptions, render_job, render_layout
from cryptbench.planning.suite import builtin_suites, load_suite

GOLDEN = Path(__file__).parent.parent / "golden"


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("CRYPTBENCH_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


@pytest.mark.parametrize("direct", [True, False])
def test_quick_suite_jobs_match_golden(direct: bool) -> None:
    opts = JobOptions(
        Path("/var/tmp/cryptbench/run-x/targets/plain/cryptbench.dat"), 64 << 20, direct, "io_uring", False, 7
    )
    text = "".join(render_job(w, opts) + "\n" for w in load_suite("quick").workloads)
    _check(f"quick-{'direct' if direct else 'buffered'}.fio", text)


def test_layout_and_zero_data_match_golden() -> None:
    opts = JobOptions(Path("/scratch/a:b/cryptbench.dat"), 16 << 20, False, "libaio", True, 1)
    _check("layout-zero.fio", render_layout(opts))


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
