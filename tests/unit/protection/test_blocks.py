"""The tamper and space probes' logic: which backing blocks changed, where to flip, and
the ratios against a baseline. Real backends are probed in
tests/integration/test_protection_real.py, the LUKS variants in tests/lab/test_protection.py."""

from __future__ import annotations

import errno
import os
import subprocess
from array import array
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cryptbench.analysis import warning_rules
from cryptbench.backends.base import Helper, Target
from cryptbench.machine.session import Session
from cryptbench.model.errors import ProvisionError
from cryptbench.model.vocabulary import Verdict
from cryptbench.pipeline.verify import with_ratios
from cryptbench.protection import blocks, tamper
from cryptbench.protection.blocks import HOLE, Run
from cryptbench.protection.findings import PropertyFinding
from cryptbench.report import charts, export_html, protection_rows
from tests.support.documents import doc_with
from tests.support.html_page import Page


def test_changed_runs_are_found_per_file_holes_included(tmp_path: Path) -> None:
    image = tmp_path / "disk.img"
    with open(image, "wb") as f:
        f.truncate(64 * blocks.BLOCK)  # all a hole
        f.seek(3 * blocks.BLOCK)
        f.write(b"a" * blocks.BLOCK)
    other = tmp_path / "other"
    other.write_bytes(b"b" * 5000)  # one block and a short one
    before = blocks.digest((image, other))
    assert len(before.crcs[image]) == 64 and before.crcs[image][0] == HOLE and before.crcs[image][3] != HOLE
    assert len(before.crcs[other]) == 2
    with open(image, "r+b") as f:
        for block in (10, 11, 12, 40):  # a hole written, and the data block left alone
            f.seek(block * blocks.BLOCK + 7)
            f.write(b"z")
    new = tmp_path / "new"
    new.write_bytes(b"c" * 3 * blocks.BLOCK)
    after = blocks.digest((image, other, new))
    assert sorted(blocks.changed(before, after), key=lambda r: (str(r.path), r.first)) == [
        Run(image, 10, 3),
        Run(image, 40, 1),
        Run(new, 0, 3),
    ]
    assert blocks.changed(after, blocks.digest((image, other, new))) == []


