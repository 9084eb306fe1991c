"""rclone crypt: Debian's `rclone mount` of a crypt remote over a local directory
(XSalsa20-Poly1305 on 64 KiB chunks, EME/AES-256 names).

Mounted with no VFS cache (`--vfs-cache-mode off`), so that what a trial times
is the encryption: each write goes through the cipher into the backing as it
is written. rclone's cache modes instead write the plaintext into a cache
directory on the disk and encrypt it after the file is closed, in the
background: outside the clock, and with the plaintext left on the disk.

Without the cache rclone writes a file once, from its start to its end. It
refuses a write at another offset, and an open for writing of an existing file
without O_TRUNC, so workloads that write at random offsets cannot run on it
(Backend.writes_from_start). Its fsync returns at once (vfs/write.go
WriteFileHandle.Sync), so the backing's filesystem is synced inside each write
trial's clock instead (Target.end_write).

The password and its salt reach rclone obscured (`rclone obscure -` reads them
from standard input) in a 0600 config file in RAM, removed once the mount is up:
never a command line or the environment.
"""

from __future__ import annotations

import secrets

from cryptbench.backends.base import CipherUse
from cryptbench.backends.overlay import FuseOverlayBackend, Layout
from cryptbench.machine.session import Session
from cryptbench.machine.system import run_cmd
from cryptbench.model.vocabulary import Property, Verdict

REMOTE = "cryptbench"  # the crypt remote's name in the config file
CACHE_MODE = "off"
# what a mount without its cache cannot do (docs/backends.md says why no cache)
FROM_START = "rclone's mount without its VFS cache writes a file only from its start to its end"
DOCS = "rclone docs/content/crypt.md"


def obscure(secret: bytes) -> str:
    """`secret` as rclone's config file keeps it (`rclone obscure -` reads standard input)."""
    out = run_cmd(["rclone", "obscure", "-"], input_bytes=secret, timeout=30)
    return out.stdout.decode().strip()


def config_text(cipher_dir: str, password: bytes, salt: bytes) -> bytes:
    """The crypt remote over `cipher_dir`: names encrypted (standard), directory names too."""
    return (
        f"[{REMOTE}]\n"
        "type = crypt\n"
        f"remote = {cipher_dir}\n"
        "filename_encryption = standard\n"
        "directory_name_encryption = true\n"
        f"password = {obscure(password)}\n"
        f"password2 = {obscure(salt)}\n"
    ).encode()


class RcloneCryptBackend(FuseOverlayBackend):
    name = "rclone-crypt"
    tool = "rclone"
    package = "rclone"
    # per file a 32-byte header, per 64 KiB chunk a 16-byte Poly1305 tag
    overhead = 1.01
    cipher_label = "XSalsa20-Poly1305 on 64 KiB chunks, EME/AES-256 names (rclone crypt, standard)"
    summary = "rclone mount of a crypt remote (XSalsa20-Poly1305) over a directory, no VFS cache"
    # One stream's chunks are sealed in turn by the goroutine that reads the pipe
    # (NaCl secretbox in Go); ChaCha20-Poly1305 in OpenSSL is the nearest cipher
    # measured here, as for CryFS's XChaCha20-Poly1305. Its chunks are 64 KiB, but the
    # timing loop takes units of at most 4 KiB: a 4 KiB unit pays the per-chunk start
    # (a key, a tag) 16 times as often, so the ceiling errs low, never high.
    cipher_use = CipherUse("userspace", "chacha20-poly1305", 4096, parallel=False)
    writes_from_start = FROM_START
    sync_backing = True

    def declared(self) -> dict[Property, tuple[Verdict, str]]:
        return {
            Property.CONTENTS: (
                Verdict.HIDDEN,
                f"{DOCS}: File encryption: XSalsa20 and Poly1305 (NaCl secretbox)",
            ),
            Property.NAMES: (Verdict.HIDDEN, f"{DOCS}: Name encryption, standard: EME with AES-256"),
            Property.SIZES: (
                Verdict.SHOWN,
                f"{DOCS}: File encryption: a 32-byte header and 16 bytes per 64 KiB chunk",
            ),
            Property.TREE: (
                Verdict.SHOWN,
                f"{DOCS}: each directory is a directory on the remote, its name encrypted",
            ),
            Property.TAMPER: (
                Verdict.DETECTED,
                f"{DOCS}: File encryption: each chunk authenticated by Poly1305",
            ),
        }

    def create(self, session: Session, layout: Layout, password: bytes) -> None:
        salt = secrets.token_hex(16).encode()  # rclone's own salt otherwise: the same for everyone
        layout.secret = session.secret_file("rclone.conf", config_text(str(layout.cipher), password, salt))

    def mount_argv(self, layout: Layout) -> list[str]:
        assert layout.secret is not None
        return [
            "rclone",
            "mount",
            "--config",
            str(layout.secret.path),
            "--cache-dir",
            str(layout.home / "cache"),
            "--vfs-cache-mode",
            CACHE_MODE,
            f"{REMOTE}:",
            str(layout.mountpoint),
        ]

    def details(self) -> dict[str, str]:
        return {"vfs_cache_mode": CACHE_MODE}
