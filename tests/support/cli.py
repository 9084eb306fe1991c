"""The cryptbench command line, run as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the cryptbench command line as a user would, capturing both streams."""
    return subprocess.run(
        [sys.executable, "-m", "cryptbench", *args],
        capture_output=True,
        text=True,
        check=False,
        env=env if env is not None else os.environ.copy(),
    )
