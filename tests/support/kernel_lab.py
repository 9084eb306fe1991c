"""The kernel lab: tests marked `lab` run inside Debian's own kernels.

This machine's kernel has no modules, no device-mapper, no AF_ALG and cgroup
v1's blkio; the kernels users run (Debian 12's 6.1, Debian 13's 6.12, Ubuntu's,
Fedora's) have modules, dm-crypt, AF_ALG and cgroup v2 only. So the tests that
need such a kernel are booted into one: virtme-ng starts a Debian kernel under
qemu over this machine's own userland (read-only; /tmp writable), with a
virtual disk for the targets, and runs pytest on the marked tests inside.

A test runs on the kernels its marker names (`pytest.mark.lab("6.1", "6.12")`;
a bare `lab`, on DEFAULT_KERNELS): one guest per kernel, each booted once for
all of its tests. The host's pytest stands a proxy item in for each test on each
kernel (no fixture runs on the host; the kernel in brackets after its name),
and reports it with its guest's outcome: passed, failed with the guest's report
and output, or skipped with the guest's reason. `CRYPTBENCH_REQUIRE_LAB=1` (set
by .ci/run) turns a lab that could not run, and a skip inside it, into a failure.
"""

from __future__ import annotations

import fcntl
import glob
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tests.support.reliability import count
from tests.support.versions import version_key


def in_guest() -> bool:
    """Whether this process runs inside the lab's guest (its boot script exports
    CRYPTBENCH_LAB=guest), read each time: a unit test sets and clears it."""
    return os.environ.get("CRYPTBENCH_LAB") == "guest"


IN_GUEST = in_guest()
REQUIRE = os.environ.get("CRYPTBENCH_REQUIRE_LAB") == "1"


@dataclass(frozen=True)
class LabKernel:
    """A kernel the lab boots."""

    name: str  # its series, as markers and the stand-ins' names say it: "6.1"
    label: str  # whose kernel it is, for the reports
    pattern: str  # a glob of its image; the newest match boots
    fetch: str  # what installs it where it is missing


# Where scripts/fetch-lab-kernel.sh unpacks the kernels that are not the host's packages:
# under /var/lib, not /var/cache, which vng hides in the guest under a tmpfs of its own
# (and with it the modules the guest's /lib/modules links to).
CACHE = os.environ.get("CRYPTBENCH_LAB_KERNELS", "/var/lib/cryptbench/lab-kernels")
KERNELS = {
    k.name: k
    for k in (
        LabKernel(
            "6.1", "Debian 12's 6.1", "/boot/vmlinuz-6.1.0-*-amd64", "apt-get install linux-image-amd64"
        ),
        LabKernel(
            "6.12",
            "Debian 13's 6.12",
            f"{CACHE}/*/boot/vmlinuz-6.12.*-amd64",
            "scripts/fetch-lab-kernel.sh (make test runs it)",
        ),
    )
}
DEFAULT_KERNELS = ("6.1",)  # a bare `lab` marker's
DISK_BYTES = 6 << 30  # sparse; the lab's targets live on it (xfs, so ext4 stays unloaded)
MEMORY = "3G"
# A KVM boot that has not run `true` by then hangs, or is no faster than TCG, which boots
# it in about 20 s on the 2-core development VM (`vng --disable-kvm --run … -- true`: 19.5 s).
KVM_PROBE_SECONDS = 40.0
# Every lab test together. The guest runs beside the host's tests at low priority
# (NICE), so it gets what they leave, and takes up to twice as long as alone (its shared
# run of the kernel-only backends: 634 s alone in CI, 1330 s beside the host's tests);
# once they end it has both cores. CI stops everything at 90 minutes.
LAB_SECONDS = 80 * 60.0
# The guest's qemu yields the CPU to the host's tests: at nice 15 a host process has
# about 28 times its share (CFS weights 1024 against 36), so a host test that times a
# throttle or a cipher is not disturbed by the guest beside it (docs/kernel-lab.md,
# "Beside the host's tests").
NICE = 15
RESULTS = "results.jsonl"
# The host's tree a second time, read-only, under this 9p tag: the guest mounts it with
# its page cache on (vng mounts the root without), see guest_script.
HOST_TAG = "cryptbench-host"
# The guest's pytest: no cache in the read-only tree, and no Hypothesis (no property test
# runs there; tests/conftest.py leaves it unimported too)
GUEST_PYTEST = "-p no:cacheprovider -p no:hypothesispytest"
RESIDENT = "resident.txt"  # what tests/support/lab_resident.py holds, in the shared directory
CONSOLE = "console.log"
PYTEST_EXIT = "lab: pytest exit "  # the guest script's last line, then the status
CANNOT_RUN = "lab: cannot run: "  # the guest script's line when it stops before pytest, then why


