"""`cryptbench backends`: what can be measured here, and why not the rest."""

from __future__ import annotations

import argparse

from rich.console import Console

from cryptbench.backends import REGISTRY
from cryptbench.commands.common_args import add_json
from cryptbench.model.json_types import JsonObject
from cryptbench.report.json_output import print_json


def run() -> list[JsonObject]:
    rows = []
    for name, backend in REGISTRY.items():
        avail = backend.probe()
        rows.append(
            {
                "name": name,
                "available": avail.ok,
                "reason": avail.reason,
                "encrypted": backend.encrypted,
                "baseline": backend.baseline,
                "summary": backend.summary,
            }
        )
    return rows


HELP = "what can be measured here, and why not the rest"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_json(p, "the backends")


def main(args: argparse.Namespace, out: Console, err: Console) -> int:
    from cryptbench.report import backends_console

    rows = run()
    if args.json:
        print_json(rows)
        return 0
    backends_console.render(rows, out)
    return 0
