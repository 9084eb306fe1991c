"""Each diagnosis rule (analysis/diagnosis.py) on facts built by hand: the words a user
reads for each limit, and each threshold at its boundary, where the recorded documents
of test_diagnosis.py never fall. A mutation check (benchmarks/mutation.py) found these
decisions unguarded: a `<` turned `<=`, a branch of a sentence forced, a count changed."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

import pytest

from cryptbench.analysis import diagnosis
from cryptbench.analysis.diagnosis import CIPHER_NEAR, DEVICE_NEAR, LAYER_SHARE, QD_SHIFT, Facts, Rule
from cryptbench.cipher.ceilings import UNKNOWN_HINT
from cryptbench.model.result import CipherInfo, Document, EfficiencyRow, QdCurve, QdPoint, TargetInfo
from tests.support.paths import TESTS

MB = 1e6  # bytes/s per MB/s
DOCS = TESTS / "fixtures" / "documents"


def _row(**changes: Any) -> EfficiencyRow:
    row = EfficiencyRow(
        workload="w",
        target="t",
        achieved=300 * MB,
        plain=1000 * MB,
        plain_target="plain",
        cipher=CipherInfo("kernel", "xts(aes)", 4096),
        ceiling=400 * MB,
        ceiling_source="kernel cipher test",
        cores=2,
        openssl=2000 * MB,
        bound=400 * MB,
        limit="cipher",
        efficiency=0.75,
        cpu_seconds_per_gb=1.5,
        plain_cpu_seconds_per_gb=0.5,
    )
    return replace(row, **changes)


def _target(medium: str = "device") -> TargetInfo:
    return TargetInfo("t", "fscrypt", "ext4-loop", True, "direct", None, None, False, True, {}, medium)


def _facts(row: EfficiencyRow | None = None, **changes: Any) -> Facts:
    f = Facts(
        e=row or _row(),
        target=_target(),
        where="on the device",
        helper_cores=None,
        helper="",
        cpu_utilization=0.3,
        cpu_count=2,
        driver="xts(ecb(aes-generic))",
        acceleration="software: generic table-based C (no AES instructions used)",
        cpu_has_aes=True,
        twin=None,
        twin_plain=None,
    )
    return replace(f, **changes)


def _rule(f: Facts) -> Rule:
    return diagnosis.judge(f).rule


def _said(f: Facts) -> str:
    return diagnosis.judge(f).sentence


HEAD = "t: 300.0 MB/s at w"


def test_a_ceiling_below_the_achieved_speed_in_words() -> None:
    f = _facts(_row(ceiling=200 * MB))
    assert _said(f) == (
        f"{HEAD}: the measured cipher ceiling is below what t achieved (200.0 MB/s: kernel cipher "
        "test), so that ceiling is inconsistent, not a bottleneck; no limit can be named from it "
        "(a ceiling measured with other data units or fewer requests in flight than the layer "
        "uses would read low)."
    )
    # a ceiling the target reaches exactly is a bound it met, not a wrong one
    assert _rule(_facts(_row(ceiling=300 * MB, plain=None))) is Rule.KERNEL_CIPHER_BOUND


def test_faster_than_its_plain_bound_in_words_and_at_the_margin() -> None:
    row = _row(plain=250 * MB, limit="plain", ceiling=None)
    assert _said(_facts(row)) == (
        f"{HEAD}: faster than plain on the device (250.0 MB/s), its bound, so the bound is "
        "inconsistent (plain measured low, or the layer caches what plain does not); "
        "no limit can be named."
    )
    # within DEVICE_NEAR's margin above plain, the two are as fast as each other
    at_margin = replace(row, plain=row.achieved * DEVICE_NEAR)
    assert _rule(_facts(at_margin)) is Rule.DEVICE_BOUND
    # the plain check needs plain to be the bound
    assert _rule(_facts(replace(row, limit="cipher"))) is Rule.DEVICE_BOUND


def test_device_bound_in_words_and_from_exactly_its_share() -> None:
    row = _row(plain=300 * MB / DEVICE_NEAR, ceiling=None)
    assert _said(_facts(row)) == (
        f"{HEAD}, 90% of plain on the device (333.3 MB/s): the medium, not the encryption, sets the speed."
    )
    assert _rule(_facts(replace(row, plain=row.plain * 1.001))) is not Rule.DEVICE_BOUND


def test_kernel_cipher_bound_names_the_driver_and_what_would_lift_it() -> None:
    assert _said(_facts()) == (
        f"{HEAD}. The kernel's xts(aes) here is xts(ecb(aes-generic)), software: generic table-based "
        "C (no AES instructions used). Measured at 400.0 MB/s (kernel cipher test), the kernel cipher "
        "is the bottleneck. OpenSSL on this CPU does 2.00 GB/s with the same cipher and unit on 2 "
        "cores; the CPU has AES instructions, so a kernel with an AES-NI or VAES driver would remove "
        "this limit."
    )
    one_core = _said(_facts(_row(cores=1), cpu_has_aes=False))
    assert one_core.endswith(
        "with the same cipher and unit on one core; a kernel with an AES-NI or VAES driver would remove "
        "this limit."
    )
    unnamed = _said(_facts(driver=None, acceleration=""))
    assert unnamed == (
        f"{HEAD}. The kernel's xts(aes) here is a driver /proc/crypto did not name. Measured at "
        "400.0 MB/s (kernel cipher test), the kernel cipher is the bottleneck."
    )
    # a hardware driver is the limit as it stands, never told to be replaced
    hardware = _said(_facts(driver="xts-aes-aesni", acceleration="hardware: AES-NI instructions"))
    assert "OpenSSL" not in hardware and "would remove" not in hardware
    assert "OpenSSL" not in _said(_facts(_row(openssl=None)))


def test_a_cipher_holds_the_target_from_exactly_its_share_and_only_below_plain() -> None:
    at = _row(achieved=CIPHER_NEAR * 400 * MB, plain=None)
    assert _rule(_facts(at)) is Rule.KERNEL_CIPHER_BOUND
    below = replace(at, achieved=at.achieved * 0.999)
    assert _rule(_facts(below)) is not Rule.KERNEL_CIPHER_BOUND
    # a ceiling equal to plain's speed is not below it: the cipher is not what holds the target
    assert _rule(_facts(_row(plain=400 * MB))) is not Rule.KERNEL_CIPHER_BOUND
    # the rule reads the layer's own side: a kernel ceiling is not a userspace one
    assert _rule(_facts(_row(cipher=CipherInfo("userspace", "aes-256-gcm", 4096)))) is (
        Rule.USERSPACE_CIPHER_BOUND
    )


def test_userspace_cipher_bound_in_words() -> None:
    f = _facts(_row(cipher=CipherInfo("userspace", "aes-256-gcm", 4096), ceiling_source="gocryptfs -speed"))
    assert _said(f) == (
        f"{HEAD}, 75% of what its cipher does here (400.0 MB/s: gocryptfs -speed): the layer's "
        "cipher is the bottleneck."
    )


def _daemon(**changes: Any) -> Facts:
    row = _row(achieved=100 * MB, ceiling=None, bound=1000 * MB, limit="plain", efficiency=0.1)
    return _facts(replace(row, **changes), helper="gocryptfs", helper_cores=0.95)


def test_daemon_bound_in_words_against_plain_or_the_cipher() -> None:
    assert _said(_daemon()) == (
        "t reaches 10% of plain's speed on the device (100.0 MB/s of 1.00 GB/s) at w with 95% of a "
        "core in its daemon (gocryptfs): the daemon's FUSE round trips dominate, not the cipher."
    )
    cipher = _said(_daemon(limit="cipher", ceiling=2000 * MB, bound=2000 * MB, efficiency=0.05))
    assert cipher.startswith("t reaches 5% of the cipher's speed (100.0 MB/s of 2.00 GB/s) at w")


def test_a_daemon_is_blamed_from_exactly_busy_and_only_below_low_efficiency() -> None:
    assert _rule(replace(_daemon(), helper_cores=diagnosis.DAEMON_BUSY)) is Rule.DAEMON_BOUND
    assert _rule(replace(_daemon(), helper_cores=diagnosis.DAEMON_BUSY * 0.99)) is not Rule.DAEMON_BOUND
    at_low = _daemon(efficiency=diagnosis.DAEMON_LOW)
    assert _rule(at_low) is not Rule.DAEMON_BOUND
    assert _rule(replace(_daemon(), helper="")) is not Rule.DAEMON_BOUND


def _busy(**changes: Any) -> Facts:
    row = _row(achieved=100 * MB, ceiling=None, bound=1000 * MB, limit="plain", efficiency=0.1, **changes)
    return _facts(row, cpu_utilization=diagnosis.CPU_SATURATED)


def test_cpu_saturated_in_words_from_exactly_its_share() -> None:
    assert _said(_busy()) == (
        "t: 100.0 MB/s at w: the CPU was 90% busy across all 2 cores, 1.50 CPU-seconds per GB "
        "against plain's 0.50. The stack is CPU-bound (cipher, layer and fio together): a faster "
        "medium would not help."
    )
    # without plain's CPU figure there is nothing to set its own against
    assert ", 1.50 CPU-seconds" not in _said(_busy(plain_cpu_seconds_per_gb=None))
    assert "CPU-seconds" not in _said(_busy(cpu_seconds_per_gb=None))
    slightly_idle = replace(_busy(), cpu_utilization=diagnosis.CPU_SATURATED * 0.99)
    assert _rule(slightly_idle) is not Rule.CPU_SATURATED


def _on_ram(**changes: Any) -> Facts:
    base = {"achieved": 100 * MB, "plain": 1000 * MB, "ceiling": 1000 * MB, "bound": 1000 * MB}
    row = _row(**{**base, **changes})
    return _facts(row, target=_target("ram"), where="on RAM", cpu_utilization=None)


def test_layer_bound_on_ram_in_words_with_its_daemon() -> None:
    f = replace(_on_ram(), helper="securefs", helper_cores=0.4)
    assert _said(f) == (
        "t: 100.0 MB/s at w, 10% of plain on RAM (1.00 GB/s) and its cipher's 1.00 GB/s, with its "
        "daemon (securefs) at 40% of a core: the layer itself, not the medium or the cipher, limits it."
    )
    # no daemon figure, no daemon named; no ceiling, none said
    assert _said(_on_ram(ceiling=None)) == (
        "t: 100.0 MB/s at w, 10% of plain on RAM (1.00 GB/s): the layer itself, not the medium or "
        "the cipher, limits it."
    )
    assert "daemon" not in _said(replace(_on_ram(), helper="securefs", helper_cores=None))


def test_the_layer_is_blamed_only_below_half_of_plain_and_of_the_cipher() -> None:
    assert _rule(_on_ram(achieved=LAYER_SHARE * 1000 * MB)) is not Rule.LAYER_BOUND
    assert _rule(_on_ram(ceiling=100 * MB / LAYER_SHARE)) is not Rule.LAYER_BOUND
    assert _rule(_on_ram(ceiling=100 * MB / LAYER_SHARE * 1.01)) is Rule.LAYER_BOUND


def _with_twin(twin: float) -> Facts:
    row = _row(achieved=90 * MB, plain=100 * MB, ceiling=None, limit="plain", bound=100 * MB, efficiency=0.9)
    return _facts(row, twin=twin, twin_plain=1000 * MB, driver=None)


def test_layer_bound_on_the_device_through_its_twin_below_or_about_plain() -> None:
    below = _with_twin(99 * MB)
    below = replace(below, e=replace(below.e, achieved=80 * MB, efficiency=0.8))
    assert _said(below) == (
        "t: 80.0 MB/s at w; the same stack on RAM does only 99.0 MB/s, below plain on the device "
        "(100.0 MB/s): the layer itself, not the medium or the cipher, limits it."
    )
    about = replace(below, twin=100 * MB)
    assert ", about plain on the device (100.0 MB/s)" in _said(about)
    # a twin that could outrun the device leaves the device a share in the loss
    assert _rule(replace(below, twin=diagnosis.LAYER_MARGIN * 100 * MB)) is not Rule.LAYER_BOUND


def test_without_a_twin_the_layer_is_blamed_in_weaker_words_below_half_of_both() -> None:
    row = _row(achieved=100 * MB, plain=1000 * MB, ceiling=1000 * MB, limit="plain", bound=1000 * MB)
    f = _facts(row, cpu_utilization=None)
    assert _said(f) == (
        "t: 100.0 MB/s at w, 10% of plain on the device (1.00 GB/s) with a cipher that does 1.00 GB/s: "
        "neither the device nor the cipher explains it; the layer's own work (or extra I/O it sends "
        "the device) limits it, and --ram would tell the two apart."
    )
    assert _rule(replace(f, e=replace(row, plain=100 * MB / LAYER_SHARE))) is not Rule.LAYER_BOUND
    assert _rule(replace(f, e=replace(row, ceiling=100 * MB / LAYER_SHARE))) is not Rule.LAYER_BOUND


def test_no_rule_says_the_cause_is_unknown_and_what_is_missing() -> None:
    row = _row(
        achieved=600 * MB, plain=1000 * MB, ceiling=None, bound=1000 * MB, limit="plain", efficiency=0.6
    )
    assert _said(_facts(row)) == (
        "t: 600.0 MB/s at w, 60% of its bound (1.00 GB/s, plain); no rule applies (docs/methodology.md, "
        f"Diagnosis): the cause is unknown. Its cipher's ceiling is not known: {UNKNOWN_HINT}."
    )
    unbound = _said(_facts(replace(row, efficiency=None)))
    assert unbound.startswith("t: 600.0 MB/s at w, no bound known; no rule applies")
    assert "no bound known" in _said(_facts(replace(row, bound=None)))


def test_a_finding_keeps_its_loss_and_records_every_field() -> None:
    found = diagnosis.judge(_facts())
    assert (found.workload, found.target, found.rule, found.efficiency) == (
        "w",
        "t",
        Rule.KERNEL_CIPHER_BOUND,
        0.75,
    )
    assert found.loss == pytest.approx(0.7)
    assert diagnosis.judge(_facts(_row(plain=None))).loss == 0.0
    kept = found.recorded()
    assert (kept.workload, kept.target, kept.rule, kept.sentence, kept.efficiency) == (
        "w",
        "t",
        "kernel-cipher-bound",
        found.sentence,
        0.75,
    )
    unknown = diagnosis.judge(_facts(_row(achieved=600 * MB, ceiling=None, efficiency=0.6, plain=1000 * MB)))
    assert (unknown.target, unknown.efficiency, unknown.loss) == ("t", 0.6, pytest.approx(0.4))


def _curve(first: QdPoint, last: QdPoint) -> QdCurve:
    return QdCurve("randread", 4096, "t", "ext4-loop", [first, last])


def _point(depth: int, change: float, low: float | None = None, high: float | None = None) -> QdPoint:
    return QdPoint(depth, f"qd{depth}", change, low, high)


def test_a_queue_depth_move_counts_from_exactly_its_threshold_and_touching_intervals_do_not() -> None:
    assert diagnosis._qd_shift(_curve(_point(1, -30.0), _point(32, -30.0 + QD_SHIFT))) == QD_SHIFT
    assert diagnosis._qd_shift(_curve(_point(1, -30.0), _point(32, -30.0 + QD_SHIFT * 0.99))) is None
    # the lower end's interval reaching the higher end's: not separate
    touching = _curve(_point(1, -30.0, -35.0, -20.0), _point(32, -10.0, -20.0, -5.0))
    assert diagnosis._qd_shift(touching) is None
    apart = _curve(_point(1, -30.0, -35.0, -20.1), _point(32, -10.0, -20.0, -5.0))
    assert diagnosis._qd_shift(apart) == 20.0
    # a cost that grows with depth: the intervals are read the other way round
    grows = _curve(_point(1, -10.0, -20.0, -5.0), _point(32, -30.0, -35.0, -20.1))
    assert diagnosis._qd_shift(grows) == -20.0
    # the last point is the deepest, not the second
    three = QdCurve(
        "randread", 4096, "t", "ext4-loop", [_point(1, -30.0), _point(4, -29.0), _point(32, -10.0)]
    )
    assert diagnosis._qd_shift(three) == 20.0


def test_queue_depth_sentences_per_direction() -> None:
    shrinks = _curve(_point(1, -30.0), _point(32, -10.0))
    grows = QdCurve("write", 1 << 20, "t", "ext4-loop", [_point(1, -5.0), _point(8, -25.0)])
    assert diagnosis._qd_sentences("t", [shrinks, grows]) == [
        "t's cost against ext4-loop shrinks with queue depth (randread 4 KiB: -30% at QD1, -10% at QD32): "
        "deeper queues hide a cost per request.",
        "t's cost against ext4-loop grows with queue depth (write 1024 KiB: -5% at QD1, -25% at QD8): "
        "the layer keeps up with parallel requests less well than ext4-loop.",
    ]
    assert diagnosis._qd_sentences("t", [_curve(_point(1, -30.0), _point(32, -29.0))]) == []


def test_long_lists_of_workloads_are_cut_after_three() -> None:
    assert diagnosis._listed(["a", "b", "c", "d"]) == "a, b, c, d"
    assert diagnosis._listed(["a", "b", "c", "d", "e"]) == "a, b, c and 2 more"
    assert diagnosis._listed(["a", "b", "c", "d", "e", "f"]) == "a, b, c and 3 more"


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    return json.loads((DOCS / "quick-fscrypt-gocryptfs-ram.json").read_text())


def _first_row(doc: Document, target: str) -> EfficiencyRow:
    return next(e for e in doc.efficiency if e.target == target)


def test_facts_read_the_document(recorded: dict[str, Any]) -> None:
    raw = copy.deepcopy(recorded)
    raw["environment"]["cpu_flags"] = ["sse2", "aes"]
    raw["environment"]["cpu_count"] = None
    doc = Document.from_json(raw)
    f = diagnosis.facts(doc, _first_row(doc, "fscrypt"))
    assert f.where == "on the device" and f.cpu_has_aes and f.cpu_count == 1
    assert f.driver == doc.environment.driver("xts(aes)") and f.driver
    assert f.acceleration.startswith("software")
    assert f.twin is not None and f.twin_plain is not None and f.twin != f.twin_plain
    raw["environment"]["cpu_flags"] = ["sse2", "AES"]
    doc = Document.from_json(raw)
    assert not diagnosis.facts(doc, _first_row(doc, "fscrypt")).cpu_has_aes
    ram = diagnosis.facts(doc, _first_row(doc, "ram:fscrypt"))
    assert ram.where == "on RAM" and ram.twin is None and ram.twin_plain is None
    userspace = diagnosis.facts(doc, _first_row(doc, "gocryptfs"))
    assert (
        userspace.helper == "gocryptfs" and userspace.helper_cores is not None and userspace.helper_cores > 0
    )
    assert userspace.driver is None and userspace.acceleration == ""
    assert diagnosis.facts(doc, _first_row(doc, "fscrypt")).helper == ""


def test_edges_where_a_figure_is_missing_name_no_limit_and_raise_nothing() -> None:
    # a busy daemon without an efficiency: nothing to set it against
    assert _rule(replace(_daemon(), e=replace(_daemon().e, efficiency=None))) is not Rule.DAEMON_BOUND
    # a twin without plain's twin on RAM: the layer cannot be weighed
    below = _with_twin(50 * MB)
    below = replace(below, e=replace(below.e, achieved=50 * MB, efficiency=0.5))
    assert _rule(below) is Rule.LAYER_BOUND
    assert _rule(replace(below, twin_plain=None)) is not Rule.LAYER_BOUND
    # on RAM, from exactly half of plain on RAM, with no ceiling to weigh
    assert _rule(_on_ram(achieved=LAYER_SHARE * 1000 * MB, ceiling=None)) is not Rule.LAYER_BOUND
    assert _rule(_on_ram(achieved=LAYER_SHARE * 999 * MB, ceiling=None)) is Rule.LAYER_BOUND


def test_cpu_saturated_without_cpu_figures_in_words() -> None:
    assert _said(_busy(cpu_seconds_per_gb=None)) == (
        "t: 100.0 MB/s at w: the CPU was 90% busy across all 2 cores. The stack is CPU-bound "
        "(cipher, layer and fio together): a faster medium would not help."
    )


def test_an_unknown_cause_with_a_known_ceiling_says_nothing_of_it() -> None:
    row = _row(achieved=600 * MB, ceiling=3000 * MB, bound=1000 * MB, limit="plain", efficiency=0.6)
    assert _said(_facts(row)) == (
        "t: 600.0 MB/s at w, 60% of its bound (1.00 GB/s, plain); no rule applies (docs/methodology.md, "
        "Diagnosis): the cause is unknown."
    )


def test_queue_depth_moves_the_same_way_are_told_in_one_sentence() -> None:
    reads = _curve(_point(1, -30.0), _point(32, -10.0))
    writes = QdCurve("randwrite", 4096, "t", "ext4-loop", [_point(1, -40.0), _point(32, -20.0)])
    assert diagnosis._qd_sentences("t", [reads, writes]) == [
        "t's cost against ext4-loop shrinks with queue depth (randread 4 KiB: -30% at QD1, -10% at QD32; "
        "randwrite 4 KiB: -40% at QD1, -20% at QD32): deeper queues hide a cost per request."
    ]


def test_facts_edges(recorded: dict[str, Any]) -> None:
    raw = copy.deepcopy(recorded)
    fscrypt = next(t for t in raw["targets"] if t["name"] == "fscrypt")
    fscrypt["details"].pop("helpers", None)
    raw["environment"]["kernel_crypto"] = {}
    for r in raw["results"]:
        if r["target"] == "gocryptfs" and r["metric"] == "wall_seconds":
            r["median"] = 0.0
    doc = Document.from_json(raw)
    f = diagnosis.facts(doc, _first_row(doc, "fscrypt"))
    # no helper named, and a kernel cipher whose driver was not collected
    assert f.helper == "" and f.driver is None and f.acceleration == ""
    assert diagnosis.facts(doc, _first_row(doc, "gocryptfs")).helper_cores is None  # no wall time
    # a row without a cipher reads no driver
    bare = diagnosis.facts(doc, replace(_first_row(doc, "fscrypt"), cipher=None))
    assert bare.driver is None and bare.acceleration == ""


def test_facts_take_the_driver_the_target_got_over_the_environments(recorded: dict[str, Any]) -> None:
    """The environment reads /proc/crypto as the run starts, before any target instantiated
    xts(aes); the target's own record is read once data went through it."""
    raw = copy.deepcopy(recorded)
    fscrypt = next(t for t in raw["targets"] if t["name"] == "fscrypt")
    fscrypt["details"]["kernel_cipher_driver"] = "xts-aes-aesni"
    doc = Document.from_json(raw)
    assert doc.environment.driver("xts(aes)") not in (None, "xts-aes-aesni")
    f = diagnosis.facts(doc, _first_row(doc, "fscrypt"))
    assert f.driver == "xts-aes-aesni" and f.acceleration == "hardware: AES-NI instructions"
    raw["environment"]["kernel_crypto"] = {}  # and where the environment named none
    doc = Document.from_json(raw)
    assert diagnosis.facts(doc, _first_row(doc, "fscrypt")).driver == "xts-aes-aesni"


