"""The protection probes' logic: what a sight of the backing shows, and the verdicts
drawn from it. Real backends are probed in tests/integration/test_protection_real.py."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from cryptbench.analysis import ranking, warning_rules
from cryptbench.backends.base import Target
from cryptbench.machine.session import Session
from cryptbench.model.errors import UsageError
from cryptbench.model.vocabulary import Property, Verdict
from cryptbench.model.warning_kinds import WarningKind
from cryptbench.pipeline import verify
from cryptbench.planning.plan import parse_needs
from cryptbench.protection import probes, space
from cryptbench.protection.findings import PropertyFinding, Protection
from cryptbench.protection.sight import LUKS_MAGIC, QCOW_MAGIC, Entry, Sight, look
from cryptbench.report import console, protection_rows
from tests.support.documents import doc_with


@pytest.mark.parametrize(
    ("mapping", "verdict", "block"),
    [
        # gocryptfs: a header, then 4 KiB blocks each with its tag: every size its own
        ({1: [51], 4095: [4145], 4096: [4146], 4097: [4180], 100_000: [100_818]}, Verdict.SHOWN, None),
        # padded to 4 KiB blocks: 4095 and 4096 look alike, 4097 does not
        ({1: [4096], 4095: [4096], 4096: [4096], 4097: [8192], 100_000: [102_400]}, Verdict.BLOCK, 4096),
        # CryFS: fixed-size blocks, several for a big file
        (
            {1: [16_400], 4095: [16_400], 4096: [16_400], 4097: [16_400], 100_000: [16_400] * 8},
            Verdict.HIDDEN,
            None,
        ),
        # nothing of each file's own (an image whose sizes the probe cannot attribute)
        ({1: [], 4095: [], 4096: [], 4097: [], 100_000: []}, Verdict.HIDDEN, None),
        # one file each, but every one the same size: padded to a fixed size
        (
            {1: [65_536], 4095: [65_536], 4096: [65_536], 4097: [65_536], 100_000: [65_536]},
            Verdict.HIDDEN,
            None,
        ),
        # securefs's full format: a data file as long as the file beside a meta file of its
        # own that grows by blocks; the data file alone gives every size away
        (
            {
                1: [1, 4152],
                4095: [4095, 4152],
                4096: [4096, 4152],
                4097: [4097, 8248],
                100_000: [100_000, 102_776],
            },
            Verdict.SHOWN,
            None,
        ),
        # one file each and every size its own, but not in the files' order: nothing follows
        ({1: [8192], 4095: [4096], 4096: [12_288], 4097: [16_384], 100_000: [20_480]}, Verdict.HIDDEN, None),
    ],
)
def test_sizes_are_decided_from_the_backing_files_each_file_added(
    mapping: dict[int, list[int]], verdict: Verdict, block: int | None
) -> None:
    f = probes.decide_sizes(mapping)
    assert f.verdict is verdict, f.evidence
    assert f.detail.get("block") == block
    assert f.detail["mapping"] == {str(k): v for k, v in mapping.items()}


def test_a_plain_directory_shows_names_exact_sizes_and_the_tree(dir_target: tuple[Session, Target]) -> None:
    session, target = dir_target
    before = space.allocated(target.backing)  # bytes: the empty directory's own
    found = probes.probe(session, target)
    assert found.sight == "directory"
    assert found.space["fixed"] == before  # taken before the probe wrote anything
    assert {p: f.verdict for p, f in found.findings.items()} == {
        Property.NAMES: Verdict.SHOWN,
        Property.SIZES: Verdict.SHOWN,
        Property.TREE: Verdict.SHOWN,
        Property.TAMPER: Verdict.SILENT,
    }
    # the backing file of each is the file itself
    assert found.findings[Property.SIZES].detail["mapping"] == {str(s): [s] for s in probes.SIZES}
    assert found.findings[Property.TREE].evidence == (
        f"a new directory inside a new directory holds the {probes.TREE_FILES} new files, as written"
    )
    tamper = found.findings[Property.TAMPER]
    assert tamper.detail["bytes_changed"] == 1 and tamper.detail["file"] == "tamper", tamper.evidence
    # the data sets take at least their bytes here (du); one changed byte rewrote one block
    tree, large = found.space["tree"], found.space["large"]
    assert tree["used"] >= tree["data"] > 0 and tree["files"] > 100
    assert large["used"] >= large["data"] == space.LARGE_BYTES
    g = found.space["granularity"]
    assert (g["bytes"], g["blocks"], g["files"]) == (4096, 1, 1) and g["of"] >= space.LARGE_BYTES // 4096
    assert list(target.path.iterdir()) == []  # the probe removed its own directory


def _disguised(root: Path) -> Sight:
    """The directory as an encrypting filesystem of one file per file would show it:
    names hashed, 16 bytes added to each file, directories kept."""
    real = look((root,))
    assert real.entries is not None

    def name(path: str) -> str:
        return "/".join(hashlib.sha256(part.encode()).hexdigest()[:20] for part in path.split("/"))

    return Sight(
        "directory",
        {name(p): Entry(e.is_dir, e.size + (0 if e.is_dir else 16)) for p, e in real.entries.items()},
    )


def test_hashed_names_are_hidden_while_sizes_and_tree_show(dir_target: tuple[Session, Target]) -> None:
    session, target = dir_target
    found = probes.probe(session, target, seen=lambda: _disguised(target.path))
    assert found.findings[Property.NAMES].verdict is Verdict.HIDDEN
    assert found.findings[Property.SIZES].verdict is Verdict.SHOWN
    assert found.findings[Property.SIZES].detail["mapping"] == {str(s): [s + 16] for s in probes.SIZES}
    assert found.findings[Property.TREE].verdict is Verdict.SHOWN


def test_a_flat_block_store_hides_the_tree(dir_target: tuple[Session, Target]) -> None:
    """Every file's bytes in one flat directory, as CryFS keeps its blocks."""
    session, target = dir_target

    def flat() -> Sight:
        real = look((target.path,))
        assert real.entries is not None
        files = {p: e for p, e in real.entries.items() if not e.is_dir}
        return Sight(
            "directory", {hashlib.sha256(p.encode()).hexdigest(): Entry(False, 16_400) for p in files}
        )

    found = probes.probe(session, target, seen=flat)
    assert found.findings[Property.TREE].verdict is Verdict.HIDDEN
    assert found.findings[Property.SIZES].verdict is Verdict.HIDDEN
    assert found.findings[Property.NAMES].verdict is Verdict.HIDDEN


