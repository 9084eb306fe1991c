"""The kernel lab's bookkeeping: the guest's reports merged per test, a guest
that died mid-line, and what the guest is told to run."""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import kernel_lab


def _line(nodeid: str, when: str, outcome: str, longrepr: str = "", **extra: object) -> str:
    rec = {"nodeid": nodeid, "when": when, "outcome": outcome, "longrepr": longrepr, "duration": 1.5}
    return json.dumps(rec | extra)


def test_phases_merge_into_one_outcome_per_test(tmp_path: Path) -> None:
    path = tmp_path / kernel_lab.RESULTS
    path.write_text(
        "\n".join(
            [
                _line("t.py::ok", "setup", "passed"),
                _line("t.py::ok", "call", "passed", properties=[["AF_ALG", "75.1 MB/s"]]),
                _line("t.py::ok", "teardown", "passed", properties=[["AF_ALG", "75.1 MB/s"]]),
                _line("t.py::bad", "setup", "passed"),
                _line("t.py::bad", "call", "failed", "AssertionError: 270 %"),
                _line("t.py::bad", "teardown", "failed", "left behind: loop0"),
                _line("t.py::skip", "setup", "skipped", "Skipped: no adiantum"),
                _line("t.py::skip", "teardown", "passed"),
                json.dumps({"fixture": "kernel_only_run", "seconds": 344.5}),
                json.dumps({"figures": {"SIGKILLs with a dm-crypt mapping open, cleaned up": 1}}),
                '{"nodeid": "t.py::torn", "when": "ca',  # the guest died while writing
            ]
        )
    )
    outcomes, figures, shared = kernel_lab.read_results(path)
    assert shared == {"kernel_only_run": 344.5}
    assert set(outcomes) == {"t.py::ok", "t.py::bad", "t.py::skip"}
    assert outcomes["t.py::ok"].outcome == "passed" and outcomes["t.py::ok"].seconds == 4.5
    assert outcomes["t.py::ok"].figures == [("AF_ALG", "75.1 MB/s")]  # once, though two phases carry it
    bad = outcomes["t.py::bad"]
    assert bad.outcome == "failed"
    assert "[call] AssertionError: 270 %" in bad.report and "[teardown] left behind: loop0" in bad.report
    assert outcomes["t.py::skip"].outcome == "skipped" and "no adiantum" in outcomes["t.py::skip"].report
    assert figures == {"SIGKILLs with a dm-crypt mapping open, cleaned up": 1}


def test_a_test_whose_phases_stop_short_failed(tmp_path: Path) -> None:
    # The guest panicked, ran out of memory or hit the time limit: what arrived passed.
    path = tmp_path / kernel_lab.RESULTS
    path.write_text(
        "\n".join(
            [
                _line("t.py::setup_only", "setup", "passed"),
                _line("t.py::no_teardown", "setup", "passed"),
                _line("t.py::no_teardown", "call", "passed"),
                _line("t.py::skip_no_teardown", "setup", "skipped", "Skipped: no adiantum"),
                # its call's line never came (torn, or never written), though its teardown's did
                _line("t.py::call_lost", "setup", "passed"),
                _line("t.py::call_lost", "teardown", "passed"),
            ]
        )
    )
    outcomes, _, _ = kernel_lab.read_results(path)
    for nodeid, arrived in (
        ("t.py::setup_only", "setup"),
        ("t.py::no_teardown", "setup, call"),
        ("t.py::skip_no_teardown", "setup"),
        ("t.py::call_lost", "setup, teardown"),
    ):
        assert outcomes[nodeid].outcome == "failed", nodeid
        assert f"phases reported: {arrived})" in outcomes[nodeid].report


def _need_lab() -> tuple[str, str] | None:
    """What need_lab() did: ("skipped" or "failed", its message), or None: nothing."""
    try:
        kernel_lab.need_lab()
    except pytest.skip.Exception as e:  # caught, or this test would be skipped with it
        return "skipped", str(e)
    except pytest.fail.Exception as e:
        return "failed", str(e)
    return None


