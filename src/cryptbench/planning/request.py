"""What the user asked of a run, as typed, and the pieces every command's request shares:
a request built from the flags (`request_from_args`), the seed checked."""

from __future__ import annotations

import argparse
import secrets
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

from cryptbench.model.errors import UsageError


def checked_seed(seed: int | None) -> int:
    """The seed asked for (--seed), checked, or a random one."""
    if seed is None:
        return secrets.randbits(32)
    if not 0 <= seed < 2**32:
        raise UsageError("--seed must be from 0 to 4294967295")
    return seed


R = TypeVar("R")  # a request: a frozen dataclass of what the user asked


def request_from_args(cls: type[R], args: argparse.Namespace) -> R:
    """A request (a frozen dataclass) from an argparse namespace: each field its flag's
    value, where the command has that flag; the others keep their defaults."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    given: dict[str, Any] = {n: getattr(args, n) for n in names if hasattr(args, n)}
    return cls(**given)


@dataclass(frozen=True)
class RunRequest:
    """What the user asked of a run, as given (sizes and durations unparsed): built once
    from the command line (`from_args`) or by a caller, and checked by `build_plan`."""

    suite: str | None = None  # a built-in suite's name or a TOML file; None: quick, or --command's
    commands: tuple[str, ...] | list[str] | None = None  # the user's own commands, a workload each
    prepare: str | None = None  # with commands: before each trial, outside the clock
    cleanup: str | None = None  # with commands: after each trial, outside the clock
    inputs: str | None = None  # with commands: a path copied onto each target once
    backends: str | None = None  # comma-separated; None: the suite's, else every available default one
    size: str | None = None  # bytes, as typed ("64M"); None: the suite's, else DEFAULT_SIZE
    repeats: int | None = None  # a fixed count of trials; None: adaptive
    seed: int | None = None  # None: a random one
    target: str = "/var/tmp"  # the directory the scratch space goes in
    io_mode: str = "auto"  # auto, direct or buffered
    ioengine: str | None = None  # fio's engine; None: the best that works here
    data: str = "random"  # random or zero write buffers
    db: Path | None = None  # None: the default database
    passphrase_file: str | None = None
    state: str | None = None  # image backends' states, comma-separated
    fs: str | None = None  # the filesystem inside image backends
    as_published: bool = False
    precision: str | None = None  # percent, as typed ("5%")
    equivalence: str | None = None  # percent, as typed ("3%")
    overrun: str = "drop"  # when the minimum rounds cannot fit --max-time: drop workloads, or extend it
    min_repeats: int | None = None  # count
    max_repeats: int | None = None  # count
    max_bytes: str | None = None  # bytes, as typed
    max_time: str | None = None  # a duration, as typed ("5m")
    ram: bool = False  # also run each stack on RAM
    trial_time: str | None = None  # a duration, as typed ("1s", "0"); None: $CRYPTBENCH_TRIAL_TIME, else 1s
    needs: str | None = None  # comma-separated properties a ranked target must be proven to protect
    skip_protection: bool = False  # no protection probes at provisioning
    existing: str | None = None  # a user's dm-crypt volume to read (a path on it, or its mapping)
    try_flags: bool = False  # with existing: read it through shadow mappings with other flags too
    key_file: str | None = None  # with try_flags: the volume's key or passphrase file ("-": stdin)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunRequest:
        return request_from_args(cls, args)