def test_directories_kept_side_by_side_without_their_nesting_hide_the_tree(
    dir_target: tuple[Session, Target],
) -> None:
    """Each directory a directory of the backing's, all of them at its top, each holding
    its own files: the files show which directory holds them, not which directory holds
    which. The tree is the nesting, and it is hidden."""
    session, target = dir_target

    def side_by_side() -> Sight:
        real = look((target.path,))
        assert real.entries is not None

        def h(path: str) -> str:
            return hashlib.sha256(path.encode()).hexdigest()[:16]

        seen: dict[str, Entry] = {}
        for p, e in real.entries.items():
            if e.is_dir:
                seen[h(p)] = e
            else:
                parent, _, name = p.rpartition("/")
                seen[f"{h(parent)}/{h(name)}" if parent else h(name)] = e
        return Sight("directory", seen)

    found = probes.probe(session, target, seen=side_by_side)
    tree = found.findings[Property.TREE]
    assert tree.verdict is Verdict.HIDDEN, tree.evidence
    assert "not a directory of 3 files inside another" in tree.evidence


@pytest.mark.parametrize(
    ("how", "verdict"), [("LUKS container", Verdict.HIDDEN), ("unreadable image", Verdict.UNKNOWN)]
)
def test_a_backing_without_a_readable_structure_hides_only_where_it_is_encrypted_whole(
    dir_target: tuple[Session, Target], how: str, verdict: Verdict
) -> None:
    """A LUKS container has no structure to read because all of it is ciphertext: names,
    sizes and the tree are hidden in it. An image the probe cannot read proves nothing."""
    session, target = dir_target
    found = probes.probe(session, target, seen=lambda: Sight(how, None, "no structure to read"))
    for prop in (Property.SIZES, Property.TREE):
        assert found.findings[prop].verdict is verdict, (prop, found.findings[prop].evidence)
        assert found.findings[prop].evidence == f"{how}: no structure to read"
    if how == "LUKS container":
        assert found.findings[Property.NAMES].verdict is Verdict.HIDDEN