def test_a_host_test_needing_the_lab_skips_where_it_cannot_boot_and_fails_where_it_must(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(kernel_lab, "why_no_lab", lambda: "qemu-system-x86_64 is not installed")
    monkeypatch.setattr(kernel_lab, "REQUIRE", False)
    assert _need_lab() == ("skipped", "kernel lab unavailable: qemu-system-x86_64 is not installed")
    monkeypatch.setattr(kernel_lab, "REQUIRE", True)  # CRYPTBENCH_REQUIRE_LAB=1, as on CI
    assert _need_lab() == ("failed", "the kernel lab could not run: qemu-system-x86_64 is not installed")
    monkeypatch.setattr(kernel_lab, "why_no_lab", lambda: None)
    assert _need_lab() is None  # it can boot: nothing to say


def test_the_guest_pytest_exit_is_read_from_its_last_line() -> None:
    console = (
        f"lab: 6.1.0-56-amd64, ext4 loaded: 0\n...\n{kernel_lab.PYTEST_EXIT}1\n[   42.1] reboot: Power down\n"
    )
    assert kernel_lab.pytest_exit(console) == 1
    assert kernel_lab.pytest_exit("lab: 6.1.0-56-amd64, ext4 loaded: 0\n[ 9.1] Kernel panic\n") is None
    assert kernel_lab.pytest_exit(f"{kernel_lab.PYTEST_EXIT}\n") is None  # torn: no status


def test_the_lab_fails_as_a_whole_when_stopped_died_or_pytest_failed() -> None:
    def lab(returncode: int | None, exit_status: int | None) -> kernel_lab.LabRun:
        return kernel_lab.LabRun(
            kernel="vmlinuz", accel="tcg", returncode=returncode, pytest_exit=exit_status
        )

    assert lab(0, 0).failure() is None
    assert "time limit" in (lab(None, None).failure() or "")
    assert "time limit" in (lab(None, 0).failure() or "")  # stopped after pytest: still stopped
    assert "never reported pytest's exit" in (lab(0, None).failure() or "")
    assert lab(0, 1).failure() == "pytest in the guest exited 1"
    # the guest said pytest exit 0, then panicked: vng's own status still counts
    assert lab(1, 0).failure() == "vng exited 1 after the guest's pytest exited 0"
    assert "FAILED: pytest in the guest exited 1" in lab(0, 1).summary()
    assert kernel_lab.LabRun(unavailable="no qemu").failure() is None  # the stand-ins say so instead


def test_a_guest_that_cannot_see_the_checkout_says_so_before_python_and_the_lab_is_unavailable(
    tmp_path: Path,
) -> None:
    lines = kernel_lab.guest_script(tmp_path, ["tests/lab/test_x.py::test_y"]).splitlines()
    check = lines.index(f"if [ ! -e {kernel_lab.REPO / 'tests' / 'support' / 'kernel_lab.py'} ]; then")
    said = lines[check + 1].strip()
    assert said.startswith(
        f"echo '{kernel_lab.CANNOT_RUN}the guest cannot see this checkout ({kernel_lab.REPO})"
    )
    assert lines[check + 2].strip() == "exit 1"
    first_python = next(i for i, line in enumerate(lines) if sys.executable in line)
    assert check < lines.index(f"cd {kernel_lab.REPO}") < first_python
    console = f"lab: 6.1.0-56-amd64\n{kernel_lab.CANNOT_RUN}a tmpfs covers it\n[ 9.1] reboot: Power down\n"
    assert kernel_lab.cannot_run(console) == "a tmpfs covers it"
    assert kernel_lab.cannot_run(f"lab: 6.1.0-56-amd64\n{kernel_lab.PYTEST_EXIT}0\n") == ""


def test_the_guest_script_ends_with_pytest_exit(tmp_path: Path) -> None:
    script = kernel_lab.guest_script(tmp_path, ["tests/lab/test_luks.py::test_x"])
    assert script.rstrip().splitlines()[-1] == f'echo "{kernel_lab.PYTEST_EXIT}$status"'
    pytest_line = next(i for i, line in enumerate(script.splitlines()) if " -m pytest " in line)
    assert script.splitlines()[pytest_line + 1] == "status=$?"
    assert "-p no:hypothesispytest" in script.splitlines()[pytest_line]  # no property test runs there


def test_no_results_file_means_no_outcomes(tmp_path: Path) -> None:
    assert kernel_lab.read_results(tmp_path / "missing.jsonl") == ({}, {}, {})


def test_the_guest_loads_only_what_a_distribution_boot_would(tmp_path: Path) -> None:
    script = kernel_lab.guest_script(tmp_path, ["tests/lab/test_luks.py::test_x[luks-aes128]"])
    assert "modprobe loop\n" in script and "modprobe dm_mod\n" in script
    commands = [line for line in script.splitlines() if not line.startswith(("#", "echo"))]
    assert not [c for c in commands if "ext4" in c]  # ext4 is left for mount to load
    assert "mkfs.xfs" in script and "CRYPTBENCH_LAB=guest" in script
    assert "'tests/lab/test_luks.py::test_x[luks-aes128]'" in script


def test_the_vng_command_names_the_accelerator_and_the_disk(tmp_path: Path) -> None:
    tcg = kernel_lab.vng_command("/boot/vmlinuz-6.1.0-56-amd64", "tcg", tmp_path, tmp_path / "d.img", "true")
    assert "--disable-kvm" in tcg and f"--rwdir={tmp_path}" in tcg and tcg[-2:] == ["--", "true"]
    assert any(a.startswith("--qemu-opts=-drive file=") and "if=virtio" in a for a in tcg)
    kvm = kernel_lab.vng_command("/boot/vmlinuz-6.1.0-56-amd64", "kvm", tmp_path, None, "true")
    assert "--disable-kvm" not in kvm and not any(a.startswith("--qemu-opts") for a in kvm)


def test_the_guest_reads_code_through_a_cached_mount_of_the_host(tmp_path: Path) -> None:
    """vng's 9p root has no page cache: the guest mounts the host's tree again, read-only,
    with one, binds it over where code comes from before it starts Python, and keeps what
    Python reads resident (tests/support/lab_resident.py)."""
    argv = kernel_lab.vng_command("/boot/vmlinuz-6.1.0-56-amd64", "tcg", tmp_path, tmp_path / "d.img", "true")
    opts = next(a for a in argv if a.startswith("--qemu-opts="))
    assert "path=/,security_model=none,readonly=on" in opts
    assert f"mount_tag={kernel_lab.HOST_TAG}" in opts
    dirs = kernel_lab.cached_dirs()
    assert not [d for d in dirs if any(d.startswith(o + "/") for o in dirs)]  # none inside another
    for needed in (kernel_lab.REPO, Path(sys.base_prefix), Path(sys.executable).parent):
        assert any(str(needed.resolve()).startswith(d) for d in dirs), needed
    lines = kernel_lab.guest_script(tmp_path, ["tests/lab/test_x.py::test_y"]).splitlines()
    mount = next(i for i, line in enumerate(lines) if line.startswith("if mount -t 9p"))
    assert "cache=loose" in lines[mount] and "ro," in lines[mount]
    assert lines[mount].endswith(f"{kernel_lab.HOST_TAG} /tmp/host")
    binds = [line.strip() for line in lines if line.strip().startswith("mount --bind")]
    assert binds == [f"mount --bind /tmp/host{d} {d}" for d in dirs]
    # each made first: a tmpfs of the guest's (/tmp, /var/tmp) hides a checkout under it
    assert [lines[lines.index(f"  {b}") - 1] for b in binds] == [f"  mkdir -p {d}" for d in dirs]
    first_python = next(i for i, line in enumerate(lines) if sys.executable in line)
    assert mount < max(lines.index(f"  {b}") for b in binds) < first_python
    assert "-m tests.support.lab_resident" in lines[first_python] and lines[first_python].endswith("&")


def test_only_the_labs_own_guest_keeps_code_resident(tmp_path: Path) -> None:
    """tests/support/lab_resident.py imports what a cryptbench start imports: the lab's guest, whose
    trials drop the caches, needs it; a host test's own guest (the harness's) is spared it."""
    ids = ["tests/lab/test_x.py::test_y"]
    assert "-m tests.support.lab_resident " in kernel_lab.guest_script(tmp_path, ids)
    assert "-m tests.support.lab_resident" not in kernel_lab.guest_script(tmp_path, ids, resident=False)
    assert kernel_lab.Background(ids).resident and not kernel_lab.Background(ids, resident=False).resident


def test_a_kernel_unpacked_elsewhere_gets_its_modules_and_config_where_a_distribution_keeps_them(
    tmp_path: Path,
) -> None:
    """scripts/fetch-lab-kernel.sh unpacks Debian 13's kernel outside /boot and /lib/modules:
    vng links its modules on a tmpfs that the bind of /usr hides, so the script links them
    again after the binds, and binds the kernel's own /boot where its config is missing."""
    image = "/var/lib/cryptbench/lab-kernels/6.12.9+deb13-amd64/boot/vmlinuz-6.12.9+deb13-amd64"
    script = kernel_lab.guest_script(tmp_path, ["t.py::x"], kernel=image, series="6.12")
    lines = [line.strip() for line in script.splitlines()]
    # the kernel booted is the one asked for, and the tests are told which
    assert lines.index("6.12.*) ;;") < lines.index("modprobe loop")
    assert "which is not Debian 13's 6.12\"; exit 1 ;;" in script
    assert "CRYPTBENCH_LAB_KERNEL=6.12 " in script
    found = lines.index("modules=$(readlink -f /lib/modules/$release || true)")
    first_bind = next(i for i, line in enumerate(lines) if line.startswith("mount --bind /tmp/host"))
    relink = lines.index('ln -s "$modules" /lib/modules/$release')
    assert found < first_bind < relink  # read before the binds hide it, linked again after
    assert lines[relink - 1] == "mount -t tmpfs lab-modules /lib/modules"
    boot = image.rsplit("/", 1)[0]
    config = lines.index(f"[ -e /boot/config-$release ] || mount --bind {boot} /boot")
    assert relink < config < next(i for i, line in enumerate(lines) if " -m pytest " in line)


def test_each_lab_kernel_is_looked_for_where_it_is_installed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(kernel_lab.os, "geteuid", lambda: 0)
    image = tmp_path / "6.12.9+deb13-amd64" / "boot" / "vmlinuz-6.12.9+deb13-amd64"
    twelve = kernel_lab.KERNELS["6.12"]
    monkeypatch.setitem(
        kernel_lab.KERNELS,
        "6.12",
        dataclasses.replace(twelve, pattern=f"{tmp_path}/*/boot/vmlinuz-6.12.*-amd64"),
    )
    assert kernel_lab.lab_kernel("6.12") is None
    assert kernel_lab.why_no_lab("6.12") == (
        f"Debian 13's 6.12 is not installed ({tmp_path}/*/boot/vmlinuz-6.12.*-amd64); "
        "scripts/fetch-lab-kernel.sh (make test runs it)"
    )
    image.parent.mkdir(parents=True)
    image.write_bytes(b"")
    assert kernel_lab.lab_kernel("6.12") == str(image)
    # the newest by version, which is not the last by name
    newer = tmp_path / "6.12.117+deb13-amd64" / "boot" / "vmlinuz-6.12.117+deb13-amd64"
    newer.parent.mkdir(parents=True)
    newer.write_bytes(b"")
    assert kernel_lab.lab_kernel("6.12") == str(newer)


def _aged(path: Path) -> Path:
    old = path.stat().st_mtime - 2 * kernel_lab.FRESH_SECONDS
    os.utime(path, (old, old))
    return path


def test_a_dead_suites_lab_directory_is_swept_and_a_live_ones_kept(tmp_path: Path) -> None:
    """What a suite killed outright left (its guest's disk image, logs) goes at the next
    suite's start; a directory another suite's guest uses is locked and stays, and so do a
    directory too young to be locked yet and anything not the lab's."""
    dead = tmp_path / f"{kernel_lab.LAB_PREFIX}dead"
    dead.mkdir()
    (dead / "disk.img").write_bytes(b"\0" * 512)
    (dead / kernel_lab.LAB_LOCK).touch()  # its suite died: nobody holds it
    before_locks = tmp_path / f"{kernel_lab.LAB_PREFIX}older"  # made before labs had a lock
    before_locks.mkdir()
    young = tmp_path / f"{kernel_lab.LAB_PREFIX}young"
    young.mkdir()
    other = tmp_path / "cryptbench-test-x"
    other.mkdir()
    for d in (dead, before_locks, other):
        _aged(d)
    with kernel_lab.lab_directory(tmp_path) as (live, lock):
        _aged(live)
        assert kernel_lab.sweep_dead(tmp_path) == [dead.name, before_locks.name]
        assert live.is_dir() and young.is_dir() and other.is_dir()
        assert not dead.exists() and not before_locks.exists()
        assert os.fstat(lock).st_ino == (live / kernel_lab.LAB_LOCK).stat().st_ino
    assert not live.exists()  # its own suite removes it when its guest is done
    assert kernel_lab.sweep_dead(tmp_path) == []


def test_a_guest_outliving_its_killed_suite_keeps_its_directory(tmp_path: Path) -> None:
    """vng holds the lock's descriptor too (_run_vng's pass_fds): where a suite is killed
    outright and its guest runs on, the directory stays locked, and no next suite sweeps
    it from under the guest; once the guest is gone, the next sweep removes it."""
    left = tmp_path / f"{kernel_lab.LAB_PREFIX}left"
    left.mkdir()
    with open(left / kernel_lab.LAB_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        vng = subprocess.Popen(["sleep", "60"], pass_fds=(lock.fileno(),))
    _aged(left)  # a guest that has run a while
    # the suite's own descriptor is closed, as a SIGKILL closes it; vng's holds the lock
    try:
        assert kernel_lab.sweep_dead(tmp_path) == [] and left.is_dir()
    finally:
        vng.kill()
        vng.wait()
    assert kernel_lab.sweep_dead(tmp_path) == [left.name] and not left.exists()


def test_vng_is_given_the_lab_directorys_lock(tmp_path: Path) -> None:
    """What the sweep relies on: the process _run_vng starts holds the lock's descriptor
    (and without it, none of the suite's)."""
    with kernel_lab.lab_directory(tmp_path) as (live, lock):
        has_it = ["sh", "-c", f"test -e /proc/$$/fd/{lock}"]
        assert kernel_lab._run_vng(has_it, live / "log", 30, lock) == 0
        assert kernel_lab._run_vng(has_it, live / "log", 30) == 1
