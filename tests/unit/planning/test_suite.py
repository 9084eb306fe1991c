from pathlib import Path

import pytest

from cryptbench.model.errors import UsageError
from cryptbench.planning.suite import builtin_suites, load_suite, parse_suite


def test_quick_suite_is_the_six_diskmark_tests() -> None:
    suite = load_suite("quick")
    assert [w.name for w in suite.workloads] == [
        "seq1m-q8-read",
        "seq1m-q8-write",
        "rnd4k-q32-read",
        "rnd4k-q32-write",
        "rnd4k-q1-read",
        "rnd4k-q1-write",
    ]
    w = suite.workloads[2]
    assert (w.rw, w.bs, w.iodepth, w.is_write) == ("randread", 4096, 32, False)
    assert "quick" in builtin_suites()


def _w(**over: object) -> dict:
    return {"name": "s", "workloads": [{"name": "a", "rw": "read", "bs": "4K", "iodepth": 1, **over}]}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_w(colour="red"), "unknown key 'colour'"),
        (_w(rw="trim"), "rw 'trim'"),
        (_w(iodepth=0), "iodepth must be from 1"),
        (_w(iodepth=True), "iodepth must be a whole number"),
        (_w(iodepth="8"), "iodepth must be a whole number"),
        (_w(bs="3"), "multiple of 512"),
        (_w(bs="12XB"), "unknown unit"),
        (_w(name="../../etc"), "name '../../etc'"),
        ({"name": "s", "workloads": []}, "no workloads"),
        ({"workloads": []}, "missing key 'name'"),
        (_w(view="raw"), "view must be one of decrypted, backing"),
        (_w(view="backing", rw="write"), "view 'backing' is read-only"),
    ],
)
def test_bad_suites_are_refused(data: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        parse_suite(data, "test")


def test_duplicate_names_refused() -> None:
    data = _w()
    data["workloads"].append(dict(data["workloads"][0]))
    with pytest.raises(UsageError, match="unique"):
        parse_suite(data, "test")


def test_suite_from_file_and_bad_toml(tmp_path: Path) -> None:
    good = tmp_path / "mine.toml"
    good.write_text('name = "mine"\n[[workloads]]\nname = "r"\nrw = "read"\nbs = "64K"\niodepth = 4\n')
    assert load_suite(str(good)).workloads[0].bs == 65536
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    with pytest.raises(UsageError, match="not valid TOML"):
        load_suite(str(bad))
    with pytest.raises(UsageError, match="unknown suite"):
        load_suite("no-such-suite")


def test_study_004_has_its_summary_and_the_studys_own_commands() -> None:
    s = load_suite("study-004")
    assert s.summary == "drop-min-max" and s.repeats == 10 and s.size == 128 << 20
    assert [w.name for w in s.workloads] == ["dd-zero", "dd-random"]
    assert [(w.name, w.style) for w in s.as_published] == [  # type: ignore[union-attr]
        ("dd-zero-as-published", "as-published"),
        ("dd-random-as-published", "as-published"),
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"summary": "mean"}, "summary must be one of drop-min-max"),
        ({"summary": 3}, "summary must be a string"),
        ({"as_published": {"name": "b"}}, "as_published must be a list"),
        ({"as_published": ["dd"]}, "as_published 1: must be a table"),
        ({"as_published": [{"name": "a", "app": "dd-write"}]}, "workload names must be unique"),
        ({"as_published": [{"name": "b", "app": "dd-write", "fsync": False}]}, "unknown key 'fsync'"),
    ],
)
def test_bad_summary_and_as_published_tables(extra: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_suite({**_w(), **extra}, "test suite")
