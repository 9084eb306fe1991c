"""Newest by version, not by name: the lab's kernels and its ZFS builds are named after
versions, and by name 6.12.9 sorts after 6.12.117, 6.1.0-9 after 6.1.0-57."""

from __future__ import annotations

import re


def version_key(name: str) -> list[int]:
    """The numbers in a name, in order (vmlinuz-6.12.117+deb13-amd64: 6, 12, 117, 13, 64)."""
    return [int(n) for n in re.findall(r"\d+", name)]