@settings(max_examples=200)
@given(
    data=st.binary(min_size=1, max_size=3 * blocks.BLOCK),
    at=st.integers(min_value=0),
    delta=st.integers(min_value=1, max_value=255),
)
def test_any_changed_byte_changes_its_blocks_sum_and_no_other(data: bytes, at: int, delta: int) -> None:
    at %= len(data)
    changed = bytearray(data)
    changed[at] = (changed[at] + delta) % 256
    before, after = blocks.block_sums(data), blocks.block_sums(bytes(changed))
    assert [i for i in range(len(before)) if before[i] != after[i]] == [at // blocks.BLOCK]
    assert HOLE not in before.tolist()


def test_a_short_last_block_grown_by_zeros_is_a_change() -> None:
    short = b"x" * 100
    assert blocks.block_sums(short)[0] != blocks.block_sums(short + b"\0")[0]
    assert blocks.block_sums(b"\0" * blocks.BLOCK)[0] != blocks.block_sums(b"\0" * 100)[0]


@given(
    was=st.lists(st.integers(min_value=0, max_value=3), max_size=40),
    now=st.lists(st.integers(min_value=0, max_value=3), max_size=40),
)
def test_changed_runs_are_the_maximal_runs_of_new_or_differing_blocks(was: list[int], now: list[int]) -> None:
    path = Path("/f")
    runs = blocks.changed(blocks.Blocks({path: array("Q", was)}), blocks.Blocks({path: array("Q", now)}))
    differs = [i >= len(was) or was[i] != c for i, c in enumerate(now)]
    covered = [False] * len(now)
    for r in runs:
        assert r.count > 0 and all(differs[r.first : r.first + r.count])
        covered[r.first : r.first + r.count] = [True] * r.count
        assert r.first == 0 or not differs[r.first - 1]  # maximal on both sides
        assert r.first + r.count == len(now) or not differs[r.first + r.count]
    assert covered == differs


def test_a_flip_goes_in_the_longest_run_and_never_in_an_images_metadata(tmp_path: Path) -> None:
    img = tmp_path / "disk.img"
    data, journal, inode = Run(img, 2240, 17), Run(img, 16387, 3), Run(img, 73, 1)
    metadata = Run(img, 1631, 81)  # a copy-on-write filesystem's new tree blocks, say
    assert tamper.candidates([inode, data, journal, metadata], image=True) == [data]
    assert Run(img, 2240, 16).middle == (2240 + 8) * blocks.BLOCK + blocks.BLOCK // 2
    # dm-integrity: its journal's copy and the data area, alike in length; the data last
    copy, area = Run(img, 100, 16), Run(img, 9000, 16)
    assert tamper.candidates([copy, area], image=True) == [area, copy]
    # a ciphertext directory: every changed file of the probe's own, CryFS's blocks included
    cryfs = [Run(tmp_path / n, 0, 4) for n in ("A", "B", "C")]
    assert len(tamper.candidates(cryfs, image=False)) == 3
    # gocryptfs: the file's 17 blocks, and its one-block header's rewrite; the longest first
    header, body, tail = Run(tmp_path / "X", 0, 1), Run(tmp_path / "X", 1, 17), Run(tmp_path / "Y", 0, 2)
    assert tamper.candidates([header, tail, body], image=False) == [body, tail, header]


def test_space_ratios_are_against_the_baselines_measure() -> None:
    mine = {"fixed": 1, "tree": {"files": 3, "data": 100, "used": 300}, "large": {"skipped": "no room"}}
    base = {
        "fixed": 1,
        "tree": {"files": 3, "data": 100, "used": 100},
        "large": {"files": 1, "data": 8, "used": 8},
    }
    out = with_ratios(mine, base)
    assert out["tree"] == {"files": 3, "data": 100, "used": 300, "baseline_used": 100, "ratio": 3.0}
    assert out["baseline_fixed"] == 1
    assert out["large"] == {"skipped": "no room"}
    assert with_ratios(mine, {}) == mine  # plain: no baseline, no ratio


def test_a_tamper_finding_against_the_documentation_is_said_in_its_own_words() -> None:
    silent = PropertyFinding(
        Verdict.SILENT, "a byte flipped: read back changed", declared=(Verdict.DETECTED, "its docs")
    )
    assert silent.disagrees and silent.protects is False
    doc = doc_with({"gocryptfs": {"sight": "directory", "tamper": silent.to_json()}})
    (w,) = warning_rules.protection_disagrees(doc)
    assert w.message == (
        "gocryptfs is said to detect tampering (its docs); here a flipped byte was returned silently: "
        "a byte flipped: read back changed"
    )
    assert not PropertyFinding(
        Verdict.UNKNOWN, "probe error", declared=(Verdict.DETECTED, "its docs")
    ).disagrees


def test_the_table_and_the_chart_show_space_against_the_baseline() -> None:
    space = {
        "fixed": 4096,
        "tree": {"files": 203, "data": 2097152, "used": 6000000, "baseline_used": 2000000, "ratio": 3.0},
        "large": {"files": 1, "data": 8388608, "used": 10000000, "baseline_used": 8388608, "ratio": 1.192},
        "granularity": {"bytes": 32768, "blocks": 8, "files": 2, "of": 2173},
    }
    found = {"verdict": "detected", "evidence": "EIO"}
    doc = doc_with(
        {"cryfs": {"sight": "directory", "tamper": found, "space": space}, "plain": {"sight": "directory"}}
    )
    rows = dict((name, cells) for name, _sight, cells in protection_rows.rows(doc))
    assert rows["cryfs"][-5:] == ["✓ detected", "3.00x", "1.19x", "4.0 KiB", "32.0 KiB"]
    assert rows["plain"][-4:] == ["-", "-", "-", "-"]
    luks = {**space, "fixed": 17 << 20, "baseline_fixed": 1 << 20}
    held = doc_with({"fscrypt": {"sight": "LUKS container", "space": luks}})
    assert protection_rows.rows(held)[0][2][-2] == "17.0 MiB vs 1.0 MiB"
    chart = charts.space_chart(doc)
    assert chart is not None and "cryfs against plain" in chart.svg()
    assert charts.space_chart(doc_with({})) is None


@pytest.mark.parametrize(("verdict", "protects"), [("detected", True), ("silent", False), ("unknown", None)])
def test_tamper_verdicts_read_back_from_json(verdict: str, protects: bool | None) -> None:
    stored = {
        "verdict": verdict,
        "evidence": "byte 34816 flipped",
        "detail": {"offset": 34816},
        "declared": {"verdict": "detected", "source": "its documentation"},
    }
    f = PropertyFinding.from_json(stored)
    assert f.protects is protects  # what the tables and --needs tamper read
    assert f.disagrees is (protects is False)  # silent where the documentation says detected
    assert f.to_json() == stored  # nothing lost on the way back
    with pytest.raises(ValueError):
        PropertyFinding.from_json({**stored, "verdict": "maybe"})


def test_a_daemon_that_dies_on_the_flipped_byte_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its death is noticed after the read, the byte is back, and the error names it."""
    fills = iter((b"\x01", b"\x02"))
    monkeypatch.setattr(tamper.secrets, "token_bytes", lambda n: next(fills) * n)
    session = Session.create(tmp_path)
    try:
        path = session.path("targets", "fuse")
        path.mkdir(parents=True)
        gone = subprocess.Popen(["true"])
        gone.wait()
        daemon = Helper("gocryptfs", gone.pid, psutil.Process().create_time() - 1)
        target = Target("fuse", "gocryptfs", True, "plain", path, (path,), helpers=(daemon,))
        folder = path / "probe"
        folder.mkdir()

        def write(p: Path, data: bytes) -> None:
            p.write_bytes(data)

        with pytest.raises(ProvisionError, match="its gocryptfs died when the tamper probe read"):
            tamper.probe_tamper(session, folder, target, write, lambda _b: blocks.digest(target.backing))
        assert (folder / "tamper").read_bytes() == b"\x02" * tamper.TAMPER_BYTES  # put back
    finally:
        session.close()


def test_the_page_draws_the_space_chart_in_the_protection_section() -> None:
    space = {"fixed": 4096, "tree": {"files": 3, "data": 9, "used": 12, "baseline_used": 4, "ratio": 3.0}}
    doc = doc_with({"cryfs": {"sight": "directory", "space": space}})
    page = Page()
    page.feed(export_html.render(doc, [], charts.space_chart(doc)))
    assert "protection" in page.sections and page.charts == ["space"] and page.svgs == 1


def test_what_no_ranked_target_protects_is_one_line() -> None:
    found = {"sight": "directory", "names": {"verdict": "hidden", "evidence": "e"}}
    for prop in ("sizes", "tree", "tamper"):
        found[prop] = {"verdict": "shown" if prop != "tamper" else "silent", "evidence": "e"}
    doc = doc_with({t: found for t in ("gocryptfs", "securefs", "encfs", "fscrypt", "cryfs", "plain")})
    assert protection_rows.cheapest_lines(doc) == [
        "None of the ranked targets hides sizes or the tree or detects tampering."
    ]


XOR = bytes(b ^ 0x55 for b in range(256))  # the stand-in layer's "cipher", for translate


class _Layer:
    """A stand-in for an encrypting layer: a view directory the probe writes in, and a
    backing directory that holds each view file's "ciphertext" (its bytes XORed) as
    `copies` files, brought up to date whenever the probe asks for a settled backing, and
    a neighbour's file there that changes every time (a log the layer keeps)."""

    def __init__(self, session: Session, copies: int = 1) -> None:
        self.view = session.path("targets", "layer", "view")
        self.backing = session.path("targets", "layer", "backing")
        self.view.mkdir(parents=True)
        self.backing.mkdir()
        self.copies = copies
        self.settles = 0
        self.asked: list[blocks.Blocks | None] = []  # what each settled() was to differ from
        self.given: list[blocks.Blocks] = []  # what each returned
        self.mirror = True  # False: the layer stops writing what the view changed
        self.target = Target("layer", "layer", True, "plain", self.view, (self.backing,))

    def settled(self, before: blocks.Blocks | None) -> blocks.Blocks:
        self.settles += 1
        self.asked.append(before)
        # named to sort after the probe's own files, where a longest-first order would try it first
        (self.backing / "zz-neighbour.log").write_bytes(bytes([self.settles]) * tamper.TAMPER_BYTES)
        if self.mirror:
            for f in self.view.rglob("*"):
                with open(f, "rb") as plain:  # not read_bytes, which a test makes the layer's read
                    data = plain.read()
                for n in range(self.copies):
                    (self.backing / f"{f.name}.{n}").write_bytes(data.translate(XOR))
        self.given.append(blocks.digest(self.target.backing))
        return self.given[-1]


@pytest.fixture
def probing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Session]:
    """A session for the tamper probe, closed after the test; the probe's first write all
    0x01, its rewrite all 0x02."""
    fills = iter((b"\x01", b"\x02"))
    monkeypatch.setattr(tamper.secrets, "token_bytes", lambda n: next(fills) * n)
    session = Session.create(tmp_path)
    yield session
    session.close()


