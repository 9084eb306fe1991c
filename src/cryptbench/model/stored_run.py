"""A stored run's plan and environment as typed records (`RunPlan`, `Environment`) over
the JSON objects as stored, which they write back untouched: a local run's plan
(planning/plan.Plan.to_json) and a fleet's (pipeline/fleet_run.fleet_plan) alike."""

from __future__ import annotations

from dataclasses import dataclass

from cryptbench.model.json_types import JsonObject
from cryptbench.model.metrics import primary_of
from cryptbench.model.stack import Stack

# The plan's keys only one kind of run records (RunPlan.write's parameters with a default).
_ONE_KIND = frozenset(
    {
        "not_run",
        "target_dir",
        "space_needed",
        "target_bytes",
        "keys",
        "needs",
        "protection_probes",
        "trial_time",
        "data_size_limit",
        "ioengine",
        "fleet",
        "existing",
    }
)


@dataclass(frozen=True)
class RunPlan:
    """The plan a run followed, as `write` made it for the store (from planning/plan.Plan
    for a local run, from pipeline/fleet_run for a fleet run's coordinator). `raw` is the
    stored object, written back untouched: older runs lack newer keys, so each choice has
    its default where it was not recorded."""

    raw: JsonObject

    @classmethod
    def write(
        cls,
        *,
        # in the order runs have always stored the keys; those with a default only one
        # kind of run records (None: left out)
        suite: str,
        workloads: list[str],  # in the suite's order
        primary_metrics: dict[str, str],  # workload -> the metric it is compared on
        workload_specs: dict[str, JsonObject],  # fio workload -> rw, bs (bytes), iodepth, view
        apps: dict[str, JsonObject],  # application workload -> what its task does (describe())
        backends: list[str],
        targets: list[str],
        states: list[str],
        fs: str,
        write_new_file: bool,
        not_run: list[JsonObject] | None = None,  # a local run's: {workload, target, reason}
        added_baselines: list[str],
        skipped: list[JsonObject],  # {backend, reason}
        target_dir: str | None = None,  # a local run's
        size: int,  # bytes of data per target
        repeats: int | None,  # a fixed count of rounds; None: adaptive
        stopping: JsonObject,  # the stopping rule (stopping.StoppingRule.to_json)
        seed: int,
        io_mode: str,
        data: str,  # "random" or "zero" write buffers
        space_needed: int | None = None,  # a local run's: bytes
        target_bytes: int | None = None,  # a local run's: bytes per target
        keys: str | None = None,  # a local run's: where the keys came from, in words (keys.describe)
        summary: str | None,
        as_published: list[str],
        needs: list[str] | None = None,  # a local run's
        protection_probes: bool | None = None,  # a local run's
        ram: bool,
        trial_time: float | None = None,  # a local run's: seconds of I/O a fio trial lasts at least
        data_size_limit: int | None = None,  # a local run's: bytes a buffered data file may grow to
        ram_bytes: int,  # bytes of RAM the RAM twins may take
        ioengine: str | None = None,  # a local run's: fio's engine asked for, or "auto"
        fleet: JsonObject | None = None,  # a fleet run's: {hosts: [name, ...]}
        # a run of the user's own volume (run --existing): its mapping and device, the
        # region read (bytes) and the workloads left out (planning/existing.py)
        existing: JsonObject | None = None,
    ) -> RunPlan:
        """The plan as every run stores it: a local run's (planning/plan.Plan.to_json) and
        a fleet run's (pipeline/fleet_run) alike, its keys in the order of the parameters;
        a key given None that only one kind of run records is left out."""
        given = {key: value for key, value in locals().items() if key != "cls"}  # parameter order
        return cls({key: value for key, value in given.items() if value is not None or key not in _ONE_KIND})

    @property
    def workloads(self) -> list[str]:  # in the suite's order
        return list(self.raw.get("workloads") or [])

    @property
    def workload_specs(self) -> dict[str, JsonObject]:  # fio workload -> rw, bs, iodepth, view
        return self.raw.get("workload_specs") or {}

    @property
    def apps(self) -> dict[str, JsonObject]:  # application workload -> app, phases, params
        return self.raw.get("apps") or {}

    def spec(self, workload: str) -> JsonObject | None:
        """A workload's definition: its fio pattern or its application's."""
        return self.workload_specs.get(workload) or self.apps.get(workload)

    def primary(self, workload: str) -> str:
        """The metric the workload is compared on."""
        return primary_of(self.raw, workload)

    @property
    def seed(self) -> int:  # trial order and fio offsets; 0 where none was stored
        return int(self.raw.get("seed") or 0)

    @property
    def size(self) -> int | None:  # bytes of data per target
        value = self.raw.get("size")
        return None if value is None else int(value)

    @property
    def repeats(self) -> int | None:  # a fixed count of rounds; None: adaptive
        value = self.raw.get("repeats")
        return None if value is None else int(value)

    @property
    def stopping(self) -> JsonObject | None:  # the stopping rule (stopping.StoppingRule.to_json)
        return self.raw.get("stopping")

    @property
    def data(self) -> str | None:  # "random" or "zero" write buffers
        value = self.raw.get("data")
        return None if value is None else str(value)

    @property
    def trial_time(self) -> float | None:  # seconds of I/O a fio trial lasts at least; 0: one pass
        value = self.raw.get("trial_time")
        return None if value is None else float(value)

    @property
    def data_size_limit(self) -> int | None:  # bytes a buffered data file may grow to; 0: not grown
        value = self.raw.get("data_size_limit")
        return None if value is None else int(value)

    @property
    def write_new_file(self) -> bool | None:  # each write trial to a new file; None: not recorded
        value = self.raw.get("write_new_file")
        return None if value is None else bool(value)

    @property
    def not_run(self) -> dict[tuple[str, str], str]:
        """(workload, target) -> why the plan left that trial out (a target that writes a file
        only from its start); none in older runs."""
        return {(d["workload"], d["target"]): d["reason"] for d in self.raw.get("not_run", [])}

    @property
    def target_dir(self) -> str | None:  # where the scratch space was
        value = self.raw.get("target_dir")
        return None if value is None else str(value)

    @property
    def summary(self) -> str | None:  # the study summary's method, where the suite asks one
        value = self.raw.get("summary")
        return None if value is None else str(value)

    @property
    def as_published(self) -> list[str]:  # workloads run as their study published them
        return list(self.raw.get("as_published") or [])

    @property
    def needs(self) -> list[str]:  # properties a ranked target must be proven to protect
        return list(self.raw.get("needs") or [])

    @property
    def fleet(self) -> JsonObject | None:  # a fleet run's hosts; None for a local run
        return self.raw.get("fleet")

    @property
    def existing(self) -> JsonObject | None:  # run --existing's volume and region; None otherwise
        return self.raw.get("existing")