@dataclass
class Outcome:
    """One guest test's result, merged over its setup, call and teardown.

    Nothing passes by default: a test passed only when its setup, call and
    teardown all reported and passed. A test whose phases stop short (the guest
    panicked, ran out of memory or was stopped) failed, whatever did arrive.
    """

    outcome: str = ""  # passed, failed or skipped, once its phases are read (settle)
    report: str = ""  # the guest's failure report (with what the test printed), or the skip reason
    seconds: float = 0.0  # wall time in the guest, all phases
    figures: list[tuple[str, str]] = field(default_factory=list)  # what the test recorded (record_property)
    phases: dict[str, str] = field(default_factory=dict)  # setup/call/teardown -> the outcome each reported

    def settle(self) -> None:
        """Decide the outcome from the phases that arrived."""
        if "failed" in self.phases.values():
            self.outcome = "failed"
        elif "teardown" not in self.phases or (
            "call" not in self.phases and self.phases.get("setup") == "passed"
        ):
            arrived = ", ".join(self.phases) or "none"
            self.outcome = "failed"
            self.report = (
                f"the guest stopped before this test finished (phases reported: {arrived}); "
                "it panicked, ran out of memory or hit the lab's time limit"
            )
        elif "skipped" in self.phases.values():
            self.outcome = "skipped"
        else:
            self.outcome = "passed"


@dataclass
class LabRun:
    """What one boot of the lab did."""

    series: str = DEFAULT_KERNELS[0]  # which of KERNELS it booted
    kernel: str = ""  # the kernel image booted
    accel: str = ""  # kvm or tcg
    accel_reason: str = ""  # why that one
    seconds: float = 0.0  # the whole boot, host wall clock
    returncode: int | None = None  # vng's exit status; None when it was stopped
    unavailable: str = ""  # why the lab could not run at all, or ""
    console: str = ""  # everything the guest printed
    outcomes: dict[str, Outcome] = field(default_factory=dict)  # by node id
    figures: dict[str, int] = field(default_factory=dict)  # the guest's reliability figures
    shared: dict[str, float] = field(default_factory=dict)  # a session fixture (shared run) -> seconds
    waited: float = 0.0  # seconds the host's stand-ins waited for the guest after the host's own tests
    pytest_exit: int | None = (
        None  # the guest's pytest exit status, from its last line; None if it never came
    )

    def failure(self) -> str | None:
        """Why the lab as a whole failed, beyond any one test's outcome; None if it did not."""
        if self.unavailable:
            return None
        if self.returncode is None:
            return f"the lab was stopped at its time limit ({LAB_SECONDS:.0f} s)"
        if self.pytest_exit is None:
            return (
                f"the guest never reported pytest's exit (vng exit {self.returncode}): "
                "it panicked, ran out of memory or was powered off"
            )
        if self.pytest_exit != 0:
            return f"pytest in the guest exited {self.pytest_exit}"
        if self.returncode != 0:  # after pytest's last line: a panic, or a guest that did not power off
            return f"vng exited {self.returncode} after the guest's pytest exited 0"
        return None

    def summary(self) -> str:
        if self.unavailable:
            return f"kernel lab ({KERNELS[self.series].label}) did not run: {self.unavailable}"
        counts: dict[str, int] = {}
        for o in self.outcomes.values():
            counts[o.outcome] = counts.get(o.outcome, 0) + 1
        tally = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no result"
        failed = self.failure()
        return (
            f"kernel lab: {Path(self.kernel).name} under {self.accel.upper()} ({self.accel_reason}); "
            f"{tally} in {self.seconds:.0f} s" + (f"; FAILED: {failed}" if failed else "")
        )


def lab_kernel(name: str = DEFAULT_KERNELS[0]) -> str | None:
    """The image of the lab's kernel `name` that boots (the newest installed), or None.
    Newest by version, not by name: 6.12.117 is newer than 6.12.99, 6.1.0-57 than 6.1.0-9."""
    found = sorted(glob.glob(KERNELS[name].pattern), key=lambda image: version_key(Path(image).name))
    return found[-1] if found else None


