"""gocryptfs: an encrypted overlay (FUSE) whose ciphertext lives in the scratch space.

The password (generated per run, or the user's --passphrase-file) goes to
gocryptfs through a 0600 file on a RAM filesystem (`-passfile`), never a
command line or an environment variable, and the file is wiped as soon as the
mount is up.
"""

from __future__ import annotations

import functools
import subprocess

from cryptbench.backends.base import CipherUse
from cryptbench.backends.overlay import FuseOverlayBackend, Layout
from cryptbench.machine.session import Session
from cryptbench.machine.system import run_cmd
from cryptbench.model.vocabulary import Property, Verdict


@functools.cache  # asked once a process: the environment and each target record it
def gocryptfs_version() -> str:
    try:
        out = subprocess.run(["gocryptfs", "-version"], capture_output=True, text=True, check=False)
        return out.stdout.strip().splitlines()[0] if out.stdout else "unknown"
    except OSError:
        return "not installed"


class GocryptfsBackend(FuseOverlayBackend):
    name = "gocryptfs"
    tool = "gocryptfs"
    package = "gocryptfs"
    # Per 4 KiB block gocryptfs stores a 16-byte nonce and a 16-byte tag, plus an
    # 18-byte file header: about 0.8 % more than the plaintext.
    overhead = 1.02
    cipher_label = "AES-256-GCM (gocryptfs default), names EME"
    summary = "gocryptfs FUSE overlay (AES-256-GCM) over a directory on the target filesystem"
    # gocryptfs seals a request's 4 KiB blocks in parallel goroutines; it uses
    # Go's AES-GCM (or OpenSSL's, chosen at mount), measured here with OpenSSL.
    cipher_use = CipherUse("userspace", "aes-256-gcm", 4096, parallel=True)
    buffered_reason = (
        "gocryptfs accepts O_DIRECT on the mount but writes its ciphertext files through the page cache"
    )

    def declared(self) -> dict[Property, tuple[Verdict, str]]:
        src = "gocryptfs-website docs/comparison.md"
        return {
            Property.CONTENTS: (Verdict.HIDDEN, f"{src}: File Contents, GCM"),
            Property.NAMES: (Verdict.HIDDEN, f"{src}: File Names, EME with a per-directory IV"),
            Property.SIZES: (Verdict.SHOWN, f"{src}: File size obfuscation: no"),
            Property.TREE: (Verdict.SHOWN, f"{src}: Directory flattening: no"),
            Property.TAMPER: (Verdict.DETECTED, f"{src}: File Contents, Integrity: GCM"),
        }

    def version(self) -> str:
        return gocryptfs_version()  # its own -version names the Go and go-fuse it was built with

    def create(self, session: Session, layout: Layout, password: bytes) -> None:
        layout.secret = session.secret_file("gocryptfs-password", password + b"\n")
        # -init prints the master key unless -q; its output is discarded either way.
        run_cmd(
            ["gocryptfs", "-init", "-q", "-passfile", str(layout.secret.path), str(layout.cipher)], timeout=60
        )

    def mount_argv(self, layout: Layout) -> list[str]:
        assert layout.secret is not None
        return [
            "gocryptfs",
            "-fg",
            "-q",
            "-nosyslog",
            "-passfile",
            str(layout.secret.path),
            str(layout.cipher),
            str(layout.mountpoint),
        ]
