"""`cryptbench stack [PATH]`: every layer under a path, from a FUSE overlay or an fscrypt
policy down to the disks, and which of them encrypt. Without PATH, the directory a run's
scratch space goes in (the default --target), since that is what a run's plain sits on."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from cryptbench.commands.common_args import add_json
from cryptbench.measure.stack import stack_of
from cryptbench.model.stack import Stack
from cryptbench.planning.request import RunRequest
from cryptbench.report.json_output import print_json


def run(*, path: str | None = None) -> Stack:
    return stack_of(Path(path or RunRequest.target))


HELP = "the layers under a path (FUSE, fscrypt, filesystem, dm-crypt, loop, disk) and which encrypt"


def add_arguments(p: argparse.ArgumentParser) -> None:
    default = f"default: where a run's scratch space goes, {RunRequest.target}"
    p.add_argument("path", nargs="?", help=f"a file or directory ({default})")
    add_json(p, "the stack")


def main(args: argparse.Namespace, out: Console, err: Console) -> int:
    from cryptbench.report import stack_console

    stack = run(path=args.path)
    if args.json:
        print_json(stack.to_json())
        return 0
    stack_console.render(stack, out)
    return 0
