"""Options several commands take, declared once: where results are stored, JSON
output, the details, the stopping rule of a run, and where and how targets are
provisioned (model: asv's common_args)."""

from __future__ import annotations

import argparse
from pathlib import Path

from cryptbench.planning.plan import IO_ENGINES
from cryptbench.planning.quantities import DEFAULT_EQUIVALENCE, DEFAULT_PRECISION
from cryptbench.planning.stopping_rule import DEFAULT_MAX_REPEATS, DEFAULT_MAX_TIME, DEFAULT_MIN_REPEATS
from cryptbench.stats.stopping import OVERRUNS

DETAILS_HELP = (
    "after the answer, everything: the full table with intervals, the repetition, each target's I/O, "
    "every warning, efficiency, queue depth and the diagnosis"
)


def add_target(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target", default="/var/tmp", help="directory to put scratch space in (default: /var/tmp)"
    )


def add_provisioning(parser: argparse.ArgumentParser) -> None:
    """Where the targets go and how their trials run: `run` and `serve` provision alike."""
    add_target(parser)
    parser.add_argument(
        "--io-mode",
        default="auto",
        choices=["auto", "direct", "buffered"],
        help="auto: direct if every target honours O_DIRECT, else buffered for all",
    )
    parser.add_argument(
        "--ioengine",
        choices=IO_ENGINES,
        help="fio's I/O engine for every fio trial (default: io_uring where fio and the kernel "
        "have it, else libaio, else psync)",
    )
    parser.add_argument("--data", default="random", choices=["random", "zero"], help="write buffer contents")
    parser.add_argument(
        "--passphrase-file",
        metavar="FILE",
        help="your own passphrase for the encrypted targets (mode 600; default: a key per run)",
    )


def add_db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", type=Path, help="results database (default: XDG data dir)")


def add_json(parser: argparse.ArgumentParser, what: str = "the result document") -> None:
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON on stdout")


def add_details(parser: argparse.ArgumentParser) -> None:
    """How much of a run to print: the answer (default), the answer only (-q), or everything
    (--details, -v)."""
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--details", "-v", "--verbose", dest="details", action="store_true", help=DETAILS_HELP)
    how.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="the answer only: which way costs least, in a few sentences, and nothing on stderr but errors",
    )


def add_stopping(parser: argparse.ArgumentParser, *, max_bytes: bool) -> None:
    """How many trials: a fixed count, or adaptive repetition and its budgets."""
    minutes = DEFAULT_MAX_TIME / 60
    parser.add_argument(
        "--repeats",
        type=int,
        help="a fixed number of trials per workload and target (default: the suite's if it fixes one, "
        "else adaptive, see --precision)",
    )
    parser.add_argument(
        "--precision",
        metavar="P",
        help="adaptive: repeat until each comparison's 95%% interval is within ±P of its estimate "
        f"(default {DEFAULT_PRECISION.replace('%', '%%')}; for a suite that fixes its repeats, asking "
        "turns adaptive on)",
    )
    parser.add_argument(
        "--equivalence",
        metavar="E",
        help="a comparison whose whole 95%% interval lies within ±E of no change is answered "
        "'no measurable cost', and targets whose difference does are 'equal' in the ranking "
        f"(default {DEFAULT_EQUIVALENCE.replace('%', '%%')})",
    )
    parser.add_argument(
        "--min-repeats",
        type=int,
        help=f"adaptive: trials before precision is judged (default {DEFAULT_MIN_REPEATS})",
    )
    parser.add_argument(
        "--max-repeats", type=int, help=f"adaptive: trials at most (default {DEFAULT_MAX_REPEATS})"
    )
    if max_bytes:
        parser.add_argument(
            "--max-bytes",
            metavar="SIZE",
            help="stop repeating once the trials wrote this much (adaptive default: a tenth of the free "
            "space, at most 8G; a fixed count runs in full unless given)",
        )
    parser.add_argument(
        "--overrun",
        choices=OVERRUNS,
        default="drop",
        help="when the first round shows the minimum trials cannot fit --max-time: drop workloads, "
        "the slowest first, each kind of work keeping its reads and its writes (default), "
        "or extend the time budget",
    )
    parser.add_argument(
        "--max-time",
        metavar="DURATION",
        help=f"stop repeating after this long in trials (90s, 10m, 1h; adaptive default: {minutes:g}m; "
        "a fixed count runs in full unless given)",
    )
