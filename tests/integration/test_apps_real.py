"""Every application workload, for real, on plain and on encrypted targets, at tiny sizes."""

# Over 60 s of make test (146 s in the fresh-clone run of 6754047, 2026-11-29, with the
# unit tests beside it at nice 19): all eight application workloads (photo-import, a
# source tree, a mail thread, db-fsync...) on plain and on encrypted targets, dd's study
# with its own commands, and an app workload on a stateful image.
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cryptbench.commands import run as run_cmd
from cryptbench.engines.apps.responsiveness import BULK_BYTES
from cryptbench.planning.request import RunRequest
from cryptbench.store.database import Store
from tests.support.targets import need_backend, requires_root

pytestmark = pytest.mark.integration

APPS_SUITE = """
name = "apps-tiny"
[[workloads]]
name = "import"
app = "photo-import"
photo_size = "1M"
[[workloads]]
name = "import-staged"
app = "photo-import"
photo_size = "1M"
variant = "stage-then-move"
[[workloads]]
name = "copy"
app = "folder-copy"
file_size = "1M"
[[workloads]]
name = "tree"
app = "source-tree"
[[workloads]]
name = "mail"
app = "mail-thread"
[[workloads]]
name = "series"
app = "write-series"
smallest = "256K"
[[workloads]]
name = "db"
app = "db-fsync"
transactions = 20
[[workloads]]
name = "resp"
app = "responsiveness"
seconds = 1
probe_size = "4M"
[[workloads]]
name = "seq-read"
rw = "read"
bs = "1M"
iodepth = 2
[[workloads]]
name = "seq-backing"
rw = "read"
bs = "1M"
iodepth = 2
view = "backing"
"""

PRIMARY = {
    "import": "pictures_per_minute",
    "import-staged": "pictures_per_minute",
    "copy": "throughput",
    "tree": "seconds",
    "mail": "seconds",
    "series": "throughput",
    "db": "transactions_per_second",
    "resp": "probe.lat_p99",
    "seq-read": "throughput",
    "seq-backing": "throughput",
}


def _need(*backends: str) -> None:
    for b in backends:
        need_backend(b)


def _outputs(db: Path, run_id: int) -> dict[tuple[str, str], list[dict]]:
    store = Store.open(db)
    rows = store.db.execute(
        "SELECT workload, target, raw_output FROM trials WHERE run_id=? AND status='ok'", (run_id,)
    ).fetchall()
    store.close()
    out: dict[tuple[str, str], list[dict]] = {}
    for w, t, raw in rows:
        out.setdefault((w, t), []).append(json.loads(raw))
    return out


def _run(suite_text: str, target_dir: Path, tmp_path: Path, **kw: str) -> run_cmd.RunOutcome:
    """A tiny run (4M, 2 repeats) of a suite given as TOML text, without the protection
    probes: no test here reads them (test_protection_real.py does)."""
    suite = tmp_path / "apps.toml"
    suite.write_text(suite_text)
    return run_cmd.run(
        RunRequest(
            suite=str(suite),
            size="4M",
            repeats=2,
            seed=5,
            target=str(target_dir),
            db=tmp_path / "r.sqlite",
            skip_protection=True,
            **kw,
        )
    )


def _probe_ran_under_the_load(out: dict[tuple[str, str], list[dict]], targets: list[str]) -> None:
    """responsiveness: the bulk write ran on the target for its second, or until its byte
    cap where the machine writes that sooner (this VM wrote 1 GiB buffered in 0.27 s), and
    the probe read beside it, O_DIRECT from the scratch filesystem (ext4 under /var/tmp
    here), and no longer than the load (exitall)."""
    for t in targets:
        for o in out[("resp", t)]:
            (bulk,) = o["phases"]
            assert bulk["name"] == "bulk" and 0 < bulk["bytes"] <= BULK_BYTES and bulk["seconds"] < 60, (t, o)
            assert bulk["seconds"] > 0.9 or bulk["bytes"] == BULK_BYTES, (t, o)
            assert o["details"]["probe_seconds"] <= bulk["seconds"] + 1, (t, o)
            assert o["details"]["probe_direct"] is True and o["details"]["probe_reads"] > 0, (t, o)
            f = o["figures"]
            assert 0 < f["probe.lat_p50"] <= f["probe.lat_p99"] <= f["probe.lat_p99_9"], (t, f)


