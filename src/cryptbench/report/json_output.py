"""JSON on stdout, as every command's --json prints it."""

from __future__ import annotations

import json
import sys


def print_json(obj: object) -> None:
    # default=str: a Path or an enum in a command's rows prints as its text
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")
