"""Command line: parse, hand the arguments to one command's main(), turn errors into
one line. Each command (commands/*.py) declares its own arguments and prints its output.

Errors become one line on stderr and exit status 2 (bad input) or 1 (a failure
while working); a signal during a run exits 130 (SIGINT) or 143 (SIGTERM).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn, Protocol

from rich.console import Console

from cryptbench import __version__
from cryptbench.commands import (
    backends,
    check,
    cipher,
    cleanup,
    compare,
    fleet,
    history,
    report,
    run,
    selftest,
    serve,
    show,
    stack,
    suites,
)
from cryptbench.model.errors import CryptbenchError, Interrupted


class CommandModule(Protocol):
    """What a module of commands/ offers the command line (mypy checks each module against it)."""

    HELP: str  # one line for --help

    def add_arguments(self, p: argparse.ArgumentParser) -> None: ...

    def main(self, args: argparse.Namespace, out: Console, err: Console) -> int: ...


# Each command declares its arguments and prints its own output; this table registers
# them, in the order `--help` lists them.
COMMANDS: dict[str, CommandModule] = {
    "backends": backends,
    "run": run,
    "suites": suites,
    "history": history,
    "show": show,
    "report": report,
    "compare": compare,
    "check": check,
    "selftest": selftest,
    "cipher": cipher,
    "stack": stack,
    "serve": serve,
    "fleet": fleet,
    "cleanup": cleanup,
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"cryptbench: error: {message} (see --help)\n")
        raise SystemExit(2)


# What 1 means where a command does not say (its module's EXIT_ONE).
EXIT_ONE = "an error while working (the database, a backend, fio), said in one line"


def exit_statuses(command: object) -> str:
    """The exit statuses a command's --help lists: 1 is the command's own (EXIT_ONE)."""
    one = getattr(command, "EXIT_ONE", EXIT_ONE)
    return (
        "exit status:\n"
        "  0         done\n"
        f"  1         {one}\n"
        "  2         bad input: a clear one-line error, nothing stored changed\n"
        "  130, 143  interrupted by SIGINT or SIGTERM: everything it started torn down\n"
        "  141       its output's reader went away (`| head`): nothing more printed, nothing stored lost"
    )


def _common() -> _Parser:
    """What every command takes."""
    c = _Parser(add_help=False)
    c.add_argument(
        "--no-color",
        action="store_true",
        help="no colour (as NO_COLOR=1 does): figures keep their marks, * for significant",
    )
    return c


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="cryptbench",
        description="What does encrypting storage cost on this machine?",
        epilog=exit_statuses(None),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"cryptbench {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    common = _common()
    for name, command in COMMANDS.items():
        command.add_arguments(
            sub.add_parser(
                name,
                help=command.HELP,
                parents=[common],
                epilog=exit_statuses(command),
                formatter_class=argparse.RawDescriptionHelpFormatter,
            )
        )
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # --no-color as NO_COLOR does (Rich reads that itself); -q: stderr carries errors alone,
    # which this function writes itself
    no_color = True if getattr(args, "no_color", False) else None
    out = Console(no_color=no_color)
    err = Console(stderr=True, no_color=no_color, quiet=getattr(args, "quiet", False))
    if args.command is None:
        _parser().print_help()
        return 2
    try:
        code = COMMANDS[args.command].main(args, out, err)
        sys.stdout.flush()  # a reader gone is found here, not in Python's flush at exit
        return code
    except CryptbenchError as e:
        sys.stderr.write(f"cryptbench: error: {e}\n")
        return e.exit_code
    except Interrupted as e:
        sys.stderr.write("cryptbench: interrupted\n")
        return e.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("cryptbench: interrupted\n")
        return 130
    except BrokenPipeError:
        # The reader took what it wanted, as `head` does: quiet, as any filter ends on SIGPIPE
        # (128 + 13). Python would flush stdout again at exit and fail once more, so it goes
        # to /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as e:  # a bug: one line, the traceback on request
        if os.environ.get("CRYPTBENCH_DEBUG"):
            raise
        sys.stderr.write(
            f"cryptbench: internal error: {type(e).__name__}: {e} (CRYPTBENCH_DEBUG=1 shows the traceback)\n"
        )
        return 1
