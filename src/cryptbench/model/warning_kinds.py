"""The warnings a run can raise, each kind owning its words and its weight: the name the
JSON gives it, whether it puts the figures in doubt (`serious`: the answer and the page
list those first, in red), and the sentence a user reads, with a slot for each fact the
rule that finds it supplies (analysis/warning_rules.py holds the rules, one per kind).
Not `warnings.py`: that name shadows the standard library's where the package's
directory is on `sys.path`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cryptbench.model.json_types import JsonObject


class WarningKind(StrEnum):
    serious: bool  # the figures are in doubt, not only less precise
    words: str  # the message, with {slots} for the rule's facts

    def __new__(cls, value: str, serious: bool, words: str) -> WarningKind:
        member = str.__new__(cls, value)
        member._value_ = value
        member.serious = serious
        member.words = words
        return member

    # coefficient of variation above warning_rules.HIGH_CV
    HIGH_VARIATION = ("high-variation", False, "{label} varies by {cv:.0%} (CV) between trials")
    # a sample with modified Z-score above 3.5 (estimates.outliers)
    OUTLIER = (
        "outlier",
        False,
        "trial {number} of {n} is an outlier ({value} against a median of {median}); kept, not dropped",
    )
    # the first trial stands apart from the rest
    SLOW_FIRST_TRIAL = (
        "slow-first-trial",
        False,
        "the first trial ran at {speed:.0%} of the others' median speed; "
        "a warm-up effect (caches, allocation) may be mixed in",
    )
    # fewer than warning_rules.MIN_SAMPLES: the interval is no more than their range
    FEW_SAMPLES = ("few-samples", False, "{n} sample(s): the interval is at best their range; {advice}")
    # some trials failed; their figures are missing
    FAILED_TRIALS = ("failed-trials", True, "{count} trial(s) failed: {first}")
    # data still resident before a read trial
    CACHE_NOT_DROPPED = (
        "cache-not-dropped",
        True,
        "up to {kib} KiB of the data stayed in the page cache before a trial",
    )
    # not root: only fadvise, backing may stay cached
    CACHE_DROP_LIMITED = (
        "cache-drop-limited",
        False,
        "not run as root: caches were dropped with fadvise only, so the backing files of "
        "layered targets may have been read from memory; run as root for drop_caches",
    )
    # the kernel's AES is software, not AES-NI
    GENERIC_KERNEL_AES = (
        "generic-kernel-aes",
        False,
        "the kernel's AES is a generic software implementation ({driver}){although}: kernel "
        "encryption (fscrypt, dm-crypt) runs without AES-NI here, which makes it slow",
    )
    # a comparison crosses direct and buffered I/O
    IO_MODE_MISMATCH = (
        "io-mode-mismatch",
        True,
        "{one} ran {one_mode} I/O but {other} ran {other_mode}: "
        "the comparison mixes page-cache cost with the layer's",
    )
    # the proof of encryption did not pass
    ENCRYPTION_UNVERIFIED = (
        "encryption-unverified",
        True,
        "the proof of encryption did not pass for this target",
    )
    # the run stopped early; results are partial
    INTERRUPTED = ("interrupted", True, "the run was interrupted; figures cover the trials that finished")
    # a trend across the trials: the machine changed during the run
    DRIFT = (
        "drift",
        False,
        "{label} drifts {way} by {change:.0%} from the first trial to the last (Spearman rho "
        "{rho:+.2f}, p = {p:.1g}): the machine changed during the run (a cache filling, "
        "throttling, a neighbour); the median mixes its states",
    )
    # two clusters of samples: the median describes neither
    BIMODAL = (
        "bimodal",
        False,
        "the samples form two groups, {low} around {low_median} and {high} around {high_median}: "
        "the median describes neither; find what switches between them before trusting the comparison",
    )
    # a comparison stopped short of the asked precision
    IMPRECISE = (
        "imprecise",
        False,
        "±{precision:.1f}% against {baseline}, not the asked ±{asked:g}% (stopped by {stopped_by})"
        "{narrowing}",
    )
    # fio's trials ran less than warning_rules.MIN_TRIAL_SECONDS of I/O
    SHORT_TRIAL = (
        "short-trial",
        False,
        "trials shorter than {least:g} s of I/O (median, fio's runtime): {ms:.0f} ms; over so short "
        "a run fio's start-up and the device's ramp weigh in the figure; buffered trials and writes "
        "to a new file make one pass over the data file (a larger --size lengthens them), direct ones "
        "as many as --trial-time and the byte budget allow",
    )
    # a probe proved the opposite of the documentation
    PROTECTION_DISAGREES = (
        "protection-disagrees",
        True,
        "{backend} is said to {said} ({source}); here {found}: {evidence}",
    )
    # a positive control failed: no probe is evidence
    PROTECTION_UNPROVEN = (
        "protection-unproven",
        True,
        "what each target hides is not proven: {why}; the probe is broken here",
    )

    @classmethod
    def named(cls, value: str) -> WarningKind:
        """The kind the JSON names `value`; ValueError for none."""
        for kind in cls:
            if kind.value == value:
                return kind
        raise ValueError(f"{value!r} is not a warning kind")

    def warn(self, workload: str | None = None, target: str | None = None, **facts: Any) -> RunWarning:
        """This kind's warning, its words filled with the rule's `facts`."""
        return RunWarning(self, self.words.format(**facts), workload, target)


# The clauses some kinds' sentences take or leave out, by what the rule found.
FEW_SAMPLES_DROPPED = (
    "its workload was dropped to fit the time budget (--max-time longer, or --overrun extend)"
)
FEW_SAMPLES_MORE = "use --repeats {least} or more"
GENERIC_AES_ALTHOUGH = " although the CPU has AES instructions"
IMPRECISE_NOT_NARROWING = (
    "; it is not narrowing (±{early:.1f}% after {k} trials, ±{now:.1f}% after {n}): "
    "more trials alone will not help"
)


@dataclass(frozen=True)
class RunWarning:
    """Something the reader must know before trusting a figure."""

    kind: WarningKind
    message: str  # one sentence a user can act on
    workload: str | None = None
    target: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {
            "kind": str(self.kind),
            "message": self.message,
            "workload": self.workload,
            "target": self.target,
        }

    @classmethod
    def from_json(cls, d: JsonObject) -> RunWarning:
        return cls(WarningKind.named(d["kind"]), d["message"], d.get("workload"), d.get("target"))
