"""The cipher module's logic: /proc/crypto as this machine printed it, driver
classification, the RAM-stack arithmetic, and OpenSSL measured for real."""

from __future__ import annotations

import pytest

from cryptbench.cipher import kernel, userspace
from cryptbench.cipher.ceilings import separate
from tests.support.paths import TESTS

PROC_CRYPTO = (TESTS / "fixtures" / "proc" / "crypto-6.18-generic-aes.txt").read_text()


def test_drivers_from_this_machines_proc_crypto() -> None:
    found, missing = kernel.drivers(PROC_CRYPTO)
    by_name = {d.algorithm: d for d in found}
    # this kernel has no Adiantum: said, not guessed
    assert missing == [
        "adiantum(xchacha12,aes) is not in /proc/crypto (not instantiated yet, or the kernel lacks it)"
    ]
    assert by_name["cbc(aes)"].driver == "cbc(ecb(aes-fixed-time))"
    hmac = by_name["hmac(sha256)"].info()
    assert hmac.driver == "hmac-sha256-lib" and hmac.used_by.startswith("luks-aes256-hmac")
    xts = by_name["xts(aes)"]
    assert xts.driver == "xts(ecb(aes-fixed-time))"
    assert xts.priority == 101
    assert kernel.is_software(xts.acceleration)
    assert by_name["cts(cbc(aes))"].driver == "cts(cbc(ecb(aes-fixed-time)))"


def test_the_highest_priority_usable_driver_wins() -> None:
    text = "\n".join(
        [
            "name : xts(aes)\ndriver : xts(ecb(aes-generic))\nmodule : kernel\npriority : 100\n"
            "type : skcipher\n",
            "name : xts(aes)\ndriver : __xts-aes-aesni\nmodule : aesni_intel\npriority : 401\n"
            "internal : yes\ntype : skcipher\n",
            "name : xts(aes)\ndriver : xts-aes-vaes-avx2\nmodule : aesni_intel\npriority : 600\n"
            "selftest : passed\ntype : skcipher\n",
            "name : xts(aes)\ndriver : xts-aes-broken\nmodule : x\npriority : 900\nselftest : failed\n",
        ]
    )
    d = kernel.selected(kernel.parse(text), "xts(aes)")
    assert d is not None
    assert d.driver == "xts-aes-vaes-avx2"  # not the internal one, not the one that failed its self-test
    assert d.acceleration == "hardware: VAES instructions"
    assert kernel.selected(kernel.parse(text), "cbc(aes)") is None


@pytest.mark.parametrize(
    ("driver", "software"),
    [
        ("xts(ecb(aes-fixed-time))", True),
        ("xts(ecb(aes-generic))", True),
        ("xts-aes-aesni", False),
        ("xts-aes-vaes-avx10_512", False),
        ("xts-aes-ce", False),
        ("xts-aes-neonbs", True),
    ],
)
def test_classify(driver: str, software: bool) -> None:
    assert kernel.is_software(kernel.classify(driver)) is software


def test_an_unknown_driver_is_said_to_be_unknown() -> None:
    assert kernel.classify("xts-aes-someaccel").startswith("unknown")


def test_missing_algorithms_are_named() -> None:
    found, missing = kernel.drivers("name : aes\ndriver : aes-generic\npriority : 100\n")
    assert found == []
    assert any("xts(aes) is not in /proc/crypto" in m for m in missing)


def test_separate_the_cipher_from_its_stack() -> None:
    # Figures from `cryptbench cipher` here: fscrypt 69.0 MB/s, ext4-loop 335.5 MB/s on RAM, writes.
    est = separate(69.0e6, 335.5e6)
    assert est == pytest.approx(86.9e6, rel=1e-3)
    # time per byte adds up: the stack is exactly as slow as its parts together
    assert pytest.approx(1 / 335.5e6 + 1 / est) == 1 / 69.0e6
    assert separate(300e6, 300e6) is None  # not slower: the cipher cannot be told from noise
    assert separate(310e6, 300e6) is None
    assert separate(0.0, 300e6) is None


def test_the_c_loop_was_built() -> None:
    """`make` installs gcc, the Python headers and libssl-dev, so the C loop
    must have been built; without it every figure would be a Python-timed
    lower bound and this says why."""
    assert userspace.engine() == "libcrypto"
    assert userspace.library().startswith("OpenSSL 3.")  # Debian 12's libcrypto, not the bundled one


@pytest.mark.parametrize("engine", userspace.ENGINES)
def test_every_case_runs_in_this_openssl(engine: str) -> None:
    for c in userspace.CASES:
        assert userspace.unavailable(c, engine) is None, c


@pytest.mark.timed
@pytest.mark.parametrize("engine", userspace.ENGINES)
def test_openssl_measured_for_real(engine: str) -> None:
    c = userspace.case("aes-256-xts", 4096)
    (one,) = userspace.measure([(c, 1)], 0.05, 2, engine)
    assert one.workers == 1 and len(one.samples) == 2
    assert all(s > 1e6 for s in one.samples)  # any CPU of this century does more than 1 MB/s
    row = one.figure()
    assert row.min <= row.throughput <= row.max and row.samples == list(one.samples)


