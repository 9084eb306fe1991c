"""Each warning rule's words, exactly, on a recorded document edited to raise it (and
edited not to): the kind, the sentence a user acts on, the target and workload it
names. The recorded documents alone raise few of the kinds (test_warning_rules.py);
the mutation check found the rest unguarded, down to an interrupted run without
its warning."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from cryptbench.analysis import warning_rules as rules
from cryptbench.model.result import Document, Result
from cryptbench.model.warning_kinds import RunWarning
from cryptbench.store.rows import TrialRow
from tests.support.paths import TESTS

DOCS = TESTS / "fixtures" / "documents"
Raw = dict[str, Any]
SIZE = 67108864  # bytes: default-run.json's plan.size


def _doc(edit: Callable[[Raw], object] = lambda d: None, name: str = "default-run.json") -> Document:
    raw = json.loads((DOCS / name).read_text())
    edit(raw)
    return Document.from_json(raw)


def _said(found: Iterable[RunWarning]) -> list[dict[str, str | None]]:
    return [w.to_json() for w in found]


def _warning(
    kind: str, message: str, workload: str | None = None, target: str | None = None
) -> dict[str, str | None]:
    return {"kind": kind, "message": message, "workload": workload, "target": target}


def _target(raw: Raw, name: str) -> Raw:
    return next(t for t in raw["targets"] if t["name"] == name)


def _samples(raw: Raw, workload: str, target: str, samples: list[float]) -> None:
    for r in raw["results"]:
        if (r["workload"], r["target"], r["metric"]) == (workload, target, "throughput"):
            r["samples"], r["n"] = samples, len(samples)


def _result(samples: list[float]) -> Result:
    doc = _doc(lambda d: _samples(d, "seq1m-q8-read", "plain", samples))
    return next(
        r for r in doc.results if (r.workload, r.target, r.metric) == ("seq1m-q8-read", "plain", "throughput")
    )


def _trial(
    n: int, target: str, status: str = "ok", error: str | None = None, cached: int | None = None
) -> TrialRow:
    return TrialRow(n, n, 0, 0, "w", target, "2026-11-27T00:00:00Z", status, error, "drop_caches", cached)


def test_an_interrupted_run_says_its_figures_cover_the_finished_trials() -> None:
    def stopped(d: Raw) -> None:
        d["status"] = "interrupted"

    assert _said(rules.interrupted(_doc(stopped))) == [
        _warning("interrupted", "the run was interrupted; figures cover the trials that finished")
    ]
    assert _said(rules.interrupted(_doc())) == []  # complete


def test_a_run_not_as_root_says_what_fadvise_leaves_cached() -> None:
    def fadvise(d: Raw) -> None:
        d["environment"]["cache_drop"] = "fadvise"

    assert _said(rules.cache_drop_limited(_doc(fadvise))) == [
        _warning(
            "cache-drop-limited",
            "not run as root: caches were dropped with fadvise only, so the backing files of layered "
            "targets may have been read from memory; run as root for drop_caches",
        )
    ]
    assert _said(rules.cache_drop_limited(_doc())) == []  # drop_caches


GENERIC = "the kernel's AES is a generic software implementation ({}){}: kernel encryption (fscrypt, "
GENERIC += "dm-crypt) runs without AES-NI here, which makes it slow"
HAS_AES = " although the CPU has AES instructions"


def test_generic_kernel_aes_names_the_driver_and_whether_the_cpu_could_do_better() -> None:
    assert _said(rules.generic_kernel_aes(_doc())) == [
        _warning("generic-kernel-aes", GENERIC.format("xts(ecb(aes-fixed-time))", HAS_AES))
    ]

    def no_aes_ni_and_no_xts(d: Raw) -> None:
        d["environment"]["cpu_flags"] = ["avx2"]
        del d["environment"]["kernel_crypto"]["xts(aes)"]

    assert _said(rules.generic_kernel_aes(_doc(no_aes_ni_and_no_xts))) == [
        _warning("generic-kernel-aes", GENERIC.format("aes-fixed-time", ""))
    ]


def _fscrypt_as(backend: str) -> Callable[[Raw], None]:
    def edit(d: Raw) -> None:
        _target(d, "fscrypt")["backend"] = backend

    return edit


def test_generic_kernel_aes_is_told_for_every_kernel_aes_layer_and_no_other() -> None:
    """dm-crypt and eCryptfs run AES in the kernel as fscrypt does; before, only a run with
    fscrypt was told. Adiantum's bulk cipher is XChaCha12, a FUSE layer's its own code."""
    for backend in ("luks-aes256", "luks-aes256-hmac", "ecryptfs"):
        assert [w.kind for w in rules.generic_kernel_aes(_doc(_fscrypt_as(backend)))] == [
            rules.WarningKind.GENERIC_KERNEL_AES
        ], backend
    for backend in ("fscrypt-adiantum", "luks-adiantum", "gocryptfs", "image-qcow2-aes256"):
        assert _said(rules.generic_kernel_aes(_doc(_fscrypt_as(backend)))) == [], backend

    def aes_ni(d: Raw) -> None:
        d["environment"]["kernel_crypto"]["generic_software_aes"] = False

    assert _said(rules.generic_kernel_aes(_doc(aes_ni))) == []


def test_each_encrypted_target_without_its_proof_is_named() -> None:
    def unproven(d: Raw) -> None:
        _target(d, "gocryptfs")["encryption_verified"] = False  # the proof failed
        _target(d, "securefs")["encryption_verified"] = None  # it never ran
        assert _target(d, "plain")["encryption_verified"] is None  # not encrypted: nothing to prove

    words = "the proof of encryption did not pass for this target"
    assert _said(rules.encryption_unverified(_doc(unproven))) == [
        _warning("encryption-unverified", words, target="gocryptfs"),
        _warning("encryption-unverified", words, target="securefs"),
    ]


def _broken_then_disagreeing(d: Raw) -> None:
    """plain's probe broken; ext4-loop said to detect tampering, found silent."""
    _target(d, "plain")["protection"] = {"broken": "the probe could not write"}
    _target(d, "ext4-loop")["protection"]["tamper"]["declared"] = {"verdict": "detected", "source": "said so"}