def _flips(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, int]]:
    """Every byte the probe flips, (file, offset), in order; the flips still happen."""
    flipped: list[tuple[Path, int]] = []
    flip = blocks.flip_byte
    monkeypatch.setattr(blocks, "flip_byte", lambda p, o: flipped.append((p, o)) or flip(p, o))
    return flipped


def _plain(session: Session) -> Target:
    """A plain directory: its own backing, so a flip shows through as it is."""
    path = session.path("targets", "plain")
    path.mkdir(parents=True)
    return Target("plain", "plain", False, None, path, (path,))


def _write(p: Path, data: bytes) -> None:
    p.write_bytes(data)


def test_a_flip_that_a_plain_file_shows_is_silent_corruption(probing: Session) -> None:
    """Where the view is its own backing, the flipped byte comes back as it is: one byte
    changed, no error; and the byte is put back."""
    target = _plain(probing)
    folder = target.path / "probe"
    folder.mkdir()
    found = tamper.probe_tamper(probing, folder, target, _write, lambda _b: blocks.digest(target.backing))
    at = Run(folder / "tamper", 0, 16).middle
    assert found.verdict is Verdict.SILENT
    assert found.evidence == (
        f"byte {at} of tamper (in a run of 16 changed 4 KiB block(s)) flipped: "
        "the file read back without an error, 1 of its bytes changed"
    )
    assert found.detail == {"bytes_changed": 1, "offset": at, "file": "tamper"}
    assert (folder / "tamper").read_bytes() == b"\x02" * tamper.TAMPER_BYTES  # put back


