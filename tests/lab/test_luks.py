"""LUKS/dm-crypt for real, on a kernel that has it: every variant provisioned,
proven encrypted, measured and torn down; its open-time flags as dm-crypt
holds them; each option target held to plain LUKS."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cryptbench.analysis import tuning
from cryptbench.backends.luks_variants import ADIANTUM, AES_XTS, HIGH_PRIORITY, VARIANTS
from cryptbench.cipher.kernel import DRIVER_DETAIL, classify
from cryptbench.model.result import Document
from cryptbench.pipeline.provision import name_kernel_ciphers
from cryptbench.planning.suite import load_suite
from tests.lab import FinishedRun, run_json
from tests.lab.conftest import KERNEL_ONLY, WORKLOADS
from tests.support.cli import cli
from tests.support.targets import provisioned

pytestmark = [pytest.mark.lab, pytest.mark.integration]
PERF_FLAGS = {
    "no_read_workqueue",
    "no_write_workqueue",
    "submit_from_crypt_cpus",
    "same_cpu_crypt",
    HIGH_PRIORITY,
}
IN_SHARED_RUN = [n for n in VARIANTS if n in KERNEL_ONLY]  # every variant Debian 12's 6.1 takes
HIGH_PRIORITY_VARIANT = next(n for n, v in VARIANTS.items() if HIGH_PRIORITY in v.flags)


def test_every_luks_variant_end_to_end(kernel_only_run: FinishedRun) -> None:
    """Every LUKS target in the shared run of the kernel-only backends (tests/lab/conftest.py)."""
    doc = kernel_only_run.doc
    targets = {t["name"]: t for t in doc["targets"]}
    assert set(IN_SHARED_RUN) <= set(targets)
    for name in IN_SHARED_RUN:
        assert targets[name]["encryption_verified"] is True, name
        assert targets[name]["baseline"] == "ext4-loop"
        assert targets[name]["details"]["mapping"].startswith("/dev/mapper/cryptbench-")
    # its workload, two trials, on every target of the run: none failed
    assert doc["trials"] == {"ok": len(WORKLOADS) * 2 * len(targets), "failed": 0}
    assert not list(Path("/dev/mapper").glob("cryptbench-*"))


@pytest.mark.parametrize("backend", IN_SHARED_RUN)
def test_each_variant_holds_exactly_the_options_it_asked_for(
    kernel_only_run: FinishedRun, backend: str
) -> None:
    """The mapping's table as dm-crypt held it in the shared run (the target's `dm_table`
    detail: `dmsetup table` verbatim but for its key field), parsed here on its own and
    held to what the variant asked for, and to what the tool made of it."""
    details = next(t for t in kernel_only_run.doc["targets"] if t["name"] == backend)["details"]
    _holds_its_options(backend, details)


@pytest.mark.lab("6.12")
@pytest.mark.parametrize("backend", IN_SHARED_RUN)
def test_each_variant_holds_exactly_its_options_on_6_12(target_dir: Path, backend: str) -> None:
    """What the test above reads from 6.1's shared run, on Debian 13's kernel: each variant
    provisioned in this process and its table read, without trials or probes (the tables
    and the cipher's driver are what differ between the kernels; a run's other phases are
    the same code on both)."""
    with provisioned(target_dir, backend, 4 << 20) as (_session, target):
        name_kernel_ciphers({backend: target})  # dm-crypt instantiated its cipher when it loaded the table
        _holds_its_options(backend, target.details)
    assert not list(Path("/dev/mapper").glob("cryptbench-*"))


@pytest.mark.lab("6.12")
def test_high_priority_reaches_dm_crypts_table_on_6_12(
    target_dir: Path, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    """dm-crypt's high_priority (Linux 6.10) on Debian 13's kernel: the variant is
    provisioned, proven encrypted and measured, its mapping's table carries the flag, and
    the target says how the flag got there (with Debian 12's cryptsetup 2.6.1, which the
    lab's userland is, by reloading the table: cryptsetup 2.7 added --perf-high_priority)."""
    doc = run_json(target_dir, tmp_path, [HIGH_PRIORITY_VARIANT], "--skip-protection")
    target = next(t for t in doc["targets"] if t["name"] == HIGH_PRIORITY_VARIANT)
    assert target["encryption_verified"] is True
    assert doc["trials"]["failed"] == 0 and doc["trials"]["ok"] > 0
    details = target["details"]
    _holds_its_options(HIGH_PRIORITY_VARIANT, details)
    assert details["workqueues"] == "kcryptd at high priority (--perf-high_priority)"
    print(f"high_priority: {details['high_priority']}")
    record_property("dmsetup table", details["dm_table"])  # in the lab's section of the log
    assert details["high_priority"].startswith(
        ("set by cryptsetup open", "set by reloading the mapping's table")
    )
    assert not list(Path("/dev/mapper").glob("cryptbench-*"))


def _holds_its_options(backend: str, details: dict[str, str]) -> None:
    variant = VARIANTS[backend]
    line = details["dm_table"]
    print(f"dmsetup table ({backend}): {line}")  # kept in the lab's log: the real line, key left out
    assert line.split()[4] == "-"  # no key, nor the keyring's reference to one, was stored
    cipher = line.split()[3]
    expected = "aes-xts-plain64" if variant.cipher == AES_XTS else ADIANTUM
    if variant.integrity:
        expected = "capi:authenc(hmac(sha256),xts(aes))-plain64"  # dm-crypt's AEAD: tags with the sectors
    assert cipher == expected, line
    if variant.integrity:
        dif = details["dm_integrity_table"]
        print(f"dmsetup table ({backend}, _dif): {dif}")
        assert dif.split()[2] == "integrity" and dif.split()[6] == variant.integrity_mode, dif
        assert details["integrity"].startswith("HMAC-SHA256 tags via dm-integrity")
    else:
        assert "dm_integrity_table" not in details  # no dm-integrity under it
    assert details["dm_table_cipher"] == cipher
    shown = line.split()[9:]
    options = set(shown)
    assert options & PERF_FLAGS == set(variant.flags), line
    assert ("sector_size:4096" in options) == (variant.sector == 4096), line
    assert ("integrity:32:aead" in options) == (variant.integrity is not None), line
    assert details["dm_table_options"] == (" ".join(shown) or "none")  # what the tool recorded
    # the implementation this kernel chose for the variant's cipher, as /proc/crypto named it
    driver = details[DRIVER_DETAIL]
    print(f"{variant.algorithm} ({backend}): {driver}, {classify(driver)}")
    assert not classify(driver).startswith("unknown"), driver


def test_luks_tuning_holds_each_option_to_plain_luks(
    kernel_only_run: FinishedRun, record_property: Callable[[str, object], None]
) -> None:
    """luks-tuning's targets, in the shared run with one of its workloads: each option
    target against luks-aes256 as well as ext4-loop, in the document, the report and the
    diagnosis; and the responsiveness probe under every target's bulk write."""
    doc = kernel_only_run.doc
    backends = list(load_suite("luks-tuning").backends or [])
    variants = [b for b in backends if VARIANTS[b].variant_of and b in IN_SHARED_RUN]
    assert len(variants) == 7  # the suite's eight but high_priority, which 6.1 refuses
    comps = {(c["workload"], c["target"], c["kind"]): c for c in doc["comparisons"]}
    for v in variants:
        for w in WORKLOADS:
            c = comps[(w, v, "variant")]
            assert c["baseline"] == "luks-aes256" and c["ci_low"] is not None, c
            assert comps[(w, v, "baseline")]["baseline"] == "ext4-loop"
        told = next(d for d in doc["diagnosis"] if d["target"] == v)["sentences"]
        assert any("luks-aes256" in s for s in told), told
    probes = [
        r for r in doc["results"] if r["workload"] == "responsiveness" and r["metric"] == "probe.lat_p99"
    ]
    assert {r["target"] for r in probes} == {t["name"] for t in doc["targets"]}
    assert all(r["n"] == 2 and r["median"] > 0 for r in probes)
    db = str(kernel_only_run.db)
    shown = cli("show", str(doc["run_id"]), "--details", "--db", db, env=kernel_only_run.env)
    assert shown.returncode == 0, shown.stderr
    print(
        shown.stdout
    )  # kept in the lab's log: the tables as the lab printed them (TCG: no performance figures)
    assert "What each option changes against luks-aes256" in shown.stdout
    # The answer ends with the cheapest option to paste, or says none beat the default.
    answer = cli("show", str(doc["run_id"]), "--db", db, env=kernel_only_run.env)
    assert answer.returncode == 0, answer.stderr
    print(answer.stdout)  # kept in the lab's log, quoted in the note (TCG: behaviour only)
    advice = tuning.advise(Document.from_json(doc))
    assert advice is not None and advice.parent == "luks-aes256"
    words = " ".join(answer.stdout.split())  # as printed, folded to the terminal's width
    for line in tuning.lines(advice):
        assert " ".join(line.split()) in words, line
    record_property("the answer's last lines", " / ".join(tuning.lines(advice)))
    if advice.best is not None:
        assert "cryptsetup refresh --perf-" in words and " --persistent NAME" in words
    else:
        assert "keep the default; nothing to paste." in words