def _finding(workload: str, rule: Rule, loss: float) -> diagnosis.DiagnosedLimit:
    return diagnosis.DiagnosedLimit(workload, "t", rule, f"{rule} at {workload}.", None, loss)


def test_a_diagnosis_orders_limits_by_count_then_loss_and_sums_up_the_rest(
    recorded: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = Document.from_json(copy.deepcopy(recorded))
    rows = [e for e in doc.efficiency if e.target == "fscrypt"][:4]
    assert len(rows) == 4
    verdicts = {
        rows[0].workload: _finding(rows[0].workload, Rule.DEVICE_BOUND, 0.05),
        rows[1].workload: _finding(rows[1].workload, Rule.LAYER_BOUND, 0.60),
        rows[2].workload: _finding(rows[2].workload, Rule.CPU_SATURATED, 0.30),
        rows[3].workload: _finding(rows[3].workload, Rule.UNKNOWN, 0.90),
    }
    monkeypatch.setattr(diagnosis, "judge", lambda f: verdicts.get(f.e.workload, verdicts[rows[0].workload]))
    doc = replace(doc, efficiency=rows, qd_curves=[])
    (told,) = diagnosis.diagnose(doc)
    # one workload each: the known limits by the loss, unknown last
    assert told.sentences == [
        f"layer-bound at {rows[1].workload}.",
        f"cpu-saturated at {rows[2].workload}.",
        f"Other limits hold at {', '.join(sorted([rows[0].workload, rows[3].workload]))} "
        "(the --json document's findings).",
    ]
    assert [f.rule for f in told.findings] == ["device-bound", "layer-bound", "cpu-saturated", "unknown"]


def test_a_variant_without_an_efficiency_row_is_still_told_what_its_option_changes() -> None:
    doc = Document.from_json(json.loads((DOCS / "luks-tuning-lab.json").read_text()))
    before = {d.target: d for d in diagnosis.diagnose(doc)}
    variant = "luks-aes256-sector512"
    without = replace(doc, efficiency=[e for e in doc.efficiency if e.target != variant])
    after = {d.target: d for d in diagnosis.diagnose(without)}
    # no limit is named without the row, but the option's effect is said as before
    told = before[variant].sentences
    option = [x for x in told if x.startswith("512-byte sectors (luks-aes256-sector512)")]
    assert option and after[variant].sentences == told[told.index(option[0]) :]
    assert after[variant].findings == [] and after[variant].target == variant
    assert {d.target for d in diagnosis.diagnose(without)} == set(before)
    # the target varied has no option, and no row taken away: nothing changes for it
    assert after["luks-aes256"] == before["luks-aes256"]
