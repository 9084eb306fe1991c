"""One fio pattern a suite names, as the engines take it: below planning/suite.py, which
parses suites into these, so that the engines need nothing from the layers above."""

from __future__ import annotations

from dataclasses import dataclass

READS = frozenset({"read", "randread"})
VIEWS = ("decrypted", "backing")
WRITES = frozenset({"write", "randwrite"})


@dataclass(frozen=True)
class WorkloadSpec:
    """One fio pattern run against every target."""

    name: str
    rw: str  # fio rw= value: read, write, randread, randwrite
    bs: int  # block size, bytes
    iodepth: int  # I/Os in flight, count
    # decrypted: the data file through the target; backing: the target's
    # ciphertext underneath it (its image file, or the data file's encrypted
    # twin), read-only, as study 002 read the raw disk beside the decrypted one
    view: str = "decrypted"

    @property
    def is_write(self) -> bool:
        return self.rw in WRITES
