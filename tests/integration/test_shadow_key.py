"""The key of a flag trial's shadow mappings (pipeline/shadow.shadow_key), with real
cryptsetup on a LUKS2 header in a file (this kernel has no device-mapper; the shadows
themselves are tests/lab/test_existing_flags.py's): the volume key unlocked by a key
file or a passphrase file through pipes, the same key cryptsetup writes to a file of its
own; a keyring reference reused where the kernel still finds its key (a real logon key
in this process's keyring); every refusal in one line."""

from __future__ import annotations

import ctypes
import os
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from cryptbench.machine.resources import KEYCTL_INVALIDATE, keyctl
from cryptbench.measure.volume import CryptVolume
from cryptbench.model.errors import UsageError
from cryptbench.model.stack import Layer, LayerKind, Stack
from cryptbench.pipeline import shadow
from cryptbench.pipeline.shadow import dumped_key, read_key_file, shadow_key, shadow_table

pytestmark = pytest.mark.integration
SYS_ADD_KEY = 248  # x86_64's add_key(2)
KEY_SPEC_PROCESS_KEYRING = -2
TABLE = "0 65536 crypt aes-xts-plain64 {key} 0 7:0 32768 1 sector_size:4096\n"


def _volume(header: Path) -> CryptVolume:
    crypt = Layer(LayerKind.DM_CRYPT, "dm-0 (users-volume)", True, 0, (("format", "LUKS2"),))
    return CryptVolume(
        mapping="users-volume", mapping_node=Path("/nonexistent"), device="loop0", device_node=header,
        data_offset=16 << 20, size=16 << 20, sector=4096, device_block=512, layer=crypt,
        stack=Stack("/dev/mapper/users-volume", (crypt,)),
    )  # fmt: skip


@pytest.fixture
def luks(tmp_path: Path) -> Iterator[tuple[CryptVolume, bytes]]:
    """A LUKS2 header in a file, formatted with a random 64-byte key file."""
    image, key = tmp_path / "volume.img", os.urandom(64)
    with open(image, "wb") as f:
        f.truncate(32 << 20)
    args = ["cryptsetup", "luksFormat", "--batch-mode", "--type", "luks2", "--pbkdf", "pbkdf2"]
    args += ["--pbkdf-force-iterations", "1000", "--key-file=-", str(image)]
    subprocess.run(args, input=key, check=True, capture_output=True)
    yield _volume(image), key


def _keyring_table(monkeypatch: pytest.MonkeyPatch, key_field: str) -> None:
    monkeypatch.setattr(shadow, "_table", lambda mapping, keys=False: TABLE.format(key=key_field))


