"""`cryptbench suites`: the built-in suites, and for a study preset, which
study it follows and what it corrects."""

from __future__ import annotations

import argparse
from dataclasses import fields, is_dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from cryptbench.commands.common_args import add_json
from cryptbench.engines.apps import AppWorkload
from cryptbench.engines.apps.command import CommandWorkload
from cryptbench.model.json_types import JsonObject
from cryptbench.model.units import format_bytes
from cryptbench.planning.suite import builtin_suites, load_suite, primary_metric
from cryptbench.report.json_output import print_json


def _workload(w: Any) -> JsonObject:
    if isinstance(w, CommandWorkload):
        what = (
            f"command `{w.phases[0].command}`"
            if len(w.phases) == 1
            else f"commands, {len(w.phases)} phases: {', '.join(p.name for p in w.phases)}"
        )
        if w.needs:
            what += f" (needs {', '.join(w.needs)})"
        return {"name": w.name, "kind": "command", "what": what, "metric": primary_metric(w)}
    if isinstance(w, AppWorkload):
        # the parameters the suite set, beside the app's summary
        # every app workload is a dataclass; the check is what lets fields() be typed
        params: list[str] = (
            [
                f"{f.name}={getattr(w, f.name)}"
                for f in fields(w)
                if f.name != "name" and getattr(w, f.name) != f.default
            ]
            if is_dataclass(w)
            else []
        )
        what = f"{w.app}{' (' + ', '.join(params) + ')' if params else ''}: {w.summary}"
        return {"name": w.name, "kind": "app", "app": w.app, "what": what, "metric": primary_metric(w)}
    what = f"fio rw={w.rw} bs={format_bytes(w.bs)} iodepth={w.iodepth}"
    if w.view == "backing":
        what += ", the ciphertext backing, read-only"
    return {"name": w.name, "kind": "fio", "what": what, "metric": primary_metric(w)}


def run(name: str | None = None) -> list[JsonObject]:
    """Every built-in suite, or the one named (a built-in name or a suite file)."""
    names = [name] if name is not None else builtin_suites()
    rows = []
    for n in names:
        s = load_suite(n)
        rows.append(
            {
                "name": s.name,
                "description": s.description,
                "follows": s.follows,
                "corrects": s.corrects,
                "size": s.size,
                "repeats": s.repeats,
                "backends": list(s.backends or []),
                "states": list(s.states or []),
                "workloads": [_workload(w) for w in s.workloads],
                "summary": s.summary,
                "as_published": [_workload(w) for w in s.as_published],
            }
        )
    return rows


HELP = "the built-in suites; for a study preset, what it follows and corrects"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", help="one suite, in full")
    add_json(p, "the suites")


def main(args: argparse.Namespace, out: Console, err: Console) -> int:
    rows = run(name=args.name)
    if args.json:
        print_json(rows)
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
