from pathlib import Path

import pytest

from cryptbench.errors import SafetyError, UnavailableError, UsageError
from cryptbench.plan import build_plan


def _plan(tmp_path: Path, **over: object):  # type: ignore[no-untyped-def]
    kw = {
        "backends": "plain",
        "suite": "quick",
        "size": "8M",
        "repeats": 2,
        "seed": 1,
        "target": str(tmp_path),
        "io_mode": "auto",
        "data": "random",
        "db": tmp_path / "r.sqlite",
    }
    kw.update(over)
    return build_plan(**kw)  # type: ignore[arg-type]


def test_a_good_plan(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    assert plan.backends == ("plain",)
    assert plan.size == 8 << 20
    assert plan.to_json()["workloads"][0] == "seq1m-q8-read"


@pytest.mark.parametrize(
    ("over", "error", "message"),
    [
        ({"backends": "nope"}, UsageError, "unknown backend 'nope'"),
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
    ],
)
def test_bad_input_is_refused(tmp_path: Path, over: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        _plan(tmp_path, **over)


def test_a_file_is_not_a_target(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(UsageError, match="not a directory"):
        _plan(tmp_path, target=str(f))


def test_not_enough_space_gives_the_numbers(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"not enough free space .* needs .* is free"):
        _plan(tmp_path, size="1T")


def test_baselines_are_added(tmp_path: Path) -> None:
    try:
        plan = _plan(tmp_path, backends="gocryptfs")
    except UnavailableError as e:
        pytest.skip(str(e))
    assert plan.backends == ("plain", "gocryptfs")
    assert plan.added_baselines == ("plain",)
