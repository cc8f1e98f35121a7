"""PURE: a tool call's arguments held to the tool's JSON Schema, for callers outside the agent.

The agent's own model is forgiven a `"limit": "7"` (casper.agent.tools converts what it can:
small models write numbers as strings). A client of `casper mcp` is a program that was given the
schema, so its arguments are held to it: each argument of the declared type (an integer is a
whole JSON number, never a string, a boolean or 1e309), a declared enum value, the required ones
present, and none the schema does not name. `problem` says what is wrong in the words the CLI's
request checks use (casper.app.requests), or None.

Imports: stdlib only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

_TYPES = {
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
}


def problem(schema: Mapping[str, Any], arguments: Any) -> str | None:
    """What is wrong with `arguments` for a tool whose parameters are `schema`, or None."""
    if not isinstance(arguments, Mapping):
        return "arguments must be an object of argument names and values"
    properties = schema.get("properties", {})
    unknown = sorted(str(name) for name in arguments if name not in properties)
    if unknown:
        takes = ", ".join(properties) or "no arguments"
        return f"unknown {', '.join(unknown)} (it takes {takes})"
    for name in schema.get("required", ()):
        if arguments.get(name) is None:
            return f"{name} is required"
    for name, value in arguments.items():
        wrong = _wrong(properties[name], value)
        if wrong:
            return f"{name} must be {wrong}, not {_shown(value)}"
    return None


def _wrong(prop: Mapping[str, Any], value: Any) -> str | None:
    """What the value should have been, or None when it fits (null counts as left out)."""
    if value is None:
        return None
    kind = prop.get("type")
    if kind is not None and not _is(kind, value):
        return _TYPES.get(str(kind), str(kind))
    choices = prop.get("enum")
    if choices is not None and value not in choices:
        return "one of " + ", ".join(str(c) for c in choices)
    return None


def _is(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False  # JSON true is no number
    if kind == "integer":  # 7 and 7.0 are the same JSON number; 1e309 reads as inf
        return isinstance(value, int) or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
    if kind == "array":
        return isinstance(value, list | tuple)
    if kind == "object":
        return isinstance(value, Mapping)
    return True


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
