import argparse
from dataclasses import fields
from pathlib import Path

import pytest

from cryptbench.commands import run as run_cmd
from cryptbench.model.errors import SafetyError, UnavailableError, UsageError
from cryptbench.planning.request import RunRequest
from tests.support.documents import plan_with


def test_a_good_plan(tmp_path: Path) -> None:
    plan = plan_with(tmp_path)
    assert plan.backends == ("plain",)
    assert plan.size == 8 << 20
    assert plan.to_json()["workloads"][0] == "seq1m-q8-read"


@pytest.mark.parametrize(
    ("over", "error", "message"),
    [
        ({"backends": "nope"}, UsageError, "unknown backend 'nope'"),
        (
            {"backends": "plain,gocrytpfs"},
            UsageError,
            r"unknown backend 'gocrytpfs' \(did you mean gocryptfs\?\)$",
        ),
        ({"suite": "quik"}, UsageError, r"unknown suite 'quik' \(did you mean quick\?\)"),
        ({"backends": "plain,plain"}, UsageError, "twice"),
        ({"backends": ","}, UsageError, "names no backend"),
        ({"size": "12XB"}, UsageError, "unknown unit"),
        ({"size": "0"}, UsageError, "out of range"),
        ({"size": "5T"}, UsageError, "out of range"),
        ({"repeats": 0}, UsageError, "--repeats"),
        ({"repeats": -3}, UsageError, "--repeats"),
        ({"seed": -1}, UsageError, "--seed"),
        ({"target": "/nonexistent/dir"}, UsageError, "does not exist"),
        ({"target": "/proc/self"}, SafetyError, "lies under /proc"),
        ({"target": "/dev/null"}, SafetyError, "lies under /dev"),
        ({"suite": "nope"}, UsageError, "unknown suite"),
        ({"ioengine": "spdk"}, UsageError, "--ioengine must be one of io_uring, libaio, psync"),
    ],
)
def test_bad_input_is_refused(tmp_path: Path, over: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        plan_with(tmp_path, **over)


def test_the_engine_asked_for_is_the_plans_and_none_asked_is_auto(tmp_path: Path) -> None:
    asked = plan_with(tmp_path, ioengine="psync")
    assert asked.ioengine == "psync" and asked.to_json()["ioengine"] == "psync"
    chosen = plan_with(tmp_path)
    assert chosen.ioengine is None and chosen.to_json()["ioengine"] == "auto"


def test_a_file_is_not_a_target(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(UsageError, match="not a directory"):
        plan_with(tmp_path, target=str(f))


def test_not_enough_space_gives_the_numbers(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"not enough free space .* needs .* is free"):
        plan_with(tmp_path, size="1T")


def test_baselines_are_added(tmp_path: Path) -> None:
    try:
        plan = plan_with(tmp_path, backends="gocryptfs")
    except UnavailableError as e:
        pytest.skip(str(e))
    assert plan.backends == ("plain", "gocryptfs")
    assert plan.added_baselines == ("plain",)


IMAGES_OK = __import__("cryptbench.backends", fromlist=["REGISTRY"]).REGISTRY["image-qcow2-aes256"].probe().ok


@pytest.mark.skipif(not IMAGES_OK, reason="qemu image backends are not available here")
def test_image_targets_expand_by_state_with_baselines_in_the_same_state(tmp_path: Path) -> None:
    plan = plan_with(tmp_path, backends="image-qcow2-aes256", state="fresh,rewrite")
    assert plan.backends == ("plain", "image-qcow2", "image-qcow2-aes256")
    names = [t.name for t in plan.targets]
    assert names == [
        "plain",
        "image-qcow2@fresh",
        "image-qcow2@rewrite",
        "image-qcow2-aes256@fresh",
        "image-qcow2-aes256@rewrite",
    ]
    base = plan.baselines
    assert base["image-qcow2-aes256@rewrite"] == "image-qcow2@rewrite"
    assert base["image-qcow2@fresh"] == "plain" and base["plain"] is None


@pytest.mark.skipif(not IMAGES_OK, reason="qemu image backends are not available here")
def test_the_images_suite_names_its_own_targets(tmp_path: Path) -> None:
    plan = plan_with(tmp_path, backends=None, suite="images", size="8M")
    assert len(plan.targets) == 1 + 9 * 2  # plain, and 9 image backends x (fresh, rewrite)
    assert plan.states == ("fresh", "rewrite") and plan.suite.write_new_file
    assert plan.to_json()["targets"][0] == "plain"


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"state": "fresh"}, "--state applies to image backends"),
        ({"fs": "xfs"}, "--fs applies to image backends"),
        ({"backends": "image-raw", "state": "stale"}, "unknown state 'stale'"),
        ({"backends": "image-raw", "state": "fresh,fresh"}, "names a state twice"),
        ({"backends": "image-raw", "fs": "ntfs"}, "--fs must be one of ext4, xfs, btrfs"),
    ],
)
def test_bad_state_and_fs_choices(tmp_path: Path, over: dict[str, object], message: str) -> None:
    if over.get("backends") == "image-raw" and not IMAGES_OK:
        pytest.skip("qemu image backends are not available here")
    with pytest.raises(UsageError, match=message):
        plan_with(tmp_path, **over)


