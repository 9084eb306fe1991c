"""The diagnosis rules (analysis/diagnosis.py) on result documents recorded here.

quick-fscrypt-gocryptfs-ram.json is `cryptbench run --backends fscrypt,gocryptfs
--ram --size 32M --repeats 3` on this machine, printed by `cryptbench show
--json`; qd-sweep-fscrypt.json is `cryptbench run --suite qd-sweep --backends
fscrypt --size 16M --repeats 3`; default-run.json is `make run` (the quick
suite on plain, ext4-loop, fscrypt, gocryptfs, securefs, cryfs and encfs, no
--ram). Where no recorded run triggers a rule, the
test changes the one figure that rule reads, and says so.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from cryptbench.analysis import diagnosis
from cryptbench.analysis.diagnosis import Rule
from cryptbench.model.result import Document, EfficiencyRow, QdCurve, QdPoint
from tests.support.paths import TESTS

DOCS = TESTS / "fixtures" / "documents"


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    return json.loads((DOCS / "quick-fscrypt-gocryptfs-ram.json").read_text())


@pytest.fixture
def quick(recorded: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(recorded)


def _row(doc: dict[str, Any], target: str, workload: str) -> dict[str, Any]:
    return next(e for e in doc["efficiency"] if (e["target"], e["workload"]) == (target, workload))


def _judge(doc: dict[str, Any], target: str, workload: str) -> diagnosis.DiagnosedLimit:
    row = EfficiencyRow.from_json(_row(doc, target, workload))
    return diagnosis.judge(diagnosis.facts(Document.from_json(doc), row))


def _set_median(doc: dict[str, Any], target: str, workload: str, metric: str, value: float) -> None:
    for r in doc["results"]:
        if (r["target"], r["workload"], r["metric"]) == (target, workload, metric):
            r["median"] = value
            return
    raise AssertionError(f"no {metric} for {target} at {workload}")


def test_fscrypt_is_held_by_the_generic_software_aes(quick: dict[str, Any]) -> None:
    f = _judge(quick, "fscrypt", "seq1m-q8-read")
    assert f.rule is Rule.KERNEL_CIPHER_BOUND
    # 51.3 MB/s against a kernel cipher of 55.3 MB/s separated from this run's twins
    assert "fscrypt: 51.3 MB/s at seq1m-q8-read" in f.sentence
    assert "xts(ecb(aes-fixed-time)), software" in f.sentence
    assert "Measured at 55.3 MB/s (this run's RAM twins at seq1m-q8-read" in f.sentence
    assert "OpenSSL on this CPU does 6.38 GB/s" in f.sentence and "on one core" in f.sentence
    assert "AES-NI or VAES driver would remove this limit" in f.sentence


def test_a_hardware_driver_is_not_told_to_be_replaced(quick: dict[str, Any]) -> None:
    # Changed: the run's kernel driver, to the name a VAES kernel registers.
    quick["environment"]["kernel_crypto"]["xts(aes)"] = "xts-aes-vaes-avx512"
    f = _judge(quick, "fscrypt", "seq1m-q8-read")
    assert f.rule is Rule.KERNEL_CIPHER_BOUND
    assert "hardware: VAES instructions" in f.sentence and "would remove" not in f.sentence


def test_device_bound_where_the_layer_keeps_up_with_plain(quick: dict[str, Any]) -> None:
    f = _judge(quick, "gocryptfs", "rnd4k-q1-read")
    assert f.rule is Rule.DEVICE_BOUND
    assert "105% of plain on the device (52.5 MB/s)" in f.sentence


def test_layer_bound_on_ram_names_the_daemon(quick: dict[str, Any]) -> None:
    f = _judge(quick, "ram:gocryptfs", "rnd4k-q32-write")
    assert f.rule is Rule.LAYER_BOUND
    assert (
        "3% of plain on RAM (1.60 GB/s)" in f.sentence and "daemon (gocryptfs) at 44% of a core" in f.sentence
    )


def test_layer_bound_on_the_device_through_its_twin(quick: dict[str, Any]) -> None:
    f = _judge(quick, "fscrypt", "rnd4k-q1-read")
    assert f.rule is Rule.LAYER_BOUND
    assert "the same stack on RAM does only 17.6 MB/s, below plain on the device (52.5 MB/s)" in f.sentence


def test_no_rule_means_the_cause_is_unknown(quick: dict[str, Any]) -> None:
    # gocryptfs at rnd4k-q32-read: 45% of plain, its daemon at 0.54 of a core,
    # its twin at 25% of plain on RAM but faster than plain on the device.
    f = _judge(quick, "gocryptfs", "rnd4k-q32-read")
    assert f.rule is Rule.UNKNOWN
    assert "the cause is unknown" in f.sentence and "45% of its bound" in f.sentence


def test_daemon_bound_when_the_daemon_fills_a_core(quick: dict[str, Any]) -> None:
    # Changed: the daemon's CPU-seconds, to 95% of the trial's wall time (recorded: 41%).
    wall = next(
        r["median"]
        for r in quick["results"]
        if (r["target"], r["workload"], r["metric"]) == ("gocryptfs", "rnd4k-q32-write", "wall_seconds")
    )
    _set_median(quick, "gocryptfs", "rnd4k-q32-write", "helper_cpu_seconds", 0.95 * wall)
    f = _judge(quick, "gocryptfs", "rnd4k-q32-write")
    assert f.rule is Rule.DAEMON_BOUND
    assert "reaches 5% of plain's speed on the device" in f.sentence
    assert "95% of a core in its daemon (gocryptfs)" in f.sentence and "FUSE round trips" in f.sentence


def test_cpu_saturated_when_every_core_is_busy(quick: dict[str, Any]) -> None:
    # Changed: system-wide CPU busy at rnd4k-q32-read, to 95% (recorded: 51%).
    _set_median(quick, "gocryptfs", "rnd4k-q32-read", "cpu_utilization", 0.95)
    f = _judge(quick, "gocryptfs", "rnd4k-q32-read")
    assert f.rule is Rule.CPU_SATURATED
    assert "95% busy across all 2 cores" in f.sentence and "CPU-seconds per GB" in f.sentence


def test_userspace_cipher_bound_when_the_cipher_is_the_lower_bound(quick: dict[str, Any]) -> None:
    # Changed: gocryptfs' OpenSSL ceiling at seq1m-q8-write, to 180 MB/s (recorded: 5.80 GB/s).
    row = _row(quick, "gocryptfs", "seq1m-q8-write")
    row["ceiling"], row["bound"], row["limit"] = 180e6, 180e6, "cipher"
    row["efficiency"] = row["achieved"] / 180e6
    f = _judge(quick, "gocryptfs", "seq1m-q8-write")
    assert f.rule is Rule.USERSPACE_CIPHER_BOUND
    assert "96% of what its cipher does here (180.0 MB/s" in f.sentence


def test_a_cipher_faster_than_plain_is_never_the_bottleneck(quick: dict[str, Any]) -> None:
    # Changed: gocryptfs at seq1m-q8-write to 250 MB/s (recorded: 172 MB/s) against a cipher
    # ceiling of 320 MB/s (recorded: 5.80 GB/s), above plain's 305 MB/s. It reaches 78% of the
    # ceiling, past CIPHER_NEAR, yet the device is the lower bound, so the cipher holds nothing.
    row = _row(quick, "gocryptfs", "seq1m-q8-write")
    assert row["plain"] == pytest.approx(305e6, rel=0.01)
    row["achieved"], row["ceiling"] = 250e6, 320e6
    row["efficiency"] = 250e6 / row["bound"]
    f = _judge(quick, "gocryptfs", "seq1m-q8-write")
    assert f.rule not in (Rule.USERSPACE_CIPHER_BOUND, Rule.KERNEL_CIPHER_BOUND, Rule.DEVICE_BOUND), (
        f.sentence
    )
    # the same figures with the ceiling below plain: now the cipher is the bottleneck
    row["ceiling"] = 300e6
    assert _judge(quick, "gocryptfs", "seq1m-q8-write").rule is Rule.USERSPACE_CIPHER_BOUND


def test_a_targets_diagnosis_leads_with_its_commonest_limit(quick: dict[str, Any]) -> None:
    found = {d.target: d for d in diagnosis.diagnose(Document.from_json(quick))}
    assert set(found) == {"fscrypt", "gocryptfs", "ram:fscrypt", "ram:gocryptfs"}
    fscrypt = found["fscrypt"]
    # kernel cipher at 4 workloads, told at the one where fscrypt lost most against plain
    assert fscrypt.sentences[0].startswith("fscrypt: 51.3 MB/s at seq1m-q8-read. The kernel's")
    assert fscrypt.sentences[0].endswith("The same at seq1m-q8-write, rnd4k-q32-read, rnd4k-q32-write.")
    assert fscrypt.sentences[1].startswith("fscrypt: 12.6 MB/s at rnd4k-q1-read; the same stack on RAM")
    assert len(fscrypt.findings) == 6
    # three rules for gocryptfs: two are told, the third (no rule holds) is pointed to
    assert (
        found["gocryptfs"].sentences[2] == "No rule explains rnd4k-q32-read (the --json document's findings)."
    )


def test_the_quick_suites_depths_give_a_queue_depth_sentence(quick: dict[str, Any]) -> None:
    sentences = {d.target: d.sentences for d in diagnosis.diagnose(Document.from_json(quick))}
    assert (
        "fscrypt's cost against ext4-loop grows with queue depth (randwrite 4 KiB: -61% at QD1, -80% at QD32)"
        in sentences["fscrypt"][-1]
    )
    # randread: -71% [-75, -68] at QD1 against -76% [-83, -75] at QD32: the intervals overlap,
    # so nothing is said
    assert "randread" not in sentences["fscrypt"][-1]


def _curve(points: list[tuple[int, float, float, float]]) -> QdCurve:
    return QdCurve("randread", 4096, "x", "y", [QdPoint(d, f"qd{d}", o, lo, hi) for d, o, lo, hi in points])


def test_queue_depth_moves_need_ten_points_and_separate_intervals() -> None:
    # (depth, change in speed, its interval): -45 % at QD1 to -12 % at QD32 is a cost that shrinks
    shrink = _curve([(1, -45, -50, -40), (32, -12, -16, -8)])
    assert diagnosis._qd_sentences("x", [shrink]) == [
        "x's cost against y shrinks with queue depth (randread 4 KiB: -45% at QD1, -12% at QD32): "
        "deeper queues hide a cost per request."
    ]
    grow = _curve([(1, -12, -16, -8), (32, -45, -50, -40)])
    assert diagnosis._qd_sentences("x", [grow]) == [
        "x's cost against y grows with queue depth (randread 4 KiB: -12% at QD1, -45% at QD32): "
        "the layer keeps up with parallel requests less well than y."
    ]
    assert diagnosis._qd_sentences("x", [_curve([(1, -45, -50, -40), (32, -37, -44, -30)])]) == []  # 8 points
    assert diagnosis._qd_sentences("x", [_curve([(1, -45, -60, -20), (32, -30, -50, -10)])]) == []  # overlap


def test_qd_sweep_run_has_a_curve_per_pattern() -> None:
    doc = json.loads((DOCS / "qd-sweep-fscrypt.json").read_text())
    curves = {(c["target"], c["rw"], c["bs"]): c for c in doc["qd_curves"]}
    patterns = {("randread", 4096), ("randwrite", 4096), ("read", 1 << 20), ("write", 1 << 20)}
    assert {(rw, bs) for (t, rw, bs) in curves if t == "fscrypt"} == patterns
    for c in curves.values():
        assert [p["iodepth"] for p in c["points"]] == [1, 4, 16, 32]
        for p in c["points"]:
            assert p["change_low"] <= p["change_percent"] <= p["change_high"]


def test_a_run_without_encrypted_targets_has_no_diagnosis(quick: dict[str, Any]) -> None:
    quick["efficiency"] = []
    assert diagnosis.diagnose(Document.from_json(quick)) == []


def test_an_unknown_ceiling_is_said_with_how_to_measure_it() -> None:
    # qd-sweep without --ram: no AF_ALG here, no twins, no stored cryptbench cipher in its database
    doc = json.loads((DOCS / "qd-sweep-fscrypt.json").read_text())
    row = _row(doc, "fscrypt", "seq1m-q1-write")
    assert row["ceiling"] is None and row["limit"] == "plain"
    f = _judge(doc, "fscrypt", "seq1m-q1-write")
    assert f.rule is Rule.UNKNOWN
    assert "Its cipher's ceiling is not known: run `cryptbench cipher`, or this run with --ram" in f.sentence


def test_without_twins_a_layer_is_blamed_only_in_weaker_words() -> None:
    doc = json.loads((DOCS / "default-run.json").read_text())
    # cryfs at rnd4k-q32-write: 8.9 MB/s against plain's 435.8 and ChaCha20-Poly1305 at 1.66 GB/s
    f = _judge(doc, "cryfs", "rnd4k-q32-write")
    assert f.rule is Rule.LAYER_BOUND
    assert "2% of plain on the device (435.8 MB/s) with a cipher that does 1.66 GB/s" in f.sentence
    assert "daemon (cryfs) at 60% of a core" in f.sentence and "--ram would tell the two apart" in f.sentence
    # fscrypt's kernel ceiling is unknown without --ram, AF_ALG or a stored cryptbench cipher:
    # the cipher cannot be ruled out, so no rule holds
    f = _judge(doc, "fscrypt", "seq1m-q8-read")
    assert f.rule is Rule.UNKNOWN and "Its cipher's ceiling is not known" in f.sentence


def test_a_ceiling_below_the_achieved_speed_is_inconsistent_not_a_bottleneck(quick: dict[str, Any]) -> None:
    """Seen on Debian 12's kernel: AF_ALG measured xts(aes) at 22.5 MB/s for a LUKS target that
    reached 60.9 MB/s, and the diagnosis called the kernel cipher the bottleneck (efficiency 270 %)."""
    row = _row(quick, "fscrypt", "seq1m-q8-read")
    assert row["cipher"]["where"] == "kernel"
    row.update(ceiling=22.5e6, bound=22.5e6, limit="cipher", efficiency=row["achieved"] / 22.5e6)
    assert row["achieved"] > row["ceiling"]
    f = _judge(quick, "fscrypt", "seq1m-q8-read")
    assert f.rule is Rule.INCONSISTENT_BOUND
    assert "the measured cipher ceiling is below what fscrypt achieved (22.5 MB/s" in f.sentence
    assert "bottleneck;" in f.sentence and "is the bottleneck" not in f.sentence
    # Just under the achieved speed the same ceiling is a bound again, and the rule does not apply.
    row.update(ceiling=row["achieved"] * 1.01, bound=row["achieved"] * 1.01, efficiency=1 / 1.01)
    assert _judge(quick, "fscrypt", "seq1m-q8-read").rule is Rule.KERNEL_CIPHER_BOUND


def test_far_above_plain_is_an_inconsistent_bound_within_noise_device_bound(quick: dict[str, Any]) -> None:
    row = _row(quick, "gocryptfs", "rnd4k-q1-read")
    assert row["limit"] == "plain"
    row.update(efficiency=1.05, achieved=row["plain"] * 1.05)  # within DEVICE_NEAR's margin
    assert _judge(quick, "gocryptfs", "rnd4k-q1-read").rule is Rule.DEVICE_BOUND
    row.update(efficiency=1.5, achieved=row["plain"] * 1.5)
    f = _judge(quick, "gocryptfs", "rnd4k-q1-read")
    assert f.rule is Rule.INCONSISTENT_BOUND and "faster than plain on the device" in f.sentence
