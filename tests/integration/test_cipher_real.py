"""`cryptbench cipher` for real, and a tiny --ram run: real OpenSSL, the real
/proc/crypto, fscrypt and ext4-loop on a real tmpfs, nothing left behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cryptbench.cipher import kernel, userspace
from cryptbench.cipher.ceilings import separate
from cryptbench.commands import cipher
from cryptbench.commands import run as run_cmd
from cryptbench.planning.request import RunRequest
from cryptbench.store.database import Store
from tests.support.cli import cli
from tests.support.targets import need_backend, requires_root

pytestmark = pytest.mark.integration

SEQ_SUITE = Path(__file__).parent.parent / "fixtures" / "suites" / "seq.toml"


@requires_root
def test_cipher_measures_userspace_kernel_and_the_ram_stack(target_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    measured = cipher.run(
        cipher.CipherRequest(seconds="0.05s", repeats=2, ram_size="16M", target=str(target_dir), db=db)
    )
    doc = measured.to_json()  # the JSON contract, as `cipher --json` prints it
    cores = userspace.cores()
    assert len(doc["userspace"]) == len(userspace.CASES) * (1 if cores == 1 else 2)
    assert all(r["throughput"] > 0 and len(r["samples"]) == 2 for r in doc["userspace"])
    # every algorithm a backend needs, named with its driver or said to be missing, never both
    named = {d["algorithm"] for d in doc["kernel"]["drivers"]}
    missing = {m.split(" ", 1)[0] for m in doc["kernel"]["missing"]}
    assert named | missing == set(kernel.NEEDED) and not named & missing, (named, missing)
    assert {"xts(aes)", "cts(cbc(aes))"} <= named  # the RAM stack's fscrypt instantiated both
    af = doc["kernel"]["af_alg"]
    assert af["available"] or "AF_ALG" in af["reason"]
    ram = doc["kernel"]["ram_stack"]
    if not ram["measured"]:
        pytest.skip(f"the RAM stack could not run here: {ram['reason']}")
    assert {(r["target"], r["direction"]) for r in ram["results"]} == {
        (t, d) for t in ("ram:ext4-loop", "ram:fscrypt") for d in ("write", "read")
    }
    assert all(len(r["samples"]) == 2 and r["throughput"] > 0 for r in ram["results"])
    medians = {(r["target"], r["direction"]): r["throughput"] for r in ram["results"]}
    for c in ram["cipher"]:
        stack, without = medians[("ram:fscrypt", c["direction"])], medians[("ram:ext4-loop", c["direction"])]
        assert (c["stack"], c["without_cipher"]) == (stack, without)
        assert c["throughput"] == separate(stack, without)
    store = Store.open(db)
    (row,) = store.cipher_rows()
    store.close()
    assert row.run_id is None
    # stored whole, with the machine's facts; the printed document adds the row's id
    assert row.result == {k: v for k, v in doc.items() if k != "id"} and doc["id"] == row.id
    assert row.environment["kernel_crypto"]["xts(aes)"]


def test_cipher_cli_without_the_kernel_stack(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    done = cli(
        "cipher", "--seconds", "0.05s", "--repeats", "1", "--no-kernel-stack", "--db", str(db), "--json"
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["kernel"]["ram_stack"] == {"measured": False, "reason": "not asked (--no-kernel-stack)"}
    table = cli("cipher", "--seconds", "0.05s", "--repeats", "1", "--no-kernel-stack", "--no-store")
    assert table.returncode == 0, table.stderr
    assert "aes-256-xts" in table.stdout and "kernel xts(aes)" in table.stdout
    assert (doc["engine"], doc["lower_bounds"]) == ("libcrypto", False)
    assert "system libcrypto, timed in C" in table.stdout


@pytest.mark.beside  # refused or read before anything is made: lane 2
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seconds", "5m"], "--seconds must be from"),
        (["--repeats", "0"], "--repeats must be from"),
        (["--ram-size", "1M"], "--ram-size must be at least 8M"),
        (["--ram-size", "lots"], "--ram-size"),
    ],
)
def test_cipher_bad_input(args: list[str], message: str, tmp_path: Path) -> None:
    done = cli("cipher", *args, "--db", str(tmp_path / "c.sqlite"))
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@requires_root
def test_a_tiny_ram_run(target_dir: Path, tmp_path: Path) -> None:
    need_backend("fscrypt")
    outcome = run_cmd.run(
        RunRequest(
            backends="fscrypt",
            suite=str(SEQ_SUITE),
            size="8M",
            repeats=2,
            seed=5,
            target=str(target_dir),
            db=tmp_path / "r.sqlite",
            ram=True,
        )
    )
    doc = outcome.document.to_json()
    assert outcome.status == "complete" and outcome.exit_code == 0
    names = [t["name"] for t in doc["targets"]]
    assert names == ["plain", "ext4-loop", "fscrypt", "ram:plain", "ram:ext4-loop", "ram:fscrypt"]
    media = {t["name"]: t["medium"] for t in doc["targets"]}
    assert media["fscrypt"] == "device" and media["ram:fscrypt"] == "ram"
    ram_fscrypt = next(t for t in doc["targets"] if t["name"] == "ram:fscrypt")
    assert ram_fscrypt["encryption_verified"] is True  # proven against ram:ext4-loop
    pairs = {(c["target"], c["baseline"], c["kind"]) for c in doc["comparisons"]}
    assert ("ram:fscrypt", "ram:ext4-loop", "baseline") in pairs
    assert ("ram:fscrypt", "ram:plain", "plain") in pairs
    assert ("fscrypt", "ram:fscrypt", "ram") in pairs
    assert not any(b == "plain" and t.startswith("ram:") for t, b, _ in pairs)
    # tmpfs pages are the medium, not a cache the run failed to drop
    assert not [
        w for w in doc["warnings"] if w["kind"] == "cache-not-dropped" and w["target"].startswith("ram:")
    ]
    assert any("on the device" in line for line in doc["conclusions"])
    # The run timed OpenSSL's equivalent of fscrypt's cipher and stored it with itself.
    stored = Store.open(tmp_path / "r.sqlite")
    try:
        rows = stored.cipher_rows(doc["run_id"])
    finally:
        stored.close()
    assert len(rows) == 1
    timed = rows[0].result["userspace"]
    assert {(r["cipher"], r["unit"]) for r in timed} == {("aes-256-xts", 4096)}
    # Efficiency for every encrypted target (twin included) and workload, held to
    # plain on its own medium and to a kernel ceiling taken from this run's twins.
    eff = {(e["target"], e["workload"]): e for e in doc["efficiency"]}
    workloads = ("seq1m-q8-read", "seq1m-q8-write")
    assert set(eff) == {(t, w) for t in ("fscrypt", "ram:fscrypt") for w in workloads}
    medians = {(r["workload"], r["target"], r["metric"]): r["median"] for r in doc["results"]}
    for (target, w), e in eff.items():
        plain = "ram:plain" if target.startswith("ram:") else "plain"
        assert e["plain_target"] == plain and e["plain"] == medians[(w, plain, "throughput")]
        assert e["achieved"] == medians[(w, target, "throughput")]
        expected = separate(
            medians[(w, "ram:fscrypt", "throughput")], medians[(w, "ram:ext4-loop", "throughput")]
        )
        assert e["ceiling"] == expected
        if expected is not None:
            assert e["ceiling_source"].startswith(f"this run's RAM twins at {w}")
        assert e["openssl"] == next(r["throughput"] for r in timed if r["cores"] == 1)
    # Every encrypted target is diagnosed, in sentences that carry a figure.
    assert {d["target"] for d in doc["diagnosis"]} == {"fscrypt", "ram:fscrypt"}
    for d in doc["diagnosis"]:
        assert d["sentences"] and all("MB/s" in s or "GB/s" in s for s in d["sentences"])