@dataclass(frozen=True)
class Environment:
    """The machine a run measured, as measure/environment.collect recorded it (a fleet
    run's: its coordinator's). `raw` is the stored object, written back untouched:
    older runs lack newer keys, so each fact is None (or empty) where it was not
    recorded, and readers ask these properties instead of spelling keys."""

    raw: JsonObject

    def _text(self, key: str) -> str | None:
        value = self.raw.get(key)
        return None if value is None else str(value)

    @property
    def hostname(self) -> str | None:
        return self._text("hostname")

    @property
    def kernel(self) -> str | None:
        return self._text("kernel")

    @property
    def os(self) -> str | None:
        return self._text("os")

    @property
    def cpu_model(self) -> str | None:
        return self._text("cpu_model")

    @property
    def cpu_count(self) -> int | None:  # logical CPUs
        value = self.raw.get("cpu_count")
        return int(value) if value else None

    @property
    def cpu_flags(self) -> tuple[str, ...]:  # /proc/cpuinfo's flags ("aes", …)
        return tuple(self.raw.get("cpu_flags") or ())

    @property
    def memory_bytes(self) -> int | None:  # bytes of RAM
        value = self.raw.get("memory_bytes")
        return int(value) if value else None

    @property
    def kernel_crypto(self) -> JsonObject:
        """The kernel's driver per crypto algorithm ("xts(aes)": "xts-aes-aesni"), and
        whether it is generic software AES."""
        return self.raw.get("kernel_crypto") or {}

    def driver(self, algorithm: str) -> str | None:
        """The kernel's driver for `algorithm`, where one was instantiated at collection."""
        value = self.kernel_crypto.get(algorithm)
        return None if value is None else str(value)

    @property
    def target_filesystem(self) -> JsonObject:  # mountpoint, source, fstype, options; {} unknown
        return self.raw.get("target_filesystem") or {}

    @property
    def cache_drop(self) -> str | None:  # how the page cache was dropped: "drop_caches", "fadvise"
        return self._text("cache_drop")

    @property
    def scratch_device(self) -> str | None:  # whose counters the trials read ("vda", "sda+sdb"); None: none
        return self._text("scratch_device")

    @property
    def stack(self) -> Stack | None:
        """Every layer under the scratch space (model/stack.py); None for a run stored
        before runs recorded it."""
        raw = self.raw.get("stack")
        return Stack.from_json(raw) if isinstance(raw, dict) else None

    @property
    def versions(self) -> dict[str, str]:  # backend -> its own program's version
        return {str(k): str(v) for k, v in (self.raw.get("versions") or {}).items()}

    @property
    def gocryptfs(self) -> str | None:  # runs stored before Backend.version() named it here
        return self._text("gocryptfs")

    @property
    def fio(self) -> str | None:  # fio's version
        return self._text("fio")

    @property
    def ioengine(self) -> str | None:  # the engine the run's fio jobs used
        return self._text("ioengine")

    @property
    def python(self) -> str | None:  # Python's version
        return self._text("python")