def test_an_ext4_image_is_read_with_debugfs_and_containers_are_not(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "d1" / "sub").mkdir(parents=True)
    (src / "a").write_bytes(b"x")
    (src / "d1" / "b").write_bytes(b"y" * 4097)
    image = tmp_path / "fs.img"
    subprocess.run(["mke2fs", "-q", "-t", "ext4", "-d", str(src), str(image), "8M"], check=True)
    sight = look((image,))
    assert sight.how == "ext4 image" and sight.entries is not None
    assert sight.entries["d1/b"] == Entry(False, 4097) and sight.entries["d1/sub"] == Entry(True, 0)
    assert sight.entries["a"] == Entry(False, 1)
    luks = tmp_path / "luks.img"
    luks.write_bytes(LUKS_MAGIC + bytes(4096))
    assert (look((luks,)).how, look((luks,)).entries) == ("LUKS container", None)
    qcow = tmp_path / "x.qcow2"
    qcow.write_bytes(QCOW_MAGIC + bytes(4096))
    assert look((qcow,)).how == "qcow2 image"
    junk = tmp_path / "junk.img"
    junk.write_bytes(bytes(1 << 20))
    assert look((junk,)).how == "unreadable image"


def _probes_sleep(monkeypatch: pytest.MonkeyPatch, sleep: Callable[[float], object]) -> None:
    """The probes' time.sleep alone: patching the time module itself reached the kernel
    lab's thread beside these tests (subprocess waits with a timeout by time.sleep), which
    once wrote 'flushed' into a directory this test's teardown was removing."""
    monkeypatch.setattr(probes, "time", SimpleNamespace(monotonic=time.monotonic, sleep=sleep))


@pytest.mark.parametrize("magic", [LUKS_MAGIC, QCOW_MAGIC], ids=["luks", "qcow2"])
def test_a_container_is_looked_at_once_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, magic: bytes
) -> None:
    """A container's sight is the same after every write: giving it FLUSH_WAIT to change
    cost 5 s per probe on every encrypted image and LUKS target."""
    image = tmp_path / "c.img"
    image.write_bytes(magic + bytes(4096))
    target = Target("c", "c", True, None, tmp_path, (image,))
    slept: list[float] = []
    _probes_sleep(monkeypatch, slept.append)
    before = look((image,))
    assert probes.settled_sight(target, before) == before
    assert slept == []