@pytest.mark.timed
@pytest.mark.parametrize("engine", userspace.ENGINES)
def test_all_cores_run_at_once(engine: str) -> None:
    c = userspace.case("aes-256-gcm", 4096)
    each = userspace.rates(c, 0.05, 2, engine)
    assert len(each) == 2 and all(r > 1e6 for r in each)  # both workers ran and reported


def test_only_python_timed_figures_are_lower_bounds() -> None:
    assert userspace.lower_bounds("cryptography")
    assert not userspace.lower_bounds("libcrypto")
    assert "timed in C" in userspace.library("libcrypto")
    assert "timed from Python" in userspace.library("cryptography")


def test_openssl_refusing_is_a_one_line_error() -> None:
    from cryptbench.model.errors import CryptbenchError

    bogus = userspace.CipherCase("aes-256-nonsense", 4096, 32, "xts", "nothing")
    why = userspace.unavailable(bogus, "libcrypto")
    assert why is not None and "aes-256-nonsense" in why and "\n" not in why
    with pytest.raises(CryptbenchError, match="OpenSSL timing failed: this libcrypto has no such cipher"):
        userspace.rates(bogus, 0.01, 2, "libcrypto")


def test_the_c_loop_checks_its_arguments() -> None:
    from cryptbench.cipher import _units  # type: ignore[attr-defined]

    with pytest.raises(ValueError, match="multiple of 16"):
        _units.encrypt_for("aes-256-xts", 100, 0.01, 1 << 20)
    with pytest.raises(ValueError, match="buffer must hold a unit"):
        _units.encrypt_for("aes-256-xts", 4096, 0.01, 512)


def test_unknown_case() -> None:
    with pytest.raises(KeyError):
        userspace.case("aes-256-xts", 1234)


def test_a_worker_that_dies_is_an_error_at_once() -> None:
    """A Python-timed worker process killed mid-measurement: a one-line error within a second or so, not a
    minute's wait for a result that will never come."""
    import threading
    import time

    import psutil

    from cryptbench.model.errors import CryptbenchError

    def kill_a_worker() -> None:
        deadline = time.monotonic() + 120  # a generous ceiling: it kills as soon as a worker appears
        while time.monotonic() < deadline:
            for child in psutil.Process().children():
                cmd = " ".join(child.cmdline())
                if "spawn_main" in cmd and "resource_tracker" not in cmd:
                    child.kill()
                    return
            time.sleep(0.05)

    threading.Thread(target=kill_a_worker, daemon=True).start()
    with pytest.raises(CryptbenchError, match=r"an OpenSSL timing process died \(exit status -9\)"):
        userspace.rates(userspace.case("aes-256-gcm", 4096), 120.0, 2, "cryptography")


def test_af_alg_where_the_kernel_has_none_is_an_oserror_from_either_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """This host's kernel has no AF_ALG (the lab's has: tests/lab/test_af_alg.py): both the C
    loop and the Python one refuse with the kernel's errno, not a crash or a zero figure."""
    if kernel.af_alg_unavailable() is None:
        pytest.skip("this kernel has AF_ALG; the refusal is for kernels without it")
    with pytest.raises(OSError):
        kernel.af_alg_throughput("xts(aes)", 64, 4096, 0.05, 2)
    with pytest.raises(OSError):  # a hash socket, for the integrity tags' HMAC
        kernel.af_alg_throughput("hmac(sha256)", 32, 4096, 0.05, 1, kind="hash")
    if kernel._af_alg is not None:  # a kind the C loop does not know is the caller's error
        with pytest.raises(ValueError, match="kind skcipher or hash"):
            kernel._af_alg.encrypt_for("xts(aes)", b"k" * 64, 4096, 0.05, 0, 16, "aead")
    monkeypatch.setattr(kernel, "_af_alg", None)
    with pytest.raises(OSError):
        kernel.af_alg_throughput("xts(aes)", 64, 4096, 0.05, 1)
    with pytest.raises(OSError):
        kernel.af_alg_throughput("hmac(sha256)", 32, 4096, 0.05, 1, kind="hash")


def test_kernel_ciphers_the_kernel_refused_are_kept_with_its_reason() -> None:
    from cryptbench.cipher.cipher_document import AfAlg, AfAlgFigure, Unmeasured

    refused = Unmeasured(
        "adiantum(xchacha12,aes)", 4096, "the kernel refused adiantum(xchacha12,aes) through AF_ALG"
    )
    af = AfAlg(True, "", "C", [AfAlgFigure("xts(aes)", 512, 4096, 1, 1e9, [1e9])], [refused])
    assert AfAlg.from_json(af.to_json()) == af
    assert "skipped" not in AfAlg(True, "", "C").to_json()  # documents without refusals read as before
    cases = {c.algorithm: c for c in kernel.AF_ALG_CASES}
    assert (cases["xts(aes)"].iv_bytes, cases["adiantum(xchacha12,aes)"].iv_bytes) == (16, 32)
    assert cases["cbc(aes)"].key_bytes == 32  # eCryptfs's AES-256
    assert cases["hmac(sha256)"].kind == "hash" and {c.kind for c in cases.values()} == {"skcipher", "hash"}
