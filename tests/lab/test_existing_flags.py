"""The flag trial on the kernels users run: the user's own LUKS2 volume (made as
tests/support/users_mounts.users_luks_volume makes it, opened by cryptsetup, so its
table holds a keyring reference whose key cryptsetup has already removed) read through
its own mapping and through a read-only shadow mapping per flag set, the key unlocked
from the user's key file through pipes. Refused in one line without the key file; no
byte of the volume changes; the volume key is in no process's argv or environment while
it runs (sampled) and not in the store; killed by SIGKILL while its shadows are up,
`cleanup` removes them and leaves the user's own mapping open."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cryptbench.model.json_types import JsonObject
from tests.support.cli import cli
from tests.support.users_mounts import MAPPING, SMALL_VOLUME, changed, digests, run, users_luks_volume

pytestmark = [pytest.mark.lab("6.1", "6.12"), pytest.mark.integration]
ONE_READ = """
name = "flags"
description = "One random read of the user's volume"
[[workloads]]
name = "rnd4k-q8-read"
rw = "randread"
bs = "4K"
iodepth = 8
"""


def _shadows() -> list[str]:
    return sorted(p.name for p in Path("/dev/mapper").glob("cryptbench-*-shadow-*"))


class ArgvWatch:
    """Every process's command line and environment, read over and over while a run goes,
    searched for secrets (argv and environ are what other users of a machine can read)."""

    def __init__(self, secrets: list[bytes]) -> None:
        self.secrets, self.found, self.samples = secrets, [], 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self.done.is_set():
            for proc in Path("/proc").glob("[0-9]*"):
                for name in ("cmdline", "environ"):
                    try:
                        text = (proc / name).read_bytes()
                    except OSError:
                        continue
                    self.found += [f"{proc.name}/{name}" for s in self.secrets if s in text]
            self.samples += 1
            time.sleep(0.02)

    def __enter__(self) -> ArgvWatch:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.done.set()
        self.thread.join()


def _volume_key(loop: str, keyfile: Path, tmp_path: Path) -> str:
    """The volume key as cryptsetup writes it to a file of its own (the test's, not the run's)."""
    out = tmp_path / "vk"
    run("cryptsetup", "luksDump", "--dump-volume-key", "--batch-mode", "--key-file", str(keyfile),
        "--volume-key-file", str(out), loop)  # fmt: skip
    key = out.read_bytes().hex()
    out.unlink()
    return key


def test_the_flag_trial_reads_shadow_mappings_and_says_which_flags_read_fastest(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    suite = tmp_path / "flags.toml"
    suite.write_text(ONE_READ)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    db = tmp_path / "f.sqlite"
    base = ("run", "--existing", f"/dev/mapper/{MAPPING}", "--try-flags", "--suite", str(suite))
    base += ("--size", "4M", "--trial-time", "0", "--target", str(scratch), "--db", str(db))
    with users_luks_volume(tmp_path, mounted=False, size=SMALL_VOLUME):
        loop, keyfile = (tmp_path / "loop").read_text(), tmp_path / "volume.key"
        refused = cli(*base, "--repeats", "2")
        assert (refused.returncode, refused.stdout, db.exists()) == (2, "", False), refused.stderr
        table = run("dmsetup", "table", MAPPING)
        vk = _volume_key(loop, keyfile, tmp_path)
        before = (digests(f"/dev/mapper/{MAPPING}"), digests(loop))
        with ArgvWatch([vk.encode(), keyfile.read_bytes(), table.split()[4].encode()]) as watch:
            proc = cli(*base, "--repeats", "2", "--key-file", str(keyfile))
        after = (digests(f"/dev/mapper/{MAPPING}"), digests(loop))
        doc: JsonObject = json.loads(cli("show", "1", "--json", "--db", str(db)).stdout)
        assert run("dmsetup", "table", MAPPING) == table  # the user's mapping as it was
        left = _shadows()
    assert refused.stderr.strip() == (
        f"cryptbench: error: --try-flags: {MAPPING}'s key is a kernel keyring reference that no longer "
        "resolves (cryptsetup removes the key once a LUKS2 volume is open; a TPM-sealed key is never "
        "there): give its passphrase or key file with --key-file FILE (- for stdin) to unlock it"
    )
    assert proc.returncode == 0, proc.stderr
    record_property("the flag trial's answer", " ".join(proc.stdout.split()))
    assert left == []
    assert [changed(b, a) for b, a in zip(before, after, strict=True)] == [[], []]
    assert watch.samples > 10 and watch.found == []
    with sqlite3.connect(db) as con:
        dump = "\n".join(con.iterdump())
    assert vk not in dump and table.split()[4] not in dump and "letter.txt" not in dump
    six_twelve = os.environ.get("CRYPTBENCH_LAB_KERNEL", "").startswith("6.12")
    names = [
        "flags+no_read_workqueue",
        "flags+same_cpu_crypt",
        *(["flags+high_priority"] if six_twelve else []),
    ]
    raw = f"raw-{Path(loop).name}"
    assert [(t["name"], t["backend"], t["baseline"], t["encryption_verified"]) for t in doc["targets"]] == [
        (raw, "existing-raw", None, None),
        (MAPPING, "existing-dm-crypt", raw, True),
        *((n, "existing-flags", raw, True) for n in names),
    ]
    flags = {t["name"]: t["details"]["flags"] for t in doc["targets"] if t["backend"] == "existing-flags"}
    assert flags == {n: n.removeprefix("flags+") for n in names}
    assert {(r["workload"], r["target"]) for r in doc["results"]} == {
        ("rnd4k-q8-read", t) for t in [raw, MAPPING, *names]
    }
    assert any(
        n.startswith("the flag trial's mappings were made with the volume key your --key-file")
        for n in doc["notes"]
    )
    flat = " ".join(proc.stdout.split())
    # two trials each under TCG: which of the three sentences holds is the run's to say
    won = re.search(
        r"With (\w+) added, your volume users-volume read fastest: "
        r"[+-]\d+% \[[+-]\d+, [+-]\d+\] against its own flags \(none\)",
        flat,
    )
    own = f"Your volume {MAPPING}'s own flags (none) read fastest: every other set read slower" in flat
    tied = f"No set of flags read your volume {MAPPING} faster beyond doubt than its own (none)" in flat
    assert [bool(won), own, tied].count(True) == 1, flat
    assert "no_read_workqueue added " in flat
    if won:
        assert f"now: cryptsetup refresh --perf-{won.group(1)} {MAPPING}" in flat
        assert (
            "for good (kept in the LUKS2 header): cryptsetup refresh --persistent "
            f"--perf-{won.group(1)} {MAPPING}" in flat
        )
    if not six_twelve:
        assert "high_priority not tried: needs Linux 6.10" in proc.stderr
    assert "no_write_workqueue and submit_from_crypt_cpus not tried: they change writes only" in proc.stderr


def test_sigkill_while_the_shadows_are_up_then_cleanup_removes_them_alone(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    suite = tmp_path / "flags.toml"
    suite.write_text(ONE_READ)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with users_luks_volume(tmp_path, mounted=False, size=SMALL_VOLUME):
        args = ["run", "--existing", f"/dev/mapper/{MAPPING}", "--try-flags", "--suite", str(suite)]
        args += ["--size", "4M", "--repeats", "50", "--trial-time", "0", "--target", str(scratch)]
        args += ["--db", str(tmp_path / "k.sqlite"), "--key-file", str(tmp_path / "volume.key")]
        proc = subprocess.Popen([sys.executable, "-m", "cryptbench", *args], stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while len(_shadows()) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, "the shadow mappings did not come up"
            time.sleep(0.05)
        time.sleep(1)  # into the trials
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        up = _shadows()
        clean = cli("cleanup", "--target", str(scratch))
        left = _shadows()
        users = Path(f"/dev/mapper/{MAPPING}").exists()
    record_property("cleanup said", " ".join(clean.stdout.split()))
    assert len(up) >= 2, up
    assert clean.returncode == 0, clean.stderr
    assert all(f"removed read-only mapping {name}" in clean.stdout for name in up)
    assert left == [] and users