def test_space_covers_the_images_full_size(tmp_path: Path) -> None:
    """A preallocated image needs its whole size, however little data goes in."""
    from cryptbench.backends import REGISTRY, TargetSpec

    need = REGISTRY["image-raw"].space_needed(TargetSpec("image-raw", "fresh", "xfs"), 8 << 20)
    assert need >= 300 << 20  # xfs' smallest filesystem


def _suite_file(tmp_path: Path, body: str) -> str:
    path = tmp_path / "apps.toml"
    path.write_text('name = "apps"\n' + body)
    return str(path)


def test_app_workloads_size_the_targets(tmp_path: Path) -> None:
    suite = _suite_file(
        tmp_path,
        '[[workloads]]\nname = "copy"\napp = "folder-copy"\nfile_size = "1M"\n'
        '[[workloads]]\nname = "db"\napp = "db-fsync"\n',
    )
    plan = plan_with(tmp_path, suite=suite)
    # no fio workload: no data file; the copy holds source and copy at once
    assert plan.target_bytes == 2 * (8 << 20) + 128 * (1024 + 512) + (1 << 20)  # 128 = 8M / 64K
    assert plan.to_json()["primary_metrics"] == {"copy": "throughput", "db": "transactions_per_second"}
    assert plan.to_json()["apps"]["copy"]["files"] == 8


def test_size_below_one_photo_is_refused(tmp_path: Path) -> None:
    suite = _suite_file(tmp_path, '[[workloads]]\nname = "imp"\napp = "photo-import"\n')
    with pytest.raises(UsageError, match=r"too small for imp \(photo-import\): it needs at least 24.0 MiB"):
        plan_with(tmp_path, suite=suite)


def test_as_published_adds_the_studys_commands(tmp_path: Path) -> None:
    plain = plan_with(tmp_path, suite="study-004", size="4M")
    assert [w.name for w in plain.suite.workloads] == ["dd-zero", "dd-random"]
    assert plain.to_json()["as_published"] == [] and plain.to_json()["summary"] == "drop-min-max"
    plan = plan_with(tmp_path, suite="study-004", size="4M", as_published=True)
    assert [w.name for w in plan.suite.workloads] == [
        "dd-zero",
        "dd-random",
        "dd-zero-as-published",
        "dd-random-as-published",
    ]
    assert plan.to_json()["as_published"] == ["dd-zero-as-published", "dd-random-as-published"]
    assert plan.target_bytes == 4 * ((4 << 20) + (1 << 20))


def test_as_published_on_a_suite_without_it_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        UsageError, match=r"suite quick has no as-published protocol \(suites with one: study-004\)"
    ):
        plan_with(tmp_path, as_published=True)


