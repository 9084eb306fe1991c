"""Suites: named lists of workloads (fio patterns and application tasks), kept as TOML files.

Built-in suites live in `cryptbench/suites/*.toml`; `--suite` also takes a path
to a user's own file. Unknown keys and wrong types are errors, not ignored.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from cryptbench.engines.apps import APPS, AppWorkload
from cryptbench.engines.apps.command import KEYS as COMMAND_KEYS
from cryptbench.engines.apps.command import CommandWorkload
from cryptbench.engines.fio_workload import READS, VIEWS, WRITES, WorkloadSpec
from cryptbench.model.errors import UsageError, did_you_mean
from cryptbench.model.json_types import TomlTable
from cryptbench.model.units import parse_size

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
MAX_IODEPTH = 1024
MAX_BLOCK = 64 << 20
MIN_SIZE = 1 << 20  # bytes: the smallest data file a run may use
MAX_SIZE = 1 << 40  # bytes: beyond this a typo is likelier than an intent
MAX_REPEATS = 1000
MAX_SUITE_FILE = 1 << 20  # bytes
# A study's own way of summarising its trials, shown beside the median and
# interval (analysis/study_summary.py holds the arithmetic).
SUMMARIES = ("drop-min-max",)


Workload = WorkloadSpec | AppWorkload  # CommandWorkload is an AppWorkload


# The ranking's kinds of work: a target is ranked in each, and a run that must drop
# workloads to fit its budget keeps the reads and the writes of each (direction).
FAMILIES = ("sequential", "random", "application")


def family_of_rw(rw: str | None) -> str:
    """sequential or random for an fio pattern's rw, application for an app workload (None)."""
    if rw is None:
        return "application"
    return "random" if rw.startswith("rand") else "sequential"


def family(workload: Workload) -> str:
    return family_of_rw(None if isinstance(workload, AppWorkload) else workload.rw)


def direction_of_rw(rw: str | None) -> str:
    """ "reads", "writes" or "mixed" for an fio pattern's rw (trims count as writes: they
    change the device), "" for an app workload (None), which has no direction."""
    if rw is None:
        return ""
    if rw in ("read", "randread"):
        return "reads"
    if rw in ("write", "randwrite", "trim", "randtrim", "trimwrite"):
        return "writes"
    return "mixed"


def direction(workload: Workload) -> str:
    return direction_of_rw(None if isinstance(workload, AppWorkload) else workload.rw)


def primary_metric(workload: Workload) -> str:
    """The metric a workload's comparisons use."""
    return workload.primary if isinstance(workload, AppWorkload) else "throughput"


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    workloads: tuple[Workload, ...]
    size: int | None = None  # bytes: the suite's default --size; None: the tool's
    repeats: int | None = None  # trials per (workload, target): the suite's default --repeats
    backends: tuple[str, ...] | None = None  # the suite's default --backends
    states: tuple[str, ...] | None = None  # the suite's default --state, for image backends
    fs: str | None = None  # the suite's default --fs, for image backends
    # Each write trial writes a new file (the old one is deleted, outside the
    # clock), as a copy or an import does, instead of overwriting one in place.
    write_new_file: bool = False
    follows: str = ""  # the study whose protocol the suite reproduces, and what it measured
    corrects: str = ""  # what the suite does right that the study did not
    summary: str | None = None  # the study's own summary of its trials (SUMMARIES), shown beside ours
    # The study's exact commands, faults included; run only with --as-published,
    # beside the corrected workloads, to show what the faults did to its figures.
    as_published: tuple[Workload, ...] = ()


