"""`cryptbench show ID|latest`: one stored run, as run printed it."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from cryptbench.analysis import document
from cryptbench.commands.common_args import add_db, add_details, add_json
from cryptbench.model.result import Document
from cryptbench.report import screens
from cryptbench.report.json_output import print_json
from cryptbench.store.database import default_db_path


def run(*, ref: str = "latest", db: Path | None = None) -> Document:
    return document.read(db or default_db_path(), ref)


HELP = "one stored run again"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("ref", nargs="?", default="latest", help="run id, or latest (default)")
    p.add_argument(
        "--metric",
        default=None,
        help="metric for the table instead of each workload's own (throughput, iops, lat_p99, seconds, "
        "an app phase's such as copy.seconds, …)",
    )
    add_db(p)
    add_json(p)
    add_details(p)


def main(args: argparse.Namespace, out: Console, err: Console) -> int:
    from cryptbench.analysis import document

    doc = run(ref=args.ref, db=args.db)
    if args.metric is not None:
        document.require_metric(doc, args.metric)
    if args.json:
        print_json(doc.to_json())
    else:
        screens.render(doc, out, metric=args.metric, details=args.details, quiet=args.quiet)
    return 0
