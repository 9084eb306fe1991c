"""The protection probes on every backend this host has, for real: one tiny run of a
command (the probes run at provisioning, whatever the workload), its document read.

The expectations are each backend's own documentation, held to what the probe saw:
gocryptfs's comparison page (names and contents hidden; sizes and tree shown),
CryFS's (all hidden: fixed-size blocks in a flat store), securefs's lite format
(one file per file), EncFS --standard (an 8-byte header per file), fscrypt
(encrypted names in a visible ext4 tree with exact i_size).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import available, cli, includes, leftovers

pytestmark = pytest.mark.integration

EXPECTED = {
    # backend: contents, names, sizes, tree
    "plain": ("shown", "shown", "shown", "shown"),
    "ext4-loop": ("shown", "shown", "shown", "shown"),
    "fscrypt": ("hidden", "hidden", "shown", "shown"),
    "gocryptfs": ("hidden", "hidden", "shown", "shown"),
    "securefs": ("hidden", "hidden", "shown", "shown"),
    "encfs": ("hidden", "hidden", "shown", "shown"),
    "cryfs": ("hidden", "hidden", "hidden", "hidden"),
}
WANTED = tuple(EXPECTED)
BACKENDS = ",".join(available(WANTED))
test_includes = includes(WANTED)
PROPERTIES = ("contents", "names", "sizes", "tree")


def test_every_backend_here_hides_what_it_should(target_dir: Path, tmp_path: Path) -> None:
    proc = cli(
        *("run", "--command", "true", "--backends", BACKENDS, "--repeats", "1"),
        *("--target", str(target_dir), "--db", str(tmp_path / "r.sqlite"), "--json"),
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema_version"] == 3
    seen = {}
    for t in doc["targets"]:
        p = t["protection"]
        assert "broken" not in p, p["broken"]
        seen[t["name"]] = tuple(p[prop]["verdict"] for prop in PROPERTIES)
        print(t["name"], p["sight"], {prop: p[prop]["evidence"] for prop in PROPERTIES})
    assert seen == {name: EXPECTED[name] for name in seen}
    sizes = {t["name"]: t["protection"]["sizes"]["detail"]["mapping"] for t in doc["targets"]}
    assert sizes["plain"] == {str(s): [s] for s in (1, 4095, 4096, 4097, 100_000)}
    assert leftovers(target_dir) == []
    shown = cli("show", "--db", str(tmp_path / "r.sqlite"), "--details").stdout
    assert "What each target's backing hides" in shown
    page = tmp_path / "run.html"
    made = cli("report", "--db", str(tmp_path / "r.sqlite"), "--html", str(page))
    assert made.returncode == 0, made.stderr
    assert "What each target's backing hides, probed here" in page.read_text()
    assert not [w for w in doc["warnings"] if w["kind"].startswith("protection-")], doc["warnings"]