def builtin_suites() -> list[str]:
    folder = resources.files("cryptbench.suites")
    return sorted(p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml"))


def load_suite(name_or_path: str) -> Suite:
    """Load a built-in suite by name, or a suite file by path."""
    base: Path | None = None  # where a suite's relative inputs are: its file's directory
    if name_or_path in builtin_suites():
        text = resources.files("cryptbench.suites").joinpath(f"{name_or_path}.toml").read_text()
        origin = f"built-in suite {name_or_path!r}"
    else:
        path = Path(name_or_path)
        if not path.is_file():
            hint = did_you_mean(name_or_path, builtin_suites())
            raise UsageError(
                f"unknown suite {name_or_path!r}{hint}: not a built-in suite "
                f"({', '.join(builtin_suites())}) nor a file"
            )
        origin = f"suite file {str(path)!r}"
        base = path.resolve().parent
        try:
            with open(path, "rb") as f:
                raw = f.read(MAX_SUITE_FILE + 1)
        except OSError as e:
            raise UsageError(f"{origin}: {e.strerror}") from None
        if len(raw) > MAX_SUITE_FILE:
            raise UsageError(f"{origin} is larger than {MAX_SUITE_FILE >> 10} KiB; not a suite file")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise UsageError(f"{origin} is not UTF-8 text (byte {e.start})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{origin} is not valid TOML: {e}") from None
    return parse_suite(data, origin, base)


def _check_keys(table: TomlTable, allowed: set[str], required: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise UsageError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")
    missing = sorted(required - set(table))
    if missing:
        raise UsageError(f"{where}: missing key {missing[0]!r}")


def _typed(table: TomlTable, key: str, kind: type, where: str) -> Any:
    value = table[key]
    # bool is an int in Python; a suite saying `iodepth = true` is still wrong.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        wanted = {int: "a whole number", str: "a string", list: "a list", bool: "true or false"}.get(
            kind, kind.__name__
        )
        raise UsageError(f"{where}: {key} must be {wanted}, not {str(value)[:40]!r}")
    return value


def parse_suite(data: TomlTable, origin: str, base: Path | None = None) -> Suite:
    _check_keys(
        data,
        {
            "name",
            "description",
            "workloads",
            "size",
            "repeats",
            "backends",
            "states",
            "fs",
            "write_new_file",
            "follows",
            "corrects",
            "summary",
            "as_published",
        },
        {"name", "workloads"},
        origin,
    )
    name = _typed(data, "name", str, origin)
    if not _NAME_RE.match(name):
        raise UsageError(f"{origin}: name {name!r} must be lower-case letters, digits, . _ -")
    description = _typed(data, "description", str, origin) if "description" in data else ""
    size = None
    if "size" in data:
        size = parse_size(_typed(data, "size", str, origin), what=f"{origin}: size")
        check_size_range(size, f"{origin}: size {data['size']}")
    repeats = None
    if "repeats" in data:
        repeats = _typed(data, "repeats", int, origin)
        check_repeats_range(repeats, f"{origin}: repeats")
    backends = _string_list(data, "backends", origin)
    states = _string_list(data, "states", origin)
    fs = _typed(data, "fs", str, origin) if "fs" in data else None
    write_new_file = _typed(data, "write_new_file", bool, origin) if "write_new_file" in data else False
    workloads = _workloads(_typed(data, "workloads", list, origin), origin, "workload", base)
    if not workloads:
        raise UsageError(f"{origin}: has no workloads")
    as_published: tuple[Workload, ...] = ()
    if "as_published" in data:
        as_published = _workloads(_typed(data, "as_published", list, origin), origin, "as_published")
    names = [w.name for w in (*workloads, *as_published)]
    if len(set(names)) != len(names):
        raise UsageError(f"{origin}: workload names must be unique")
    summary = None
    if "summary" in data:
        summary = _typed(data, "summary", str, origin)
        if summary not in SUMMARIES:
            raise UsageError(f"{origin}: summary must be one of {', '.join(SUMMARIES)}, not {summary[:40]!r}")
    follows = _typed(data, "follows", str, origin) if "follows" in data else ""
    corrects = _typed(data, "corrects", str, origin) if "corrects" in data else ""
    return Suite(
        name,
        description,
        tuple(workloads),
        size,
        repeats,
        backends,
        states,
        fs,
        write_new_file,
        follows,
        corrects,
        summary,
        as_published,
    )


def _workloads(raw: list[Any], origin: str, noun: str, base: Path | None = None) -> tuple[Workload, ...]:
    """The workload tables of a suite, each a fio pattern, an application task (`app = …`)
    or the user's own commands (`command = …`, or `[[workloads.phases]]`)."""
    workloads: list[Workload] = []
    for i, item in enumerate(raw):
        where = f"{origin}, {noun} {i + 1}"
        if not isinstance(item, dict):
            raise UsageError(f"{where}: must be a table")
        if "app" in item:
            workloads.append(_app_workload(item, where))
            continue
        if "rw" not in item and set(item) & (COMMAND_KEYS - {"name"}):
            workloads.append(CommandWorkload.from_table(_name(item, where), item, where, base))
            continue
        _check_keys(item, {"name", "rw", "bs", "iodepth", "view"}, {"name", "rw", "bs", "iodepth"}, where)
        wname = _typed(item, "name", str, where)
        if not _NAME_RE.match(wname):
            raise UsageError(f"{where}: name {wname!r} must be lower-case letters, digits, . _ -")
        rw = _typed(item, "rw", str, where)
        if rw not in READS | WRITES:
            raise UsageError(f"{where}: rw {rw!r} must be one of read, write, randread, randwrite")
        bs = parse_size(_typed(item, "bs", str, where), what=f"{where}: bs")
        if bs < 512 or bs % 512 or bs > MAX_BLOCK:
            raise UsageError(f"{where}: bs must be a multiple of 512 bytes, at most 64M")
        depth = _typed(item, "iodepth", int, where)
        if not 1 <= depth <= MAX_IODEPTH:
            raise UsageError(f"{where}: iodepth must be from 1 to {MAX_IODEPTH}, not {depth}")
        view = _typed(item, "view", str, where) if "view" in item else "decrypted"
        if view not in VIEWS:
            raise UsageError(f"{where}: view must be one of {', '.join(VIEWS)}, not {view[:40]!r}")
        if view == "backing" and rw not in READS:
            raise UsageError(f"{where}: view 'backing' is read-only: rw must be read or randread")
        workloads.append(WorkloadSpec(wname, rw, bs, depth, view))
    return tuple(workloads)


def _app_workload(item: TomlTable, where: str) -> AppWorkload:
    """An application workload: `name`, `app` and the app's own parameters."""
    name = _name(item, where)
    app = _typed(item, "app", str, where)
    if app not in APPS:
        raise UsageError(f"{where}: unknown app {app[:40]!r} (known: {', '.join(APPS)})")
    params = {k: v for k, v in item.items() if k not in ("name", "app")}
    return APPS[app].from_table(name, params, where)


COMMAND_SUITE = "commands"  # the name of the suite --command builds


def command_suite(
    commands: tuple[str, ...], prepare: str | None, cleanup: str | None, inputs: str | None
) -> Suite:
    """The suite `run --command CMD [--command CMD2 …]` builds: a workload per command,
    named after it, each with the same prepare, cleanup and inputs."""
    workloads: list[Workload] = []
    names: set[str] = set()
    for i, command in enumerate(commands):
        name = _unique(command_name(command), names)
        table: TomlTable = {"command": command}
        for key, value in (("prepare", prepare), ("cleanup", cleanup), ("inputs", inputs)):
            if value is not None:
                table[key] = value
        where = f"--command {i + 1}" if len(commands) > 1 else "--command"
        workloads.append(CommandWorkload.from_table(name, table, where))
    return Suite(COMMAND_SUITE, "the commands given with --command", tuple(workloads))


def command_name(command: str) -> str:
    """The workload name `run --command` gives a command line: `make -j2` is make-j2."""
    words = re.sub(r"[^a-z0-9._-]+", "-", command.lower()).strip("-._")
    return re.sub(r"-{2,}", "-", words)[:40].rstrip("-._") or "command"


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name[:36]}-{n}"
    taken.add(candidate)
    return candidate


def _name(item: TomlTable, where: str) -> str:
    if "name" not in item:
        raise UsageError(f"{where}: missing key 'name'")
    name = _typed(item, "name", str, where)
    if not _NAME_RE.match(name):
        raise UsageError(f"{where}: name {name!r} must be lower-case letters, digits, . _ -")
    return name


def _string_list(data: TomlTable, key: str, where: str) -> tuple[str, ...] | None:
    """An optional list of strings; the names are checked where they are used (plan)."""
    if key not in data:
        return None
    items = _typed(data, key, list, where)
    if not items or not all(isinstance(i, str) for i in items):
        raise UsageError(f"{where}: {key} must be a non-empty list of strings")
    return tuple(items)


def check_size_range(size: int, what: str) -> None:
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise UsageError(f"{what} is out of range (1.0 MiB to 1.0 TiB)")


def check_repeats_range(repeats: int, what: str) -> None:
    if not 1 <= repeats <= MAX_REPEATS:
        raise UsageError(f"{what} must be from 1 to {MAX_REPEATS}, not {repeats}")