@requires_root
def test_every_app_workload_on_plain_and_encrypted(target_dir: Path, tmp_path: Path) -> None:
    _need("plain", "gocryptfs", "fscrypt")
    db = tmp_path / "r.sqlite"
    outcome = _run(APPS_SUITE, target_dir, tmp_path, backends="gocryptfs,fscrypt")
    doc = outcome.document.to_json()
    assert outcome.status == "complete" and outcome.exit_code == 0, doc["warnings"]
    targets = [t["name"] for t in doc["targets"]]
    assert targets == ["plain", "gocryptfs", "ext4-loop", "fscrypt"]
    assert doc["trials"] == {"ok": len(PRIMARY) * 4 * 2, "failed": 0}
    results = {(r["workload"], r["target"], r["metric"]): r for r in doc["results"]}
    for w, metric in PRIMARY.items():
        for t in targets:
            r = results[(w, t, metric)]
            assert r["n"] == 2 and r["median"] > 0, (w, t)
    comps = {(c["workload"], c["target"], c["baseline"]): c for c in doc["comparisons"]}
    for w, metric in PRIMARY.items():
        assert comps[(w, "gocryptfs", "plain")]["metric"] == metric
        assert comps[(w, "fscrypt", "ext4-loop")]["metric"] == metric
    # per-phase figures
    assert {"import.copy", "import.catalog", "import.previews"} <= {
        f"{w}.{m.rsplit('.', 1)[0]}" for (w, _t, m) in results if m.endswith(".seconds")
    }
    assert ("series", "plain", "write-1m.throughput") in results
    assert ("series", "plain", "read-256k.throughput") in results

    out = _outputs(db, outcome.run_id)
    # Moving staged photos into plain (the scratch filesystem) is a rename; into
    # an encrypted layer, a copy: study 000's finding, reproduced.
    assert {o["details"]["move_was_copy"] for o in out[("import-staged", "plain")]} == {False}
    for t in ("gocryptfs", "fscrypt"):
        assert {o["details"]["move_was_copy"] for o in out[("import-staged", t)]} == {True}
    # The tree reads back the same through every layer.
    sums = {o["details"]["sha256_of_sha256s"] for t in targets for o in out[("tree", t)]}
    assert len(sums) == 1
    assert {o["items"] for t in targets for o in out[("mail", t)]} == {43}
    assert {o["items"] for t in targets for o in out[("db", t)]} == {20}
    assert {o["items"] for t in targets for o in out[("import", t)]} == {4}
    _probe_ran_under_the_load(out, targets)
    # The backing view reads the ciphertext under the data file, read-only:
    # the image for loop-based targets, the encrypted twin in gocryptfs's cipher dir.
    store = Store.open(db)
    jobs = dict(
        store.db.execute(
            "SELECT target, job_file FROM trials WHERE run_id=? AND workload='seq-backing'", (outcome.run_id,)
        ).fetchall()
    )
    store.close()
    files = {t: next(x for x in j.splitlines() if x.startswith("filename=")) for t, j in jobs.items()}
    assert all("--readonly" in j for j in jobs.values())
    assert files["plain"].endswith("/cryptbench.dat")
    assert files["fscrypt"].endswith(".img") and files["ext4-loop"].endswith(".img")
    assert "/cipher/" in files["gocryptfs"] and not files["gocryptfs"].endswith("cryptbench.dat")
    # Input data made once per run, outside the targets; nothing left in scratch.
    assert not list((target_dir / "cryptbench").glob("run-*"))


def test_every_app_workload_on_plain_alone(target_dir: Path, tmp_path: Path) -> None:
    """Each application workload for real with nothing but plain: no root, FUSE or
    fscrypt needed, so a machine without the encrypted layers still runs every app."""
    outcome = _run(APPS_SUITE, target_dir, tmp_path, backends="plain")
    doc = outcome.document.to_json()
    assert outcome.status == "complete" and outcome.exit_code == 0, doc["warnings"]
    assert [t["name"] for t in doc["targets"]] == ["plain"]
    assert doc["trials"] == {"ok": len(PRIMARY) * 2, "failed": 0}
    results = {(r["workload"], r["metric"]): r for r in doc["results"] if r["target"] == "plain"}
    for w, metric in PRIMARY.items():
        assert results[(w, metric)]["n"] == 2 and results[(w, metric)]["median"] > 0, w
    out = _outputs(tmp_path / "r.sqlite", outcome.run_id)
    assert {o["details"]["move_was_copy"] for o in out[("import-staged", "plain")]} == {False}
    assert {o["items"] for o in out[("mail", "plain")]} == {43}
    assert {o["items"] for o in out[("db", "plain")]} == {20}
    assert {o["items"] for o in out[("import", "plain")]} == {4}
    assert len({o["details"]["sha256_of_sha256s"] for o in out[("tree", "plain")]}) == 1
    _probe_ran_under_the_load(out, ["plain"])
    assert not list((target_dir / "cryptbench").glob("run-*"))