def test_a_declaration_the_probe_contradicts_is_told_with_the_evidence() -> None:
    """A target whose probe broke is passed over, not the end of the list."""
    doc = _doc(_broken_then_disagreeing, "default-run-probed.json")
    assert _said(rules.protection_disagrees(doc)) == [
        _warning(
            "protection-disagrees",
            "ext4-loop is said to detect tampering (said so); here a flipped byte was returned silently: "
            "byte 9275392 of ext4.img (in a run of 17 changed 4 KiB block(s)) flipped: the file read back "
            "without an error, 1 of its bytes changed",
            target="ext4-loop",
        )
    ]
    assert _said(rules.protection_unproven(doc)) == [
        _warning(
            "protection-unproven",
            "what each target hides is not proven: the probe could not write; the probe is broken here",
        )
    ]


RISING = [100e6 + i * 2e6 for i in range(10)]  # bytes/s: 100 to 118 MB/s, trial by trial
DRIFT = (
    "throughput drifts {} by 17% from the first trial to the last (Spearman rho {}1.00, p = 7e-64): the "
    "machine changed during the run (a cache filling, throttling, a neighbour); the median mixes its states"
)


def test_drift_says_which_way() -> None:
    for samples, way, sign in ((RISING, "up", "+"), (RISING[::-1], "down", "-")):
        assert _said(rules.drift(_doc(), _result(samples))) == [
            _warning("drift", DRIFT.format(way, sign), "seq1m-q8-read", "plain")
        ]


def test_two_groups_of_samples_are_told_with_their_sizes_and_medians() -> None:
    samples = [100e6, 101e6, 99e6, 100.5e6, 99.5e6, 200e6, 201e6, 199e6, 200.5e6, 199.5e6]
    assert _said(rules.bimodal(_doc(), _result(samples))) == [
        _warning(
            "bimodal",
            "the samples form two groups, 5 around 100.0 MB/s and 5 around 200.0 MB/s: the median "
            "describes neither; find what switches between them before trusting the comparison",
            "seq1m-q8-read",
            "plain",
        )
    ]


def test_failed_trials_are_counted_with_the_first_ones_error() -> None:
    trials = [
        _trial(1, "gocryptfs", "failed"),  # no error recorded
        _trial(2, "gocryptfs", "failed", "fio exited with status 1: boom"),
        _trial(3, "plain"),
    ]
    assert _said(rules.failed_trials(trials)) == [
        _warning("failed-trials", "2 trial(s) failed: unknown error", "w", "gocryptfs")
    ]