@pytest.mark.parametrize(
    ("number", "named"),
    [
        (errno.EIO, "EIO (Input/output error)"),  # as an authenticating layer answers
        (4321, "4321 (Unknown error 4321)"),  # an errno Python has no name for: its number
    ],
)
def test_a_layer_that_refuses_a_flipped_file_detected_it(
    probing: Session, monkeypatch: pytest.MonkeyPatch, number: int, named: str
) -> None:
    """A read that fails is a detection, named by its errno (by its number when it has no
    name); the byte flipped is the middle of the probe's own changed run, never the
    neighbour's, and it is back in the backing afterwards."""
    layer = _Layer(probing)
    flipped = _flips(monkeypatch)
    read = Path.read_bytes
    ciphertext = (b"\x02" * tamper.TAMPER_BYTES).translate(XOR)

    def authenticated(p: Path) -> bytes:
        if p.name == "tamper" and read(layer.backing / "tamper.0") != ciphertext:
            raise OSError(number, os.strerror(number))
        return read(p)

    monkeypatch.setattr(Path, "read_bytes", authenticated)
    found = tamper.probe_tamper(probing, layer.view, layer.target, _write, layer.settled)
    at = Run(layer.backing / "tamper.0", 0, 16).middle
    assert flipped == [(layer.backing / "tamper.0", at)]
    assert found.verdict is Verdict.DETECTED
    assert found.evidence == (
        f"byte {at} of tamper.0 (in a run of 16 changed 4 KiB block(s)) flipped: "
        f"reading the file back failed with {named}"
    )
    assert found.detail == {"error": named.split()[0], "offset": at, "file": "tamper.0"}
    # each digest after the first waits for the backing to differ from the one before it
    # (a daemon that writes late, CryFS, is given time to), not merely to settle
    assert layer.asked[0] is None and len(layer.asked) == 3
    assert all(a is g for a, g in zip(layer.asked[1:], layer.given, strict=False))
    assert read(layer.backing / "tamper.0") == ciphertext  # put back