@requires_root
def test_app_workload_on_a_stateful_image(target_dir: Path, tmp_path: Path) -> None:
    """A stateful target is made anew before each write trial; the workload's
    on-target set-up (the folder to copy) is made again each time."""
    _need("image-sparse-aes128")
    suite = 'name = "img"\n[[workloads]]\nname = "copy"\napp = "folder-copy"\nfile_size = "1M"\n'
    outcome = _run(suite, target_dir, tmp_path, backends="image-sparse-aes128", state="rewrite")
    doc = outcome.document.to_json()
    assert outcome.status == "complete" and outcome.exit_code == 0, doc["warnings"]
    assert [t["name"] for t in doc["targets"]] == [
        "plain",
        "image-sparse@rewrite",
        "image-sparse-aes128@rewrite",
    ]
    assert doc["trials"]["failed"] == 0
    comps = {(c["target"], c["baseline"]) for c in doc["comparisons"]}
    assert ("image-sparse-aes128@rewrite", "image-sparse@rewrite") in comps


DD_SUITE = """
name = "dd-tiny"
summary = "drop-min-max"
[[workloads]]
name = "dd-zero"
app = "dd-write"
[[workloads]]
name = "dd-random"
app = "dd-write"
data = "random"
[[as_published]]
name = "dd-zero-as-published"
app = "dd-write"
style = "as-published"
[[as_published]]
name = "dd-random-as-published"
app = "dd-write"
data = "random"
style = "as-published"
"""


@requires_root
def test_dd_writes_with_the_studys_summary_and_its_own_commands(target_dir: Path, tmp_path: Path) -> None:
    """Study 004's protocol for real: durable writes, the study's dd commands
    beside them (--as-published), and its drop-min-max summary from the trials."""
    _need("plain", "fscrypt", "gocryptfs")
    db = tmp_path / "r.sqlite"
    suite = tmp_path / "dd.toml"
    suite.write_text(DD_SUITE)
    outcome = run_cmd.run(
        RunRequest(
            suite=str(suite),
            size="4M",
            repeats=4,
            seed=9,
            target=str(target_dir),
            db=db,
            backends="gocryptfs,fscrypt",
            as_published=True,
        )
    )
    doc = outcome.document.to_json()
    assert outcome.status == "complete" and outcome.exit_code == 0, doc["warnings"]
    targets = [t["name"] for t in doc["targets"]]
    assert doc["trials"] == {"ok": 4 * len(targets) * 4, "failed": 0}
    out = _outputs(db, outcome.run_id)
    for t in targets:
        durable = out[("dd-zero", t)]
        assert {o["details"]["bytes"] for o in durable} == {4 << 20}
        assert {o["details"]["fsync"] for o in durable} == {True}
        published = out[("dd-random-as-published", t)]
        # the study's own command, file names and all, and what dd said of it
        assert {o["details"]["command"].split(" of=")[0] for o in published} == {"dd if=/dev/urandom"}
        assert {o["details"]["command"].rsplit("/", 1)[1] for o in published} == {
            f"test_rand{i} count=4 bs=1M" for i in range(1, 5)
        }
        assert all(" bytes (4.2 MB, 4.0 MiB) copied, " in o["details"]["dd_said"] for o in published)
    summary = doc["study_summary"]
    seconds = {(r["workload"], r["target"]): r["samples"] for r in doc["results"] if r["metric"] == "seconds"}
    rows = {(r["workload"], r["target"]): r for r in summary["rows"]}
    assert set(rows) == set(seconds)
    for key, row in rows.items():
        middle = sorted(seconds[key])[1:-1]  # float times: no ties
        assert row["used"] == 2 and row["mean_seconds"] == pytest.approx(sum(middle) / 2)
        assert row["throughput"] == pytest.approx((4 << 20) / row["mean_seconds"])
    pairs = {(p["workload"], p["durable"], p["target"]) for p in summary["page_cache"]}
    assert pairs == {(f"dd-{d}-as-published", f"dd-{d}", t) for d in ("zero", "random") for t in targets}
    assert not list((target_dir / "cryptbench").glob("run-*"))
    # Last, so that a scratch space with no block device skips only this: the device
    # under the scratch space saw every durable write (fsync) at least whole.
    if doc["environment"]["scratch_device"] is None:
        pytest.skip(f"{target_dir} has no block device under it (tmpfs, overlay): no write counter to read")
    written = {
        (r["workload"], r["target"]): r["samples"]
        for r in doc["results"]
        if r["metric"] == "device_bytes_written"
    }
    for t in targets:
        assert min(written[("dd-random", t)]) >= 4 << 20, t
    assert doc["device_writes"]["trials"] == 4 * len(targets) * 4
