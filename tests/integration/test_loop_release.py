"""A loop device is released only once the kernel has closed its image.

`losetup --detach` on a device still open merely marks it to clear on its last close.
Whatever serves the image (a qemu export, a FUSE daemon) is stopped right after the
loop device's release; stopped earlier, it leaves the device on a file with no path.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from cryptbench.machine import resources
from cryptbench.machine.resources import LoopDevice
from cryptbench.model.errors import ProvisionError
from tests.support.targets import requires_root

pytestmark = [pytest.mark.integration, requires_root]


def _attached(target_dir: Path) -> tuple[Path, str]:
    image = target_dir / "image"
    with open(image, "wb") as f:
        f.truncate(8 << 20)
    dev = subprocess.run(
        ["losetup", "--find", "--show", str(image)], capture_output=True, text=True, check=True
    ).stdout.strip()
    return image, dev


def test_a_device_held_open_is_not_called_released(target_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    image, dev = _attached(target_dir)
    monkeypatch.setattr(resources, "LOOP_RELEASE_WAIT", 0.5)
    holder = os.open(dev, os.O_RDONLY)
    try:
        with pytest.raises(ProvisionError, match=f"{dev} still attached .* something still holds it open"):
            LoopDevice(image).release()
        assert LoopDevice(image).devices() == [dev]  # marked to clear, not cleared
    finally:
        os.close(holder)
    LoopDevice(image).release()  # cleared on the close above, or now
    assert LoopDevice(image).devices() == []


def test_release_returns_once_the_last_holder_closes(target_dir: Path) -> None:
    image, dev = _attached(target_dir)
    holder = os.open(dev, os.O_RDONLY)
    closing = threading.Event()

    def close() -> None:
        closing.set()
        os.close(holder)

    closer = threading.Timer(0.5, close)
    closer.start()
    try:
        assert LoopDevice(image).release() == f"detached {dev} (image)"
        assert closing.is_set()  # it waited for the last holder
        assert LoopDevice(image).devices() == []
    finally:
        closer.join()