def why_no_lab(name: str = DEFAULT_KERNELS[0]) -> str | None:
    """Why the lab cannot boot kernel `name` here, in words that say what to install; None if it can."""
    if os.geteuid() != 0:
        return "needs root (the guest's tests attach loop devices and mount)"
    kernel = KERNELS[name]
    if lab_kernel(name) is None:
        return f"{kernel.label} is not installed ({kernel.pattern}); {kernel.fetch}"
    for tool, package in (("qemu-system-x86_64", "qemu-system-x86"), ("busybox", "busybox-static")):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install {package})"
    if not (Path(sys.executable).parent / "vng").exists():
        return "virtme-ng is not installed in the venv (make test installs it)"
    return None


def need_lab() -> None:
    """Skip a host test that boots the lab where it cannot (or fail it where it must run)."""
    why = why_no_lab()
    if why:
        if REQUIRE:
            pytest.fail(f"the kernel lab could not run: {why}", pytrace=False)
        pytest.skip(f"kernel lab unavailable: {why}")


def _env() -> dict[str, str]:
    env = os.environ.copy()
    # vng starts virtme-run from PATH: the venv's, where both are installed.
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    return env


def vng_command(kernel: str, accel: str, shared: Path, disk: Path | None, command: str) -> list[str]:
    host = "-fsdev local,id=host,path=/,security_model=none,readonly=on,multidevs=remap"
    host += f" -device virtio-9p-pci,fsdev=host,mount_tag={HOST_TAG}"
    opts = f"-drive file={disk},format=raw,if=virtio,cache=unsafe {host}" if disk else ""
    return [
        str(Path(sys.executable).parent / "vng"),
        *(["--disable-kvm"] if accel == "tcg" else []),
        *("--run", kernel, "--memory", MEMORY, "--cpus", "2"),
        f"--rwdir={shared}",
        *([f"--qemu-opts={opts}"] if opts else []),
        "--",
        command,
    ]


# Every vng under way, by the thread that waits for it: stop() ends only the session's
# own background boot (a pytest run inside a test, as the stand-ins' tests make, must
# not stop the outer session's guest).
_RUNNING: dict[int, set[subprocess.Popen[bytes]]] = {}


