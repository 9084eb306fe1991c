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
