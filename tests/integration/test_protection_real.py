"""The protection probes on every backend this host has, for real: the shared whole run's
(tests/integration/conftest.py; the probes run at provisioning, whatever the workload),
its document read.

The expectations are each backend's own documentation, held to what the probe saw:
gocryptfs's comparison page (names and contents hidden; sizes and tree shown),
CryFS's (all hidden: fixed-size blocks in a flat store), securefs's lite format
(one file per file), EncFS --standard (an 8-byte header per file), fscrypt
(encrypted names in a visible ext4 tree with exact i_size), rclone's crypt page (a
32-byte header and 16 bytes per 64 KiB chunk; each directory a directory).
"""

# Over 60 s of make test (133 s in the fresh-clone run of 3ce9529, 2026-11-29): it sets up
# the shared whole run (tests/integration/conftest.py) as the first module to read it, one
# run of every backend here with every phase; test_sentinel.py reads the same run.
from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path

import pytest

from cryptbench.analysis.document import DOCUMENT_SCHEMA
from cryptbench.protection import probes
from tests.support.cli import cli
from tests.support.leaks import leftovers
from tests.support.targets import available, includes, provisioned, requires_root
from tests.support.whole_run import WholeRun

pytestmark = pytest.mark.integration

EXPECTED = {
    # backend: contents, names, sizes, tree, tamper
    "plain": ("shown", "shown", "shown", "shown", "silent"),
    "ext4-loop": ("shown", "shown", "shown", "shown", "silent"),
    "fscrypt": ("hidden", "hidden", "shown", "shown", "silent"),
    "gocryptfs": ("hidden", "hidden", "shown", "shown", "detected"),
    "securefs": ("hidden", "hidden", "shown", "shown", "detected"),
    "encfs": ("hidden", "hidden", "shown", "shown", "silent"),
    "cryfs": ("hidden", "hidden", "hidden", "hidden", "detected"),
    "rclone-crypt": ("hidden", "hidden", "shown", "shown", "detected"),
}
WANTED = tuple(EXPECTED)
test_includes = includes(WANTED)
PROPERTIES = ("contents", "names", "sizes", "tree", "tamper")
# The small-file tree's space against plain, about as gocryptfs's comparison page found it
# (docs/comparison.md, "Disk Space Efficiency", a Linux 3.0 tree): a few percent for one
# file per file, CryFS's 16 KiB blocks about 3x. Bounds, not figures: the tree here is
# smaller, and its own.
TREE_RATIO = {
    "gocryptfs": (1.0, 1.1),
    "securefs": (1.0, 1.1),
    "encfs": (1.0, 1.1),
    "rclone-crypt": (1.0, 1.1),
    "cryfs": (2.0, 4.0),
    "fscrypt": (0.95, 1.1),  # against ext4-loop: the same filesystem, padded names
}


def test_every_backend_here_hides_what_it_should(whole_run: WholeRun, tmp_path: Path) -> None:
    """The probes of the shared whole run (tests/integration/conftest.py), held to each
    backend's documentation; the answer, `check --require` and the report say what they found."""
    doc = whole_run.doc
    db = str(whole_run.db)
    # this version's document, which has had tampering and space since version 4
    assert doc["schema_version"] == DOCUMENT_SCHEMA >= 4
    verdicts = {}
    for t in doc["targets"]:
        p = t["protection"]
        assert "broken" not in p, p["broken"]
        verdicts[t["name"]] = tuple(p[prop]["verdict"] for prop in PROPERTIES)
        print(t["name"], p["sight"], {prop: p[prop]["evidence"] for prop in PROPERTIES})
    seen = {name: v for name, v in verdicts.items() if name in EXPECTED}
    assert set(seen) == set(available(WANTED))  # every one of them here was probed
    assert seen == {name: EXPECTED[name] for name in seen}
    sizes = {t["name"]: t["protection"]["sizes"] for t in doc["targets"]}
    assert sizes["plain"]["detail"]["mapping"] == {str(s): [s] for s in (1, 4095, 4096, 4097, 100_000)}
    space = {t["name"]: t["protection"]["space"] for t in doc["targets"]}
    for name, (low, high) in TREE_RATIO.items():
        if name in space:
            assert low <= space[name]["tree"]["ratio"] <= high, (name, space[name])
            assert space[name]["large"]["ratio"] >= 1.0, (name, space[name])
    # one changed byte: one block of a file per file (4 KiB, or two where a ciphertext block
    # straddles a boundary); more where a filesystem's metadata or CryFS's tree changes too
    assert space["plain"]["granularity"]["bytes"] == 4096
    for name in ("gocryptfs", "securefs", "encfs"):
        if name in space:
            assert space[name]["granularity"]["bytes"] <= 8192, space[name]
    if "rclone-crypt" in space:  # no byte of a file changes alone there: it is written whole
        assert "skipped" in space["rclone-crypt"]["granularity"], space["rclone-crypt"]
    tampered = {t["name"]: t["protection"]["tamper"] for t in doc["targets"]}
    assert tampered["plain"]["detail"]["bytes_changed"] == 1  # the flip is the byte, nothing else
    answer = cli("show", "--db", db, env=whole_run.env).stdout
    if "cryfs" in seen and "gocryptfs" in seen:
        # gocryptfs, cheaper, shows sizes: the line names a target that hides them
        cheapest = re.search(r"Cheapest that hides sizes: (\S+),", answer)
        assert cheapest is not None, answer
        assert verdicts[cheapest[1]][PROPERTIES.index("sizes")] == "hidden", (cheapest[1], answer)
    assert "Protected, proven here (beyond the contents)" in answer, answer
    gate = cli("check", "--db", db, "--require", "tamper", env=whole_run.env)
    tamper = {t["name"]: t["protection"]["tamper"]["verdict"] for t in doc["targets"] if t["encrypted"]}
    unmet = [name for name, verdict in tamper.items() if verdict != "detected"]
    assert gate.returncode == (1 if unmet else 0), gate.stdout
    for name in unmet:
        assert f"FAIL {name}: needs tamper detected:" in gate.stdout, gate.stdout
    assert whole_run.left == []
    shown = cli("show", "--db", db, "--details", env=whole_run.env).stdout
    assert "What each target's backing hides" in shown and "1 byte changed" in shown
    page = tmp_path / "run.html"
    made = cli("report", "--db", db, "--html", str(page), env=whole_run.env)
    assert made.returncode == 0, made.stderr
    html = page.read_text()
    assert "What each target's backing hides, probed here" in html
    assert "What each target costs in space" in html  # the space chart
    assert not [w for w in doc["warnings"] if w["kind"].startswith("protection-")], doc["warnings"]


@requires_root
def test_a_filesystem_left_frozen_is_thawed_before_its_unmount(target_dir: Path) -> None:
    """The probes' checkpoint freezes an image's filesystem for a moment; a run stopped or
    killed in that moment leaves it frozen, and unmounting a frozen filesystem succeeds
    but keeps its loop device attached for good. Teardown (and `cleanup`, through the
    same Mount release) thaws it first: nothing is left."""
    with provisioned(target_dir, "ext4-loop", 16 << 20) as (_session, target):
        mount = target.path
        while not os.path.ismount(mount):
            mount = mount.parent
        fd = os.open(mount, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.ioctl(fd, probes.FIFREEZE, 0)
        finally:
            os.close(fd)
    assert leftovers(target_dir) == []  # the fixture checks loop devices too