def _run_vng(argv: list[str], log: Path, timeout: float, lock: int | None = None) -> int | None:
    """Run vng in its own process group, its output to `log`, at NICE; None if it was
    stopped at `timeout` or by stop(). `lock`: the lab directory's locked descriptor, which
    vng holds too, so that a guest outliving a suite killed outright keeps its directory."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            ["nice", "-n", str(NICE), *argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_env(),
            start_new_session=True,
            pass_fds=() if lock is None else (lock,),
        )
        mine = _RUNNING.setdefault(threading.get_ident(), set())
        mine.add(proc)
        try:
            rc = proc.wait(timeout=timeout)
            return None if proc in _STOPPED else rc
        except subprocess.TimeoutExpired:
            return None
        finally:
            _stop(proc)
            mine.discard(proc)


_STOPPED: set[subprocess.Popen[bytes]] = set()  # stopped by stop(), not by their guest


def _stop(proc: subprocess.Popen[bytes]) -> None:
    # qemu runs under vng: the whole group goes, whatever happened.
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def stop(config: pytest.Config) -> None:
    """Stop the session's background guests that still run (the lab's, and each boot a
    host test owns: the session is ending on Ctrl-C, SIGTERM, or an error before their
    results were read), and wait for each boot to remove its directory."""
    begun = [*config.stash.get(BACKGROUND, {}).values(), *config.stash.get(OWN_GUESTS, {}).values()]
    for bg in begun:
        bg.cancelled = True
    for bg in begun:
        for proc in list(_RUNNING.get(bg.thread.ident or 0, ())):
            _STOPPED.add(proc)
            _stop(proc)
    for bg in begun:
        bg.done.wait(timeout=30)


# The choice, once made: one probe per pytest for every boot of every kernel. Whether KVM
# works is this machine's qemu and /dev/kvm (on the development VM qemu fails an assertion
# or hangs before the guest's kernel matters), so the first kernel probed speaks for all.
_ACCEL: list[tuple[str, str]] = []  # empty until probed, then the one verdict
_ACCEL_LOCK = threading.Lock()  # the background boot and a harness test's boot may ask at once


def choose_accel(kernel: str, scratch: Path) -> tuple[str, str]:
    """KVM where it boots a lab kernel, TCG otherwise; and why."""
    forced = os.environ.get("CRYPTBENCH_LAB_ACCEL")
    if forced in ("kvm", "tcg"):
        return forced, "CRYPTBENCH_LAB_ACCEL"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg", "no usable /dev/kvm"
    with _ACCEL_LOCK:
        if not _ACCEL:  # a probe that hangs costs its 40 s once, not once a boot
            _ACCEL.append(_probe_kvm(kernel, scratch))
        return _ACCEL[0]


def _probe_kvm(kernel: str, scratch: Path) -> tuple[str, str]:
    log = scratch / "kvm-probe.log"
    rc = _run_vng(vng_command(kernel, "kvm", scratch, None, "true"), log, KVM_PROBE_SECONDS)
    if rc == 0:
        return "kvm", "KVM booted it"
    said = log.read_text(errors="replace").strip().splitlines()
    why = f"hung for {KVM_PROBE_SECONDS:.0f} s" if rc is None else f"exit {rc}: {said[-1] if said else ''}"
    return "tcg", f"KVM could not boot it ({why})"


def cached_dirs() -> list[str]:
    """The host directories a guest's tests read code from (the programs and libraries,
    the interpreter, this tree with its .venv), none inside another."""
    dirs = sorted({os.path.realpath(d) for d in ("/usr", REPO, sys.prefix, sys.base_prefix)})
    return [d for d in dirs if not any(d.startswith(o + "/") for o in dirs)]


def guest_script(
    shared: Path,
    nodeids: list[str],
    resident: bool = True,
    kernel: str = "/boot/vmlinuz",
    series: str = DEFAULT_KERNELS[0],
) -> str:
    """What the guest runs: set the disk up as a distribution would have it, then pytest;
    with `resident`, tests/support/lab_resident.py beside it (for tests whose trials drop the
    caches: a host test's own guest, which runs none, is spared its imports). `kernel`:
    the image booted, whose directory holds its config where it is not the host's /boot;
    `series`: which of KERNELS it is, which the guest checks and tells its tests
    (CRYPTBENCH_LAB_KERNEL)."""
    python = shlex.quote(sys.executable)
    boot_dir = shlex.quote(str(Path(kernel).parent))
    ids = " ".join(shlex.quote(n) for n in nodeids)
    results = shlex.quote(str(shared / RESULTS))
    resident_file = shlex.quote(str(shared / RESIDENT))
    # mkdir first: virtme-ng's guest mounts tmpfs over /tmp, /var/tmp and more, which
    # hides a checkout there (and its .venv) unless it is bound back in
    binds = "\n".join(
        f"  mkdir -p {shlex.quote(d)}\n  mount --bind /tmp/host{shlex.quote(d)} {shlex.quote(d)}"
        for d in cached_dirs()
    )
    unseen = shlex.quote(
        f"{CANNOT_RUN}the guest cannot see this checkout ({REPO}): a tmpfs covers it there and the "
        "host's tree did not mount to bind it back; clone it elsewhere than under /tmp or /var/tmp"
    )
    keep = (
        f"[ $cached = yes ] && {python} -m tests.support.lab_resident {resident_file} > /dev/null 2>&1 &"
        if resident
        else ""
    )
    return f"""set -e
release=$(uname -r)
case $release in
  {series}.*) ;;
  *) echo "lab: booted $release, which is not {KERNELS[series].label}"; exit 1 ;;
esac
# Where this kernel's modules are: the host's /lib/modules for a kernel installed there;
# for one unpacked elsewhere (scripts/fetch-lab-kernel.sh), vng's link on a tmpfs over
# /lib/modules, which the bind of /usr below hides, so it is linked again after it.
modules=$(readlink -f /lib/modules/$release || true)
# What systemd's static device nodes give a distribution at boot: /dev/loop-control
# and /dev/mapper/control. Everything else (ext4, dm-crypt, AF_ALG, the AES-NI
# driver) is left for the kernel to load on demand, as on such a machine.
modprobe loop
modprobe dm_mod
mkfs.xfs -q -f /dev/vda
mkdir -p /tmp/lab
mount -t xfs /dev/vda /tmp/lab
mkdir -p /tmp/lab/targets /tmp/lab/pytest
echo "lab: $(uname -r), ext4 loaded: $(grep -cw ext4 /proc/filesystems || true)"
# vng's 9p root has no page cache (cache=none): under emulation every start of Python
# read its interpreter, NumPy and each module through 9p again, 30 s a `cryptbench`.
# The same tree mounted with the cache on (read-only: nothing here changes while the lab
# runs) is bound over the directories code comes from, and tests/support/lab_resident.py keeps
# what Python starts read in memory across the trials' cache drops.
cached=no
mkdir -p /tmp/host
if mount -t 9p -o ro,trans=virtio,version=9p2000.L,access=any,msize=524288,cache=loose {HOST_TAG} /tmp/host
then
{binds}
  cached=yes
