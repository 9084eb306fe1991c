"""The kernel's cipher through AF_ALG, on a kernel that has it (and loads
af_alg, algif_skcipher and its AES driver on demand), set against the RAM-stack
method on the same kernel: both are what `cryptbench cipher` prints; and the
other kernel ciphers the targets use (Adiantum, XChaCha12, CBC for eCryptfs) and
the HMAC-SHA256 of LUKS2's integrity tags, through a hash socket; and `cryptsetup
benchmark` beside them, through the same sockets."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest

from cryptbench.cipher import cryptsetup_bench, kernel
from cryptbench.cipher.cipher_document import CipherDocument
from cryptbench.model.units import format_rate
from cryptbench.report import cipher_table
from tests.support.cli import cli

pytestmark = [pytest.mark.lab, pytest.mark.integration]


def test_af_alg_per_unit_on_every_core_against_the_ram_stack(
    target_dir: Path,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert kernel.af_alg_unavailable() is None
    proc = cli(
        *("cipher", "--json", "--seconds", "0.3", "--repeats", "2", "--ram-size", "16M"),
        *("--target", str(target_dir), "--db", str(tmp_path / "r.sqlite")),
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    af = doc["kernel"]["af_alg"]
    assert af["available"], af["reason"]
    assert af["engine"] == "C", "the C loop (_af_alg.c) was not built"
    got = {(r["unit"], r["cores"]): r["throughput"] for r in af["results"] if r["algorithm"] == "xts(aes)"}
    assert set(got) == {(512, 1), (4096, 1), (512, 2), (4096, 2)}
    # Debian builds Adiantum, XChaCha12, CBC and HMAC as modules: each loaded on demand and timed
    others = {
        (r["algorithm"], r["cores"]): r["throughput"] for r in af["results"] if r["algorithm"] != "xts(aes)"
    }
    for algorithm in ("adiantum(xchacha12,aes)", "xchacha12", "cbc(aes)", "hmac(sha256)"):
        assert others.get((algorithm, 1), 0) > 0 and others.get((algorithm, 2), 0) > 0, (algorithm, af)
        record_property(f"AF_ALG {algorithm}, 4096 B units, 1 core(s)", format_rate(others[(algorithm, 1)]))
    assert af.get("skipped", []) == []
    # each, instantiated by its socket, named with the driver the kernel chose (read last)
    drivers = {d["algorithm"]: d["driver"] for d in doc["kernel"]["drivers"]}
    for algorithm in ("xts(aes)", "adiantum(xchacha12,aes)", "cbc(aes)", "hmac(sha256)"):
        assert drivers.get(algorithm), (algorithm, doc["kernel"]["missing"])
        record_property(f"driver of {algorithm}", drivers[algorithm])
    # Each figure is the median of its repeats, every one of which moved data. (Which
    # unit or core count is faster is not asserted: these are separate 0.3 s timings
    # under TCG, and their order is noise's to decide.)
    for r in af["results"]:
        assert len(r["samples"]) == 2 and all(x > 0 for x in r["samples"]), r
        assert r["throughput"] == pytest.approx(statistics.median(r["samples"])), r
    ram = doc["kernel"]["ram_stack"]
    assert ram["measured"], ram["reason"]
    stack = {r["target"]: r for r in ram["results"]}
    for (unit, cores), rate in sorted(got.items()):
        record_property(f"AF_ALG xts(aes), {unit} B units, {cores} core(s)", format_rate(rate))
    # The same requests timed from Python, as before the C loop: the interpreter's share.
    monkeypatch.setattr(kernel, "_af_alg", None)
    python = kernel.af_alg_throughput("xts(aes)", 64, 4096, 0.3, 1)
    record_property("AF_ALG xts(aes), 4096 B units, 1 core(s), timed from Python", format_rate(python))
    tags = kernel.af_alg_throughput("hmac(sha256)", 32, 4096, 0.3, 1, kind="hash")  # the hash socket too
    record_property("AF_ALG hmac(sha256), 4096 B units, 1 core(s), timed from Python", format_rate(tags))
    assert python > 0 and tags > 0
    for r in ram["results"]:
        record_property(f"RAM stack {r['target']} {r['direction']}", format_rate(r["throughput"]))
    for c in ram["cipher"]:
        separated = format_rate(c["throughput"]) if c["throughput"] else c["explanation"]
        record_property(f"RAM stack's separated cipher ({c['direction']})", separated)
    # Both RAM stacks ran both ways, each figure the median of its repeats.
    assert {(r["target"], r["direction"]) for r in ram["results"]} == {
        (t, d) for t in ("ram:fscrypt", "ram:ext4-loop") for d in ("write", "read")
    }, stack
    for r in ram["results"]:
        assert len(r["samples"]) == 2 and all(x > 0 for x in r["samples"]), r
        assert r["throughput"] == pytest.approx(statistics.median(r["samples"])), r
    # cryptsetup benchmark beside them, each of its figures said to have gone through AF_ALG,
    # against the kernel's 4 KiB figure (also AF_ALG) and the cipher on RAM (not)
    setup = doc["kernel"]["cryptsetup"]
    assert setup["available"] and setup["skipped"] == [], setup
    assert {(r["cipher"], r["key_bits"]) for r in setup["results"]} == {
        (c, k) for c, k, _a in cryptsetup_bench.CASES
    }
    lines = cipher_table.cryptsetup_lines(CipherDocument.from_json(doc))
    assert lines[0].startswith("cryptsetup benchmark: through AF_ALG, one 64.0 KiB request at a time")
    xts = next(line for line in lines if line.startswith("  aes-xts-plain64 512b"))
    assert "also through AF_ALG" in xts, lines
    if any(c["throughput"] for c in ram["cipher"] if c["direction"] == "write"):
        assert "the cipher alone on RAM, not through AF_ALG" in xts, lines
    for line in lines:
        record_property("cipher's cryptsetup line", line.strip())


@pytest.mark.lab("6.12")
def test_every_kernel_cipher_through_af_alg_on_6_12(record_property: Callable[[str, object], None]) -> None:
    """The same sockets on Debian 13's kernel, each timed once and briefly in this process
    (the test above covers `cryptbench cipher` itself on 6.1): every cipher the targets use
    answers, with the driver the kernel chose for it."""
    assert kernel.af_alg_unavailable() is None
    for case in kernel.AF_ALG_CASES:
        for unit in case.units:
            rate = kernel.af_alg_throughput(
                case.algorithm, case.key_bytes, unit, 0.1, 1, case.iv_bytes, case.kind
            )
            assert rate > 0, (case.algorithm, unit)
    found, missing = kernel.drivers()
    drivers = {d.algorithm: d.driver for d in found}
    for algorithm in ("xts(aes)", "adiantum(xchacha12,aes)", "cbc(aes)", "hmac(sha256)"):
        assert drivers.get(algorithm), (algorithm, missing)
        record_property(f"driver of {algorithm}", drivers[algorithm])
    # cryptsetup benchmark goes through the same sockets: a figure for every case
    setup = cryptsetup_bench.measure()
    assert setup.available and setup.skipped == [], setup
    for f in setup.results:
        assert f.encrypt > 0 and f.decrypt > 0, f
        record_property(f"cryptsetup benchmark {f.cipher} {f.key_bits}b", format_rate(f.encrypt))
