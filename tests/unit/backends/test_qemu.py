"""qemu-img and qemu-storage-daemon command lines: secrets by file, the right drivers."""

from __future__ import annotations

from pathlib import Path

import pytest

from cryptbench.backends.qemu import CIPHERS, KINDS, ImageSpec, create_command, daemon_command

SECRET = Path("/dev/shm/cryptbench-secrets-x/qemu-open-1")
IMAGE = Path("/var/tmp/cryptbench/run-1/targets/image-raw-fresh/1/disk.img")
EXPORT = Path("/var/tmp/cryptbench/run-1/targets/image-raw-fresh/1/export")


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("cipher", [None, *CIPHERS])
def test_secrets_reach_qemu_as_files_only(kind: str, cipher: str | None) -> None:
    spec = ImageSpec(kind, cipher, 128 << 20)
    secret = SECRET if cipher else None
    for argv in (create_command(spec, IMAGE, secret), daemon_command(spec, IMAGE, EXPORT, secret, True)):
        text = " ".join(argv)
        assert "data=" not in text
        if cipher:
            assert f"secret,id=sec0,file={SECRET}" in argv
            assert "key-secret=sec0" in text
        else:
            assert "secret" not in text


def test_create_command_per_kind() -> None:
    raw = create_command(ImageSpec("raw", None, 1 << 30), IMAGE, None)
    assert raw == [
        "qemu-img",
        "create",
        "-q",
        "-f",
        "raw",
        "-o",
        "preallocation=falloc",
        str(IMAGE),
        str(1 << 30),
    ]
    sparse = create_command(ImageSpec("sparse", None, 1 << 30), IMAGE, None)
    assert sparse == ["qemu-img", "create", "-q", "-f", "raw", str(IMAGE), str(1 << 30)]
    qcow = create_command(ImageSpec("qcow2", "aes128", 1 << 30), IMAGE, SECRET)
    opts = qcow[qcow.index("-o") + 1].split(",")
    assert qcow[qcow.index("-f") + 1] == "qcow2"
    assert "encrypt.format=luks" in opts and "encrypt.cipher-alg=aes-128" in opts
    assert "encrypt.cipher-mode=xts" in opts and not any(o.startswith("preallocation") for o in opts)
    luks = create_command(ImageSpec("raw", "aes256", 1 << 30), IMAGE, SECRET)
    opts = luks[luks.index("-o") + 1].split(",")
    assert luks[luks.index("-f") + 1] == "luks"
    assert {"cipher-alg=aes-256", "cipher-mode=xts", "ivgen-alg=plain64", "preallocation=falloc"} <= set(opts)


def test_daemon_command_exports_only_to_this_user() -> None:
    argv = daemon_command(ImageSpec("qcow2", "aes256", 1 << 30), IMAGE, EXPORT, SECRET, direct=False)
    blockdevs = [argv[i + 1] for i, a in enumerate(argv) if a == "--blockdev"]
    assert blockdevs[0] == f"driver=file,node-name=file0,filename={IMAGE},cache.direct=off"
    assert (
        blockdevs[1] == "driver=qcow2,node-name=fmt0,file=file0,encrypt.format=luks,encrypt.key-secret=sec0"
    )
    export = argv[argv.index("--export") + 1].split(",")
    assert f"mountpoint={EXPORT}" in export and "allow-other=off" in export and "writable=on" in export


def test_commas_in_paths_are_escaped() -> None:
    odd = Path("/var/tmp/a,b/disk.img")
    argv = daemon_command(ImageSpec("raw", None, 1 << 30), odd, Path("/var/tmp/a,b/export"), None, True)
    assert "filename=/var/tmp/a,,b/disk.img" in argv[argv.index("--blockdev") + 1]
    assert "mountpoint=/var/tmp/a,,b/export" in argv[argv.index("--export") + 1]


def test_an_encrypted_image_without_a_secret_is_refused() -> None:
    with pytest.raises(ValueError):
        create_command(ImageSpec("raw", "aes128", 1 << 30), IMAGE, None)
    with pytest.raises(ValueError):
        daemon_command(ImageSpec("qcow2", "aes256", 1 << 30), IMAGE, EXPORT, None, True)
