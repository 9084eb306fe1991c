"""The flag trial of `run --existing --try-flags`: which sets of dm-crypt's performance
flags a user's own volume is read with beside its own, each through a second, read-only
mapping over the same device (pipeline/shadow.py makes them), and the lines that would
set the fastest for good (printed, never run).

Only reads are measured on a user's volume, so only the flags that change reads are
tried: no_read_workqueue (decrypt where the read completes, not in a kcryptd worker),
same_cpu_crypt (decrypt on the CPU that issued the read) and high_priority (dm-crypt
1.26, Linux 6.10: its workqueues at high priority). Each is toggled alone against the
volume's own set; no_write_workqueue and submit_from_crypt_cpus change writes only,
which a read-only trial cannot see, so they are kept as the volume has them and said."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cryptbench.backends.dm_kernel import dm_target_version, high_priority_missing
from cryptbench.backends.luks_variants import (
    HIGH_PRIORITY,
    NO_READ_QUEUE,
    NO_WRITE_QUEUE,
    SUBMIT_FROM_CRYPT_CPUS,
)

SAME_CPU = "same_cpu_crypt"
READ_FLAGS = (NO_READ_QUEUE, SAME_CPU, HIGH_PRIORITY)  # the flags a read can show the effect of
WRITE_ONLY = (NO_WRITE_QUEUE, SUBMIT_FROM_CRYPT_CPUS)
PERF_FLAGS = (*READ_FLAGS, *WRITE_ONLY)
DISCARDS = "allow_discards"  # not a performance flag, but refresh drops it unless asked again
TARGET_PREFIX = "flags"  # a flag set's target name: "flags+no_read_workqueue", "flags-same_cpu_crypt"
# cryptsetup refresh's option for each table flag it can set; systemd's crypttab option
CRYPTSETUP_OPTION = {f: f"--perf-{f}" for f in PERF_FLAGS} | {DISCARDS: "--allow-discards"}
CRYPTTAB_OPTION = {
    NO_READ_QUEUE: "no-read-workqueue",
    NO_WRITE_QUEUE: "no-write-workqueue",
    SAME_CPU: "same-cpu-crypt",
    SUBMIT_FROM_CRYPT_CPUS: "submit-from-crypt-cpus",
    DISCARDS: "discard",
}
CRYPTTAB = Path("/etc/crypttab")


@dataclass(frozen=True)
class FlagSet:
    """One set of performance flags a shadow mapping of the volume is read with."""

    toggled: str  # the flag that differs from the volume's own set
    added: bool  # True: the volume lacks it and this set has it; False: the reverse
    flags: tuple[str, ...]  # every flag of the set (the volume's own, `toggled` changed), table order

    @property
    def name(self) -> str:
        """The set's target name, as tables and the store show it."""
        return f"{TARGET_PREFIX}{'+' if self.added else '-'}{self.toggled}"

    @property
    def said(self) -> str:
        """The set in words: "no_read_workqueue added", "same_cpu_crypt removed"."""
        return f"{self.toggled} {'added' if self.added else 'removed'}"

    def to_json(self) -> dict[str, object]:
        return {"target": self.name, "toggled": self.toggled, "added": self.added, "flags": list(self.flags)}


def own_flags(options: tuple[str, ...]) -> tuple[str, ...]:
    """The performance flags among a crypt table's optional parameters."""
    return tuple(o for o in options if o in PERF_FLAGS)


