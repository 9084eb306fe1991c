"""command: the user's own shell commands as a workload, timed phase by phase on
every target, as hyperfine times a command, but on storage cryptbench provisions.

A suite's `[[workloads]]` table with `command = "…"` (or `[[workloads.phases]]`,
each a `name` and a `command`) is one. Each trial:

1. outside the clock: the inputs are on the target (copied once; again after a
   stateful target was made anew), the trial's directory is empty, `prepare` runs
   in it;
2. the clock: each phase in order, through `/bin/sh -c`, in that directory, the
   caches dropped before each one unless `cache = "warm"`;
3. outside the clock: `cleanup` runs, every process the commands left is ended,
   and the directory is emptied, so that every trial starts alike.

What must outlive a trial belongs in the inputs: a path of the user's (`inputs`)
or what `inputs_command` builds once per run, outside every target.

The commands see CRYPTBENCH_TARGET (their directory), CRYPTBENCH_INPUTS (the
inputs' copy on the target), CRYPTBENCH_TRIAL and CRYPTBENCH_WORKLOAD, the
suite's `env`, and cryptbench's own environment; never a passphrase or key, which
cryptbench keeps in files only the provisioning commands are given.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from cryptbench.engines.apps.base import (
    AppEnv,
    AppResult,
    AppWorkload,
    Phase,
    durable,
    inputs_ready,
    mark_inputs_ready,
    remove_tree,
)
from cryptbench.engines.command_process import Outcome, Sandbox
from cryptbench.model.errors import TrialError, UsageError
from cryptbench.model.json_types import JsonObject, TomlTable
from cryptbench.model.metrics import MetricInfo
from cryptbench.model.units import parse_duration

KEYS = {
    *("name", "command", "phases", "prepare", "cleanup"),
    *("inputs", "inputs_command", "cache", "timeout", "env", "needs"),
}
CACHES = ("cold", "warm")
DEFAULT_TIMEOUT = 600.0  # seconds a command may run, each phase, prepare and cleanup alike
MAX_TIMEOUT = 24 * 3600.0  # seconds
SINGLE_PHASE = "run"  # the phase a workload with one `command` has
_PHASE_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PROGRAM_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
RESERVED_PREFIX = "CRYPTBENCH_"
INPUTS_DIR = "inputs"  # the inputs' copy, beside the trial's directory on each target
WORK_DIR = "work"  # the trial's directory: CRYPTBENCH_TARGET


@dataclass(frozen=True)
class CommandPhase:
    name: str  # the phase's name: its figures are <name>.seconds, <name>.command_cpu_seconds
    command: str  # a shell command line, run by /bin/sh -c


class CommandFailed(TrialError):
    """A command of the trial exited non-zero (or by a signal)."""


@dataclass(frozen=True)
class CommandWorkload(AppWorkload):
    app: ClassVar[str] = "command"
    writes: ClassVar[bool] = True  # a command may write anything: a stateful target is made anew first
    primary: ClassVar[str] = "seconds"
    metrics: ClassVar[tuple[MetricInfo, ...]] = (
        MetricInfo("command_cpu_seconds", "s", False, "CPU-seconds of the command's processes"),
    )
    summary: ClassVar[str] = "your own shell commands, timed phase by phase (command = … in a suite)"
    runs_commands: ClassVar[bool] = True

    name: str
    phases: tuple[CommandPhase, ...]
    prepare: str = ""  # before each trial, outside the clock
    cleanup: str = ""  # after each trial, outside the clock
    inputs: Path | None = None  # a file or directory of the user's, copied into each target once
    inputs_bytes: int = 0  # bytes of `inputs`, as found when the suite was read
    inputs_command: str = ""  # builds the inputs once per run, outside every target
    cache: str = "cold"  # cold: caches dropped before each phase; warm: never
    timeout: float = DEFAULT_TIMEOUT  # seconds, per command
    env: tuple[tuple[str, str], ...] = ()  # the suite's variables, in its order
    needs: tuple[str, ...] = ()  # programs the commands run, checked on PATH before anything runs

    @classmethod
    def from_table(
        cls, name: str, params: TomlTable, where: str, base: Path | None = None
    ) -> CommandWorkload:
        """From a suite's workload table (`name` already read); `base`: the directory a
        relative `inputs` is relative to (the suite file's; None: the working directory)."""
        params = {k: v for k, v in params.items() if k != "name"}
        unknown = sorted(set(params) - KEYS)
        if unknown:
            raise UsageError(
                f"{where}: unknown key {unknown[0]!r} for a command workload "
                f"(allowed: {', '.join(sorted(KEYS))})"
            )
        phases = _phases(params, where)
        prepare = _text(params, "prepare", where)
        cleanup = _text(params, "cleanup", where)
        inputs_command = _text(params, "inputs_command", where)
        inputs, inputs_bytes = None, 0
        if "inputs" in params:
            if inputs_command:
                raise UsageError(f"{where}: give inputs or inputs_command, not both")
            inputs = _inputs_path(_text(params, "inputs", where), base, where)
            inputs_bytes = tree_bytes(inputs)
        cache = params.get("cache", "cold")
        if cache not in CACHES:
            raise UsageError(f"{where}: cache must be one of {', '.join(CACHES)}, not {str(cache)[:40]!r}")
        env = _env(params.get("env", {}), where)
        timeout = _timeout(params.get("timeout"), where)
        needs = params.get("needs", [])
        if not isinstance(needs, list) or not all(isinstance(n, str) and _PROGRAM_RE.match(n) for n in needs):
            raise UsageError(f"{where}: needs must be a list of program names")
        return cls(
            *(name, phases, prepare, cleanup, inputs, inputs_bytes, inputs_command),
            *(str(cache), timeout, env, tuple(needs)),
        )

    def check_needs(self) -> None:
        """Refuse, before anything is provisioned, a workload whose programs are missing here."""
        for program in self.needs:
            if shutil.which(program) is None:
                raise UsageError(
                    f"{self.name} needs {program}, which is not on PATH here "
                    f"(on Debian: apt-get install the package that has it, usually {program})"
                )

    @property
    def is_write(self) -> bool:
        return True

    @property
    def cold(self) -> bool:
        return self.cache == "cold"

    def target_bytes(self, size: int) -> int:
        """The inputs' copy, and room for what the commands write: --size (64M by default)."""
        return self.inputs_bytes + size

    def describe(self, size: int) -> JsonObject:
        d: JsonObject = {
            **super().describe(size),
            "phases": [{"name": p.name, "command": p.command} for p in self.phases],
            "cache": self.cache,
            "timeout": self.timeout,
        }
        for key in ("prepare", "cleanup", "inputs_command"):
            if getattr(self, key):
                d[key] = getattr(self, key)
        if self.inputs is not None:
            d["inputs"] = str(self.inputs)
            d["inputs_bytes"] = self.inputs_bytes
        if self.env:
            d["env"] = dict(self.env)
        if self.needs:
            d["needs"] = list(self.needs)
        return d

    # --- the trial -------------------------------------------------------------

    def _source(self, env: AppEnv) -> Path | None:
        if self.inputs is not None:
            return self.inputs
        return env.inputs if self.inputs_command else None

    def _inputs_copy(self, env: AppEnv) -> Path:
        source = self._source(env)
        folder = env.root / INPUTS_DIR
        return folder / (source.name if source is not None else "none")

    def environment(self, env: AppEnv) -> dict[str, str]:
        """What each command of a trial runs with."""
        variables = {k: v for k, v in os.environ.items() if not k.startswith(RESERVED_PREFIX)}
        variables.update(dict(self.env))
        variables.update(
            {
                "CRYPTBENCH_TARGET": str(env.root / WORK_DIR),
                "CRYPTBENCH_INPUTS": str(self._inputs_copy(env)) if self._source(env) else "",
                "CRYPTBENCH_TRIAL": str(env.trial),
                "CRYPTBENCH_WORKLOAD": self.name,
            }
        )
        return variables

    def _called(self, label: str, script: str) -> str:
        """How an error names a command: its text, short, or its phase's name."""
        if label == SINGLE_PHASE and len(self.phases) == 1:
            return f"`{script if len(script) <= 60 else script[:57] + '...'}`"
        return label if label in ("prepare", "cleanup", "inputs_command") else f"phase {label}"

    def _run(self, env: AppEnv, script: str, label: str, cwd: Path, variables: dict[str, str]) -> Outcome:
        if env.sandbox is None:
            raise RuntimeError("a command workload runs only with its trial's sandbox")
        try:
            outcome = env.sandbox.run(script, cwd, variables, self.timeout, label)
        except CommandFailed:
            raise
        except TrialError as e:  # its timeout
            raise CommandFailed(str(e).replace(label, self._called(label, script), 1)) from None
        if outcome.status != 0:
            how = (
                f"was killed by signal {-outcome.status}"
                if outcome.status < 0
                else f"exited with status {outcome.status}"
            )
            tail = f": {outcome.stderr_tail}" if outcome.stderr_tail else " (no standard error)"
            raise CommandFailed(f"{self._called(label, script)} {how}{tail}")
        return outcome

    def make_inputs(self, env: AppEnv) -> None:
        """Run inputs_command once, in an empty directory outside every target."""
        if not self.inputs_command or inputs_ready(env.inputs):
            return
        remove_tree(env.inputs)
        env.inputs.mkdir(parents=True)
        if env.session is None:
            raise RuntimeError("inputs_command needs the run's session")
        variables = {**self.environment(env), "CRYPTBENCH_INPUTS": str(env.inputs), "CRYPTBENCH_TARGET": ""}
        with Sandbox(env.session, env.staging / "logs", None) as sandbox:
            outcome = sandbox.run(self.inputs_command, env.inputs, variables, self.timeout, "inputs_command")
        if outcome.status != 0:
            raise UsageError(
                f"{self.name}: inputs_command exited with status {outcome.status}: "
                f"{outcome.stderr_tail or '(no standard error)'}"
            )
        mark_inputs_ready(env.inputs)

    def setup(self, env: AppEnv) -> None:
        """The inputs copied onto the target (once), an empty directory, then `prepare`."""
        folder = env.root / INPUTS_DIR
        source = self._source(env)
        if source is not None and not inputs_ready(folder):
            remove_tree(folder)
            folder.mkdir(parents=True)
            copy = self._inputs_copy(env)
            if source.is_dir():
                shutil.copytree(source, copy, symlinks=True, ignore=shutil.ignore_patterns(".complete"))
            else:
                shutil.copy2(source, copy)
            mark_inputs_ready(folder)
            durable()
        work = env.root / WORK_DIR
        work.mkdir(parents=True, exist_ok=True)
        if self.prepare:
            self._run(env, self.prepare, "prepare", work, self.environment(env))

    def run(self, env: AppEnv) -> AppResult:
        work, variables = env.root / WORK_DIR, self.environment(env)
        phases, figures = [], {}
        cpu = 0.0
        for i, phase in enumerate(self.phases):
            if i and self.cache == "cold":
                env.settle()  # the first phase's caches were dropped with the trial's
            outcome = self._run(env, phase.command, phase.name, work, variables)
            phases.append(Phase(phase.name, outcome.seconds, 0, 0))
            figures[f"{phase.name}.command_cpu_seconds"] = outcome.cpu_seconds
            cpu += outcome.cpu_seconds
        figures["command_cpu_seconds"] = cpu
        if len(self.phases) == 1:  # its one phase is the whole: said once
            figures = {"command_cpu_seconds": cpu}
        return AppResult(tuple(phases), 0, {"phases": len(phases), "cache": self.cache}, figures)

    def clean(self, env: AppEnv) -> None:
        """`cleanup`, then the trial's directory emptied (the sandbox ends the processes)."""
        work = env.root / WORK_DIR
        failure = None
        if self.cleanup and work.is_dir() and env.sandbox is not None:
            try:
                self._run(env, self.cleanup, "cleanup", work, self.environment(env))
            except TrialError as e:
                failure = e
        if env.sandbox is not None:
            env.sandbox.close()  # nothing may hold a file in the directory being emptied
        remove_tree(work)
        if failure is not None:
            raise failure


def _phases(params: TomlTable, where: str) -> tuple[CommandPhase, ...]:
    if "command" in params and "phases" in params:
        raise UsageError(f"{where}: give command or phases, not both")
    if "command" in params:
        return (CommandPhase(SINGLE_PHASE, _text(params, "command", where, required=True)),)
    if "phases" not in params:
        raise UsageError(f"{where}: missing key 'command' (or [[workloads.phases]] tables)")
    raw = params["phases"]
    if not isinstance(raw, list) or not raw:
        raise UsageError(f"{where}: phases must be a list of tables, each a name and a command")
    phases = []
    for i, item in enumerate(raw):
        at = f"{where}, phase {i + 1}"
        if not isinstance(item, dict):
            raise UsageError(f"{at}: must be a table with a name and a command")
        unknown = sorted(set(item) - {"name", "command"})
        if unknown:
            raise UsageError(f"{at}: unknown key {unknown[0]!r} (allowed: command, name)")
        if "name" not in item:
            raise UsageError(f"{at}: missing key 'name'")
        name = item["name"]
        if not isinstance(name, str) or not _PHASE_RE.match(name):
            raise UsageError(f"{at}: name {str(name)[:40]!r} must be lower-case letters, digits, _ -")
        if "command" not in item:
            raise UsageError(f"{at}: missing key 'command'")
        phases.append(CommandPhase(name, _text(item, "command", at, required=True)))
    names = [p.name for p in phases]
    if len(set(names)) != len(names):
        raise UsageError(f"{where}: phase names must be unique")
    return tuple(phases)


def _text(params: TomlTable, key: str, where: str, required: bool = False) -> str:
    if key not in params:
        return ""
    value = params[key]
    if not isinstance(value, str):
        raise UsageError(f"{where}: {key} must be a string, not {str(value)[:40]!r}")
    if required and not value.strip():
        raise UsageError(f"{where}: {key} is empty")
    if "\0" in value:
        raise UsageError(f"{where}: {key} holds a NUL character")
    return value


def _inputs_path(text: str, base: Path | None, where: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = (base or Path.cwd()) / path
    if not path.exists():
        raise UsageError(f"{where}: inputs {text!r} does not exist")
    if not (path.is_dir() or path.is_file()):
        raise UsageError(f"{where}: inputs {text!r} is neither a file nor a directory")
    return path.resolve()


def tree_bytes(path: Path) -> int:
    """Bytes of the regular files at or under `path` (links not followed)."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for folder, _dirs, files in os.walk(path):
        for f in files:
            st = os.lstat(os.path.join(folder, f))
            if not os.path.islink(os.path.join(folder, f)):
                total += st.st_size
    return total


def _timeout(value: object, where: str) -> float:
    if value is None:
        return DEFAULT_TIMEOUT
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise UsageError(f'{where}: timeout must be seconds or a duration such as "10m"')
    seconds = parse_duration(value, what=f"{where}: timeout") if isinstance(value, str) else float(value)
    if not 0 < seconds <= MAX_TIMEOUT:
        raise UsageError(f"{where}: timeout must be more than 0 and at most 24 h")
    return seconds


def _env(value: object, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise UsageError(f"{where}: env must be a table of names and strings")
    pairs = []
    for k, v in value.items():
        if not _ENV_RE.match(k):
            raise UsageError(f"{where}: env name {k[:40]!r} is not a variable name")
        if k.startswith(RESERVED_PREFIX):
            raise UsageError(f"{where}: env {k} is cryptbench's to set")
        if not isinstance(v, str) or "\0" in v:
            raise UsageError(f"{where}: env {k} must be a string")
        pairs.append((k, v))
    return tuple(pairs)