else
  echo "lab: the host's tree without a page cache (9p tag {HOST_TAG} did not mount)"
fi
if [ ! -e /lib/modules/$release ] && [ -n "$modules" ]; then
  mount -t tmpfs lab-modules /lib/modules
  ln -s "$modules" /lib/modules/$release
fi
# A kernel's config where a distribution keeps it (/boot/config-RELEASE, which
# cryptbench reads for what the kernel was built with): the host's /boot holds only
# the host's packages'
[ -e /boot/config-$release ] || mount --bind {boot_dir} /boot
if [ ! -e {shlex.quote(str(REPO / "tests" / "support" / "kernel_lab.py"))} ]; then
  echo {unseen}
  exit 1
fi
cd {shlex.quote(str(REPO))}
export CRYPTBENCH_LAB=guest CRYPTBENCH_LAB_KERNEL={series} CRYPTBENCH_LAB_RESULTS={results}
export CRYPTBENCH_TEST_TARGET=/tmp/lab/targets
# The tree is read-only here: the bytecode `make setup` compiled on the host is read, none written.
export PYTHONDONTWRITEBYTECODE=1
{keep}
set +e
{python} -m pytest {GUEST_PYTEST} -o addopts= -q -rA --basetemp=/tmp/lab/pytest {ids}
status=$?
echo "lab: kept in memory across the drops: $(cat {resident_file} 2>/dev/null || echo nothing)"
echo "{PYTEST_EXIT}$status"
"""


def boot(nodeids: list[str], resident: bool = True, name: str = DEFAULT_KERNELS[0]) -> LabRun:
    """Boot the lab's kernel `name` once and run `nodeids` inside it (`resident`: see
    guest_script)."""
    lab = LabRun(series=name)
    why = why_no_lab(name)
    if why:
        lab.unavailable = why
        return lab
    kernel = lab_kernel(name)
    assert kernel is not None
    lab.kernel = kernel
    with lab_directory() as (scratch, lock):
        start = time.monotonic()
        lab.accel, lab.accel_reason = choose_accel(kernel, scratch)
        disk = scratch / "disk.img"
        with open(disk, "wb") as f:
            f.truncate(DISK_BYTES)
        script = scratch / "lab.sh"
        script.write_text(guest_script(scratch, nodeids, resident, kernel, name))
        log = scratch / CONSOLE
        argv = vng_command(kernel, lab.accel, scratch, disk, f"sh {shlex.quote(str(script))}")
        lab.returncode = _run_vng(argv, log, LAB_SECONDS, lock)
        lab.seconds = time.monotonic() - start
        lab.console = log.read_text(errors="replace")
        lab.outcomes, lab.figures, lab.shared = read_results(scratch / RESULTS)
        lab.pytest_exit = pytest_exit(lab.console)
        lab.unavailable = cannot_run(lab.console)
        if lab.returncode is None:
            lab.console += f"\n[stopped after {LAB_SECONDS:.0f} s]"
    return lab


LAB_BASE = Path("/var/tmp")  # not /tmp: the guest's own /tmp is a tmpfs of its own
LAB_PREFIX = "cryptbench-lab-"
LAB_LOCK = "lab.lock"  # flock()ed by the suite whose guest uses the directory, and by its vng
# A directory younger than this may be one whose suite has not taken its lock yet.
FRESH_SECONDS = 60.0


@contextmanager
def lab_directory(base: Path = LAB_BASE) -> Iterator[tuple[Path, int]]:
    """A guest's directory (its disk image, script, console and results) and the
    descriptor of its lock, held for as long as the guest uses it (by this suite, and by
    vng through `_run_vng`), the directory removed after: a suite killed outright with no
    guest left leaves it unlocked, and the next suite's `sweep_dead` removes it."""
    scratch = Path(tempfile.mkdtemp(prefix=LAB_PREFIX, dir=base))
    try:
        with open(scratch / LAB_LOCK, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield scratch, lock.fileno()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def sweep_dead(base: Path = LAB_BASE) -> list[str]:
    """Remove the guests' directories under `base` that no live suite or guest holds (a
    suite SIGKILLed, or stopped by a job's time limit, left them: a sparse disk image of
    DISK_BYTES, the guest's logs); a directory another suite's guest uses is locked and
    stays. Returns the names removed."""
    removed = []
    for d in sorted(base.glob(f"{LAB_PREFIX}*")):
        try:
            if d.is_symlink() or not d.is_dir() or time.time() - d.stat().st_mtime < FRESH_SECONDS:
                continue
            with open(d / LAB_LOCK, "a") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a live suite's guest
                shutil.rmtree(d)
        except FileNotFoundError:
            continue  # gone meanwhile: its own suite's teardown
        removed.append(d.name)
    return removed


def cannot_run(console: str) -> str:
    """Why the guest script stopped before its pytest, in its own words; "" if it did not
    say (each test then fails with what its phases show)."""
    said = [line for line in console.splitlines() if line.startswith(CANNOT_RUN)]
    return said[-1].removeprefix(CANNOT_RUN) if said else ""


def pytest_exit(console: str) -> int | None:
    """The guest pytest's exit status, from the script's last line; None if that line never came."""
    for line in reversed(console.splitlines()):
        status = line.strip().removeprefix(PYTEST_EXIT)
        if status != line.strip() and status.isdigit():
            return int(status)
    return None


def read_results(path: Path) -> tuple[dict[str, Outcome], dict[str, int], dict[str, float]]:
    """The guest's reports, one JSON line per test phase, merged per test; the
    reliability figures its tests counted (a last line, when it got there); and how
    long each shared run (a session fixture) took to set up."""
    outcomes: dict[str, Outcome] = {}
    figures: dict[str, int] = {}
    shared: dict[str, float] = {}
    if not path.exists():
        return outcomes, figures, shared
    for line in path.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line torn by a guest that died
        if "figures" in rec:
            figures = rec["figures"]
            continue
        if "fixture" in rec:
            shared[rec["fixture"]] = rec["seconds"]
            continue
        o = outcomes.setdefault(rec["nodeid"], Outcome())
        o.seconds += rec["duration"]
        o.phases[rec["when"]] = rec["outcome"]
        if rec.get("properties"):  # each phase's report repeats those recorded before it
            o.figures = [(str(k), str(v)) for k, v in rec["properties"]]
        if rec["outcome"] == "failed":
            o.report = f"{o.report}\n[{rec['when']}] {rec['longrepr']}".strip()
        elif rec["outcome"] == "skipped" and not o.report:
            o.report = rec["longrepr"]
    for o in outcomes.values():
        o.settle()
    return outcomes, figures, shared


def report_line(report: pytest.TestReport) -> dict[str, object]:
    """One guest test phase as a JSON-able record (read back by read_results)."""
    if report.skipped and isinstance(report.longrepr, tuple):
        longrepr = report.longrepr[2]  # (file, line, "Skipped: reason")
    else:
        longrepr = str(report.longrepr) if report.longrepr else ""
    return {
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "longrepr": longrepr,
        "duration": report.duration,
        "properties": [[k, str(v)] for k, v in report.user_properties],
    }


class LabItem(pytest.Item):
    """Stands on the host for one lab test on one kernel: its outcome is that kernel's
    guest's."""

    def __init__(self, *, guest_id: str, series: str, lab_ids: list[str], **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.guest_id = guest_id  # the test's node id in the guest
        self.series = series  # the kernel it runs on (KERNELS)
        self.lab_ids = lab_ids  # every test that kernel's guest runs

    def runtest(self) -> None:
        lab = booted(self.config, self.series, self.lab_ids)
        got = lab.outcomes.get(self.guest_id)
        if got is None:
            tail = "\n".join(lab.console.splitlines()[-60:])
            pytest.fail(f"no result from the kernel lab (vng exit {lab.returncode}); console:\n{tail}", False)
        self.user_properties += got.figures
        where = f"in the kernel lab ({Path(lab.kernel).name}, {lab.accel.upper()})"
        if got.outcome == "failed":  # pytest's report holds the captured output already
            pytest.fail(f"{where}:\n{got.report}", pytrace=False)
        if got.outcome == "skipped":
            if REQUIRE:
                pytest.fail(f"skipped {where}, where it must run: {got.report}", pytrace=False)
            pytest.skip(f"{where}: {got.report}")

    def reportinfo(self) -> tuple[str, int, str]:
        return str(self.path), 0, f"{self.name} (kernel lab, {KERNELS[self.series].label})"


class WholeLabItem(LabItem):
    """Stands for one kernel's boot itself, after every test: the lab fails as a whole
    when it was stopped at its time limit, or the guest's pytest never said it finished
    or did not exit 0, even where every test that reported passed."""

    def runtest(self) -> None:
        failed = booted(self.config, self.series, self.lab_ids).failure()
        if failed:
            pytest.fail(f"the kernel lab failed as a whole: {failed}", pytrace=False)

    def reportinfo(self) -> tuple[str, int, str]:
        return str(self.path), 0, f"the kernel lab on {KERNELS[self.series].label} as a whole"


LAB_RUNS = pytest.StashKey[dict[str, LabRun]]()  # by kernel, once its stand-ins have it
LAB_IDS = pytest.StashKey[dict[str, list[str]]]()  # the lab tests each kernel runs, set by stand_in


class Background:
    """One boot, begun when the session's tests begin and run beside them (the guest
    shares nothing with the host's tests but the CPU, and yields that: NICE); the
    stand-ins, which run last, wait for it.

    Waited for through an Event, not Thread.join: a join that Ctrl-C interrupts marks
    the thread stopped while it runs on (CPython before 3.13), and the session would
    end before the boot had removed its directory."""

    def __init__(
        self,
        ids: list[str],
        resident: bool = True,
        series: str = DEFAULT_KERNELS[0],
        after: Background | None = None,
    ) -> None:
        self.resident = resident
        self.series = series
        self.after = after  # the boot this one waits for before it begins, if any
        self.cancelled = False  # set by stop(): a boot still waiting never begins
        self.lab: LabRun | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(
            target=self._boot, args=(ids,), name=f"kernel-lab-{series}", daemon=True
        )

    def _boot(self, ids: list[str]) -> None:
        try:
            if self.after is not None:
                self.after.done.wait()
            if self.cancelled:
                self.lab = LabRun(
                    series=self.series, unavailable="the session ended before this kernel booted"
                )
                return
            self.lab = boot(ids, self.resident, self.series)
        except BaseException as e:  # handed to the stand-in that waits, as if it had booted
            self.error = e
        finally:
            self.done.set()

    def result(self) -> LabRun:
        self.done.wait()
        if self.error is not None:
            raise self.error
        assert self.lab is not None
        return self.lab


BACKGROUND = pytest.StashKey[dict[str, Background]]()  # the lab's boots, by kernel
# The boots host tests own (a test marked `guest`, such as the harness's guest that dies
# mid-test), by the node ids each runs: begun beside the lab's when the tests begin, so
# that their test waits for a finished boot instead of a whole emulated one.
OWN_GUESTS = pytest.StashKey[dict[tuple[str, ...], Background]]()
OWN_GUEST_IDS = pytest.StashKey[list[tuple[str, ...]]]()  # set at collection, begun by start


def start(config: pytest.Config) -> None:
    """Begin the lab's boots in the background, one kernel after another (KERNELS'
    order), for the kernels this session has lab tests on; and each boot a selected host
    test owns (its `guest` marker).

    One guest at a time: two emulated guests at once took the CPU the host's tests need
    (the fresh-clone run of 757d4c9, the guests side by side: 2657 s in all against
    2056 s for one guest before; docs/kernel-lab.md, "Cost"). The first kernel's guest
    ends about when the host's tests do, and the next then has the machine."""
    lab = config.stash.setdefault(BACKGROUND, {})
    wanted = config.stash.get(LAB_IDS, {})
    previous: Background | None = None
    for series in (s for s in KERNELS if wanted.get(s)):
        if series not in lab:
            lab[series] = Background(wanted[series], series=series, after=previous)
            lab[series].thread.start()
        previous = lab[series]
    own = config.stash.setdefault(OWN_GUESTS, {})
    for guest in config.stash.get(OWN_GUEST_IDS, []):
        if guest not in own:
            own[guest] = Background(list(guest), resident=False)
            own[guest].thread.start()


def own_guests(items: list[pytest.Item]) -> None:
    """Note the boots the selected host tests own, for start() to begin."""
    wanted = {tuple(m.args) for i in items for m in i.iter_markers("guest")}
    if items and wanted:
        items[0].config.stash[OWN_GUEST_IDS] = sorted(wanted)


def own_guest(config: pytest.Config, ids: list[str]) -> LabRun:
    """A host test's own boot of `ids`: the one begun in the background when the tests
    began (its `guest` marker), else booted now."""
    bg = config.stash.get(OWN_GUESTS, {}).get(tuple(ids))
    return bg.result() if bg is not None else boot(ids, resident=False)


def booted(config: pytest.Config, series: str, ids: list[str]) -> LabRun:
    """Kernel `series`'s one boot for all of `ids`: the one begun in the background at
    the session's start, else made by the first stand-in that asks; a lab that could not
    boot skips (or, where it must run, fails) the asker."""
    runs = config.stash.setdefault(LAB_RUNS, {})
    lab = runs.get(series)
    if lab is None:
        bg = config.stash.get(BACKGROUND, {}).get(series)
        asked = time.monotonic()
        lab = bg.result() if bg is not None else boot(ids, name=series)
        lab.waited = time.monotonic() - asked
        runs[series] = lab
        for name, n in lab.figures.items():
            count(f"{name} (kernel lab, {series})", n)
    if lab.unavailable:
        if REQUIRE:
            pytest.fail(f"the kernel lab could not run: {lab.unavailable}", pytrace=False)
        pytest.skip(f"kernel lab unavailable: {lab.unavailable}")
    return lab


def kernels_of(item: pytest.Item) -> tuple[str, ...]:
    """The kernels a lab test runs on: its marker's arguments, else DEFAULT_KERNELS."""
    marker = item.get_closest_marker("lab")
    names = tuple(marker.args) if marker is not None and marker.args else DEFAULT_KERNELS
    unknown = [n for n in names if n not in KERNELS]
    if unknown:
        raise pytest.UsageError(
            f"{item.nodeid}: no lab kernel {', '.join(unknown)} (known: {', '.join(KERNELS)})"
        )
    return names


def on_kernel(name: str, series: str) -> str:
    """A test's name with the kernel it runs on, as pytest names a parameter:
    test_x[6.12], test_x[a-6.12]."""
    return f"{name[:-1]}-{series}]" if name.endswith("]") else f"{name}[{series}]"


def stand_in(items: list[pytest.Item]) -> list[pytest.Item]:
    """Replace each lab test by a LabItem per kernel it runs on, the lab tests last (one
    boot per kernel for all of its tests). Before pytest deselects (-k, -m): a
    stand-in's name says its kernel, so `-k "6.12]"` picks a kernel's."""
    lab = [i for i in items if i.get_closest_marker("lab")]
    if not lab:
        return items
    on = [(item, kernels_of(item)) for item in lab]
    proxies: list[pytest.Item] = []  # kernel by kernel: each waits for its kernel's guest
    for series in dict.fromkeys(s for _i, kernels in on for s in kernels):
        for item in (i for i, kernels in on if series in kernels):
            proxy = LabItem.from_parent(  # type: ignore[arg-type]
                item.parent,
                name=on_kernel(item.name, series),
                guest_id=item.nodeid,
                series=series,
                lab_ids=[],
            )
            proxy.own_markers = list(getattr(item, "own_markers", []))
            proxy.keywords.update(item.keywords)
            proxies.append(proxy)
    return [i for i in items if not i.get_closest_marker("lab")] + proxies


def gather(items: list[pytest.Item]) -> list[pytest.Item]:
    """After deselection: tell each kernel's stand-ins which tests its one boot runs, and
    add that kernel's lab as a whole after them."""
    ids: dict[str, list[str]] = {}
    stand_ins = [i for i in items if isinstance(i, LabItem)]
    for item in stand_ins:
        ids.setdefault(item.series, []).append(item.guest_id)
    if not ids:
        return items
    for item in stand_ins:
        item.lab_ids = ids[item.series]
    items[0].config.stash[LAB_IDS] = ids
    wholes = [
        WholeLabItem.from_parent(  # type: ignore[arg-type]
            items[0].session,
            name=on_kernel("kernel-lab", series),
            guest_id="",
            series=series,
            lab_ids=ids[series],
        )
        for series in ids
    ]
    return items + wholes