def test_how_many_trials_adaptive_by_default_fixed_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cryptbench.planning import stopping_rule
    from cryptbench.planning.stopping_rule import DEFAULT_MAX_BYTES_CAP

    # Free space read once, not twice around other writers: the budget must match it exactly.
    monkeypatch.setattr(stopping_rule, "free_bytes", lambda _path: 50 << 30)
    free_bytes = stopping_rule.free_bytes

    default = plan_with(tmp_path, repeats=None).rule
    assert (default.precision, default.min_repeats, default.max_repeats) == (0.05, 3, 10)
    assert default.max_bytes == min(int(free_bytes(tmp_path) * 0.10), DEFAULT_MAX_BYTES_CAP)
    assert default.max_time == 300.0
    fixed = plan_with(tmp_path, repeats=4).rule
    assert (fixed.precision, fixed.min_repeats, fixed.max_repeats) == (None, 4, 4)
    assert (fixed.max_bytes, fixed.max_time) == (None, None)  # a fixed count runs in full unless asked
    assert plan_with(tmp_path, repeats=4, max_bytes="1G").rule.max_bytes == 1 << 30
    # a study's suite fixes its count; asking for precision turns adaptive on
    study = plan_with(tmp_path, repeats=None, suite="study-004", size="16M")
    assert (study.rule.precision, study.repeats) == (None, 10)
    asked = plan_with(tmp_path, repeats=None, suite="study-004", size="16M", precision="2%", max_repeats=30)
    assert (asked.rule.precision, asked.rule.max_repeats, asked.repeats) == (0.02, 30, 30)
    budget = plan_with(tmp_path, repeats=None, max_bytes="2G", max_time="10m").rule
    assert (budget.max_bytes, budget.max_time) == (2 << 30, 600.0)
    assert plan_with(tmp_path, repeats=None).to_json()["stopping"]["precision"] == 0.05
    # the equivalence margin: the default 3 %, or the one asked, as a fraction, fixed or adaptive
    assert default.equivalence == 0.03 and fixed.equivalence == 0.03
    assert plan_with(tmp_path, repeats=None, equivalence="1.5%").rule.equivalence == 0.015
    assert plan_with(tmp_path, repeats=4, equivalence="10").rule.equivalence == 0.10
    with pytest.raises(UsageError, match=r"--equivalence must be from 0.1% to 50%, not 60%"):
        plan_with(tmp_path, equivalence="60%")


def test_a_run_request_has_a_field_for_every_flag_of_run_and_no_other() -> None:
    parser = argparse.ArgumentParser()
    run_cmd.add_arguments(parser)
    # how it prints, and the files it writes beside (run.main's, not the run's)
    flags = {a.dest for a in parser._actions} - {"help", "json", "details", "quiet"}
    flags -= {"export_html", "export_csv", "export_md", "force"}
    assert flags == {f.name for f in fields(RunRequest)}
    args = parser.parse_args(
        ["--backends", "plain", "--size", "8M", "--max-time", "1m", "--ram", "--seed", "3"]
    )
    request = RunRequest.from_args(args)
    assert (request.backends, request.size, request.max_time, request.ram, request.seed) == (
        "plain", "8M", "1m", True, 3,
    )  # fmt: skip
    # the flags' defaults are the request's (suite None: quick, unless --command)
    assert request.suite is None and request.target == "/var/tmp"
    assert RunRequest() == RunRequest.from_args(parser.parse_args([]))


def test_the_data_file_may_grow_only_where_its_size_is_the_tools(tmp_path: Path) -> None:
    from cryptbench.planning.plan import GROWTH_SHARE, SIZE_ALIGN
    from cryptbench.planning.stopping_rule import default_max_bytes

    grown = plan_with(tmp_path, size=None, trial_time="1s", backends="plain,ext4-loop")
    share = int(default_max_bytes(tmp_path) * GROWTH_SHARE / len(grown.targets)) // SIZE_ALIGN * SIZE_ALIGN
    assert grown.size == 64 << 20 and grown.data_size_limit == share > grown.size
    same = plan_with(tmp_path, size=None, trial_time="0", backends="plain,ext4-loop")
    assert same.data_size_limit == 0
    # every target is made to hold the grown file, and the space check counts it
    assert grown.target_bytes - same.target_bytes == share - (64 << 20)
    assert grown.space_needed > same.space_needed
    # a size asked for is kept: --size, or a study's own
    assert plan_with(tmp_path, size="64M", trial_time="1s").data_size_limit == 0
    study = plan_with(tmp_path, size=None, suite="study-002", repeats=None, trial_time="1s", backends="plain")
    assert study.data_size_limit == 0
    # a byte budget too small for a larger file leaves it as it is
    assert (
        plan_with(tmp_path, size=None, repeats=None, max_bytes="100M", trial_time="1s").data_size_limit == 0
    )
    assert grown.to_json()["data_size_limit"] == share
