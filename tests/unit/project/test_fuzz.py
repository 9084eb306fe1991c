"""Property tests on every parser of user input and on the fio JSON parser.

Each parser must either return a valid value or raise its one-line error
(UsageError / StoreError / TrialError); any other exception is a traceback a
user would see, and fails the test.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cryptbench.backends import REGISTRY
from cryptbench.engines.fio import parse_fio_json
from cryptbench.machine.keys import MAX_PASSPHRASE, read_passphrase_file
from cryptbench.model.errors import StoreError, TrialError, UsageError
from cryptbench.model.units import parse_size
from cryptbench.planning.suite import _NAME_RE, MAX_BLOCK, load_suite, parse_suite
from cryptbench.planning.targets import parse_backend_list
from cryptbench.store.database import parse_run_ref
from tests.support.paths import TESTS
from tests.support.reliability import count

FIXTURES = TESTS / "fixtures" / "fio"
FIO_TEXTS = {p.stem: p.read_text() for p in sorted(FIXTURES.glob("*.json"))}


def _one_line(e: Exception) -> None:
    assert "\n" not in str(e) and str(e), repr(e)
    assert len(str(e)) < 400, "an error message must not echo a whole input"


REJECTED = object()


def _parse(parser: Callable[[Any], Any], arg: Any, error: type[Exception], figure: str) -> Any:
    """parser(arg), or REJECTED when it raised its one-line `error` (counted as a figure)."""
    try:
        return parser(arg)
    except error as e:
        _one_line(e)
        count(f"malformed inputs rejected: {figure}")
        return REJECTED


# -- sizes ---------------------------------------------------------------------------


@given(st.text(max_size=60))
def test_any_text_is_a_size_or_a_clear_error(text: str) -> None:
    n = _parse(parse_size, text, UsageError, "sizes")
    if n is REJECTED:
        return
    assert isinstance(n, int) and n >= 0


@given(
    st.integers(min_value=0, max_value=10**6),
    st.sampled_from(["", "B", "K", "KiB", "M", "MiB", "G", "GiB", "T", "TiB", "KB", "MB", "GB", "TB"]),
)
def test_sizes_mean_what_fio_means(number: int, unit: str) -> None:
    factor = {
        "": 1,
        "B": 1,
        "K": 1 << 10,
        "M": 1 << 20,
        "G": 1 << 30,
        "T": 1 << 40,
        "KB": 10**3,
        "MB": 10**6,
        "GB": 10**9,
        "TB": 10**12,
    }[unit.replace("iB", "")]
    assert parse_size(f"{number}{unit}") == number * factor
    assert parse_size(f" {number} {unit.lower()} ") == number * factor


# -- suite files ---------------------------------------------------------------------

_scalars = st.one_of(
    st.text(max_size=12),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.booleans(),
    st.floats(allow_nan=True),
    st.sampled_from(["read", "write", "randread", "randwrite", "4K", "1M", "0", "../x", "/etc", "64M"]),
)
_workload = st.dictionaries(
    st.sampled_from(["name", "rw", "bs", "iodepth", "size", "filename", "exec_prerun", "direct"]),
    _scalars,
    max_size=6,
)
_suite = st.dictionaries(
    st.sampled_from(["name", "description", "workloads", "repeats", "size", "extra"]),
    st.one_of(_scalars, st.lists(st.one_of(_workload, _scalars), max_size=4)),
    max_size=5,
)


@given(_suite)
def test_any_suite_table_is_a_valid_suite_or_a_clear_error(data: dict[str, Any]) -> None:
    try:
        suite = parse_suite(data, "suite file 'fuzz.toml'")
    except UsageError as e:
        _one_line(e)
        count("malformed inputs rejected: suite files")
        return
    _valid(suite)


def _valid(suite: Any) -> None:
    """What an accepted suite guarantees the runner: workloads, each safely named, with
    a block size and a depth fio takes."""
    assert suite.workloads
    for w in suite.workloads:
        assert _NAME_RE.match(w.name) and "/" not in w.name and ".." not in w.name.split(".")
        if hasattr(w, "bs"):
            assert 512 <= w.bs <= MAX_BLOCK and w.bs % 512 == 0
            assert 1 <= w.iodepth <= 1024


@given(st.binary(max_size=300))
def test_any_suite_file_bytes_are_a_suite_or_a_clear_error(raw: bytes) -> None:
    with tempfile.NamedTemporaryFile(suffix=".toml") as f:
        f.write(raw)
        f.flush()
        try:
            suite = load_suite(f.name)
        except UsageError as e:
            _one_line(e)
            count("malformed inputs rejected: suite files")
            return
        _valid(suite)


W1 = 'workloads = [{name = "a", rw = "read", bs = "4K", iodepth = 1}]'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('name = "s"\nworkloads = [{name = "../../etc", rw = "read", bs = "4K", iodepth = 1}]', "name"),
        ('name = "s"\nworkloads = [{name = "/abs", rw = "read", bs = "4K", iodepth = 1}]', "name"),
        ('name = "s"\nworkloads = [{name = "a", rw = "read", bs = "0", iodepth = 1}]', "bs"),
        ('name = "s"\nworkloads = [{name = "a", rw = "read", bs = "1T", iodepth = 1}]', "bs"),
        ('name = "s"\nworkloads = [{name = "a", rw = "read", bs = "4K", iodepth = -1}]', "iodepth"),
        ('name = "s"\nworkloads = [{name = "a", rw = "read", bs = "4K", iodepth = 1, x = 1}]', "unknown key"),
        ('name = "s"\nworkloads = [{name = "a", rw = "trim", bs = "4K", iodepth = 1}]', "rw"),
        ('name = "s"\nworkloads = [{name = "a", rw = "read", bs = 4096, iodepth = 1}]', "must be a string"),
        ('name = "s"\nrepeats = -3\n' + W1, "repeats"),
        ('name = "s"\nrepeats = true\n' + W1, "repeats must be a whole number"),
        ('name = "s"\nsize = "0"\n' + W1, "size"),
        ('name = "s"\nsize = "100000T"\n' + W1, "size"),
    ],
)
def test_named_suite_mistakes(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "s.toml"
    f.write_text(text)
    with pytest.raises(UsageError, match=message) as e:
        load_suite(str(f))
    _one_line(e.value)
    count("malformed inputs rejected: suite files")


# -- backend lists and run ids ---------------------------------------------------------


@given(st.lists(st.sampled_from([*REGISTRY, ",", " ", "x", "-", "."]), max_size=12).map("".join) | st.text())
def test_any_backend_list_is_known_names_or_a_clear_error(text: str) -> None:
    names = _parse(parse_backend_list, text, UsageError, "backend lists")
    if names is REJECTED:
        return
    assert names and len(set(names)) == len(names) and set(names) <= set(REGISTRY)


@given(st.text(max_size=30) | st.integers(min_value=0, max_value=10**30).map(str))
def test_any_run_reference_is_an_id_or_a_clear_error(text: str) -> None:
    ref = _parse(parse_run_ref, text, StoreError, "run ids")
    if ref is REJECTED:
        return
    assert ref is None or (0 <= ref < 2**63)


@given(st.binary(max_size=MAX_PASSPHRASE + 20))
def test_any_passphrase_file_is_one_line_or_a_clear_error(raw: bytes) -> None:
    fd, name = tempfile.mkstemp()
    try:
        os.write(fd, raw)
        os.close(fd)
        try:
            got = read_passphrase_file(name)
        except UsageError as e:
            _one_line(e)
            assert raw.strip(b"\n") == b"" or raw[:8] not in str(e).encode()  # never echoed
            count("malformed inputs rejected: passphrase files")
            return
        assert got and b"\n" not in got and b"\0" not in got and len(got) <= MAX_PASSPHRASE
    finally:
        os.unlink(name)


# -- fio's JSON ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FIO_TEXTS))
def test_every_truncation_of_fio_output_is_a_clear_error(name: str) -> None:
    text = FIO_TEXTS[name]
    parse_fio_json(text)  # the whole document parses
    for cut in range(0, len(text.rstrip()), 7):
        with pytest.raises(TrialError) as e:
            parse_fio_json(text[:cut])
        _one_line(e.value)
        count("malformed inputs rejected: fio output")


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=20,
)


def _leaves(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _leaves(v, (*path, k))] + [path]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in _leaves(v, (*path, i))] + [path]
    return [path]


@given(st.sampled_from(sorted(FIO_TEXTS)), st.data(), _json)
def test_fio_output_from_another_version_is_parsed_or_a_clear_error(name: str, data: Any, value: Any) -> None:
    """Any one field of a real document replaced by any JSON value, or removed."""
    doc = json.loads(FIO_TEXTS[name])
    paths = [p for p in _leaves(doc) if p]
    path = data.draw(st.sampled_from(paths))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if data.draw(st.booleans()):
        parent[path[-1]] = value
    else:
        del parent[path[-1]]
    try:
        m = parse_fio_json(json.dumps(doc))
    except TrialError as e:
        _one_line(e)
        count("malformed inputs rejected: fio output")
        return
    assert m.throughput >= 0 and m.io_bytes > 0


@given(_json)
def test_any_json_is_fio_output_or_a_clear_error(value: Any) -> None:
    try:
        m = parse_fio_json(json.dumps(value))
    except TrialError as e:
        _one_line(e)
        count("malformed inputs rejected: fio output")
        return
    assert m.throughput >= 0 and m.io_bytes > 0  # whatever was accepted is a measurement
