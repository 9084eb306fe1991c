"""Files a command writes for the user (reports, chart images): never over a file that
exists, each written whole or not at all, with the mode any new file gets."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from cryptbench.model.errors import UsageError


def output_file(text: str, what: str) -> Path | None:
    """Where an export goes: a new file in an existing directory, or None for stdout ("-").
    An existing file is never overwritten: cryptbench writes only what it created."""
    if text == "-":
        return None
    path = Path(text)
    if path.exists() or path.is_symlink():
        raise UsageError(f"{what} {text[:200]} exists: cryptbench does not overwrite files it did not create")
    if not path.parent.is_dir():
        raise UsageError(f"{what} {text[:200]}: no directory {str(path.parent)[:200]}")
    return path


def page_file(text: str, what: str) -> Path:
    """Where an HTML page goes: as `output_file`, but never stdout."""
    path = output_file(text, what)
    if path is None:
        raise UsageError(f"{what} needs a file name (an HTML page is not for a terminal)")
    return path


def output_dir(text: str, what: str) -> Path:
    """Where chart files go: an existing directory, or a new one in an existing directory."""
    path = Path(text)
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise UsageError(f"{what} {text[:200]}: not a directory")
    if not path.exists() and not path.parent.is_dir():
        raise UsageError(f"{what} {text[:200]}: no directory {str(path.parent)[:200]}")
    return path


def write_new(path: Path, content: str | bytes) -> None:
    """All of it or nothing: a temporary file beside it, then a link that fails if the name was taken."""
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}"
    # 0666 less the umask, the mode any new file gets (a report is for sharing; mkstemp gives 0600)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        if isinstance(content, bytes):
            with os.fdopen(fd, "wb") as fb:
                fb.write(content)
        else:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(content)
        os.link(tmp, path)  # unlike rename, refuses to replace a file that appeared meanwhile
    except FileExistsError:
        raise UsageError(f"{path} exists: cryptbench does not overwrite files it did not create") from None
    finally:
        os.unlink(tmp)


def replace_file(path: Path, content: str) -> None:
    """All of it or nothing, over a file cryptbench wrote before (`run --export-* --force`):
    a temporary file beside it, then a rename over it."""
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(content)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
