"""`cryptbench serve`: one host of a fleet run.

Provisions the host's targets exactly as `run` does (the same backends, proof
of encryption, O_DIRECT probe and like-for-like I/O mode, the same journal),
writes the manifest a coordinator reads, starts `fio --server` and stays up
until SIGINT or SIGTERM, then tears everything down. While it serves it
watches its fio server and the targets' helper daemons: if one dies it stops
serving (a coordinator then sees the host drop) and tears down.
`serve --print-manifest` prints the manifest of the serve running on a target
directory.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from cryptbench import __version__
from cryptbench.commands.common_args import add_provisioning
from cryptbench.engines.fio import probe_ioengine
from cryptbench.fleet import manifest as manifest_mod
from cryptbench.fleet import server
from cryptbench.fleet.address import listen_address
from cryptbench.fleet.manifest import Manifest, ManifestTarget
from cryptbench.machine.interrupts import interruptible
from cryptbench.machine.session import Session
from cryptbench.measure import environment
from cryptbench.model.errors import ProvisionError, UsageError
from cryptbench.model.result import JsonObject
from cryptbench.pipeline.lifecycle import Lifecycle
from cryptbench.pipeline.provision import provision_all
from cryptbench.planning.plan import Plan, build_plan
from cryptbench.planning.request import RunRequest, request_from_args
from cryptbench.report.progress import RichProgress
from cryptbench.store.database import now_iso
from cryptbench.trial.context import DATA_FILE, NullProgress, Progress
from cryptbench.trial.provisioned import Provisioned
from cryptbench.trial.runner import target_lost

WATCH_INTERVAL = 0.5  # seconds between looks at the fio server and the helpers


@dataclass
class ServeOutcome:
    manifest: Manifest | None  # what was served; None if provisioning failed
    reason: str  # why serving ended, in words
    exit_code: int  # 0 after a signal asked it to stop; 1 when something died under it
    recovered: list[str]  # what crashed runs left on this scratch, removed first


@dataclass(frozen=True)
class ServeRequest:
    """What `serve` was asked, as given (request.request_from_args builds it)."""

    listen: str = "127.0.0.1:8765"  # where fio's server listens: HOST[:PORT], [IPv6]:PORT, unix:/PATH
    allow_remote: bool = False  # a non-loopback address: fio's server has no authentication
    backends: str | None = None  # comma-separated; None: every available default one
    size: str | None = None  # bytes per target's data file, as typed ("64M")
    target: str = "/var/tmp"  # the directory the scratch space goes in
    io_mode: str = "auto"  # auto, direct or buffered
    ioengine: str | None = None  # fio's engine; None: the best that works here
    data: str = "random"  # random or zero write buffers
    passphrase_file: str | None = None


def _plan(r: ServeRequest) -> Plan:
    # The quick suite only sizes the targets (a data file of --size each);
    # the coordinator sends the workloads.
    plan = build_plan(
        RunRequest(
            backends=r.backends,
            size=r.size,
            repeats=1,
            target=r.target,
            io_mode=r.io_mode,
            ioengine=r.ioengine,
            data=r.data,
            passphrase_file=r.passphrase_file,
            # the coordinator sends whole jobs: nothing here sizes trials or grows the data file
            trial_time="0",
            # a manifest carries no protection findings (yet): probing would cost each host
            # time for a finding no one reads
            skip_protection=True,
        )
    )
    stateful = [t.name for t in plan.targets if t.state is not None]
    if stateful:
        raise UsageError(
            f"serve cannot offer {stateful[0]}: an image target is made anew before each write trial, "
            "which a coordinator cannot ask a fio server to do"
        )
    return plan


def build_manifest(
    listen: str, plan: Plan, session: Session, provisioned: Provisioned, env: JsonObject, engine: str
) -> Manifest:
    targets = []
    for t in provisioned.targets.values():
        targets.append(
            ManifestTarget(
                name=t.name,
                backend=t.backend,
                baseline=t.baseline,
                encrypted=t.encrypted,
                io_mode="direct" if provisioned.direct[t.name] else "buffered",
                direct_io=str(t.direct_io),
                direct_io_reason=t.direct_io_reason,
                marker_in_backing=t.marker_in_backing,
                encryption_verified=t.encryption_verified,
                # Helper pids mean nothing on the coordinator's machine, and change with every serve.
                details={k: v for k, v in t.details.items() if k != "helpers"},
                data_file=str(session.check_inside(t.path / DATA_FILE)),
            )
        )
    return Manifest(
        listen=listen,
        scratch=str(session.run_dir.resolve()),
        size=plan.size,
        ioengine=engine,
        zero_data=plan.zero_data,
        targets=tuple(targets),
        environment=env,
        skipped=tuple({"backend": b, "reason": r} for b, r in plan.skipped),
        version=__version__,
        started_at=now_iso(),
        added_baselines=tuple(plan.added_baselines),
    )


def _serve(
    plan: Plan,
    listen_text: str,
    allow_remote: bool,
    session: Session,
    progress: Progress,
    ready: Callable[[Manifest, Path], None],
) -> str:
    """Provision, start fio's server, publish the manifest, and watch until something dies."""
    address = listen_address(listen_text, allow_remote)
    with ExitStack() as stack:
        provisioned, _note = provision_all(plan, session, progress, stack)
        targets = provisioned.targets
        engine = probe_ioengine(session.path("ioengine-probe"), session, plan.ioengine)
        env = environment.collect(plan.target_dir)
        env["ioengine"] = engine
        progress.phase(f"starting fio's server on {address}")
        fio_server = server.start(session, address)
        manifest = build_manifest(str(address), plan, session, provisioned, env, engine)
        path = manifest_mod.write(session.run_dir, manifest)
        ready(manifest, path)
        while True:
            death = fio_server.death()
            if death is not None:
                return f"fio's server (pid {fio_server.pid}) {death}; stopped serving"
            for t in targets.values():
                lost = target_lost(t, "while serving")
                if lost:
                    return f"{lost}; stopped serving"
            time.sleep(WATCH_INTERVAL)


