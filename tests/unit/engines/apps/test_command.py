"""The command workload's schema: what a suite file and `run --command` may say, and
the one-line error for everything else (exit status 2 through the CLI)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from rich.console import Console

from cryptbench.engines.apps.command import DEFAULT_TIMEOUT, SINGLE_PHASE, CommandWorkload
from cryptbench.model.errors import UsageError
from cryptbench.model.result import Document
from cryptbench.planning.plan import build_plan
from cryptbench.planning.request import RunRequest
from cryptbench.planning.suite import command_suite, load_suite, parse_suite
from cryptbench.report import console
from tests.support.paths import TESTS


def _suite(**over: object) -> dict:
    return {"name": "s", "workloads": [{"name": "mine", **over}]}


def _one(data: dict, base: Path | None = None) -> CommandWorkload:
    w = parse_suite(data, "test", base).workloads[0]
    assert isinstance(w, CommandWorkload)
    return w


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"prepare": "true"}, "missing key 'command' (or [[workloads.phases]] tables)"),
        ({"command": "true", "colour": "red"}, "unknown key 'colour' for a command workload"),
        ({"command": ""}, "command is empty"),
        ({"command": 3}, "command must be a string"),
        (
            {"command": "true", "phases": [{"name": "a", "command": "true"}]},
            "give command or phases, not both",
        ),
        ({"phases": []}, "phases must be a list of tables"),
        ({"phases": ["true"]}, "phase 1: must be a table"),
        ({"phases": [{"command": "true"}]}, "phase 1: missing key 'name'"),
        ({"phases": [{"name": "a"}]}, "phase 1: missing key 'command'"),
        ({"phases": [{"name": "A b", "command": "true"}]}, "name 'A b' must be lower-case"),
        ({"phases": [{"name": "a", "command": "true", "x": 1}]}, "phase 1: unknown key 'x'"),
        (
            {"phases": [{"name": "a", "command": "x"}, {"name": "a", "command": "y"}]},
            "phase names must be unique",
        ),
        ({"command": "true", "inputs": "/nonexistent/photos"}, "inputs '/nonexistent/photos' does not exist"),
        ({"command": "true", "cache": "lukewarm"}, "cache must be one of cold, warm"),
        ({"command": "true", "timeout": 0}, "timeout must be more than 0"),
        ({"command": "true", "timeout": "soon"}, "is not a duration"),
        ({"command": "true", "timeout": True}, "timeout must be seconds or a duration"),
        (
            {"command": "true", "env": {"CRYPTBENCH_TARGET": "/"}},
            "env CRYPTBENCH_TARGET is cryptbench's to set",
        ),
        ({"command": "true", "env": {"1X": "a"}}, "env name '1X' is not a variable name"),
        ({"command": "true", "env": {"X": 1}}, "env X must be a string"),
        ({"command": "true", "env": "X=1"}, "env must be a table"),
        (
            {"command": "true", "inputs": "/", "inputs_command": "true"},
            "give inputs or inputs_command, not both",
        ),
    ],
)
def test_bad_command_workloads_are_refused(table: dict, message: str) -> None:
    with pytest.raises(UsageError) as e:
        parse_suite(_suite(**table), "test")
    assert message in str(e.value)
    assert "\n" not in str(e.value)  # one line


def test_a_command_and_its_defaults() -> None:
    w = _one(_suite(command="make -j2"))
    assert [(p.name, p.command) for p in w.phases] == [(SINGLE_PHASE, "make -j2")]
    assert (w.cache, w.timeout, w.prepare, w.cleanup, w.inputs, w.env) == (
        "cold",
        DEFAULT_TIMEOUT,
        "",
        "",
        None,
        (),
    )
    assert w.primary == "seconds" and w.is_write and w.cold and w.runs_commands


def test_phases_in_order_with_every_field(tmp_path: Path) -> None:
    photos = tmp_path / "photos"
    photos.mkdir()
    (photos / "a.raw").write_bytes(b"x" * 1000)
    (photos / "b.raw").write_bytes(b"y" * 24)
    os.symlink("a.raw", photos / "link")  # a link is copied as a link: no bytes of its own
    w = _one(
        _suite(
            phases=[{"name": "untar", "command": "tar xf x"}, {"name": "md5", "command": "md5sum *"}],
            prepare="true",
            cleanup="rm -f y",
            inputs="photos",  # relative to the suite file's directory
            cache="warm",
            timeout="2m",
            env={"LC_ALL": "C", "JOBS": "2"},
        ),
        base=tmp_path,
    )
    assert [p.name for p in w.phases] == ["untar", "md5"]
    assert (w.inputs, w.inputs_bytes) == (photos, 1024)
    assert (w.cache, w.cold, w.timeout, w.env) == ("warm", False, 120.0, (("LC_ALL", "C"), ("JOBS", "2")))
    assert w.target_bytes(64 << 20) == 1024 + (64 << 20)
    described = w.describe(64 << 20)
    assert described["phases"] == [
        {"name": "untar", "command": "tar xf x"},
        {"name": "md5", "command": "md5sum *"},
    ]
    assert described["inputs"] == str(photos) and described["env"] == {"LC_ALL": "C", "JOBS": "2"}


def test_a_suite_file_s_relative_inputs_are_beside_it(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("hello")
    suite = tmp_path / "mine.toml"
    suite.write_text(
        'name = "mine"\n[[workloads]]\nname = "cat"\ncommand = "cat $CRYPTBENCH_INPUTS"\ninputs = "in.txt"\n'
    )
    w = load_suite(str(suite)).workloads[0]
    assert isinstance(w, CommandWorkload) and w.inputs == tmp_path / "in.txt" and w.inputs_bytes == 5


def test_run_command_builds_a_suite_named_after_its_commands() -> None:
    suite = command_suite(("make -j2", "make -j2", "$X || true"), "git clean -fdx", None, None)
    assert suite.name == "commands"
    assert [w.name for w in suite.workloads] == ["make-j2", "make-j2-2", "x-true"]
    first = suite.workloads[0]
    assert isinstance(first, CommandWorkload) and first.prepare == "git clean -fdx" and first.cleanup == ""


def _request(tmp_path: Path, **over: object) -> RunRequest:
    kw: dict = {"backends": "plain", "repeats": 2, "target": str(tmp_path), "db": tmp_path / "r.sqlite"}
    kw.update(over)
    return RunRequest(**kw)


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"commands": ["true"], "suite": "quick"}, "give --command or --suite, not both"),
        ({"prepare": "true"}, "--prepare goes with --command"),
        ({"inputs": "/tmp"}, "--inputs goes with --command"),
        (
            {"commands": ["true"], "inputs": "/nonexistent/x"},
            "--command: inputs '/nonexistent/x' does not exist",
        ),
        ({"commands": ["true"], "as_published": True}, "--as-published needs a study's suite"),
    ],
)
def test_bad_command_requests_are_refused_before_anything_runs(
    tmp_path: Path, over: dict, message: str
) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        build_plan(_request(tmp_path, **over))


def test_inputs_larger_than_the_free_space_are_refused(tmp_path: Path) -> None:
    huge = tmp_path / "huge.img"
    with open(huge, "wb") as f:
        f.truncate(1 << 43)  # sparse: 8 TiB of apparent size, the size a copy would write
    with pytest.raises(UsageError, match="not enough free space") as e:
        build_plan(_request(tmp_path, commands=["cat $CRYPTBENCH_INPUTS"], inputs=str(huge)))
    assert "the inputs of cat-cryptbench_inputs (8.0 TiB) are copied onto each of the 1 target(s)" in str(
        e.value
    )


def test_a_command_plan_needs_no_fio_and_no_data_file(tmp_path: Path) -> None:
    plan = build_plan(_request(tmp_path, commands=["true"]))
    assert plan.suite.name == "commands" and plan.data_size_limit == 0
    assert plan.to_json()["primary_metrics"] == {"true": "seconds"}
    assert plan.to_json()["apps"]["true"]["phases"] == [{"name": SINGLE_PHASE, "command": "true"}]


def test_a_program_the_commands_need_is_checked_before_anything_runs(tmp_path: Path) -> None:
    suite = tmp_path / "needs.toml"
    suite.write_text(
        'name = "needs"\n[[workloads]]\nname = "w"\ncommand = "frobnicate"\nneeds = ["frobnicate-9000"]\n'
    )
    with pytest.raises(UsageError, match="w needs frobnicate-9000, which is not on PATH here"):
        build_plan(_request(tmp_path, suite=str(suite)))
    with pytest.raises(UsageError, match="needs must be a list of program names"):
        parse_suite(_suite(command="true", needs="git"), "test")
    assert build_plan(_request(tmp_path, suite="example-compileall")).suite.name == "example-compileall"


def test_a_run_of_commands_only_says_they_did_their_own_io() -> None:
    raw = json.loads((TESTS / "fixtures" / "documents" / "default-run.json").read_text())
    doc = Document.from_json(raw)
    assert not console._commands_only(doc)  # fio workloads: cryptbench chose their I/O mode
    raw["plan"]["workloads"] = ["build"]
    raw["plan"]["apps"] = {"build": {"app": "command", "name": "build", "size": 0}}
    doc = Document.from_json(raw)
    assert console._commands_only(doc)
    assert console._io_line(doc.targets[0], True) == "your commands' own I/O (cryptbench chose no I/O mode)"


def test_the_legend_of_times_names_no_unit_the_figures_do_not_use() -> None:
    raw = json.loads((TESTS / "fixtures" / "documents" / "default-run.json").read_text())
    raw["plan"]["workloads"] = ["build"]
    raw["plan"]["primary_metrics"] = {"build": "seconds"}
    out = Console(record=True, width=200)
    console._legend(Document.from_json(raw), out, None, compact=False)
    text = out.export_text()
    assert "Median seconds; intervals in the median's unit" in text and "intervals in s," not in text
