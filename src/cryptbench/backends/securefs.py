"""securefs: a FUSE overlay (lite format: AES-256-GCM contents, AES-SIV names).

Created and mounted with `--keyfile`: a 0600 file in RAM holding the key (the
user's --passphrase-file contents, or 32 random bytes as hex), removed once the
filesystem is mounted. securefs' own `--pass` would put it on the command line.
"""

from __future__ import annotations

from cryptbench.backends.base import CipherUse
from cryptbench.backends.overlay import FuseOverlayBackend, Layout
from cryptbench.machine.session import Session
from cryptbench.machine.system import run_cmd
from cryptbench.model.vocabulary import Property, Verdict


class SecurefsBackend(FuseOverlayBackend):
    name = "securefs"
    tool = "securefs"
    package = "securefs"
    # lite format: per 4 KiB block a 12-byte IV and a 16-byte tag
    overhead = 1.01
    cipher_label = "AES-256-GCM contents, AES-SIV names (securefs lite format)"
    summary = "securefs FUSE overlay (lite format, AES-256-GCM) over a directory on the target filesystem"
    # One FUSE request's blocks are sealed by the thread serving it (Crypto++).
    cipher_use = CipherUse("userspace", "aes-256-gcm", 4096, parallel=False)

    def declared(self) -> dict[Property, tuple[Verdict, str]]:
        lite = "securefs docs/design.md, lite format (format 4): normal directory entries"
        return {
            Property.CONTENTS: (
                Verdict.HIDDEN,
                "gocryptfs-website docs/comparison.md: File Contents, securefs: GCM",
            ),
            Property.NAMES: (
                Verdict.HIDDEN,
                "gocryptfs-website docs/comparison.md: File Names, securefs: AES-SIV",
            ),
            Property.SIZES: (
                Verdict.SHOWN,
                "gocryptfs-website docs/comparison.md: File size obfuscation: no",
            ),
            Property.TREE: (Verdict.SHOWN, lite),
            Property.TAMPER: (
                Verdict.DETECTED,
                "gocryptfs-website docs/comparison.md: File Contents, Integrity, securefs: GCM",
            ),
        }

    def create(self, session: Session, layout: Layout, password: bytes) -> None:
        layout.secret = session.secret_file("securefs-key", password)
        run_cmd(["securefs", "create", "--keyfile", str(layout.secret.path), str(layout.cipher)], timeout=120)

    def mount_argv(self, layout: Layout) -> list[str]:
        assert layout.secret is not None
        return [
            "securefs",
            "mount",
            "--keyfile",
            str(layout.secret.path),
            str(layout.cipher),
            str(layout.mountpoint),
        ]
