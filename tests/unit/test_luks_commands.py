"""cryptsetup command lines (the code path that runs wherever device-mapper exists)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cryptbench.backends import REGISTRY
from cryptbench.backends.base import TargetSpec
from cryptbench.backends.luks import (
    AES_XTS,
    LUKS2_HEADER,
    NO_QUEUE_SINCE,
    NO_READ_QUEUE,
    NO_WRITE_QUEUE,
    PLAIN_LUKS,
    VARIANTS,
    check_cipher,
    check_integrity_mode,
    check_table,
    device_mapper_missing,
    format_command,
    image_size,
    integrity_detail,
    integrity_table_mode,
    open_command,
    parse_targets,
    table_cipher,
    table_options,
    table_without_key,
)
from cryptbench.errors import ProvisionError, UnavailableError
from cryptbench.plan import RunRequest, build_plan
from cryptbench.suite import load_suite

KEY = Path("/dev/shm/cryptbench-secrets-x/luks-1")


@pytest.mark.parametrize("bits", [256, 512])
def test_format_uses_a_key_file_luks2_and_xts(bits: int) -> None:
    argv = format_command("/dev/loop7", KEY, bits)
    assert argv[:2] == ["cryptsetup", "luksFormat"] and argv[-1] == "/dev/loop7"
    assert argv[argv.index("--key-file") + 1] == str(KEY)
    assert argv[argv.index("--type") + 1] == "luks2"
    assert argv[argv.index("--cipher") + 1] == "aes-xts-plain64"
    assert argv[argv.index("--key-size") + 1] == str(bits)
    assert "--batch-mode" in argv  # no "Are you sure?" on a terminal


def test_open_adds_each_variants_flags_and_nothing_else() -> None:
    plain = open_command("/dev/loop7", KEY, "cryptbench-run-1-luks-aes256-1")
    assert not [a for a in plain if a.startswith("--perf-")]
    assert plain[plain.index("--key-file") + 1] == str(KEY)
    for name, v in VARIANTS.items():
        argv = open_command("/dev/loop7", KEY, f"cryptbench-run-1-{name}-1", v.flags)
        assert [a for a in argv if a.startswith("--perf-")] == [f"--perf-{f}" for f in v.flags], name
        assert argv[-2:] == ["/dev/loop7", f"cryptbench-run-1-{name}-1"]


def test_each_variant_differs_from_luks_aes256_in_one_choice() -> None:
    base = VARIANTS["luks-aes256"]
    assert (base.key_bits, base.sector, base.flags, base.cipher) == (512, 4096, (), AES_XTS)
    noqueue = VARIANTS["luks-aes256-noqueue"]
    assert noqueue.flags == (NO_READ_QUEUE, NO_WRITE_QUEUE)
    for name, v in VARIANTS.items():
        changed = [
            v.key_bits != base.key_bits,
            v.sector != base.sector,
            v.flags != base.flags,
            (v.integrity, v.journal) != (base.integrity, base.journal),  # how sectors are authenticated
        ]
        if v.variant_of is not None:
            assert v.variant_of == "luks-aes256" and sum(changed) == 1 and v.cipher == AES_XTS, name
    argv = format_command("/dev/loop7", KEY, 512, VARIANTS["luks-aes256-sector512"].sector)
    assert argv[argv.index("--sector-size") + 1] == "512"


def test_integrity_formats_with_hmac_sha256_and_opens_with_or_without_the_journal() -> None:
    journaled, direct = VARIANTS["luks-aes256-hmac"], VARIANTS["luks-aes256-hmac-nojournal"]
    for v in (journaled, direct):
        argv = format_command("/dev/loop7", KEY, v.key_bits, v.sector, v.cipher, v.integrity)
        assert argv[argv.index("--integrity") + 1] == "hmac-sha256"
        # the cipher's key only: cryptsetup adds HMAC-SHA256's 256 bits to it (768 in all)
        assert argv[argv.index("--key-size") + 1] == "512"
        assert "--integrity-no-wipe" not in argv  # unwritten sectors would fail to read
        assert v.table_cipher == "capi:authenc(hmac(sha256),xts(aes))-plain64"
        assert "integrity:32:aead" in v.table_options and "sector_size:4096" in v.table_options
    assert "--integrity" not in format_command("/dev/loop7", KEY, 512)
    assert "--integrity-no-journal" not in open_command("/dev/loop7", KEY, "m", (), journaled.journal)
    assert "--integrity-no-journal" in open_command("/dev/loop7", KEY, "m", (), direct.journal)
    assert (journaled.integrity_mode, direct.integrity_mode, VARIANTS[PLAIN_LUKS].integrity_mode) == (
        "J",
        "D",
        None,
    )


def test_integrity_is_counted_in_the_image_and_so_in_the_free_space_check() -> None:
    size = 64 << 20
    plain = REGISTRY[PLAIN_LUKS].space_needed(TargetSpec(PLAIN_LUKS), size)
    hmac = REGISTRY["luks-aes256-hmac"].space_needed(TargetSpec("luks-aes256-hmac"), size)
    assert plain == image_size(VARIANTS[PLAIN_LUKS], size)
    # tags (32 B per 4 KiB) and the journal (1/128) fit in what is added, with room
    assert hmac - plain >= (plain - LUKS2_HEADER) * (32 / 4096 + 1 / 128) + (1 << 20)


def test_dm_integritys_mode_is_read_and_checked() -> None:
    line = "0 180224 integrity 7:0 0 32 J 6 journal_sectors:3048 interleave_sectors:32768 buffer_sectors:128"
    assert integrity_table_mode(line) == "J"
    check_integrity_mode("J", VARIANTS["luks-aes256-hmac"])
    with pytest.raises(ProvisionError, match="mode 'J', not D"):
        check_integrity_mode("J", VARIANTS["luks-aes256-hmac-nojournal"])
    with pytest.raises(ProvisionError, match="not show an integrity mapping"):
        integrity_table_mode("0 98304 linear 7:0 0")
    assert "no journal" in integrity_detail("hmac-sha256", "D") and "journaled" in integrity_detail(
        "hmac-sha256", "J"
    )


def test_adiantum_is_xchacha12_and_aes_with_4096_byte_sectors() -> None:
    v = VARIANTS["luks-adiantum"]
    assert v.variant_of is None  # another cipher, not an option of luks-aes256's
    argv = format_command("/dev/loop7", KEY, v.key_bits, v.sector, v.cipher)
    assert argv[argv.index("--cipher") + 1] == "xchacha12,aes-adiantum-plain64"
    assert argv[argv.index("--key-size") + 1] == "256" and argv[argv.index("--sector-size") + 1] == "4096"
    assert v.algorithm == "adiantum(xchacha12,aes)" and v.cipher_name == "Adiantum"
    backend = REGISTRY["luks-adiantum"]
    assert backend.cipher_use is not None and backend.cipher_use.algorithm == "adiantum(xchacha12,aes)"
    assert backend.summary == "dm-crypt LUKS2 (Adiantum) on a loop device, ext4 on top"


# What Debian 12's kernel printed in the kernel lab for each sector size and flag set.
FIXTURE = Path(__file__).parent.parent / "fixtures" / "dmsetup" / "luks2-tables-6.1.txt"
TABLES = {
    line.split(":", 1)[0]: line.split(": ", 1)[1]
    for line in FIXTURE.read_text().splitlines()
    if line.startswith("TABLE ")
}
TARGETS = "\n".join(
    line.removeprefix("TARGETS: ") for line in FIXTURE.read_text().splitlines() if "TARGETS" in line
)


def _recorded(sector: int, flags: tuple[str, ...]) -> str:
    return TABLES[f"TABLE sector={sector} flags=[{' '.join(f'--perf-{f}' for f in flags)}]"]


@pytest.mark.parametrize("name", [n for n, v in VARIANTS.items() if v.integrity is None])
def test_each_variants_recorded_table_passes_its_check(name: str) -> None:
    v = VARIANTS[name]
    options = table_options(_recorded(v.sector, v.flags))
    assert set(options) == set(v.table_options)
    check_table(options, v)


def test_a_table_missing_an_asked_option_is_refused() -> None:
    plain = table_options(_recorded(4096, ()))
    assert plain == ("sector_size:4096",)
    with pytest.raises(ProvisionError, match="did not take no_write_workqueue"):
        check_table(table_options(_recorded(4096, (NO_READ_QUEUE,))), VARIANTS["luks-aes256-nowriteq"])
    with pytest.raises(ProvisionError, match="did not take sector_size:4096"):
        check_table(table_options(_recorded(512, ())), VARIANTS["luks-aes256"])
    assert table_options(_recorded(512, ())) == ()  # 512, the default, shows no option
    with pytest.raises(ProvisionError, match="not show a crypt mapping"):
        table_options("0 98304 linear 7:0 0")


def test_the_kept_table_line_has_no_key_field_and_parses_as_the_real_one() -> None:
    real = _recorded(4096, (NO_READ_QUEUE, NO_WRITE_QUEUE))
    kept = table_without_key(real)
    assert ":64:logon:" not in kept and kept.split()[4] == "-"
    assert kept.split()[:4] == real.split()[:4] and kept.split()[5:] == real.split()[5:]
    assert table_options(kept) == table_options(real) and table_cipher(kept) == table_cipher(real)
    zeros = "0 16 crypt aes-xts-plain64 " + "0" * 128 + " 0 7:0 4096"  # dmsetup without keyring
    assert table_without_key(zeros) == "0 16 crypt aes-xts-plain64 - 0 7:0 4096"


def test_the_crypt_targets_version_is_read() -> None:
    assert parse_targets(TARGETS)["crypt"] == (1, 24, 0)
    assert "integrity" not in parse_targets(TARGETS)  # not loaded there
    # a version this parser cannot read is unknown, not 0 (which would read as "too old")
    assert parse_targets("crypt            v1.x.0\nstriped          \n") == {"crypt": None, "striped": None}
    assert NO_QUEUE_SINCE <= (1, 24, 0)


def test_variants_are_registered_with_ext4_loop_as_baseline() -> None:
    for name in VARIANTS:
        assert REGISTRY[name].baseline == "ext4-loop" and REGISTRY[name].encrypted


@pytest.mark.skipif(os.path.exists("/dev/mapper/control"), reason="this kernel has device-mapper")
def test_without_device_mapper_backends_says_so_in_those_words() -> None:
    assert device_mapper_missing() is not None
    for name in VARIANTS:
        avail = REGISTRY[name].probe()
        assert not avail.ok and "the kernel has no device-mapper" in avail.reason


@pytest.mark.skipif(os.path.exists("/dev/mapper/control"), reason="this kernel has device-mapper")
def test_luks_tuning_without_device_mapper_refuses_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(
        UnavailableError, match="no backend of this run is available here: luks-aes256: the kernel"
    ):
        build_plan(RunRequest(suite="luks-tuning", size="8M", target=str(tmp_path), db=tmp_path / "r.sqlite"))


def test_luks_tuning_holds_its_option_targets_to_plain_luks() -> None:
    suite = load_suite("luks-tuning")
    backends = list(suite.backends or [])
    assert backends[0] == PLAIN_LUKS and len(backends) == 8
    for name in backends[1:]:
        assert VARIANTS[name].variant_of == PLAIN_LUKS and VARIANTS[name].label, name
    assert VARIANTS["luks-aes128"].variant_of is None  # another key size, not an option
    names = [w.name for w in suite.workloads]
    assert names == [w.name for w in load_suite("quick").workloads] + ["responsiveness"]


def test_the_mapping_must_run_the_cipher_it_was_formatted_with() -> None:
    xts = _recorded(4096, ())
    assert table_cipher(xts) == "aes-xts-plain64"
    check_cipher(table_cipher(xts), VARIANTS["luks-aes256"])
    with pytest.raises(
        ProvisionError, match="shows cipher 'aes-xts-plain64', not xchacha12,aes-adiantum-plain64"
    ):
        check_cipher(table_cipher(xts), VARIANTS["luks-adiantum"])
    # what the lab printed for luks-adiantum (tests/lab/test_adiantum.py)
    check_cipher("xchacha12,aes-adiantum-plain64", VARIANTS["luks-adiantum"])
    assert table_cipher("0 98304 linear 7:0 0") == "?"
