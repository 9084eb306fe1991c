"""`cryptbench fleet run`: one suite on many hosts at once, through their fio servers.

The work is pipeline/fleet_run.py's; this module is the command's entry point, as
cli.py and the tests call it: the run, then its document read back from the store."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from cryptbench.analysis import document
from cryptbench.commands.common_args import add_db, add_details, add_json, add_stopping
from cryptbench.model.result import Document
from cryptbench.model.vocabulary import RunStatus
from cryptbench.pipeline import fleet_run
from cryptbench.pipeline.fleet_run import FleetRequest
from cryptbench.planning.request import request_from_args
from cryptbench.report import screens
from cryptbench.report.json_output import print_json
from cryptbench.report.progress import RichProgress
from cryptbench.trial.context import Progress

# What exit status 1 means for this command (its --help lists every status).
EXIT_ONE = "trials failed or a host was lost; what finished is stored"

HELP = "run a suite on many hosts at once through their fio servers"


@dataclass
class FleetOutcome:
    run_id: int
    status: str  # complete, interrupted, failed
    document: Document
    exit_code: int = 0


def run(request: FleetRequest, *, progress: Progress | None = None) -> FleetOutcome:
    done = fleet_run.run(request, progress=progress)
    return FleetOutcome(done.run_id, done.status, document.read(done.db_path, done.run_id), done.exit_code)


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="fleet_command", metavar="COMMAND", parser_class=type(p), required=True)
    fr = sub.add_parser("run", help="run a suite on every host of hosts.toml, interleaved")
    fr.add_argument(
        "--hosts", required=True, type=Path, help="hosts.toml: each host's address and manifest_command"
    )
    fr.add_argument(
        "--suite", default="quick", help="built-in suite or TOML file of fio workloads (default quick)"
    )
    add_stopping(fr, max_bytes=False)
    fr.add_argument("--seed", type=int, help="seed for trial order and fio offsets (default: random)")
    add_db(fr)
    add_json(fr)
    add_details(fr)


def main(args: argparse.Namespace, out: Console, err: Console) -> int:
    with RichProgress(err) as progress:
        outcome = run(request_from_args(FleetRequest, args), progress=progress)
    for note in outcome.document.notes:
        err.print(f"note: {note}", soft_wrap=True)
    if args.json:
        print_json(outcome.document.to_json())
    else:
        screens.render(outcome.document, out, details=args.details, quiet=args.quiet)
    if outcome.status == RunStatus.INTERRUPTED:
        err.print(f"interrupted; {outcome.document.trials.ok} finished trial(s) kept as run {outcome.run_id}")
    return outcome.exit_code
