"""What a LUKS variant's one option changes, as an enum that owns its words: each
kind with the usual reason it helps or hurts, which the diagnosis gives
(analysis/option_effects.py) and the variants name (backends/luks_variants.py).
"""

from __future__ import annotations

from enum import StrEnum


class OptionKind(StrEnum):
    """What a variant's one option changes, each kind with the usual reason it helps or
    hurts (the diagnosis's sentences, analysis/option_effects.py)."""

    WORKQUEUES = "workqueues"  # no_read_workqueue / no_write_workqueue
    SUBMIT = "submit"  # submit_from_crypt_cpus
    PRIORITY = "priority"  # high_priority
    SECTOR = "sector"  # the encryption sector size
    INTEGRITY = "integrity"  # an authentication tag per sector (dm-integrity), journaled
    INTEGRITY_DIRECT = "integrity-direct"  # the same without dm-integrity's journal
    OTHER = "other"

    def why(self, faster: bool) -> str:
        """The usual reason for an option of this kind to help (faster) or hurt."""
        return _WHY[(self, faster)]


_WHY = {
    (OptionKind.WORKQUEUES, True): (
        "on this kernel dm-crypt's workqueues cost more than they give: each request waits for a "
        "kcryptd thread instead of being encrypted where it was issued"
    ),
    (OptionKind.WORKQUEUES, False): (
        "the workqueues pay for themselves here: they move encryption off the issuing CPU and spread "
        "it over the others"
    ),
    (OptionKind.SUBMIT, True): (
        "submitting writes from the CPUs that encrypted them saves dm-crypt's sorting thread"
    ),
    (OptionKind.SUBMIT, False): (
        "dm-crypt's sorting of encrypted writes before it submits them (the default) helps this device"
    ),
    (OptionKind.PRIORITY, True): (
        "dm-crypt's workqueues at high priority, and its writer thread at nice -20, were run "
        "ahead of the other work on this machine instead of waiting behind it"
    ),
    (OptionKind.PRIORITY, False): (
        "at high priority dm-crypt's threads took CPU time from the threads that issue the I/O, "
        "which the default shares more evenly"
    ),
    (OptionKind.SECTOR, True): (
        "this workload's requests do not fill 4096-byte sectors, which the larger sector must widen"
    ),
    (OptionKind.SECTOR, False): (
        "512-byte sectors take eight cipher calls and IVs for every 4 KiB that 4096-byte sectors "
        "encrypt in one"
    ),
    (OptionKind.INTEGRITY, True): (
        "dm-integrity's journal gathered this workload's small writes into larger ones, which "
        "more than paid for the tags"
    ),
    (OptionKind.INTEGRITY, False): (
        "every sector also gets an HMAC-SHA256 tag, computed and stored by dm-integrity beside it, "
        "and every write goes to dm-integrity's journal first, then in place"
    ),
    (OptionKind.INTEGRITY_DIRECT, True): (
        "dm-integrity's buffering of tags absorbed this workload; the tags themselves cost nothing "
        "measurable here"
    ),
    (OptionKind.INTEGRITY_DIRECT, False): (
        "every sector also gets an HMAC-SHA256 tag, computed and stored by dm-integrity beside it "
        "(without a journal: data and tag are written in place, and a crash between them leaves the "
        "sector unreadable)"
    ),
    (OptionKind.OTHER, True): "the option helps here",
    (OptionKind.OTHER, False): "the option costs here",
}