def test_data_left_in_the_page_cache_above_one_percent_is_told_at_its_largest() -> None:
    trials = [
        _trial(1, "plain", cached=SIZE // 100),  # 1 % of the data: tolerated
        _trial(2, "gocryptfs", cached=SIZE // 100 + 1),
        _trial(3, "gocryptfs", cached=SIZE // 50 + 100),  # 1342277 bytes: 1310 whole KiB
        _trial(4, "fscrypt"),  # not measured
    ]
    assert _said(rules.cache_not_dropped(_doc(), trials)) == [
        _warning(
            "cache-not-dropped",
            "up to 1310 KiB of the data stayed in the page cache before a trial",
            "w",
            "gocryptfs",
        )
    ]

    def on_ram(d: Raw) -> None:
        _target(d, "fscrypt")["medium"] = "ram"

    # a RAM twin's pages are resident by nature; a plan without a size flags nothing unmeasured
    assert _said(rules.cache_not_dropped(_doc(on_ram), [_trial(1, "fscrypt", cached=SIZE)])) == []

    def no_size(d: Raw) -> None:
        d["plan"]["size"] = None

    assert _said(rules.cache_not_dropped(_doc(no_size), [_trial(1, "fscrypt")])) == []


# bytes/s, ten trials a side; the rule's early interval is after the first 8
TARGET = [101e6, 119e6, 86e6, 115e6, 96e6, 96e6, 128e6, 102e6, 99e6, 111e6]
BASE = [152e6, 121e6, 133e6, 131e6, 113e6, 110e6, 107e6, 135e6, 137e6, 134e6]
SHORT_OF = "±20.0% against plain, not the asked ±5% (stopped by max-repeats)"


def _stopped_short(baseline: list[float] | None) -> Callable[[Raw], None]:
    """ext4-loop against plain on seq1m-q8-read alone, stopped at ±20 % by max-repeats."""

    def edit(d: Raw) -> None:
        _samples(d, "seq1m-q8-read", "ext4-loop", TARGET)
        if baseline is None:
            d["results"] = [
                r for r in d["results"] if (r["workload"], r["target"]) != ("seq1m-q8-read", "plain")
            ]
        else:
            _samples(d, "seq1m-q8-read", "plain", baseline)
        d["comparisons"] = [
            {**c, "stopped_by": "max-repeats", "precision": 0.2}
            for c in d["comparisons"]
            if (c["workload"], c["target"], c["metric"]) == ("seq1m-q8-read", "ext4-loop", "throughput")
        ]
        d["stopping"]["rule"]["min_repeats"] = 8

    return edit


def test_a_comparison_short_of_its_precision_says_whether_more_trials_would_help() -> None:
    """Its early interval is computed with the figure's own seed (the run's, its workload,
    target and baseline): the one `show` prints. At 8 trials a side another seed moves
    the early interval in its first decimal."""
    assert _said(rules.imprecise(_doc(_stopped_short(BASE)))) == [
        _warning(
            "imprecise",
            f"{SHORT_OF}; it is not narrowing (±20.9% after 8 trials, ±20.0% after 10): more trials "
            "alone will not help",
            "seq1m-q8-read",
            "ext4-loop",
        )
    ]
    # no early interval when a side has no more trials than the first 8, or no result at all
    for baseline in (BASE[:8], None):
        assert _said(rules.imprecise(_doc(_stopped_short(baseline)))) == [
            _warning("imprecise", SHORT_OF, "seq1m-q8-read", "ext4-loop")
        ]


def test_targets_that_ran_another_io_mode_than_their_baseline_are_told_once_per_pair() -> None:
    def direct(d: Raw) -> None:
        _target(d, "fscrypt")["io_mode"] = "direct"

    mixes = "the comparison mixes page-cache cost with the layer's"
    assert _said(rules.io_mode_mismatch(_doc(direct))) == [
        _warning(
            "io-mode-mismatch",
            f"fscrypt ran direct I/O but ext4-loop ran buffered: {mixes}",
            target="fscrypt",
        ),
        _warning(
            "io-mode-mismatch", f"fscrypt ran direct I/O but plain ran buffered: {mixes}", target="fscrypt"
        ),
    ]


def test_short_trials_are_found_past_an_app_task_a_missing_figure_and_a_zero_rate() -> None:
    """An application task times itself (no fio runtime): it is passed over, not the end
    of the workloads. A target without a throughput figure, or with a trial that moved
    nothing, is skipped or has that trial left out, never divides by zero."""

    def mixed(d: Raw) -> None:
        d["plan"]["workloads"].insert(0, "dd-write-app")
        d["results"] = [
            r
            for r in d["results"]
            if (r["workload"], r["target"], r["metric"]) != ("seq1m-q8-read", "gocryptfs", "throughput")
        ]
        rate = next(
            r["samples"]
            for r in d["results"]
            if (r["workload"], r["target"], r["metric"]) == ("seq1m-q8-read", "ext4-loop", "throughput")
        )
        _samples(d, "seq1m-q8-read", "ext4-loop", [0.0, *rate[1:]])  # a trial that moved nothing

    found = {(w.workload, w.target) for w in rules.short_trial(_doc(mixed))}
    assert ("seq1m-q8-read", "plain") in found and ("seq1m-q8-read", "ext4-loop") in found
    assert ("seq1m-q8-read", "gocryptfs") not in found
