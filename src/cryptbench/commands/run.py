"""`cryptbench run`: provision, prove, lay out, run interleaved trials, tear down.

The work is pipeline/execute.py's, which `selftest` shares; this module is the
command's entry point, as cli.py and the tests call it."""

from __future__ import annotations

from cryptbench.pipeline.execute import RunOutcome, run

__all__ = ["RunOutcome", "run"]
