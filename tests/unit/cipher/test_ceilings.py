"""The efficiency arithmetic and where each cipher ceiling comes from (cipher/ceilings.py).

Figures are this machine's: the quick run recorded in
tests/fixtures/documents/quick-fscrypt-gocryptfs-ram.json (fscrypt 51.3 MB/s
at seq1m-q8-read against plain's 414.3 and a kernel cipher of 55.3)."""

from __future__ import annotations

from typing import Any

import pytest

from cryptbench.cipher.ceilings import (
    Ceiling,
    Efficiency,
    Resolver,
    StoredCipher,
    bulk_workloads,
    cipher_use,
    direction,
    openssl_cells,
    separate,
)
from cryptbench.cipher.cipher_document import CipherDocument

HERE = {"hostname": "h1", "kernel": "6.18", "cpu_model": "EPYC"}
ELSEWHERE = {"hostname": "h2", "kernel": "6.18", "cpu_model": "EPYC"}


def _eff(achieved: float, plain: float | None, ceiling: float | None) -> Efficiency:
    return Efficiency(
        "seq1m-q8-read", "fscrypt", achieved, plain, "plain", cipher_use("fscrypt"), Ceiling(ceiling, "x"), 1,
        None, None, None,
    )  # fmt: skip


def test_the_bound_is_the_lower_of_plain_and_the_cipher() -> None:
    e = _eff(51.3e6, 414.3e6, 55.3e6)
    assert e.bound == 55.3e6 and e.limit == "cipher"
    assert e.efficiency == pytest.approx(51.3 / 55.3)
    fast_cipher = _eff(459.6e6, 414.3e6, 5797.9e6)
    assert fast_cipher.limit == "plain" and fast_cipher.efficiency == pytest.approx(459.6 / 414.3)  # above 1


def test_an_unknown_figure_leaves_the_other_as_the_bound() -> None:
    assert _eff(50e6, 400e6, None).limit == "plain"
    only_cipher = _eff(50e6, None, 55e6)
    assert only_cipher.bound == 55e6 and only_cipher.limit == "cipher"
    nothing = _eff(50e6, None, None)
    assert nothing.bound is None and nothing.efficiency is None and nothing.limit is None
    assert nothing.to_json()["efficiency"] is None