def flag_sets(
    options: tuple[str, ...], missing: dict[str, str] | None = None
) -> tuple[tuple[FlagSet, ...], list[str]]:
    """The sets tried beside a volume whose table has `options`: each read flag toggled,
    but those this kernel lacks (`missing`: flag -> why; default: read from this kernel);
    and the notes that say what is not tried and why."""
    missing = kernel_missing() if missing is None else missing
    own = own_flags(options)
    sets, notes = [], []
    for flag in READ_FLAGS:
        if flag in missing and flag not in own:
            notes.append(f"{flag} not tried: {missing[flag]}")
            continue
        added = flag not in own
        flags = tuple(f for f in PERF_FLAGS if (f in own) != (f == flag))
        sets.append(FlagSet(flag, added, flags))
    kept = [f for f in WRITE_ONLY if f in own]
    notes.append(
        f"{' and '.join(WRITE_ONLY)} not tried: they change writes only, which a read-only trial of your "
        "volume cannot see" + (f" ({', '.join(kept)} kept as your volume has it)" if kept else "")
    )
    return tuple(sets), notes


def kernel_missing() -> dict[str, str]:
    """The read flags this kernel's dm-crypt cannot take, with why."""
    why = high_priority_missing(dm_target_version("crypt"), os.uname().release)
    return {HIGH_PRIORITY: why} if why else {}


def shadow_options(options: tuple[str, ...], flags: tuple[str, ...]) -> tuple[str, ...]:
    """A shadow mapping's optional parameters: the volume's own (sector size, IV and
    integrity options, discards) with its performance flags replaced by `flags`."""
    return (*(o for o in options if o not in PERF_FLAGS), *flags)


def refresh_command(mapping: str, flags: tuple[str, ...], options: tuple[str, ...], persistent: bool) -> str:
    """The cryptsetup refresh that gives `mapping` the performance flags `flags`. refresh
    replaces the whole set (a flag left out is cleared), so the command names every flag
    kept, discards too."""
    keep = [DISCARDS] if DISCARDS in options else []
    opts = [CRYPTSETUP_OPTION[f] for f in (*keep, *flags)]
    return " ".join(["cryptsetup", "refresh", *(["--persistent"] if persistent else []), *opts, mapping])


def crypttab_entry(mapping: str, crypttab: Path = CRYPTTAB) -> str | None:
    """The line of /etc/crypttab that opens `mapping` (read, never written), or None."""
    try:
        lines = crypttab.read_text(errors="replace").splitlines()
    except OSError:
        return None
    return next((line.strip() for line in lines if line.split()[:1] == [mapping]), None)


def crypttab_line(mapping: str, flags: tuple[str, ...], entry: str | None) -> str:
    """`mapping`'s /etc/crypttab line (`entry`, as the file had it) with its options set
    for `flags`; without one, what to add to its options."""
    wanted = [CRYPTTAB_OPTION[f] for f in flags if f in CRYPTTAB_OPTION]
    perf = {CRYPTTAB_OPTION[f] for f in PERF_FLAGS if f in CRYPTTAB_OPTION}
    if entry is not None:
        fields = entry.split()
        while len(fields) < 4:
            fields.append("none" if len(fields) == 2 else "luks")
        kept = [o for o in fields[3].split(",") if o and o not in perf]
        return " ".join([*fields[:3], ",".join(kept + wanted) or "defaults", *fields[4:]])
    if not wanted:
        return f"no performance option among {mapping}'s options (/etc/crypttab has no line for it)"
    return f"{','.join(wanted)} among {mapping}'s options (/etc/crypttab has no line for it)"


def apply_lines(
    mapping: str, flags: tuple[str, ...], options: tuple[str, ...], luks2: bool, entry: str | None
) -> list[str]:
    """What sets `flags` on the user's volume, printed for them to run (cryptbench never
    does): now, for good (LUKS2 keeps them in its header), and in /etc/crypttab (`entry`:
    its line for the volume, as read when the run began)."""
    out = [f"now: {refresh_command(mapping, flags, options, False)}"]
    if luks2:
        out.append(f"for good (kept in the LUKS2 header): {refresh_command(mapping, flags, options, True)}")
    if HIGH_PRIORITY in flags:
        out.append("/etc/crypttab has no option for high_priority: set it for good with --persistent")
    out.append(f"in /etc/crypttab: {crypttab_line(mapping, flags, entry)}")
    return out
