"""A LUKS twin (backends/luks_twin.py, planning/twin_request.py): its name says its whole
make and resolves to it again; what a twin cannot copy is refused in one line; the run
it asks for is the volume's setup in scratch space and on RAM. The twin made and run on
a real volume is tests/lab/test_existing_flags.py's (this kernel has no device-mapper)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cryptbench.backends import REGISTRY
from cryptbench.backends.luks import LuksBackend
from cryptbench.backends.luks_twin import twin_backend, twin_name, twin_variant
from cryptbench.backends.luks_variants import ADIANTUM, AES_XTS
from cryptbench.measure.volume import CryptVolume
from cryptbench.model.errors import UsageError
from cryptbench.model.stack import Layer, LayerKind, Stack
from cryptbench.planning.existing import checked
from cryptbench.planning.request import RunRequest
from cryptbench.planning.targets import parse_backend_list
from cryptbench.planning.twin_request import twin_request, twin_said

NOQ = ("no_read_workqueue", "no_write_workqueue")


@pytest.mark.parametrize(
    ("make", "name"),
    [
        ((AES_XTS, 512, 4096, ()), "luks-twin-aes256-s4096"),
        ((AES_XTS, 256, 512, ("same_cpu_crypt",)), "luks-twin-aes128-s512-samecpu"),
        ((AES_XTS, 512, 4096, NOQ), "luks-twin-aes256-s4096-noreadq-nowriteq"),
        (
            (ADIANTUM, 256, 4096, ("high_priority", "submit_from_crypt_cpus")),
            "luks-twin-adiantum-s4096-submitcpus-highpri",
        ),
    ],
)  # fmt: skip
def test_a_twins_name_says_its_make_and_makes_it_again(make: tuple, name: str) -> None:
    cipher, bits, sector, flags = make
    assert twin_name(cipher, bits, sector, flags) == name
    v = twin_variant(name)
    assert v is not None
    assert (v.cipher, v.key_bits, v.sector, set(v.flags)) == (cipher, bits, sector, set(flags))
    assert v.integrity is None and v.variant_of is None


@pytest.mark.parametrize(
    "name",
    [
        "luks-twin-aes256",  # no sector size
        "luks-twin-serpent-s4096",
        "luks-twin-aes256-s8192",
        "luks-twin-aes256-s4096-fast",
        "luks-twin-aes256-s4096-noreadq-noreadq",
        "luks-twin-aes256-s4096-nowriteq-noreadq",  # one make, one name: the table's order
        "luks-aes256",
        "xluks-twin-aes256-s4096",
    ],
)
def test_a_name_that_is_no_twins_makes_none(name: str) -> None:
    assert twin_variant(name) is None and twin_backend(name) is None


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (
            ("serpent-xts-plain64", 512, 4096, ()),
            "--ram: a twin is made for aes-xts-plain64 with a 256-bit key, aes-xts-plain64 with a "
            "512-bit key, xchacha12,aes-adiantum-plain64 with a 256-bit key; this volume is "
            "serpent-xts-plain64 with a 512-bit key",
        ),
        ((AES_XTS, 512, 8192, ()), "--ram: dm-crypt takes sectors of 512, 1024, 2048, 4096 bytes, not 8192"),
        (
            (AES_XTS, 512, 4096, ("iv_large_sectors", "no_read_workqueue", "fast")),
            "--ram: a twin cannot copy the table's iv_large_sectors, fast",
        ),
    ],
)
def test_what_no_twin_can_copy_is_refused_in_one_line(make: tuple, said: str) -> None:
    with pytest.raises(UsageError) as e:
        twin_name(*make)
    assert str(e.value) == said


def test_the_registry_resolves_a_twin_but_never_lists_one() -> None:
    name = "luks-twin-aes256-s512-noreadq"
    assert name in REGISTRY and name not in list(REGISTRY)
    twin = REGISTRY[name]
    assert isinstance(twin, LuksBackend) and twin is REGISTRY.get(name)
    assert twin.variant.flags == ("no_read_workqueue",) and twin.baseline == "ext4-loop"
    assert "AES-256-XTS" in twin.summary and "512-byte sectors" in twin.cipher_label
    assert REGISTRY.get("luks-twin-nothing") is None and "luks-twin-nothing" not in REGISTRY
    with pytest.raises(KeyError):
        REGISTRY["luks-twin-nothing"]
    assert parse_backend_list(f"{name},plain") == [name, "plain"]
    with pytest.raises(UsageError, match="unknown backend 'luks-twin-aes256-s4096-fast'"):
        parse_backend_list("luks-twin-aes256-s4096-fast")


def volume(options: tuple[str, ...] = (), **details: str) -> CryptVolume:
    said = {"format": "LUKS2", "cipher": AES_XTS, "key": "512-bit key", "flags": "none", **details}
    crypt = Layer(LayerKind.DM_CRYPT, "dm-0 (home)", True, 0, tuple((k, v) for k, v in said.items() if v))
    disk = Layer(LayerKind.DISK, "nvme0n1", False, 1)
    return CryptVolume(
        mapping="home",
        mapping_node=Path("/dev/dm-0"),
        device="nvme0n1p3",
        device_node=Path("/dev/nvme0n1p3"),
        data_offset=16 << 20,
        size=1 << 30,
        sector=4096,
        device_block=512,
        layer=crypt,
        stack=Stack("/dev/mapper/home", (crypt, disk)),
        options=options,
    )


def test_the_twins_run_is_the_volumes_make_in_scratch_space_and_on_ram() -> None:
    v = volume(("allow_discards", "no_read_workqueue", "sector_size:4096"))
    asked = RunRequest(existing="/dev/mapper/home", suite="quick", size="8M", target="/var/tmp")
    twin = twin_request(asked, v)
    assert twin == replace(asked, existing=None, backends="luks-twin-aes256-s4096-noreadq", ram=True)
    made = "made in scratch space and on RAM with a key of its own; your volume is only read (its table), "
    made += "never written"
    discards = "left out: allow_discards (no workload here discards)"
    assert twin_said(v) == (
        "the twin of your volume home (on nvme0n1p3): LUKS2 with its aes-xts-plain64, 512-bit key, "
        f"4096-byte sectors, flags no_read_workqueue, {made}; {discards}"
    )
    both = volume(("allow_discards", "same_cpu_crypt", "no_write_workqueue", "integrity:32:aead"))
    assert twin_said(both).endswith(f"flags same_cpu_crypt, no_write_workqueue, {made}; {discards}")
    assert twin_said(volume()).endswith(f"4096-byte sectors, flags none, {made}")


@pytest.mark.parametrize(
    ("asked", "v", "said"),
    [
        (RunRequest(ram=True, backends="plain"), volume(), "--backends: --existing VOLUME --ram runs"),
        (RunRequest(ram=True, try_flags=True), volume(), "--try-flags reads your volume; --ram writes"),
        (RunRequest(ram=True, key_file="k"), volume(), "--key-file goes with --try-flags"),
        (
            RunRequest(ram=True),
            volume(integrity="J, 32-byte tags"),
            r"^--ram: home has dm-integrity tags \(J, 32-byte tags\); a twin is made without integrity "
            r"\(cryptbench run --backends luks-aes256-hmac --ram measures its cost\)$",
        ),
        (RunRequest(ram=True), volume(key=""), "gives no key size"),
        (RunRequest(ram=True), volume(cipher=""), "; this volume is [?] with a 512-bit key$"),
    ],
)
def test_what_a_twin_run_cannot_be_asked_is_refused_in_one_line(
    asked: RunRequest, v: CryptVolume, said: str
) -> None:
    with pytest.raises(UsageError, match=said):
        twin_request(asked, v)


def test_a_fuse_mount_has_no_twin_and_the_refusal_says_what_to_run() -> None:
    # planning/existing_fuse.py checks a FUSE run's request with the same refusals
    with pytest.raises(UsageError, match=r"^--ram: a twin is made of a dm-crypt volume only; .*--ram\)$"):
        checked(RunRequest(existing="/home/me/Private", ram=True))


def test_the_answer_opens_with_which_volume_the_twin_copies() -> None:
    from types import SimpleNamespace

    from cryptbench.report.sentences import twin_line

    note = twin_said(volume(("no_read_workqueue", "sector_size:4096")))
    targets = [SimpleNamespace(backend=b) for b in ("plain", "ext4-loop", "luks-twin-aes256-s4096-noreadq")]
    doc = SimpleNamespace(targets=targets, notes=["added plain as a baseline", note])
    assert twin_line(doc) == f"luks-twin-aes256-s4096-noreadq is {note}."  # type: ignore[arg-type]
    # no twin, or no note of one (a twin asked for by --backends): nothing said
    assert twin_line(SimpleNamespace(targets=targets[:2], notes=[note])) is None  # type: ignore[arg-type]
    assert twin_line(SimpleNamespace(targets=targets, notes=[])) is None  # type: ignore[arg-type]
