"""The LUKS targets as data: the ciphers and integrity modes dm-crypt is formatted
with, the performance flags as dm-crypt's table names them, and `VARIANTS`, one row
per target (backends/luks.py makes a backend of each; the kernel lab provisions every
row and checks its table).
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptbench.model.option_kinds import OptionKind

SECTOR_SIZE = 4096  # bytes per encryption data unit, as fscrypt's

NO_READ_QUEUE, NO_WRITE_QUEUE = "no_read_workqueue", "no_write_workqueue"

SUBMIT_FROM_CRYPT_CPUS = "submit_from_crypt_cpus"

HIGH_PRIORITY = "high_priority"

AES_XTS = "aes-xts-plain64"

ADIANTUM = "xchacha12,aes-adiantum-plain64"

# cryptsetup's cipher spec -> (the kernel crypto algorithm, what a reader calls it,
# the kernel option that builds it, its module)
CIPHERS = {
    AES_XTS: ("xts(aes)", "AES-XTS", "CONFIG_CRYPTO_XTS", "xts"),
    ADIANTUM: ("adiantum(xchacha12,aes)", "Adiantum", "CONFIG_CRYPTO_ADIANTUM", "adiantum"),
}

# cryptsetup's --integrity -> (the kernel's algorithm, what a reader calls it, the
# kernel option that builds it, its module, its tag in bytes per sector)
INTEGRITY = {"hmac-sha256": ("hmac(sha256)", "HMAC-SHA256", "CONFIG_CRYPTO_HMAC", "hmac", 32)}


@dataclass(frozen=True)
class Variant:
    key_bits: int  # 256 for AES-128-XTS and Adiantum, 512 for AES-256-XTS
    sector: int  # bytes per encryption data unit (--sector-size)
    flags: tuple[str, ...] = ()  # dm-crypt performance flags, as the table names them
    label: str = ""  # what sets it apart, for the summary
    # the target it differs from in that one choice; a run holding both compares them
    variant_of: str | None = None
    cipher: str = AES_XTS  # cryptsetup's --cipher
    integrity: str | None = None  # cryptsetup's --integrity (a key of INTEGRITY), or None
    journal: bool = True  # with integrity: dm-integrity's journal (False: --integrity-no-journal)
    option: OptionKind | None = None  # for a variant: what kind of option it changes

    @property
    def algorithm(self) -> str:
        """The kernel crypto algorithm dm-crypt asks for."""
        return CIPHERS[self.cipher][0]

    @property
    def cipher_name(self) -> str:
        """AES-128-XTS, AES-256-XTS or Adiantum."""
        name = CIPHERS[self.cipher][1]
        return f"AES-{self.key_bits // 2}-XTS" if name == "AES-XTS" else name

    @property
    def table_options(self) -> tuple[str, ...]:
        """What `dmsetup table` must show for it: its flags, its tags (the AEAD's, in
        bytes per sector) and a sector size other than 512."""
        sector = (f"sector_size:{self.sector}",) if self.sector != 512 else ()
        tags = (f"integrity:{INTEGRITY[self.integrity][4]}:aead",) if self.integrity else ()
        return (*self.flags, *tags, *sector)

    @property
    def table_cipher(self) -> str:
        """The cipher dm-crypt's table shows: cryptsetup's spec, or with integrity the
        kernel's AEAD that pairs the cipher with the tag's MAC."""
        if self.integrity is None:
            return self.cipher
        mode, iv = self.cipher.split("-", 1)[1].split("-", 1)  # aes-xts-plain64 -> xts, plain64
        return f"capi:authenc({INTEGRITY[self.integrity][0]},{mode}({self.cipher.split('-', 1)[0]}))-{iv}"

    @property
    def integrity_mode(self) -> str | None:
        """dm-integrity's mode as its table shows it: J journaled, D direct; None without it."""
        if self.integrity is None:
            return None
        return "J" if self.journal else "D"


PLAIN_LUKS = "luks-aes256"  # what each option variant is held to: LUKS2 as cryptsetup makes it

VARIANTS = {
    "luks-aes128": Variant(256, SECTOR_SIZE),
    PLAIN_LUKS: Variant(512, SECTOR_SIZE),
    "luks-aes256-noqueue": Variant(
        512,
        SECTOR_SIZE,
        (NO_READ_QUEUE, NO_WRITE_QUEUE),
        "no dm-crypt workqueues",
        PLAIN_LUKS,
        option=OptionKind.WORKQUEUES,
    ),
    "luks-aes256-noreadq": Variant(
        512, SECTOR_SIZE, (NO_READ_QUEUE,), "no read workqueue", PLAIN_LUKS, option=OptionKind.WORKQUEUES
    ),
    "luks-aes256-nowriteq": Variant(
        512, SECTOR_SIZE, (NO_WRITE_QUEUE,), "no write workqueue", PLAIN_LUKS, option=OptionKind.WORKQUEUES
    ),
    "luks-aes256-submitcpus": Variant(
        512,
        SECTOR_SIZE,
        (SUBMIT_FROM_CRYPT_CPUS,),
        "writes submitted from the crypt CPUs",
        PLAIN_LUKS,
        option=OptionKind.SUBMIT,
    ),
    "luks-aes256-highpri": Variant(
        512,
        SECTOR_SIZE,
        (HIGH_PRIORITY,),
        "high-priority workqueues",
        PLAIN_LUKS,
        option=OptionKind.PRIORITY,
    ),
    "luks-aes256-sector512": Variant(512, 512, (), "512-byte sectors", PLAIN_LUKS, option=OptionKind.SECTOR),
    # Authenticated encryption: the same cipher, each sector with an HMAC-SHA256 tag.
    "luks-aes256-hmac": Variant(
        512,
        SECTOR_SIZE,
        label="HMAC-SHA256 integrity, journaled",
        variant_of=PLAIN_LUKS,
        integrity="hmac-sha256",
        option=OptionKind.INTEGRITY,
    ),
    "luks-aes256-hmac-nojournal": Variant(
        512,
        SECTOR_SIZE,
        label="HMAC-SHA256 integrity, no journal",
        variant_of=PLAIN_LUKS,
        integrity="hmac-sha256",
        journal=False,
        option=OptionKind.INTEGRITY_DIRECT,
    ),
    # For CPUs without AES instructions: another cipher, not an option of luks-aes256's.
    "luks-adiantum": Variant(256, SECTOR_SIZE, cipher=ADIANTUM),
}
