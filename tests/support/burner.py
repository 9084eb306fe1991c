"""A command that burns a known amount of CPU, for the tests of user commands."""

from __future__ import annotations

from pathlib import Path


def write_burner(folder: Path, seconds: float) -> Path:
    """A Python script that spends `seconds` of CPU (its own process time, whatever the
    machine's speed or load) and exits."""
    path = folder / "burn.py"
    path.write_text(
        f"import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end:\n    pass\n"
    )
    return path
