"""Command line: parse, call one command's run(), print. Nothing else prints.

Errors become one line on stderr and exit status 2 (bad input) or 1 (a failure
while working); a signal during a run exits 130 (SIGINT) or 143 (SIGTERM).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from rich.console import Console
from rich.table import Table

from cryptbench import __version__
from cryptbench.commands.common_args import add_db, add_details, add_json, add_stopping
from cryptbench.errors import CryptbenchError, Interrupted
from cryptbench.report import console as console_report
from cryptbench.report.progress import RichProgress
from cryptbench.units import format_value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"cryptbench: error: {message} (see --help)\n")
        raise SystemExit(2)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="cryptbench", description="What does encrypting storage cost on this machine?")
    p.add_argument("--version", action="version", version=f"cryptbench {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    b = sub.add_parser("backends", help="what can be measured here, and why not the rest")
    add_json(b, "the backends")

    r = sub.add_parser("run", help="provision targets and run a suite on each")
    r.add_argument(
        "--backends",
        help="comma-separated (default: the suite's, else every available default one); baselines are added",
    )
    r.add_argument(
        "--state",
        help="image backends: fresh, rewrite or both, comma-separated (default: the suite's, else fresh)",
    )
    r.add_argument(
        "--fs", help="image backends: filesystem inside the image: ext4, xfs or btrfs (default ext4)"
    )
    r.add_argument(
        "--suite",
        default="quick",
        help="built-in suite (`cryptbench suites` lists them, and the study each preset follows) "
        "or a TOML file (default: quick)",
    )
    r.add_argument(
        "--size", help="data file per target, bytes moved per trial (default: the suite's, else 64M)"
    )
    add_stopping(r, max_bytes=True)
    r.add_argument("--seed", type=int, help="seed for trial order and fio offsets (default: random)")
    r.add_argument(
        "--target", default="/var/tmp", help="directory to put scratch space in (default: /var/tmp)"
    )
    r.add_argument(
        "--io-mode",
        default="auto",
        choices=["auto", "direct", "buffered"],
        help="auto: direct if every target honours O_DIRECT, else buffered for all",
    )
    r.add_argument("--data", default="random", choices=["random", "zero"], help="write buffer contents")
    add_db(r)
    r.add_argument(
        "--passphrase-file",
        metavar="FILE",
        help="your own passphrase for the encrypted targets (mode 600; default: a key per run)",
    )
    r.add_argument(
        "--as-published",
        action="store_true",
        help="also run the study's exact commands, faults included (study-004: dd without fsync), "
        "to show what they did to its figures",
    )
    r.add_argument(
        "--ram",
        action="store_true",
        help="also run each backend's stack on RAM (tmpfs, or a loop device over a tmpfs file), "
        "to tell the device's cost from the layer's",
    )
    add_json(r)
    add_details(r)

    su = sub.add_parser(
        "suites", help="the built-in suites; for a study preset, what it follows and corrects"
    )
    su.add_argument("name", nargs="?", help="one suite, in full")
    add_json(su, "the suites")

    h = sub.add_parser(
        "history", help="runs stored so far; with --workload or --metric, each target's figure over time"
    )
    h.add_argument("--limit", type=int, default=20, help="the newest N runs that match (default 20)")
    h.add_argument("--backend", help="only runs with a target of this backend (and only its targets' series)")
    h.add_argument("--workload", help="only runs of this workload; draws its metric over time per target")
    h.add_argument("--host", help="only runs on this host name")
    h.add_argument(
        "--metric", help="the metric drawn over time (default: the workload's own; throughput, lat_p99, …)"
    )
    add_db(h)
    add_json(h, "the runs and series")

    s = sub.add_parser("show", help="one stored run again")
    s.add_argument("ref", nargs="?", default="latest", help="run id, or latest (default)")
    s.add_argument(
        "--metric",
        default=None,
        help="metric for the table instead of each workload's own (throughput, iops, lat_p99, seconds, "
        "an app phase's such as copy.seconds, …)",
    )
    add_db(s)
    add_json(s)
    add_details(s)

    rp = sub.add_parser(
        "report", help="export a stored run: an HTML page with charts, chart images, CSV, Markdown, JSON"
    )
    rp.add_argument("ref", nargs="?", default="latest", help="run id, or latest (default)")
    rp.add_argument("--html", metavar="FILE", help="one self-contained page with every chart, to a new FILE")
    rp.add_argument("--png", metavar="DIR", help="each chart as DIR/<chart>.png (DIR is made if missing)")
    rp.add_argument("--svg", metavar="DIR", help="each chart as DIR/<chart>.svg (DIR is made if missing)")
    rp.add_argument("--csv", metavar="FILE", help="one row per trial, to a new FILE (- for stdout)")
    rp.add_argument("--markdown", action="store_true", help="print the summary table as Markdown")
    add_json(rp, "the run's document (as show --json)")
    add_db(rp)

    cp = sub.add_parser(
        "compare",
        help="run B against run A: per workload and target, B's speed over A's, and whether it differs",
    )
    cp.add_argument("a", metavar="A", help="run id, or latest")
    cp.add_argument("b", metavar="B", help="run id, or latest")
    add_db(cp)
    cp.add_argument("--db-b", type=Path, help="B's database, when it is another (e.g. another machine's)")
    cp.add_argument(
        "--metric", help="compare on this metric instead of each workload's own (as for show --metric)"
    )
    cp.add_argument(
        "--force",
        action="store_true",
        help="compare even when the runs did not measure the same things (size, workloads, stacks)",
    )
    cp.add_argument("--html", metavar="FILE", help="the comparison as one self-contained page, to a new FILE")
    add_json(cp, "the comparison")

    ck = sub.add_parser(
        "check",
        help="exit 1 when an encrypted target's overhead against its baseline exceeds a bound (for CI gates)",
    )
    ck.add_argument("ref", nargs="?", default="latest", help="run id, or latest (default)")
    ck.add_argument(
        "--max-overhead",
        required=True,
        metavar="P",
        help="the most speed a target may lose against its baseline on any workload, e.g. 30%%",
    )
    add_db(ck)
    add_json(ck, "the findings")

    st = sub.add_parser(
        "selftest",
        help="measure two throttled targets (40 and 20 MB/s) and check that cryptbench reports 0.50",
    )
    st.add_argument("--target", default="/var/tmp", help="directory to put scratch space in")
    st.add_argument(
        "--size",
        default="32M",
        help="data file per target (default and least 32M: shorter jobs bias the ratio)",
    )
    st.add_argument("--precision", metavar="P", help="as for run (default 5%%)")
    st.add_argument("--seed", type=int)
    add_db(st)
    add_json(st)

    ci = sub.add_parser(
        "cipher",
        help="the ciphers' own speed here: OpenSSL per data unit, and the kernel's driver and speed",
    )
    ci.add_argument("--seconds", default="0.3s", help="each measurement's length (default 0.3s)")
    ci.add_argument("--repeats", type=int, default=3, help="measurements of each, interleaved (default 3)")
    ci.add_argument(
        "--no-kernel-stack",
        action="store_true",
        help="skip the kernel measurement on RAM (fscrypt against ext4-loop), used where AF_ALG is missing",
    )
    ci.add_argument("--ram-size", default="64M", help="bytes per kernel RAM-stack trial (default 64M)")
    ci.add_argument("--target", default="/var/tmp", help="directory to put scratch space in")
    add_db(ci)
    ci.add_argument("--no-store", action="store_true", help="do not store the result")
    add_json(ci, "the result")

    sv = sub.add_parser(
        "serve",
        help="one host of a fleet run: provision targets, start fio's server, serve until SIGINT/SIGTERM",
    )
    sv.add_argument(
        "--listen",
        default="127.0.0.1:8765",
        metavar="ADDR[:PORT]",
        help="fio server address: an IP (loopback by default), [IPv6] or unix:/PATH (default 127.0.0.1:8765)",
    )
    sv.add_argument(
        "--allow-remote",
        action="store_true",
        help="listen on a non-loopback or wildcard address: fio's server has no authentication",
    )
    sv.add_argument("--backends", help="comma-separated (default: every available default one)")
    sv.add_argument("--size", help="data file per target, bytes moved per trial (default 64M)")
    sv.add_argument("--target", default="/var/tmp", help="directory to put scratch space in")
    sv.add_argument("--io-mode", default="auto", choices=["auto", "direct", "buffered"])
    sv.add_argument("--data", default="random", choices=["random", "zero"], help="write buffer contents")
    sv.add_argument("--passphrase-file", metavar="FILE", help="your own passphrase (mode 600)")
    sv.add_argument(
        "--print-manifest",
        action="store_true",
        help="print the manifest of the serve running with this --target, and exit",
    )

    fl = sub.add_parser("fleet", help="run a suite on many hosts at once through their fio servers")
    fl_sub = fl.add_subparsers(dest="fleet_command", metavar="COMMAND", parser_class=_Parser, required=True)
    fr = fl_sub.add_parser("run", help="run a suite on every host of hosts.toml, interleaved")
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

    c = sub.add_parser("cleanup", help="tear down what a crashed run left behind")
    c.add_argument("--target", help="also look in this target directory's scratch space")
    return p


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")


def _backends(args: argparse.Namespace, out: Console) -> int:
    from cryptbench.commands import backends
    from cryptbench.report import backends_console

    rows = backends.run()
    if args.json:
        _print_json(rows)
        return 0
    backends_console.render(rows, out)
    return 0


def _run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from cryptbench.commands import run

    with RichProgress(err) as progress:
        outcome = run.run(
            backends=args.backends,
            suite=args.suite,
            size=args.size,
            repeats=args.repeats,
            seed=args.seed,
            target=args.target,
            io_mode=args.io_mode,
            data=args.data,
            db=args.db,
            passphrase_file=args.passphrase_file,
            state=args.state,
            fs=args.fs,
            as_published=args.as_published,
            precision=args.precision,
            min_repeats=args.min_repeats,
            max_repeats=args.max_repeats,
            max_bytes=args.max_bytes,
            max_time=args.max_time,
            ram=args.ram,
            progress=progress,
        )
    for msg in outcome.recovered:
        err.print(f"cleanup of a crashed run: {msg}")
    for note in outcome.document.notes:
        err.print(f"note: {note}", soft_wrap=True)
    if args.json:
        _print_json(outcome.document.to_json())
    else:
        console_report.render(outcome.document, out, details=args.details)
    failed = outcome.document.trials.failed
    if outcome.status == "complete" and outcome.exit_code == 1:
        err.print(f"{failed} trial(s) failed or could not run; the notes above say why")
    if outcome.status == "interrupted":
        err.print(
            f"interrupted: torn down; {outcome.document.trials.ok} finished trial(s) "
            f"kept as run {outcome.run_id}"
        )
    return outcome.exit_code


def _suites(args: argparse.Namespace, out: Console) -> int:
    from cryptbench.commands import suites

    rows = suites.run(name=args.name)
    if args.json:
        _print_json(rows)
        return 0
    if args.name is None:
        table = Table()
        table.add_column("suite", style="bold")
        table.add_column("what it runs")
        for r in rows:
            table.add_row(r["name"], r["description"])
        out.print(table)
        out.print("[dim]cryptbench suites NAME: a suite in full, with the study a preset follows[/dim]")
        return 0
    (r,) = rows
    out.print(f"[bold]{r['name']}[/bold]: {r['description']}")
    for key, label in (("follows", "Follows"), ("corrects", "Corrects")):
        if r[key]:
            out.print(f"\n[bold]{label}[/bold]: {r[key]}")
    if r["backends"]:
        out.print(f"\n[bold]Backends[/bold]: {', '.join(r['backends'])} (their baselines are added)")
    out.print("\n[bold]Workloads[/bold] (compared on):")
    for w in r["workloads"]:
        out.print(f"  {w['name']}: {w['what']} ({w['metric']})")
    if r["as_published"]:
        out.print("\n[bold]As published[/bold] (with --as-published, the study's own commands beside those):")
        for w in r["as_published"]:
            out.print(f"  {w['name']}: {w['what']} ({w['metric']})")
    if r["summary"]:
        out.print(
            f"\n[bold]Summary[/bold]: the study's own ({r['summary']}), beside each median and interval"
        )
    return 0


def _history(args: argparse.Namespace, out: Console) -> int:
    from cryptbench.commands import history
    from cryptbench.report import history_table

    found = history.run(
        limit=args.limit,
        db=args.db,
        backend=args.backend,
        workload=args.workload,
        host=args.host,
        metric=args.metric,
    )
    if args.json:
        _print_json(found.to_json())
        return 0
    if not found.runs:
        filtered = any(v is not None for v in (args.backend, args.workload, args.host))
        out.print("no stored run matches" if filtered else "no runs stored yet (cryptbench run)")
        return 0
    history_table.render(found, out)
    return 0


def _show(args: argparse.Namespace, out: Console) -> int:
    from cryptbench.commands import show
    from cryptbench.report import document

    doc = show.run(ref=args.ref, db=args.db)
    if args.metric is not None:
        document.require_metric(doc, args.metric)
    if args.json:
        _print_json(doc.to_json())
    else:
        console_report.render(doc, out, metric=args.metric, details=args.details)
    return 0


def _report(args: argparse.Namespace, out: Console, err: Console) -> int:
    from cryptbench.commands import report

    done = report.run(
        ref=args.ref,
        db=args.db,
        csv=args.csv,
        markdown=args.markdown,
        json=args.json,
        html=args.html,
        png=args.png,
        svg=args.svg,
    )
    if "html" in done:
        err.print(f"wrote {done['html']['path']}: run {done['run_id']}, {len(done['html']['charts'])} charts")
    for fmt in ("png", "svg"):
        if fmt in done:
            err.print(f"wrote {len(done[fmt])} {fmt.upper()} charts: {', '.join(done[fmt])}")
    csv = done.get("csv")
    if csv is not None and "text" in csv:
        sys.stdout.write(csv["text"])
    elif csv is not None:
        err.print(f"wrote {csv['path']}: {csv['rows']} trials of run {done['run_id']}")
    if "markdown" in done:
        sys.stdout.write(done["markdown"])
    if "json" in done:
        _print_json(done["json"])
    return 0


def _compare(args: argparse.Namespace, out: Console, err: Console) -> int:
    from cryptbench.commands import compare
    from cryptbench.report import compare_console

    done = compare.run(
        a=args.a,
        b=args.b,
        db=args.db,
        db_b=args.db_b,
        metric=args.metric,
        force=args.force,
        html=args.html,
    )
    comp = done["comparison"]
    if args.json:
        _print_json(comp.to_json())
    else:
        compare_console.render(comp, out)
    if done["html"]:
        err.print(f"wrote {done['html']}: B (run {comp.b.run_id}) against A (run {comp.a.run_id})")
    return 0


def _check(args: argparse.Namespace, out: Console) -> int:
    from cryptbench.commands import check

    result = check.run(ref=args.ref, max_overhead=args.max_overhead, db=args.db)
    if args.json:
        _print_json(result.to_json())
    else:
        for target, f in result.worst().items():
            verdict = "[green]pass[/green]" if f.passed else "[red]FAIL[/red]"
            out.print(f"{verdict} {f.words(result.bound)}", highlight=False)
            for other in result.findings:
                if other.target == target and not other.passed and other is not f:
                    out.print(f"     also {other.words(result.bound)}", highlight=False)
        for name, f in result.worst_hosts().items():
            out.print(f"worst host for {name}: {f.host} ({f.words(result.bound)})", highlight=False)
        out.print(
            f"run {result.run_id}: "
            + ("every target within" if result.passed else "over")
            + f" {result.bound:g} % overhead (the share of the baseline's speed lost; worst workload shown)"
        )
    return 0 if result.passed else 1


def _check_value(value: float, unit: str) -> str:
    return f"{value:.3f}" if unit == "ratio" else format_value(value, unit)


def _selftest(args: argparse.Namespace, out: Console, err: Console) -> int:
    from cryptbench.commands import selftest

    with RichProgress(err) as progress:
        result = selftest.run(
            target=args.target,
            db=args.db,
            size=args.size,
            precision=args.precision,
            seed=args.seed,
            progress=progress,
        )
    if args.json:
        _print_json(result.run.document.to_json())
    else:
        console_report.render(result.run.document, out)
        out.print()
    for c in result.checks:
        interval = (
            "no interval"
            if c.ci_low is None or c.ci_high is None
            else f"[{_check_value(c.ci_low, c.unit)}, {_check_value(c.ci_high, c.unit)}]"
        )
        verdict = "[green]pass[/green]" if c.passed else "[red]FAIL[/red]"
        err.print(
            f"{verdict} {c.what}: {_check_value(c.measured, c.unit)} {interval}; known answer "
            f"{_check_value(c.expected, c.unit)} (±{c.band:.0%})"
        )
    if result.passed:
        err.print(f"selftest passed: cryptbench found the known answer (run {result.run.run_id})")
        return 0
    err.print(
        "selftest FAILED: a known answer is outside its interval, or trials failed "
        f"(run {result.run.run_id}; cryptbench show {result.run.run_id})"
    )
    return 1


def _cipher(args: argparse.Namespace, out: Console, err: Console) -> int:
    from cryptbench.commands import cipher
    from cryptbench.report import cipher_table

    with RichProgress(err) as progress:
        doc = cipher.run(
            seconds=args.seconds,
            repeats=args.repeats,
            kernel_stack=not args.no_kernel_stack,
            ram_size=args.ram_size,
            target=args.target,
            db=args.db,
            store=not args.no_store,
            progress=progress,
        )
    if args.json:
        _print_json(doc)
    else:
        cipher_table.render(doc, out)
    return 0


def _serve(args: argparse.Namespace, out: Console, err: Console) -> int:
    from cryptbench.commands import serve

    if args.print_manifest:
        sys.stdout.write(serve.print_manifest(target=args.target))
        return 0

    def ready(manifest: dict[str, Any], path: Path) -> None:
        names = ", ".join(t["name"] for t in manifest["targets"])
        err.print(f"serving {names} on {manifest['listen']} (manifest: {path}); SIGINT or SIGTERM stops it")
        for s in manifest["skipped"]:
            err.print(f"note: skipped {s['backend']}: {s['reason']}", soft_wrap=True)

    with RichProgress(err) as progress:
        outcome = serve.run(
            listen=args.listen,
            allow_remote=args.allow_remote,
            backends=args.backends,
            size=args.size,
            target=args.target,
            io_mode=args.io_mode,
            data=args.data,
            passphrase_file=args.passphrase_file,
            progress=progress,
            ready=ready,
        )
    for msg in outcome.recovered:
        err.print(f"cleanup of a crashed run: {msg}")
    err.print(outcome.reason)
    return outcome.exit_code


def _fleet(args: argparse.Namespace, out: Console, err: Console) -> int:
    from cryptbench.commands import fleet

    with RichProgress(err) as progress:
        outcome = fleet.run(
            hosts=args.hosts,
            suite=args.suite,
            repeats=args.repeats,
            precision=args.precision,
            min_repeats=args.min_repeats,
            max_repeats=args.max_repeats,
            max_time=args.max_time,
            seed=args.seed,
            db=args.db,
            progress=progress,
        )
    for note in outcome.document.notes:
        err.print(f"note: {note}", soft_wrap=True)
    if args.json:
        _print_json(outcome.document.to_json())
    else:
        console_report.render(outcome.document, out, details=args.details)
    if outcome.status == "interrupted":
        err.print(f"interrupted; {outcome.document.trials.ok} finished trial(s) kept as run {outcome.run_id}")
    return outcome.exit_code


def _cleanup(args: argparse.Namespace, out: Console) -> int:
    from cryptbench.commands import cleanup

    removed, alive = cleanup.run(target=args.target)
    for msg in removed:
        out.print(msg)
    for p in alive:
        out.print(f"left alone (a live run holds its lock): {p}")
    if not removed:
        out.print("nothing to clean up")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    out = Console()
    err = Console(stderr=True)
    if args.command is None:
        _parser().print_help()
        return 2
    try:
        if args.command == "backends":
            return _backends(args, out)
        if args.command == "run":
            return _run(args, out, err)
        if args.command == "history":
            return _history(args, out)
        if args.command == "suites":
            return _suites(args, out)
        if args.command == "show":
            return _show(args, out)
        if args.command == "report":
            return _report(args, out, err)
        if args.command == "selftest":
            return _selftest(args, out, err)
        if args.command == "check":
            return _check(args, out)
        if args.command == "compare":
            return _compare(args, out, err)
        if args.command == "cipher":
            return _cipher(args, out, err)
        if args.command == "serve":
            return _serve(args, out, err)
        if args.command == "fleet":
            return _fleet(args, out, err)
        return _cleanup(args, out)
    except CryptbenchError as e:
        sys.stderr.write(f"cryptbench: error: {e}\n")
        return e.exit_code
    except Interrupted as e:
        sys.stderr.write("cryptbench: interrupted\n")
        return e.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("cryptbench: interrupted\n")
        return 130
    except Exception as e:  # a bug: one line, the traceback on request
        if os.environ.get("CRYPTBENCH_DEBUG"):
            raise
        sys.stderr.write(
            f"cryptbench: internal error: {type(e).__name__}: {e} (CRYPTBENCH_DEBUG=1 shows the traceback)\n"
        )
        return 1
