"""Typed errors. Nothing below `cli` prints or exits; it raises one of these.

`cli` turns a `CryptbenchError` into one line on stderr and its `exit_code`.
"""

from __future__ import annotations


class CryptbenchError(Exception):
    """An error the user can act on; its message is one line."""

    exit_code = 1


class UsageError(CryptbenchError):
    """Bad input: arguments, suite files, targets. Nothing was written."""

    exit_code = 2


class UnavailableError(UsageError):
    """A backend the user asked for cannot run on this machine."""


class SafetyError(UsageError):
    """The request would write somewhere cryptbench must not write."""


class BusyError(UsageError):
    """Another run holds what this one needs (the scratch directory's lock)."""


class ProvisionError(CryptbenchError):
    """A target could not be set up (or failed its proof of encryption)."""


class StoreError(CryptbenchError):
    """The results database cannot be used as asked."""

    exit_code = 2


class TrialError(CryptbenchError):
    """One trial failed; the run records it and goes on."""


class TargetLost(TrialError):
    """A target's helper died: this trial failed and the target's other trials cannot run."""


class DiskFull(CryptbenchError):
    """The target filesystem filled up during a trial: the run stops (finished trials are kept)."""


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived; unwinds the stack so teardown runs.

    A BaseException so that `except Exception` in library code cannot swallow it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by signal {signum}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def did_you_mean(name: str, known: list[str] | tuple[str, ...]) -> str:
    """' (did you mean gocryptfs?)' for a name close to one of `known` (difflib's ratio of
    at least 0.6, as git and pip suggest), else ''."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""
