"""`cryptbench cipher`: what the ciphers alone can do here, the ceilings a stack is held to.
The measuring is pipeline/cipher_speed.py's, which a run also uses for its own layers' ciphers.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console

from cryptbench import __version__
from cryptbench.cipher.cipher_document import CipherDocument
from cryptbench.commands.common_args import add_db, add_json, add_target
from cryptbench.machine.interrupts import interruptible
from cryptbench.machine.session import check_target_dir
from cryptbench.measure import environment
from cryptbench.model.errors import UsageError
from cryptbench.model.units import parse_duration, parse_size
from cryptbench.pipeline.cipher_speed import (
    DEFAULT_RAM_SIZE,
    DEFAULT_REPEATS,
    DEFAULT_SECONDS,
    measure,
    ram_stack_bytes,
)
from cryptbench.planning.plan import RAM_FRACTION, SIZE_ALIGN, mem_available
from cryptbench.planning.request import request_from_args
from cryptbench.report.json_output import print_json
from cryptbench.report.progress import RichProgress
from cryptbench.store.database import Store, default_db_path
from cryptbench.trial.context import Progress


@dataclass(frozen=True)
class CipherRequest:
    """What `cryptbench cipher` was asked, as typed."""

    seconds: str = f"{DEFAULT_SECONDS}s"  # per figure, a duration as typed
    repeats: int = DEFAULT_REPEATS  # count per figure
    kernel_stack: bool = True  # also time the RAM stack (--no-kernel-stack: not)
    ram_size: str = DEFAULT_RAM_SIZE  # bytes of the RAM stack, as typed
    target: str = "/var/tmp"  # the directory the scratch space goes in
    db: Path | None = None  # None: the default database
    store: bool = True  # keep the figures in the database (--no-store: not)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> CipherRequest:
        # its --no-* flags say what is left out; the request, what is kept
        asked = request_from_args(cls, args)
        return replace(asked, kernel_stack=not args.no_kernel_stack, store=not args.no_store)


def run(request: CipherRequest, *, progress: Progress | None = None) -> CipherDocument:
    seconds, repeats, kernel_stack, ram_size = (
        request.seconds,
        request.repeats,
        request.kernel_stack,
        request.ram_size,
    )
    target, db, store = request.target, request.db, request.store
    secs = parse_duration(seconds, what="--seconds")
    if not 0.05 <= secs <= 60:
        raise UsageError(f"--seconds must be from 0.05s to 60s, not {seconds}")
    if not 1 <= repeats <= 50:
        raise UsageError(f"--repeats must be from 1 to 50, not {repeats}")
    size = parse_size(ram_size, what="--ram-size") // SIZE_ALIGN * SIZE_ALIGN
    if size < 8 * SIZE_ALIGN:
        raise UsageError(f"--ram-size must be at least 8M, not {ram_size}")
    if kernel_stack and ram_stack_bytes(size) > mem_available() * RAM_FRACTION:
        raise UsageError(f"--ram-size {ram_size} needs more than half of the memory available")
    target_dir = check_target_dir(Path(target))
    with interruptible():
        doc = measure(
            seconds=secs,
            repeats=repeats,
            kernel_stack=kernel_stack,
            ram_size=size,
            target_dir=target_dir,
            progress=progress,
        )
    env = environment.collect(target_dir)
    # The machine's facts are stored with the figures; the printed document also gives the row's id.
    doc = replace(doc, environment=env)
    if store:
        s = Store.open(db or default_db_path())
        try:
            doc = replace(doc, id=s.insert_cipher(None, doc.to_json(), env, __version__))
        finally:
            s.close()
    return doc


HELP = "the ciphers' own speed here: OpenSSL per data unit, and the kernel's driver and speed"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seconds", default="0.3s", help="each measurement's length (default 0.3s)")
    p.add_argument("--repeats", type=int, default=3, help="measurements of each, interleaved (default 3)")
    p.add_argument(
        "--no-kernel-stack",
        action="store_true",
        help="skip the kernel measurement on RAM (fscrypt against ext4-loop), used where AF_ALG is missing",
    )
    p.add_argument("--ram-size", default="64M", help="bytes per kernel RAM-stack trial (default 64M)")
    add_target(p)
    add_db(p)
    p.add_argument("--no-store", action="store_true", help="do not store the result")
    add_json(p, "the result")


def main(args: argparse.Namespace, out: Console, err: Console) -> int:
    from cryptbench.report import cipher_table

    with RichProgress(err) as progress:
        doc = run(CipherRequest.from_args(args), progress=progress)
    if args.json:
        print_json(doc.to_json())
    else:
        cipher_table.render(doc, out)
    return 0