def test_flips_that_miss_are_put_back_and_the_probe_gives_up_after_max_tries(
    probing: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view that never sees its backing (the flips miss): each flip is undone, the
    longest runs of the probe's own files are tried, MAX_TRIES of them, and the probe
    reports its own failure, never a verdict on the target."""
    layer = _Layer(probing, copies=tamper.MAX_TRIES + 2)
    flipped = _flips(monkeypatch)
    found = tamper.probe_tamper(probing, layer.view, layer.target, _write, layer.settled)
    assert found.verdict is Verdict.UNKNOWN
    assert found.evidence == (
        f"probe error: a byte flipped in each of {tamper.MAX_TRIES} changed run(s) of the backing, "
        "and the file read back unchanged each time (the flips missed its ciphertext)"
    )
    own = [layer.backing / f"tamper.{n}" for n in range(layer.copies)]
    assert [f for f, _ in flipped] == sorted(own, key=str, reverse=True)[: tamper.MAX_TRIES]  # no neighbour
    for f in own:
        assert f.read_bytes() == (b"\x02" * tamper.TAMPER_BYTES).translate(XOR)  # put back


def test_a_rewrite_that_changes_no_backing_block_is_a_probe_error(probing: Session) -> None:
    layer = _Layer(probing)
    settled = layer.settled

    def stops_after_the_first_write(before: blocks.Blocks | None) -> blocks.Blocks:
        layer.mirror = layer.settles < 2  # the first look and the first write's
        return settled(before)

    found = tamper.probe_tamper(probing, layer.view, layer.target, _write, stops_after_the_first_write)
    assert (found.verdict, found.evidence) == (
        Verdict.UNKNOWN,
        "probe error: no run of backing blocks about the file's length changed when it was rewritten",
    )


class _ImageLayer(_Layer):
    """The stand-in layer on one image file: a filesystem's metadata (four blocks at the
    start, rewritten every time) and the probe file's "ciphertext" at block DATA."""

    DATA = 100  # the block where the file's data lies in the image

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.image = self.backing / "disk.img"
        self.image.write_bytes(bytes(200 * blocks.BLOCK))
        self.target = Target("image", "image", True, "plain", self.view, (self.image,))

    def settled(self, _before: blocks.Blocks | None) -> blocks.Blocks:
        self.settles += 1
        with open(self.image, "r+b") as img:
            img.write(bytes([self.settles]) * 4 * blocks.BLOCK)
            if (self.view / "tamper").exists():
                img.seek(self.DATA * blocks.BLOCK)
                with open(self.view / "tamper", "rb") as plain:
                    img.write(plain.read().translate(XOR))
        return blocks.digest(self.target.backing)


def test_on_an_image_the_flip_goes_in_the_files_run_not_its_metadata(
    probing: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    layer = _ImageLayer(probing)
    flipped = _flips(monkeypatch)
    found = tamper.probe_tamper(probing, layer.view, layer.target, _write, layer.settled)
    assert flipped == [(layer.image, Run(layer.image, _ImageLayer.DATA, 16).middle)]
    assert found.verdict is Verdict.UNKNOWN  # the view never reads the image: the flip missed
    assert "a byte flipped in each of 1 changed run(s) of the backing" in found.evidence


def test_on_an_image_only_runs_half_to_twice_the_files_length_are_candidates(tmp_path: Path) -> None:
    img = tmp_path / "disk.img"
    want = tamper.TAMPER_BYTES // blocks.BLOCK  # 16
    edges = [Run(img, 1000 * n, count) for n, count in enumerate((7, 8, 32, 33, 48), start=1)]
    assert [r.count for r in tamper.candidates(edges, image=True)] == [8, 32]
    # the closest to the file's length first, not the shortest
    near, far = Run(img, 10, want + 4), Run(img, 500, want - 6)
    assert tamper.candidates([far, near], image=True) == [near, far]


def test_a_read_back_cut_short_counts_the_missing_bytes_as_changed(
    probing: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = _plain(probing)
    read = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: read(p)[:-100] if p.name == "tamper" else read(p))
    found = tamper.probe_tamper(
        probing, target.path, target, _write, lambda _b: blocks.digest(target.backing)
    )
    assert found.verdict is Verdict.SILENT
    assert found.detail["bytes_changed"] == 1 + 100  # the flipped byte, and the 100 it lacks


@pytest.mark.parametrize(
    ("got", "expected", "count"),
    [
        (b"abcd", b"abcd", 0),
        (b"abXd", b"abcd", 1),
        (b"ab", b"abcd", 2),
        (b"XbcdEF", b"abcd", 3),
        (b"", b"ab", 2),
    ],
)
def test_a_read_back_counts_the_bytes_that_differ_and_those_only_one_side_has(
    got: bytes, expected: bytes, count: int
) -> None:
    assert tamper._differing(got, expected) == count
