"""CryFS: a FUSE overlay that stores fixed-size encrypted blocks (default
XChaCha20-Poly1305), hiding file sizes and the directory structure.

Non-interactive through its documented environment: CRYFS_FRONTEND=noninteractive
(the password is read once from standard input, a pipe here), no update check,
and its per-user state (CRYFS_LOCAL_STATE_DIR, HOME) inside the scratch space,
so nothing is written to the user's home directory.
"""

from __future__ import annotations

from cryptbench.backends.base import CipherUse
from cryptbench.backends.overlay import FuseOverlayBackend, Layout
from cryptbench.model.vocabulary import Property, Verdict


class CryfsBackend(FuseOverlayBackend):
    name = "cryfs"
    tool = "cryfs"
    package = "cryfs"
    # 16 KiB blocks, each with a header, nonce and tag, plus the block tree
    overhead = 1.05
    cipher_label = "XChaCha20-Poly1305 (CryFS default), 16 KiB blocks"
    # Its block cache (blockstore/implementations/caching/cache/Cache.h) writes a block out
    # once it is PURGE_LIFETIME_SEC (0.5) old, checked every PURGE_INTERVAL (0.5): at most
    # MAX_LIFETIME_SEC, one second, after its last use.
    write_behind = 1.0
    summary = "CryFS FUSE overlay (XChaCha20-Poly1305 blocks) over a directory on the target filesystem"
    # XChaCha20-Poly1305 over 16 KiB blocks by default; the nearest case measured
    # is ChaCha20-Poly1305 on 4 KiB.
    cipher_use = CipherUse("userspace", "chacha20-poly1305", 4096, parallel=False)

    def declared(self) -> dict[Property, tuple[Verdict, str]]:
        src = "gocryptfs-website docs/comparison.md"
        return {
            Property.CONTENTS: (Verdict.HIDDEN, f"{src}: File Contents, CryFS: GCM"),
            Property.NAMES: (Verdict.HIDDEN, f"{src}: File Names, CryFS: GCM (dir DB)"),
            Property.SIZES: (Verdict.HIDDEN, f"{src}: File size obfuscation: yes (chunked storage)"),
            Property.TREE: (Verdict.HIDDEN, f"{src}: Directory flattening: yes"),
            Property.TAMPER: (Verdict.DETECTED, f"{src}: File Contents, Integrity, CryFS: GCM"),
        }

    def mount_env(self, layout: Layout) -> dict[str, str]:
        return {
            "CRYFS_FRONTEND": "noninteractive",
            "CRYFS_NO_UPDATE_CHECK": "true",
            "CRYFS_LOCAL_STATE_DIR": str(layout.home / "cryfs-state"),
        }

    def mount_argv(self, layout: Layout) -> list[str]:
        return ["cryfs", "-f", str(layout.cipher), str(layout.mountpoint)]

    def mount_stdin(self, password: bytes) -> bytes | None:
        return password + b"\n"
