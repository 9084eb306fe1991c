"""The closed sets of words the model's fields take, as enums: a comparison with a typo
fails to type-check instead of never matching. Each is a StrEnum, so the JSON, the
database and a renderer's text hold its value as before."""

from __future__ import annotations

from enum import StrEnum


class Medium(StrEnum):
    """What a target's data is kept on."""

    DEVICE = "device"  # the scratch space's own storage
    RAM = "ram"  # a tmpfs: the target's RAM twin (--ram)


class RunStatus(StrEnum):
    RUNNING = "running"  # not finished (or killed before it could say)
    COMPLETE = "complete"
    INTERRUPTED = "interrupted"  # a signal stopped it; its finished trials are kept
    FAILED = "failed"  # an error stopped it


class TrialStatus(StrEnum):
    OK = "ok"  # its figures are stored
    FAILED = "failed"  # its error is stored instead


class HostStatus(StrEnum):
    """A fleet host's, as the coordinator found it."""

    OK = "ok"
    FAILED = "failed"  # stopped answering during the run
    UNUSABLE = "unusable"  # no manifest, or one the run cannot use


class Property(StrEnum):
    """What a way of encrypting may hide from someone who reads its backing at rest."""

    CONTENTS = "contents"  # the bytes of the files
    NAMES = "names"  # the files' and directories' names
    SIZES = "sizes"  # each file's size
    TREE = "tree"  # how many files there are, and which directory holds which
    TAMPER = "tamper"  # a flipped ciphertext byte: detected (an error), or read back silently


class Verdict(StrEnum):
    HIDDEN = "hidden"  # the backing did not show it
    SHOWN = "shown"  # the backing showed it (sizes: exactly, to the byte)
    BLOCK = "block"  # sizes only: shown to within a block (the finding names it)
    DETECTED = "detected"  # tamper only: reading a flipped byte back failed, by a MAC (authenticated)
    # tamper only: reading a flipped byte back failed, by a checksum anyone who can write the
    # backing can recompute (ZFS's): corruption is caught, an attacker is not
    CHECKED = "checked"
    SILENT = "silent"  # tamper only: a flipped byte came back as other data, without an error
    UNKNOWN = "unknown"  # no reader here for the backing's structure, or the probe failed


class Existing(StrEnum):
    """The backends of a run of the user's own volume (run --existing): read, never provisioned."""

    MAPPING = "existing-dm-crypt"  # the user's crypt mapping: the plaintext
    RAW = "existing-raw"  # the device under it, read at the mapping's offsets: the ciphertext
    FUSE = "existing-fuse"  # the user's FUSE-encrypted mount: the plaintext of their files
    CIPHERTEXT = "existing-ciphertext"  # the same files' ciphertext in its cipher directory
    FLAGS = "existing-flags"  # a read-only mapping of the mapping's device with other flags (--try-flags)
