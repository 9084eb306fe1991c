"""Where the checkout's parts are, for tests at any depth under tests/: one place, so
that a test moved to another folder still finds its fixtures."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]  # tests/
REPO = TESTS.parent  # the checkout
