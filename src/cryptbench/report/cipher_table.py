"""`cryptbench cipher` on the terminal: the userspace table, the kernel's drivers and speed."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from cryptbench.analysis.speed_change import percent
from cryptbench.cipher.cipher_document import CipherDocument, UserspaceFigure
from cryptbench.cipher.cryptsetup_bench import REQUEST
from cryptbench.model.units import format_bytes, format_rate

DM_SECTOR = 4096  # bytes: the sector LUKS2 targets encrypt by
RAM_KEY_BITS = 512  # the RAM stack's fscrypt encrypts contents with AES-256-XTS


def _spread(row: UserspaceFigure) -> str:
    return f"{format_rate(row.min)} to {format_rate(row.max)}"


def render(doc: CipherDocument, out: Console) -> None:
    cores = doc.cores
    table = Table(title=f"Userspace: {doc.library}, one call per data unit")
    for col in ("cipher", "unit", "1 core", f"{cores} cores", "range (1 core)", "used by"):
        table.add_column(col, justify="right" if col in ("unit", "1 core", f"{cores} cores") else "left")
    by_case: dict[tuple[str, int], dict[int, UserspaceFigure]] = {}
    for row in doc.userspace:
        by_case.setdefault((row.cipher, row.unit), {})[row.cores] = row
    for (name, unit), rows in by_case.items():
        one, many = rows.get(1), rows.get(cores)
        either = one or many
        table.add_row(
            name,
            format_bytes(unit),
            format_rate(one.throughput) if one else "-",
            format_rate(many.throughput) if many and cores > 1 else "-",
            _spread(one) if one else "-",
            either.used_by if either else "",
        )
    out.print(table)
    note = f"median of {doc.repeats} measurements of {doc.seconds:g} s each"
    if doc.lower_bounds:  # schema 1 documents were all timed from Python
        note += (
            "; timed from Python, whose per-call overhead is a large part of each call at 512 B, "
            "so those figures are lower bounds (the C loop was not built: see README, install and run)"
        )
    out.print(f"[dim]{note}[/dim]")
    for u in doc.unavailable:
        out.print(f"not measured: {u.reason}")

    kern = doc.kernel
    out.print()
    for d in kern.drivers:
        out.print(
            f"kernel [bold]{d.algorithm}[/bold] ({d.used_by}): driver {d.driver}, "
            f"priority {d.priority}: {d.acceleration}"
        )
    for m in kern.missing:
        out.print(f"kernel: {m}")
    af = kern.af_alg
    driver = {d.algorithm: d.driver for d in kern.drivers}
    if af.available:
        for r in af.results:
            by = f" (driver {driver[r.algorithm]})" if r.algorithm in driver else ""
            out.print(
                f"kernel {r.algorithm}{by} through AF_ALG, {format_bytes(r.unit)} per request, "
                f"{_cores(r.cores)}: {format_rate(r.throughput)}"
                + (" (timed from Python: a lower bound)" if af.engine == "Python" else "")
            )
        for u in af.skipped:
            out.print(f"kernel {u.cipher} through AF_ALG: not measured: {u.reason}")
    else:
        out.print(f"kernel throughput through AF_ALG: not measured: {af.reason}")
    for line in cryptsetup_lines(doc):
        out.print(line)
    ram = kern.ram_stack
    if not ram.measured or ram.size is None or ram.block is None:
        out.print(f"kernel throughput on RAM: not measured: {ram.reason}")
        return
    out.print(
        f"kernel throughput on RAM ({format_bytes(ram.size)} per trial, "
        f"{format_bytes(ram.block)} I/Os at QD{ram.iodepth}, buffered, writes fsynced):"
    )
    stack = {(r.target, r.direction): r.throughput for r in ram.results}
    for c in ram.cipher:
        rw = c.direction
        line = (
            f"  {rw}: ram:fscrypt {format_rate(stack[('ram:fscrypt', rw)])}, "
            f"ram:ext4-loop {format_rate(stack[('ram:ext4-loop', rw)])}"
        )
        if c.throughput is not None:
            line += f"; the cipher alone ≈ {format_rate(c.throughput)} ({c.explanation})"
        else:
            line += f"; {c.explanation}"
        out.print(line)


def _change(a: float, b: float) -> str:
    """a against b as a change in speed, the sign convention of every figure (negative: slower)."""
    return f"{percent((a / b - 1) * 100)}%"


def cryptsetup_lines(doc: CipherDocument) -> list[str]:
    """What `cryptsetup benchmark` said, and against each figure the kernel's own for the same
    cipher and key, with the path each went by: cryptsetup's through AF_ALG in 64 KiB requests
    on one core; cryptbench's AF_ALG figures in dm-crypt's 4 KiB requests on each core; the
    RAM stack's cipher not through AF_ALG at all."""
    setup = doc.kernel.cryptsetup
    if setup is None:
        return []
    if not setup.available:
        return [f"cryptsetup benchmark: no figure: {setup.reason}"]
    lines = [
        f"cryptsetup benchmark: through AF_ALG, one {format_bytes(REQUEST)} request at a time on one "
        "core, a round of system calls each; dm-crypt encrypts each sector inside the kernel, with "
        "no system call, on every core:"
    ]
    af = doc.kernel.af_alg
    ram_write = next(
        (
            c.throughput
            for c in doc.kernel.ram_stack.cipher
            if c.algorithm == "xts(aes)" and c.direction == "write" and c.throughput
        ),
        None,
    )
    for r in setup.results:
        line = f"  {r.cipher} {r.key_bits}b: {format_rate(r.encrypt)} encryption, "
        line += f"{format_rate(r.decrypt)} decryption"
        same = [
            f
            for f in af.results
            if f.algorithm == r.algorithm and f.key_bits == r.key_bits and f.unit == DM_SECTOR
        ]
        kernel = max(same, key=lambda f: f.cores, default=None)
        if kernel is not None:
            line += (
                f"; the kernel's {r.algorithm} in {format_bytes(DM_SECTOR)} requests, "
                f"{_cores(kernel.cores)}, also through AF_ALG: {format_rate(kernel.throughput)} "
                f"(cryptsetup's encryption {_change(r.encrypt, kernel.throughput)})"
            )
        if ram_write and r.algorithm == "xts(aes)" and r.key_bits == RAM_KEY_BITS:
            line += (
                f"; the cipher alone on RAM, not through AF_ALG: {format_rate(ram_write)} writing "
                f"(cryptsetup's encryption {_change(r.encrypt, ram_write)})"
            )
        lines.append(line)
    lines += [f"  {u.cipher}: no figure: {u.reason}" for u in setup.skipped]
    return lines


def _cores(n: int) -> str:
    return "one core" if n == 1 else f"{n} requests in flight on {n} cores"
