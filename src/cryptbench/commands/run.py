"""`cryptbench run`: provision, prove, lay out, run interleaved trials, tear down.

The work is pipeline/execute.py's, which `selftest` shares; this module is the
command's entry point, as cli.py and the tests call it: the run, then its document
read back from the store, as `show` reads it."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from cryptbench.analysis import document
from cryptbench.commands.common_args import add_db, add_details, add_json, add_provisioning, add_stopping
from cryptbench.model.result import Document
from cryptbench.model.vocabulary import RunStatus
from cryptbench.pipeline import execute, existing
from cryptbench.planning.quantities import DEFAULT_TRIAL_TIME, TRIAL_TIME_VARIABLE
from cryptbench.planning.request import RunRequest
from cryptbench.report import exports, screens
from cryptbench.report.json_output import print_json
from cryptbench.report.progress import RichProgress
from cryptbench.store.database import default_db_path
from cryptbench.trial.context import Progress

__all__ = ["HELP", "RunOutcome", "RunRequest", "add_arguments", "main", "run"]


@dataclass
class RunOutcome:
    run_id: int
    status: str  # complete, interrupted, failed
    document: Document
    recovered: list[str] = field(default_factory=list)  # what stale runs left and we removed
    exit_code: int = 0


def run(request: RunRequest, *, progress: Progress | None = None, registry: Path | None = None) -> RunOutcome:
    if request.existing is not None:  # the user's own volume, read only
        done = existing.run(request, progress=progress, registry=registry)
    else:
        done = execute.run(request, progress=progress, registry=registry)
    doc = document.read(done.db_path, done.run_id)
    return RunOutcome(done.run_id, done.status, doc, done.recovered, done.exit_code)


# What exit status 1 means for this command (its --help lists every status).
EXIT_ONE = "some trials failed or could not run (the notes say why); the finished ones are stored"

HELP = "provision targets and run a suite on each"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--existing",
        metavar="PATH",
        help="read your own dm-crypt volume instead of provisioning targets: its mapping "
        "(/dev/mapper/NAME) or a path on it, read through the mapping and on the device under it at "
        "the same offsets, read-only (docs/existing.md)",
    )
    p.add_argument(
        "--try-flags",
        action="store_true",
        help="with --existing on a dm-crypt volume: also read it through read-only mappings of the same "
        "device with each read flag of dm-crypt toggled (no_read_workqueue, same_cpu_crypt, high_priority), "
        "and print how to set the fastest; nothing is changed (docs/existing.md)",
    )
    p.add_argument(
        "--key-file",
        metavar="FILE",
        help="with --try-flags, where the volume's key is not in its table or the keyring (LUKS2 as "
        "cryptsetup opens it): its passphrase or key file, as cryptsetup --key-file reads it (- for stdin)",
    )
    p.add_argument(
        "--backends",
        help="comma-separated (default: the suite's, else every available default one); baselines are added",
    )
    p.add_argument(
        "--state",
        help="image backends: fresh, rewrite or both, comma-separated (default: the suite's, else fresh)",
    )
    p.add_argument(
        "--fs", help="image backends: filesystem inside the image: ext4, xfs or btrfs (default ext4)"
    )
    p.add_argument(
        "--suite",
        help="built-in suite (`cryptbench suites` lists them, and the study each preset follows) "
        "or a TOML file (default: quick)",
    )
    p.add_argument(
        "--command",
        dest="commands",
        action="append",
        metavar="CMD",
        help="time your own shell command on every target instead of a suite (repeatable: one "
        "workload each); it runs in an empty directory on the target (docs/own-work.md)",
    )
    p.add_argument(
        "--prepare", metavar="CMD", help="with --command: run before each trial, outside the clock"
    )
    p.add_argument("--cleanup", metavar="CMD", help="with --command: run after each trial, outside the clock")
    p.add_argument(
        "--inputs",
        metavar="PATH",
        help="with --command: a file or directory copied onto each target once, outside every clock "
        "($CRYPTBENCH_INPUTS names the copy)",
    )
    p.add_argument(
        "--size",
        help="data file per target: a fio trial makes one or more passes over it "
        "(default: the suite's, else 64M)",
    )
    p.add_argument(
        "--trial-time",
        metavar="DURATION",
        help=f"each fio trial lasts at least this much I/O, making several passes over the data file "
        f"where direct I/O allows (default ${TRIAL_TIME_VARIABLE}, else {DEFAULT_TRIAL_TIME}; 0: one pass)",
    )
    p.add_argument(
        "--needs",
        metavar="PROPS",
        help="rank only targets proven here to protect these, comma-separated: names, sizes, tree "
        "(hidden), tamper (detected) (docs/protection.md); the others are listed with the need they failed",
    )
    p.add_argument(
        "--skip-protection",
        action="store_true",
        help="skip the protection probes (names, sizes, tree, tampering, space; docs/protection.md) "
        "at provisioning: the proof of encryption still runs",
    )
    add_stopping(p, max_bytes=True)
    p.add_argument("--seed", type=int, help="seed for trial order and fio offsets (default: random)")
    add_provisioning(p)
    add_db(p)
    p.add_argument(
        "--as-published",
        action="store_true",
        help="also run the study's exact commands, faults included (study-004: dd without fsync), "
        "to show what they did to its figures",
    )
    p.add_argument(
        "--ram",
        action="store_true",
        help="also run each backend's stack on RAM (tmpfs, or a loop device over a tmpfs file), "
        "to tell the device's cost from the layer's; with --existing on a dm-crypt volume: run its "
        "twin (its cipher, key size, sector size and flags) in scratch space and on RAM, writes "
        "included, the volume only read (docs/existing.md)",
    )
    add_json(p)
    add_details(p)
    p.add_argument("--export-html", metavar="FILE", help="also write the run's page, as report --html does")
    p.add_argument("--export-csv", metavar="FILE", help="also write one row per trial, as report --csv does")
    p.add_argument("--export-md", metavar="FILE", help="also write the summary table as Markdown")
    p.add_argument(
        "--force",
        action="store_true",
        help="let --export-* replace a file cryptbench wrote before (never another file)",
    )


def main(args: argparse.Namespace, out: Console, err: Console) -> int:
    # checked before anything runs: a long run never ends in a refused file
    wanted = exports.checked(
        {"html": args.export_html, "csv": args.export_csv, "md": args.export_md}, args.force
    )
    with RichProgress(err) as progress:
        outcome = run(RunRequest.from_args(args), progress=progress)
    for msg in outcome.recovered:
        err.print(f"cleanup of a crashed run: {msg}")
    for note in outcome.document.notes:
        err.print(f"note: {note}", soft_wrap=True)
    if args.json:
        print_json(outcome.document.to_json())
    else:
        screens.render(outcome.document, out, details=args.details, quiet=args.quiet)
    failed = outcome.document.trials.failed
    if outcome.status == RunStatus.COMPLETE and outcome.exit_code == 1:
        err.print(f"{failed} trial(s) failed or could not run; the notes above say why")
    if outcome.status == RunStatus.INTERRUPTED:
        err.print(
            f"interrupted: torn down; {outcome.document.trials.ok} finished trial(s) "
            f"kept as run {outcome.run_id}"
        )
    for path in exports.write(wanted, args.db or default_db_path(), outcome.run_id):
        err.print(f"wrote {path}")
    return outcome.exit_code
