"""Warnings a run can raise. Flagged in the report, never averaged away."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class WarningKind(StrEnum):
    HIGH_VARIATION = "high-variation"  # coefficient of variation above 10 %
    OUTLIER = "outlier"  # a sample with modified Z-score above 3.5
    SLOW_FIRST_TRIAL = "slow-first-trial"  # the first trial stands apart from the rest
    FEW_SAMPLES = "few-samples"  # fewer than 3 samples: the interval is no more than their range
    FAILED_TRIALS = "failed-trials"  # some trials failed; their figures are missing
    CACHE_NOT_DROPPED = "cache-not-dropped"  # data still resident before a read trial
    CACHE_DROP_LIMITED = "cache-drop-limited"  # not root: only fadvise, backing may stay cached
    GENERIC_KERNEL_AES = "generic-kernel-aes"  # the kernel's AES is software, not AES-NI
    IO_MODE_MISMATCH = "io-mode-mismatch"  # a comparison crosses direct and buffered I/O
    ENCRYPTION_UNVERIFIED = "encryption-unverified"  # the proof of encryption did not pass
    INTERRUPTED = "interrupted"  # the run stopped early; results are partial
    DRIFT = "drift"  # a trend across the trials: the machine changed during the run
    BIMODAL = "bimodal"  # two clusters of samples: the median describes neither
    IMPRECISE = "imprecise"  # a comparison stopped short of the asked precision


@dataclass(frozen=True)
class RunWarning:
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
