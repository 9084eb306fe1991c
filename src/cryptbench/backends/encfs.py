"""EncFS: the oldest FUSE overlay here (AES in CBC mode on 1 KiB blocks, per-file
IV headers), created with `--standard` settings.

The password goes through standard input (`--stdinpass`, a pipe here). EncFS
has known weaknesses (an audit in 2014 found several); it is measured because
users still pick it, and `backends` says what it is.
"""

from __future__ import annotations

from cryptbench.backends.base import CipherUse
from cryptbench.backends.overlay import FuseOverlayBackend, Layout
from cryptbench.model.vocabulary import Property, Verdict


class EncfsBackend(FuseOverlayBackend):
    name = "encfs"
    tool = "encfs"
    package = "encfs"
    overhead = 1.01  # an 8-byte header per file
    cipher_label = "AES-192-CBC on 1 KiB blocks, block-encoded names (EncFS --standard)"
    summary = "EncFS FUSE overlay (AES-192-CBC, --standard) over a directory on the target filesystem"
    cipher_use = CipherUse("userspace", "aes-192-cbc", 1024, parallel=False)

    def declared(self) -> dict[Property, tuple[Verdict, str]]:
        src = "gocryptfs-website docs/comparison.md"
        return {
            Property.CONTENTS: (Verdict.HIDDEN, f"{src}: File Contents, encfs default: CBC"),
            Property.NAMES: (Verdict.HIDDEN, f"{src}: File Names, encfs default: CBC, path chaining"),
            Property.SIZES: (Verdict.SHOWN, f"{src}: File size obfuscation: no"),
            Property.TREE: (Verdict.SHOWN, f"{src}: Directory flattening: no"),
            Property.TAMPER: (
                Verdict.SILENT,
                f"{src}: File Contents, Integrity, encfs default (--standard): none",
            ),
        }

    def mount_argv(self, layout: Layout) -> list[str]:
        return ["encfs", "-f", "--stdinpass", "--standard", str(layout.cipher), str(layout.mountpoint)]

    def mount_stdin(self, password: bytes) -> bytes | None:
        return password + b"\n"