def test_a_key_file_unlocks_the_volume_key_cryptsetup_itself_writes(
    luks: tuple[CryptVolume, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    volume, key = luks
    own = tmp_path / "vk"
    subprocess.run(
        ["cryptsetup", "luksDump", "--dump-volume-key", "--batch-mode", "--key-file=-",
         "--volume-key-file", str(own), str(volume.device_node)],
        input=key, check=True, capture_output=True,
    )  # fmt: skip
    keyfile = tmp_path / "key"
    keyfile.write_bytes(key)
    keyfile.chmod(0o600)
    _keyring_table(monkeypatch, ":64:logon:cryptsetup:no-such-key-d0")
    got = shadow_key(volume, str(keyfile))
    assert got.field == own.read_bytes().hex() and len(got.field) == 128
    assert got.how == "the volume key your --key-file unlocked" and got.field not in repr(got)


def test_a_passphrase_file_ending_in_a_newline_unlocks_as_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    image = tmp_path / "p.img"
    with open(image, "wb") as f:
        f.truncate(32 << 20)
    subprocess.run(
        ["cryptsetup", "luksFormat", "--batch-mode", "--type", "luks2", "--pbkdf", "pbkdf2",
         "--pbkdf-force-iterations", "1000", "--key-file=-", str(image)],
        input=b"correct horse", check=True, capture_output=True,
    )  # fmt: skip
    passphrase = tmp_path / "pass"
    passphrase.write_bytes(b"correct horse\n")
    passphrase.chmod(0o600)
    _keyring_table(monkeypatch, ":64:logon:cryptsetup:no-such-key-d0")
    assert len(shadow_key(_volume(image), str(passphrase)).field) == 128


def test_a_key_that_does_not_unlock_is_refused_in_one_line(
    luks: tuple[CryptVolume, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    volume, _key = luks
    wrong = tmp_path / "wrong"
    wrong.write_bytes(b"not the key")
    wrong.chmod(0o600)
    _keyring_table(monkeypatch, ":64:logon:cryptsetup:no-such-key-d0")
    with pytest.raises(UsageError) as e:
        shadow_key(volume, str(wrong))
    assert str(e.value).startswith(f"--key-file: it does not unlock {volume.device_node} (")
    assert "\n" not in str(e.value)


def test_without_a_key_file_an_unresolved_keyring_reference_is_refused(
    luks: tuple[CryptVolume, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    _keyring_table(monkeypatch, ":64:logon:cryptsetup:no-such-key-d0")
    with pytest.raises(UsageError) as e:
        shadow_key(luks[0], None)
    assert str(e.value).startswith(
        "--try-flags: users-volume's key is a kernel keyring reference that no longer resolves"
    )
    assert str(e.value).endswith(
        "give its passphrase or key file with --key-file FILE (- for stdin) to unlock it"
    )


def test_a_key_in_the_table_is_used_and_a_reference_the_kernel_finds_is_reused(
    luks: tuple[CryptVolume, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    hexkey = os.urandom(64).hex()
    _keyring_table(monkeypatch, hexkey)
    assert shadow_key(luks[0], None).field == hexkey
    _keyring_table(monkeypatch, "0" * 128)  # dmsetup's zeros: no key shown
    with pytest.raises(UsageError, match="holds no key cryptbench can reuse"):
        shadow_key(luks[0], None)
    description = f"cryptsetup:cryptbench-test-{os.getpid()}-d0".encode()
    libc = ctypes.CDLL(None, use_errno=True)
    serial = libc.syscall(
        ctypes.c_long(SYS_ADD_KEY), ctypes.c_char_p(b"logon"), ctypes.c_char_p(description),
        ctypes.c_char_p(os.urandom(64)), ctypes.c_size_t(64), ctypes.c_long(KEY_SPEC_PROCESS_KEYRING),
    )  # fmt: skip
    assert serial > 0, os.strerror(ctypes.get_errno())
    try:
        reference = f":64:logon:{description.decode()}"
        _keyring_table(monkeypatch, reference)
        got = shadow_key(luks[0], None)
        assert (got.field, got.how) == (
            reference,
            "the kernel keyring's reference its table holds (no key read)",
        )
    finally:
        keyctl(KEYCTL_INVALIDATE, serial)


def test_a_key_file_others_may_read_or_an_empty_one_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "k"
    f.write_bytes(b"x")
    f.chmod(0o644)
    with pytest.raises(UsageError, match=r"readable by other users \(mode 644\); chmod 600 it first"):
        read_key_file(str(f))
    f.write_bytes(b"")
    f.chmod(0o600)
    with pytest.raises(UsageError, match="is empty"):
        read_key_file(str(f))
    with pytest.raises(UsageError, match="No such file"):
        read_key_file(str(tmp_path / "missing"))


def test_dumped_key_reads_cryptsetups_hex_lines_and_a_shadow_table_holds_it() -> None:
    text = (
        "LUKS header information for x\nCipher name:   \taes\nMK bits:       \t64\n"
        "MK dump:\t31 ab d7 d7 \n\t\t14 a7 24 C4 \nKeyslot:  0\n"
    )
    assert dumped_key(text) == "31abd7d714a724c4"
    assert dumped_key("Volume key:\t00 01\n") == "0001"
    assert dumped_key("no key here\n") is None
    line = TABLE.format(key=":64:logon:cryptsetup:x-d0")
    assert shadow_table(line, "abcd", ("sector_size:4096", "no_read_workqueue")) == (
        "0 65536 crypt aes-xts-plain64 abcd 0 7:0 32768 2 sector_size:4096 no_read_workqueue\n"
    )
    assert shadow_table(line, "abcd", ()) == "0 65536 crypt aes-xts-plain64 abcd 0 7:0 32768\n"
    assert replace(_volume(Path("/x")), options=("a",)).options == ("a",)