def test_a_directory_is_given_time_to_show_a_write(
    dir_target: tuple[Session, Target], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon that caches in its own memory (CryFS) writes its blocks out later: an
    unchanged directory is looked at again until it changes (or FLUSH_WAIT is up)."""
    _session, target = dir_target
    slept: list[float] = []

    def flush(seconds: float) -> None:  # the daemon writes out while the probe waits
        slept.append(seconds)
        (target.path / "flushed").write_bytes(b"x")

    _probes_sleep(monkeypatch, flush)
    seen = probes.settled_sight(target, look(target.backing))
    assert len(slept) == 1 and seen.entries is not None and "flushed" in seen.entries


def test_raw_names_with_any_bytes_are_each_read_whole(tmp_path: Path) -> None:
    """fscrypt stores ciphertext names as raw bytes: a NUL, a newline, a '/' or a
    backslash in one must neither cut it short nor merge it with another."""
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    stand_ins = {
        b"A" * 16: b"\x00A" + b"a" * 14,
        b"C" * 16: b"\x00C" + b"c" * 14,
        b"B" * 16: b"b\nb/b\\" + b"b" * 10,
    }
    for name in stand_ins:
        (src / "d" / name.decode()).write_bytes(b"x" * len(name))
    image = tmp_path / "fs.img"
    # no directory checksums, so that names can be rewritten in place as fscrypt's look
    subprocess.run(
        ["mke2fs", "-q", "-t", "ext4", "-O", "^metadata_csum", "-d", str(src), str(image), "8M"], check=True
    )
    raw = image.read_bytes()
    for name, stored in stand_ins.items():
        assert raw.count(name) == 1
        raw = raw.replace(name, stored)
    image.write_bytes(raw)
    sight = look((image,))
    assert sight.entries is not None
    inside = {p: e for p, e in sight.entries.items() if p.startswith("d/")}
    assert inside == {
        "d/\\x00A" + "a" * 14: Entry(False, 16),
        "d/\\x00C" + "c" * 14: Entry(False, 16),
        "d/b\\x0ab\\x2fb\\x5c" + "b" * 10: Entry(False, 16),
    }


def test_a_debugfs_without_raw_listing_leaves_the_image_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older debugfs refuses `ls -r` with its usage line and lists nothing: that must not
    pass for an image whose names are hidden. (A stand-in debugfs that answers as such a
    one does; the real one reads images in the test above.)"""
    image = tmp_path / "fs.img"
    subprocess.run(["mke2fs", "-q", "-t", "ext4", str(image), "8M"], check=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    old = bin_dir / "debugfs"
    old.write_text("#!/bin/sh\ncat >/dev/null\necho 'ls: Usage: ls [-c] [-d] [-l] [-p] file' >&2\n")
    old.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    sight = look((image,))
    assert (sight.how, sight.entries) == ("unreadable image", None)
    assert "ls -l -r" in sight.reason


def test_a_control_that_hides_a_property_marks_every_finding_broken(
    monkeypatch: pytest.MonkeyPatch, dir_target: tuple[Session, Target]
) -> None:
    session, plain = dir_target
    enc = Target("gocryptfs", "gocryptfs", True, "plain", plain.path, (plain.path,), encryption_verified=True)
    plain.marker_in_backing = True
    hidden = PropertyFinding(Verdict.HIDDEN, "not seen")

    def fake(_session: Session, t: Target) -> Protection:
        return Protection({Property.NAMES: hidden}, "directory")

    monkeypatch.setattr(probes, "probe", fake)
    verify.probe_protection(session, {"plain": plain, "gocryptfs": enc})
    for t in (plain, enc):
        assert t.protection is not None
        assert t.protection["broken"].startswith(
            "the names probe did not see names on plain, a positive control"
        )
    assert enc.protection is not None and enc.protection["contents"]["verdict"] == "hidden"
    assert plain.protection is not None and plain.protection["contents"]["verdict"] == "shown"


def _found(verdict: str, declared: str | None = None) -> dict:
    d: dict = {"verdict": verdict, "evidence": f"seen {verdict}"}
    if declared:
        d["declared"] = {"verdict": declared, "source": "its docs"}
    return d


def test_a_finding_against_the_documentation_is_a_serious_warning() -> None:
    doc = doc_with(
        {
            "gocryptfs": {
                "sight": "directory",
                "names": _found("shown", "hidden"),
                "sizes": _found("shown", "shown"),
            },
            "fscrypt": {
                "sight": "ext4 image",
                "sizes": _found("block", "shown"),
                "tree": _found("unknown", "hidden"),
            },
        }
    )
    found = list(warning_rules.protection_disagrees(doc))
    assert [(w.target, w.message) for w in found] == [
        ("gocryptfs", "gocryptfs is said to hide names (its docs); here they were shown: seen shown")
    ]  # shown to a block agrees with "shown"; an undecided probe disagrees with nothing
    assert list(warning_rules.protection_unproven(doc)) == []
    assert WarningKind.PROTECTION_DISAGREES.serious


def test_a_broken_control_is_said_once_and_silences_the_disagreements() -> None:
    broken = {
        "sight": "directory",
        "names": _found("shown", "hidden"),
        "broken": "the names probe did not see",
    }
    doc = doc_with({"gocryptfs": broken, "plain": {**broken, "names": _found("hidden", "shown")}})
    assert list(warning_rules.protection_disagrees(doc)) == []
    (w,) = warning_rules.protection_unproven(doc)
    assert w.message.startswith("what each target hides is not proven: the names probe did not see")
    assert protection_rows.hides_line(doc) == (
        "What each target hides: not proven, the probe failed its positive control (show --details)."
    )


def test_the_answer_names_the_targets_that_hide_each_property() -> None:
    doc = doc_with(
        {
            "plain": {
                "sight": "directory",
                "names": _found("shown"),
                "sizes": _found("shown"),
                "tree": _found("shown"),
            },
            "gocryptfs": {
                "sight": "directory",
                "names": _found("hidden"),
                "sizes": _found("shown"),
                "tree": _found("shown"),
            },
            "securefs": {
                "sight": "directory",
                "names": _found("hidden"),
                "sizes": _found("block"),
                "tree": _found("hidden"),
            },
        }
    )
    assert protection_rows.hides_line(doc) == (
        "Protected, proven here (beyond the contents): names: gocryptfs, securefs; "
        "sizes: none; tree: securefs; tamper: none."
    )
    (table,) = console.protection_tables(doc)
    assert table.row_count == 3


def _proven(names: str, sizes: str, tree: str, tamper: str) -> dict:
    return {
        "sight": "directory",
        "names": _found(names),
        "sizes": _found(sizes),
        "tree": _found(tree),
        "tamper": _found(tamper),
    }


# As this host's probes found them (tests/integration/test_protection_real.py)
RECORDED = {
    "plain": _proven("shown", "shown", "shown", "silent"),
    "gocryptfs": _proven("hidden", "shown", "shown", "detected"),
    "securefs": _proven("hidden", "shown", "shown", "detected"),
    "encfs": _proven("hidden", "shown", "shown", "silent"),
    "fscrypt": _proven("hidden", "shown", "shown", "silent"),
    "cryfs": _proven("hidden", "hidden", "hidden", "detected"),
}


def test_needs_rank_only_the_targets_proven_to_meet_them() -> None:
    doc = doc_with(RECORDED)
    doc.plan.raw["needs"] = ["sizes"]
    (section,) = ranking.build(doc)
    assert [e.target for e in section.overall] == ["cryfs"]
    assert {n.target: n.reason for n in section.not_ranked} == {
        t: "needs sizes hidden: shown here" for t in ("fscrypt", "gocryptfs", "securefs", "encfs")
    }
    doc.plan.raw["needs"] = []
    assert [e.target for e in ranking.build(doc)[0].overall] == [
        "gocryptfs",
        "securefs",
        "encfs",
        "fscrypt",
        "cryfs",
    ]


def test_the_answer_names_the_cheapest_that_hides_what_the_cheapest_does_not() -> None:
    doc = doc_with(RECORDED)
    lines = protection_rows.cheapest_lines(doc)
    cryfs = next(e for e in doc.ranking[0].overall if e.target == "cryfs")
    gocryptfs = next(e for e in doc.ranking[0].overall if e.target == "gocryptfs")
    assert lines == [
        f"Cheapest that hides sizes: cryfs, {ranking.change(cryfs)}.",
        f"Cheapest that hides the tree: cryfs, {ranking.change(cryfs)}.",
        f"Cheapest that detects tampering: gocryptfs, {ranking.change(gocryptfs)}.",
    ]  # names: every ranked target hides them, so no line


def test_needs_tamper_ranks_only_the_targets_that_detected_the_flip() -> None:
    doc = doc_with(RECORDED)
    doc.plan.raw["needs"] = ["tamper", "names"]
    (section,) = ranking.build(doc)
    assert [e.target for e in section.overall] == ["gocryptfs", "securefs", "cryfs"]
    assert {n.target: n.reason for n in section.not_ranked} == {
        t: "needs tamper detected: silent here" for t in ("fscrypt", "encfs")
    }


@pytest.mark.parametrize(
    ("text", "needs"),
    [
        (None, ()),
        ("tree,names", ("names", "tree")),
        ("sizes, sizes", ("sizes",)),
        ("tamper,names", ("names", "tamper")),
    ],
)
def test_needs_are_parsed_in_order(text: str | None, needs: tuple[str, ...]) -> None:
    assert parse_needs(text) == needs


@pytest.mark.parametrize(
    ("text", "message"), [("", "name one or more"), ("names,colour", "unknown property 'colour'")]
)
def test_bad_needs_are_refused(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_needs(text)


def test_a_flag_only_luks_variant_takes_its_formats_findings_probed_once(
    monkeypatch: pytest.MonkeyPatch, dir_target: tuple[Session, Target]
) -> None:
    """luks-aes256-noqueue's container is luks-aes256's (its flags are given to `cryptsetup
    open`): probed once where the run holds both on one medium; its own where it does not,
    and a sector size, which changes the format, is always probed."""
    session, plain = dir_target
    plain.marker_in_backing = True

    def luks(name: str, medium: str = "device", verified: bool = True) -> Target:
        return Target(
            name, name, True, "plain", plain.path, (plain.path,), encryption_verified=verified, medium=medium
        )

    targets = {
        "plain": plain,
        "luks-aes256": luks("luks-aes256"),
        "luks-aes256-noqueue": luks("luks-aes256-noqueue", verified=False),
        "luks-aes256-sector512": luks("luks-aes256-sector512"),
        "ram:luks-aes256-submitcpus": luks("luks-aes256-submitcpus", medium="ram"),
    }
    probed: list[str] = []

    def fake(_session: Session, t: Target) -> Protection:
        probed.append(t.name)
        verdict = Verdict.SHOWN if t.name == "plain" else Verdict.HIDDEN
        return Protection(
            {Property.NAMES: PropertyFinding(verdict, f"read on {t.name}")}, f"sight of {t.name}"
        )

    monkeypatch.setattr(probes, "probe", fake)
    verify.probe_protection(session, targets)
    assert sorted(probed) == ["luks-aes256", "luks-aes256-sector512", "luks-aes256-submitcpus", "plain"]
    shared = targets["luks-aes256-noqueue"].protection
    assert shared is not None and shared["probed_on"] == "luks-aes256"
    assert shared["names"]["evidence"] == "read on luks-aes256"
    assert shared["sight"] == "sight of luks-aes256 (read on luks-aes256: the same format)"
    assert shared["contents"]["verdict"] == "unknown"  # its own proof of encryption, not luks-aes256's
    own = targets["luks-aes256"].protection
    assert own is not None and "probed_on" not in own and own["contents"]["verdict"] == "hidden"
    for name in ("luks-aes256-sector512", "ram:luks-aes256-submitcpus"):
        p = targets[name].protection
        assert p is not None and "probed_on" not in p, name
    assert Protection.from_json(shared).probed_on == "luks-aes256"


def test_only_an_image_a_reader_here_sees_into_is_checkpointed(tmp_path: Path) -> None:
    """_settled freezes and thaws the mount over an image whose inside debugfs reads (so
    ext4 writes its journal back in place first), and not over a LUKS or qcow2 container."""
    heads = {
        "ext4.img": b"\0" * 1024,
        "luks.img": LUKS_MAGIC + b"\0\x02",
        "disk.qcow2": QCOW_MAGIC + b"\0\0\0\3",
    }
    for name, head in heads.items():
        (tmp_path / name).write_bytes(head + b"\0" * 4096)
    seen = {name: probes._readable_image(tmp_path / name) for name in heads}
    assert seen == {"ext4.img": True, "luks.img": False, "disk.qcow2": False}


def test_a_flip_caught_by_a_checksum_is_not_a_mac() -> None:
    """ZFS fails the read of a flipped byte whether or not it encrypts: where the backend
    declares no more than a checksum, the probe's "detected" is "checked", which protects
    nothing against someone who can rewrite the checksum too, and so meets no `--needs tamper`."""
    caught = PropertyFinding(Verdict.DETECTED, "reading the file back failed with EIO")
    checksum = (Verdict.CHECKED, "ZFS checksums every block")
    assert caught.as_declared(checksum).verdict is Verdict.CHECKED
    assert caught.as_declared(checksum).evidence == caught.evidence
    assert caught.as_declared((Verdict.DETECTED, "a MAC")).verdict is Verdict.DETECTED
    checked = caught.as_declared(checksum)
    assert checked.declared == checksum  # the declaration kept beside it, for the report
    assert checked.protects is False and not checked.disagrees
    silent = PropertyFinding(Verdict.SILENT, "read back changed").as_declared(checksum)
    assert silent.verdict is Verdict.SILENT and silent.disagrees  # the checksum was promised
    assert protection_rows.cell(checked) == "~ checksum"
    target = SimpleNamespace(protection={"sight": "unreadable image", "tamper": checked.to_json()})
    assert ranking.unmet_need(["tamper"], target) == "needs tamper detected: checked here"  # type: ignore[arg-type]