def run(
    request: ServeRequest,
    *,
    progress: Progress | None = None,
    ready: Callable[[Manifest, Path], None] = lambda _m, _p: None,
    registry: Path | None = None,
) -> ServeOutcome:
    listen, allow_remote = request.listen, request.allow_remote
    server.check(listen_address(listen, allow_remote))  # refused before anything is made
    plan = _plan(request)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a core dump would hold the keys
    progress = progress or NullProgress()
    served: Manifest | None = None

    def published(manifest: Manifest, path: Path) -> None:
        nonlocal served
        served = manifest
        ready(manifest, path)

    reason, exit_code = "", 1
    life = Lifecycle(progress)
    with interruptible(), life:
        session = life.open(plan.target_dir, registry)
        session.passphrase = plan.passphrase
        reason = _serve(plan, listen, allow_remote, session, progress, published)
    if life.interrupted is not None:
        reason, exit_code = f"stopped by signal {life.interrupted.signum}; torn down", 0
    if life.late is not None:
        reason += f" (signal {life.late} arrived during teardown; teardown completed)"
    if served is None and exit_code != 0:
        raise ProvisionError(reason or "serve ended before it served")
    return ServeOutcome(served, reason, exit_code, life.recovered)


def print_manifest(*, target: str = "/var/tmp") -> str:
    """The running serve's manifest for this target directory, as it wrote it."""
    return manifest_mod.find_live(Path(target)).read_text()


# What exit status 1 means for this command (its --help lists every status).
EXIT_ONE = "something it serves died under it"

HELP = "one host of a fleet run: provision targets, start fio's server, serve until SIGINT/SIGTERM"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--listen",
        default="127.0.0.1:8765",
        metavar="ADDR[:PORT]",
        help="fio server address: an IP (loopback by default), [IPv6] or unix:/PATH (default 127.0.0.1:8765)",
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="listen on a non-loopback or wildcard address: fio's server has no authentication",
    )
    p.add_argument("--backends", help="comma-separated (default: every available default one)")
    p.add_argument("--size", help="data file per target, bytes moved per trial (default 64M)")
    add_provisioning(p)
    p.add_argument(
        "--print-manifest",
        action="store_true",
        help="print the manifest of the serve running with this --target, and exit",
    )


def main(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.print_manifest:
        sys.stdout.write(print_manifest(target=args.target))
        return 0

    def ready(manifest: Manifest, path: Path) -> None:
        names = ", ".join(t.name for t in manifest.targets)
        err.print(f"serving {names} on {manifest.listen} (manifest: {path}); SIGINT or SIGTERM stops it")
        for s in manifest.skipped:
            err.print(f"note: skipped {s['backend']}: {s['reason']}", soft_wrap=True)

    with RichProgress(err) as progress:
        outcome = run(request_from_args(ServeRequest, args), progress=progress, ready=ready)
    for msg in outcome.recovered:
        err.print(f"cleanup of a crashed run: {msg}")
    err.print(outcome.reason)
    return outcome.exit_code
