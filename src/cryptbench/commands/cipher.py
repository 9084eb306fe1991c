"""`cryptbench cipher`: what the ciphers alone can do here, the ceilings a stack is held to.
The measuring is pipeline/cipher_speed.py's, which a run also uses for its own layers' ciphers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cryptbench import __version__
from cryptbench.errors import UsageError
from cryptbench.interrupts import interruptible
from cryptbench.measure import environment
from cryptbench.pipeline.cipher_speed import (
    DEFAULT_RAM_SIZE,
    DEFAULT_REPEATS,
    DEFAULT_SECONDS,
    measure,
    ram_stack_bytes,
)
from cryptbench.plan import RAM_FRACTION, SIZE_ALIGN, mem_available
from cryptbench.runner import Progress
from cryptbench.session import check_target_dir
from cryptbench.store import Store, default_db_path
from cryptbench.units import parse_duration, parse_size


def run(
    *,
    seconds: str = f"{DEFAULT_SECONDS}s",
    repeats: int = DEFAULT_REPEATS,
    kernel_stack: bool = True,
    ram_size: str = DEFAULT_RAM_SIZE,
    target: str = "/var/tmp",
    db: Path | None = None,
    store: bool = True,
    progress: Progress | None = None,
) -> dict[str, Any]:
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
    doc["environment"] = env
    if store:
        s = Store.open(db or default_db_path())
        try:
            doc["id"] = s.insert_cipher(None, doc, env, __version__)
        finally:
            s.close()
    return doc
