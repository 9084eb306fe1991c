"""cryptsetup command lines (the code path that runs wherever device-mapper exists)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cryptbench.backends import REGISTRY
from cryptbench.backends.base import TargetSpec
from cryptbench.backends.dm_kernel import (
    HIGH_PRIORITY_SINCE,
    NO_QUEUE_SINCE,
    cryptsetup_takes,
    device_mapper_missing,
    high_priority_missing,
    parse_targets,
)
from cryptbench.backends.dm_table import (
    check_cipher,
    check_integrity_mode,
    check_table,
    format_command,
    integrity_detail,
    integrity_table_mode,
    open_command,
    table_cipher,
    table_options,
    table_without_key,
    with_table_options,
)
from cryptbench.backends.luks import LUKS2_HEADER, image_size
from cryptbench.backends.luks_variants import (
    AES_XTS,
    HIGH_PRIORITY,
    NO_READ_QUEUE,
    NO_WRITE_QUEUE,
    PLAIN_LUKS,
    VARIANTS,
)
from cryptbench.model.errors import ProvisionError, UnavailableError
from cryptbench.planning.plan import build_plan
from cryptbench.planning.request import RunRequest
from cryptbench.planning.suite import load_suite
from tests.support.paths import TESTS

KEY = Path("/dev/shm/cryptbench-secrets-x/luks-1")
# the driver, not the node: libdevmapper makes /dev/mapper/control where the kernel has none
HAS_DEVICE_MAPPER = "device-mapper" in Path("/proc/misc").read_text().split()


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


# What each lab kernel printed for each sector size and flag set (tests/fixtures/dmsetup/
# record_tables.py): Debian 12's 6.1, and Debian 13's 6.12 for the flags 6.1 lacks.
FIXTURES = TESTS / "fixtures" / "dmsetup"
FIXTURE = FIXTURES / "luks2-tables-6.1.txt"


def _lines(path: Path, kind: str) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.startswith(kind)]


TABLES = {
    line.split(":", 1)[0]: line.split(": ", 1)[1]
    for path in (FIXTURES / "luks2-tables-6.12.txt", FIXTURE)  # 6.1's where both have one
    for line in _lines(path, "TABLE ")
}
TARGETS = "\n".join(line.removeprefix("TARGETS: ") for line in _lines(FIXTURE, "TARGETS"))
TARGETS_6_12 = "\n".join(
    line.removeprefix("TARGETS: ") for line in _lines(FIXTURES / "luks2-tables-6.12.txt", "TARGETS")
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


def test_debian_13s_dm_crypt_takes_high_priority_and_debian_12s_does_not() -> None:
    six_twelve = parse_targets(TARGETS_6_12)["crypt"]
    assert six_twelve is not None and six_twelve >= HIGH_PRIORITY_SINCE
    assert high_priority_missing(six_twelve, "6.12") is None
    assert high_priority_missing(parse_targets(TARGETS)["crypt"], "6.1") is not None
    assert HIGH_PRIORITY in table_options(_recorded(4096, (HIGH_PRIORITY,)))


def test_the_crypt_targets_version_is_read() -> None:
    assert parse_targets(TARGETS)["crypt"] == (1, 24, 0)
    assert "integrity" not in parse_targets(TARGETS)  # not loaded there
    # a version this parser cannot read is unknown, not 0 (which would read as "too old")
    assert parse_targets("crypt            v1.x.0\nstriped          \n") == {"crypt": None, "striped": None}
    assert NO_QUEUE_SINCE <= (1, 24, 0)


def test_variants_are_registered_with_ext4_loop_as_baseline() -> None:
    for name in VARIANTS:
        assert REGISTRY[name].baseline == "ext4-loop" and REGISTRY[name].encrypted


@pytest.mark.skipif(HAS_DEVICE_MAPPER, reason="this kernel has device-mapper")
def test_without_device_mapper_backends_says_so_in_those_words() -> None:
    assert device_mapper_missing() is not None
    for name in VARIANTS:
        avail = REGISTRY[name].probe()
        assert not avail.ok and "the kernel has no device-mapper" in avail.reason


@pytest.mark.skipif(HAS_DEVICE_MAPPER, reason="this kernel has device-mapper")
def test_luks_tuning_without_device_mapper_refuses_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(
        UnavailableError, match="no backend of this run is available here: luks-aes256: the kernel"
    ):
        build_plan(RunRequest(suite="luks-tuning", size="8M", target=str(tmp_path), db=tmp_path / "r.sqlite"))


def test_luks_tuning_holds_its_option_targets_to_plain_luks() -> None:
    suite = load_suite("luks-tuning")
    backends = list(suite.backends or [])
    assert backends[0] == PLAIN_LUKS and len(backends) == 9
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


@pytest.mark.parametrize(
    ("crypt", "release", "refused"),
    [
        ((1, 24, 0), "6.1.0-57-amd64", "needs Linux 6.10: dm-crypt 1.24.0 has no high_priority flag"),
        (HIGH_PRIORITY_SINCE, "6.1.0-57-amd64", None),  # dm-crypt's own version decides when loaded
        ((1, 28, 0), "6.12.117+deb13-amd64", None),
        (None, "6.1.0-57-amd64", "needs Linux 6.10: this kernel is 6.1.0-57-amd64"),
        (None, "6.9.12-amd64", "needs Linux 6.10: this kernel is 6.9.12-amd64"),
        (None, "6.10.0", None),
        (None, "6.12.117+deb13-amd64", None),
        (None, "a kernel of its own", None),  # unreadable: opening checks the table anyway
    ],
)
def test_high_priority_needs_dm_crypt_1_26_or_linux_6_10(
    crypt: tuple[int, ...] | None, release: str, refused: str | None
) -> None:
    why = high_priority_missing(crypt, release)
    if refused is None:
        assert why is None
    else:
        assert why is not None and why.startswith(refused), why


def test_a_flag_cryptsetup_lacks_is_added_to_the_table_it_reloads() -> None:
    with_sector = _recorded(4096, ())  # "... 7:0 32768 1 sector_size:4096"
    reloaded = with_table_options(with_sector, (HIGH_PRIORITY,))
    assert reloaded.endswith("\n") and reloaded.split()[:8] == with_sector.split()[:8]
    assert reloaded.split()[8:] == ["2", "sector_size:4096", "high_priority"]
    assert table_options(reloaded) == ("sector_size:4096", HIGH_PRIORITY)
    bare = _recorded(512, ())  # 512-byte sectors: no optional parameters at all
    assert with_table_options(bare, (HIGH_PRIORITY,)).split()[8:] == ["1", "high_priority"]
    assert with_table_options(reloaded, (HIGH_PRIORITY,)) == reloaded  # never twice
    # the key field goes back as dmsetup --showkeys gave it
    assert with_table_options(bare, (HIGH_PRIORITY,)).split()[4] == bare.split()[4]


def test_a_mapping_to_be_reloaded_is_opened_without_the_keyring() -> None:
    """With the keyring, dm-crypt's table names a key cryptsetup removes once the mapping
    is up, and a reload could not find it."""
    assert "--disable-keyring" not in open_command("/dev/loop7", KEY, "m")
    argv = open_command("/dev/loop7", KEY, "m", keyring=False)
    assert "--disable-keyring" in argv and argv[-2:] == ["/dev/loop7", "m"]


def test_this_cryptsetup_is_asked_which_performance_flags_it_takes() -> None:
    """The real cryptsetup's --help: every version since 2.3.4 takes the workqueue flags;
    --perf-high_priority came with 2.7 (Debian 12 ships 2.6.1)."""
    import subprocess

    version = subprocess.run(["cryptsetup", "--version"], capture_output=True, text=True, check=True).stdout
    major, minor = (int(x) for x in version.split()[1].split(".")[:2])
    assert cryptsetup_takes("no_read_workqueue")
    assert cryptsetup_takes(HIGH_PRIORITY) == ((major, minor) >= (2, 7))
    assert not cryptsetup_takes("no_such_flag")


def test_the_high_priority_variant_is_opened_on_luks_aes256s_container() -> None:
    highpri = next(n for n, v in VARIANTS.items() if HIGH_PRIORITY in v.flags)
    assert REGISTRY[highpri].same_format_as() == PLAIN_LUKS
    assert VARIANTS[highpri].table_options == (HIGH_PRIORITY, "sector_size:4096")
