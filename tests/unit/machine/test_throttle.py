"""Known-answer targets: which throttle a machine has, and what one without any is told."""

from pathlib import Path

from cryptbench.machine.throttle import THROTTLE_FILES, in_cgroup, mode, v2_rules


def _v1(root: Path) -> Path:
    blkio = root / "blkio"
    blkio.mkdir()
    for name in THROTTLE_FILES:
        (blkio / name).write_text("")
    return blkio


def test_v1_blkio_is_used_where_it_is_mounted(tmp_path: Path) -> None:
    how = mode(_v1(tmp_path), tmp_path)
    assert how.version == 1 and how.label == "cgroup v1 blkio"


def test_v2_io_max_is_used_on_a_unified_hierarchy(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    how = mode(tmp_path / "blkio", tmp_path)
    assert how.version == 2 and how.label == "cgroup v2 io.max" and how.root == tmp_path


def test_v2_without_the_io_controller_says_so(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    how = mode(tmp_path / "blkio", tmp_path)
    assert how.version is None and "offers no io controller (cpu memory pids)" in how.reason


def test_neither_says_what_was_looked_for(tmp_path: Path) -> None:
    how = mode(tmp_path / "blkio", tmp_path)
    assert how.version is None
    assert "blkio.throttle.read_bps_device" in how.reason and "cgroup.controllers" in how.reason


def test_io_max_rules_are_read_per_device(tmp_path: Path) -> None:
    (tmp_path / "io.max").write_text(
        "7:3 rbps=40000000 wbps=40000000 riops=max wiops=max\n8:0 rbps=max wbps=5\n"
    )
    assert v2_rules("7:3", tmp_path) == {"rbps": 40_000_000, "wbps": 40_000_000}
    assert v2_rules("8:0", tmp_path) == {"wbps": 5}
    assert v2_rules("7:4", tmp_path) == {}


def test_a_program_is_started_inside_its_cgroup(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "cgroup.procs").write_text("")
    out = subprocess.run(
        in_cgroup(["sh", "-c", "echo $$"], tmp_path), capture_output=True, text=True, check=True
    )
    # the shell wrote its own pid, then became the program: the same pid
    assert (tmp_path / "cgroup.procs").read_text().strip() == out.stdout.strip()