def _doc(
    userspace: list[dict[str, Any]] | None = None,
    af_alg: list[dict[str, Any]] | None = None,
    ram_cipher: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A stored cipher document of schema 1 (no engine, no lower_bounds) holding the given
    figures; the rest is filled in as `cryptbench cipher` writes it."""
    return {
        "library": "OpenSSL 3.0.17",
        "cores": 2,
        "seconds": 0.3,
        "repeats": 3,
        "userspace": [
            {
                "mode": "encrypt",
                "used_by": "",
                "min": r["throughput"],
                "max": r["throughput"],
                "samples": [r["throughput"]],
                **r,
            }
            for r in userspace or []
        ],
        "unavailable": [],
        "kernel": {
            "drivers": [],
            "missing": [],
            "af_alg": {
                "available": True,
                "reason": "",
                "results": [{"key_bits": 512, **r} for r in af_alg or []],
            },
            "ram_stack": {
                "measured": bool(ram_cipher),
                "reason": "",
                "cipher": [
                    {"algorithm": "xts(aes)", "stack": 1.0, "without_cipher": 1.0, "explanation": "", **c}
                    for c in ram_cipher or []
                ],
            },
        },
    }


def _openssl(cipher: str, unit: int, one: float, two: float) -> dict[str, Any]:
    return _doc(
        [
            {"cipher": cipher, "unit": unit, "cores": 1, "throughput": one},
            {"cipher": cipher, "unit": unit, "cores": 2, "throughput": two},
        ]
    )


def _stored(id_: int, at: str, env: dict[str, str], doc: dict[str, Any]) -> StoredCipher:
    return StoredCipher(id_, at, env, CipherDocument.from_json(doc))


def _resolver(
    run_cipher: dict[str, Any] | None = None,
    stored: list[StoredCipher] | None = None,
    medians: dict[tuple[str, str], float] | None = None,
) -> Resolver:
    specs = {
        "seq1m-q8-read": {"rw": "read", "bs": 1 << 20, "iodepth": 8},
        "seq1m-q8-write": {"rw": "write", "bs": 1 << 20, "iodepth": 8},
        "rnd4k-q1-read": {"rw": "randread", "bs": 4096, "iodepth": 1},
    }
    return Resolver(
        HERE,
        None if run_cipher is None else CipherDocument.from_json(run_cipher),
        stored or [],
        medians or {},
        {"fscrypt": "ext4-loop", "gocryptfs": "plain", "securefs": "plain", "ext4-loop": "plain"},
        {w: direction(s["rw"]) for w, s in specs.items()},
        bulk_workloads(specs),
    )


def test_userspace_ceilings_use_the_cores_the_layer_can_use() -> None:
    r = _resolver(_openssl("aes-256-gcm", 4096, 3.1e9, 5.8e9))
    ceiling, cores = r.resolve("gocryptfs", "gocryptfs", "seq1m-q8-read")  # parallel: all cores
    assert (ceiling.throughput, cores) == (5.8e9, 2) and "measured by this run" in ceiling.source
    ceiling, cores = r.resolve("securefs", "securefs", "seq1m-q8-read")  # one core
    assert (ceiling.throughput, cores) == (3.1e9, 1)


def test_figures_timed_from_python_are_called_lower_bounds() -> None:
    """Only the Python engine's figures understate the cipher; a schema 1
    document (no "lower_bounds" key) was always timed from Python."""
    timed_in_c = {**_openssl("aes-256-gcm", 4096, 3.1e9, 5.8e9), "engine": "libcrypto", "lower_bounds": False}
    ceiling, _ = _resolver(timed_in_c).resolve("gocryptfs", "gocryptfs", "seq1m-q8-read")
    assert "lower bound" not in ceiling.source
    from_python = {**timed_in_c, "engine": "cryptography", "lower_bounds": True}
    ceiling, _ = _resolver(from_python).resolve("gocryptfs", "gocryptfs", "seq1m-q8-read")
    assert ceiling.source.endswith("(timed from Python: a lower bound)")
    schema_1 = _stored(8, "2026-11-21", HERE, _openssl("aes-256-gcm", 4096, 1.5e9, 2.5e9))
    ceiling, _ = _resolver(stored=[schema_1]).resolve("gocryptfs", "gocryptfs", "seq1m-q8-read")
    assert "cryptbench cipher #8" in ceiling.source and ceiling.source.endswith("a lower bound)")


def test_a_stored_cipher_counts_only_from_the_same_machine() -> None:
    other = _stored(7, "2026-11-20", ELSEWHERE, _openssl("aes-256-gcm", 4096, 1.0e9, 2.0e9))
    ceiling, _ = _resolver(stored=[other]).resolve("gocryptfs", "gocryptfs", "seq1m-q8-read")
    assert ceiling.throughput is None and "run `cryptbench cipher`" in ceiling.source
    mine = _stored(8, "2026-11-21", HERE, _openssl("aes-256-gcm", 4096, 1.5e9, 2.5e9))
    ceiling, _ = _resolver(stored=[mine, other]).resolve("gocryptfs", "gocryptfs", "seq1m-q8-read")
    assert ceiling.throughput == 2.5e9 and "cryptbench cipher #8" in ceiling.source


def test_kernel_ceilings_come_from_the_twins_in_bulk() -> None:
    # At rnd4k-q1-read the twins' gap is mostly per-request cost: the bulk read workload is used instead.
    medians = {
        ("seq1m-q8-read", "ram:fscrypt"): 51.3e6,
        ("seq1m-q8-read", "ram:ext4-loop"): 1864.1e6,
        ("rnd4k-q1-read", "ram:fscrypt"): 17.6e6,
        ("rnd4k-q1-read", "ram:ext4-loop"): 121.1e6,
    }
    r = _resolver(medians=medians)
    expected = separate(51.3e6, 1864.1e6)
    for target in ("fscrypt", "ram:fscrypt"):
        ceiling, cores = r.resolve(target, "fscrypt", "rnd4k-q1-read")
        assert ceiling.throughput == expected and cores == 1
        assert ceiling.source.startswith("this run's RAM twins at seq1m-q8-read")
    # No write workload ran on the twins: nothing to separate for writes.
    ceiling, _ = r.resolve("fscrypt", "fscrypt", "seq1m-q8-write")
    assert ceiling.throughput is None and "--ram" in ceiling.source


def test_af_alg_comes_first_then_the_twins_then_a_stored_ram_stack() -> None:
    af_alg = _doc(af_alg=[{"algorithm": "xts(aes)", "unit": 4096, "throughput": 2e9}])  # no cores: one
    medians = {("seq1m-q8-write", "ram:fscrypt"): 69.0e6, ("seq1m-q8-write", "ram:ext4-loop"): 335.5e6}
    ceiling, _ = _resolver(af_alg, medians=medians).resolve("fscrypt", "fscrypt", "seq1m-q8-write")
    assert ceiling.throughput == 2e9 and "AF_ALG" in ceiling.source
    ceiling, _ = _resolver(medians=medians).resolve("fscrypt", "fscrypt", "seq1m-q8-write")
    assert ceiling.throughput == pytest.approx(86.8e6, rel=1e-3)  # cryptbench cipher's figure, README
    stack = _doc(ram_cipher=[{"direction": "write", "throughput": 86.8e6}])
    stored = _stored(3, "2026-11-21", HERE, stack)
    ceiling, _ = _resolver(stored=[stored]).resolve("fscrypt", "fscrypt", "seq1m-q8-write")
    assert ceiling.throughput == 86.8e6 and "cryptbench cipher #3" in ceiling.source
    # a read workload finds no read figure in that measurement
    ceiling, _ = _resolver(stored=[stored]).resolve("fscrypt", "fscrypt", "seq1m-q8-read")
    assert ceiling.throughput is None


def test_af_alg_ceilings_use_the_cores_the_layer_can_use_and_say_how_they_were_timed() -> None:
    rows = [
        {"algorithm": "xts(aes)", "unit": 4096, "cores": 1, "throughput": 39.1e6},
        {"algorithm": "xts(aes)", "unit": 4096, "cores": 2, "throughput": 75.1e6},
        {"algorithm": "xts(aes)", "unit": 512, "cores": 2, "throughput": 20.3e6},
    ]
    doc = _doc(af_alg=rows)
    doc["kernel"]["af_alg"]["engine"] = "C"
    # dm-crypt's workqueue spreads a stream over every core; without it the submitting thread encrypts.
    ceiling, _ = _resolver(doc).resolve("luks-aes256", "luks-aes256", "seq1m-q8-write")
    assert ceiling.throughput == 75.1e6 and "4096-byte requests, 2 cores" in ceiling.source
    assert "lower bound" not in ceiling.source
    ceiling, _ = _resolver(doc).resolve("luks-aes256-noqueue", "luks-aes256-noqueue", "seq1m-q8-write")
    assert ceiling.throughput == 39.1e6 and "one core" in ceiling.source
    # Timed from Python (no C loop built), or before the engine was recorded: a lower bound.
    doc["kernel"]["af_alg"]["engine"] = "Python"
    ceiling, _ = _resolver(doc).resolve("luks-aes256", "luks-aes256", "seq1m-q8-write")
    assert ceiling.source.endswith("(timed from Python: a lower bound)")


def test_a_backend_without_a_cipher_has_no_ceiling() -> None:
    ceiling, _ = _resolver().resolve("ext4-loop", "ext4-loop", "seq1m-q8-read")
    assert ceiling.throughput is None and "declares no cipher use" in ceiling.source


def test_the_run_times_openssl_for_kernel_and_userspace_layers_on_their_cores() -> None:
    # fscrypt's kernel cipher on one core (its OpenSSL equivalent), gocryptfs' on all, securefs' on one
    assert openssl_cells(["plain", "ext4-loop", "fscrypt", "gocryptfs", "securefs"], 2) == [
        (("aes-256-xts", 4096), 1),
        (("aes-256-gcm", 4096), 2),
        (("aes-256-gcm", 4096), 1),
    ]


def test_bulk_workloads_take_the_largest_blocks_then_the_deepest_queue() -> None:
    specs = {
        "a": {"rw": "write", "bs": 4096, "iodepth": 32},
        "b": {"rw": "write", "bs": 1 << 20, "iodepth": 1},
        "c": {"rw": "write", "bs": 1 << 20, "iodepth": 8},
        "d": {"rw": "read", "bs": 1 << 20, "iodepth": 8, "view": "backing"},  # the ciphertext: no cipher
        "e": {"rw": "randrw", "bs": 1 << 20, "iodepth": 8},
    }
    assert bulk_workloads(specs) == {"write": "c"}
    assert [direction(rw) for rw in ("read", "randread", "write", "randwrite", "randrw", None)] == [
        "read", "read", "write", "write", "mixed", "mixed",
    ]  # fmt: skip
