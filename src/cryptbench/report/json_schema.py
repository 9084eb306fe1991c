"""The result document's JSON Schema (draft 2020-12), generated from the typed model
(model/result.py and the sections and records it holds): one definition per dataclass,
each field a property of the type its annotation names, required where the field has
no default. docs/result-schema.json is
this module's output (`python -m cryptbench.report.json_schema > docs/result-schema.json`);
a test holds the shipped file to it and validates stored documents against it.

Additional properties are allowed everywhere: a later version adds keys (never renames
or removes one), and some records write a derived key beside their fields
(`change_percent`). The plan and the environment are kept as stored, objects whose keys
depend on the run; the schema says only that they are objects.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import sys
import types
import typing
from typing import Any

from cryptbench.model import result, stored_run
from cryptbench.model.json_types import JsonObject

DIALECT = "https://json-schema.org/draft/2020-12/schema"
# Wrappers over a stored object (their `raw`), whatever keys the run recorded.
RAW_OBJECTS = (stored_run.RunPlan, stored_run.Environment)


def _of(hint: Any, defs: dict[str, JsonObject]) -> JsonObject:
    """The schema of one annotation; dataclasses go to `defs` once, by name."""
    origin = typing.get_origin(hint)
    if hint is type(None):
        return {"type": "null"}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_of(a, defs) for a in typing.get_args(hint)]}
    if origin in (list, tuple) or hint in (list, tuple):
        args = [a for a in typing.get_args(hint) if a is not Ellipsis]
        return {"type": "array", **({"items": _of(args[0], defs)} if args else {})}
    if origin is dict or hint is dict or hint is Any or hint is object:
        return {"type": "object"} if hint is not Any else {}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"enum": [m.value for m in hint]}
    if hint in RAW_OBJECTS:
        return {"type": "object"}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if hint.__name__ not in defs:
            defs[hint.__name__] = {}  # placed first: a record may refer to itself
            defs[hint.__name__] = _record(hint, defs)
        return {"$ref": f"#/$defs/{hint.__name__}"}
    simple = {str: "string", bool: "boolean", int: "integer", float: "number"}
    if hint in simple:
        # JSON does not tell 3 from 3.0: a float field takes either
        return {"type": "number"} if hint is float else {"type": simple[hint]}
    return {}


def _record(cls: type, defs: dict[str, JsonObject]) -> JsonObject:
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    props, required = {}, []
    for f in dataclasses.fields(cls):
        props[f.name] = _of(hints[f.name], defs)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    out: JsonObject = {"type": "object", "properties": props, "required": required}
    if cls.__doc__:
        out["description"] = " ".join(cls.__doc__.split())
    return out


def schema() -> JsonObject:
    """The schema of `cryptbench show --json` (and `run --json`, `report --json`)."""
    defs: dict[str, JsonObject] = {}
    top = _record(result.Document, defs)
    return {
        "$schema": DIALECT,
        "title": "cryptbench result document",
        **top,
        "$defs": dict(sorted(defs.items())),
    }


def text() -> str:
    return json.dumps(schema(), indent=2) + "\n"


if __name__ == "__main__":
    sys.stdout.write(text())
