"""PURE: a tool call's arguments held to the tool's JSON Schema, for callers outside the agent.

The agent's own model is forgiven a `"limit": "7"` (casper.agent.tools converts what it can:
small models write numbers as strings). A client of `casper mcp` is a program that was given the
schema, so its arguments are held to it: each argument of the declared type (an integer is a
whole JSON number, never a string, a boolean or 1e309), a declared enum value, the required ones
present, and none the schema does not name. `problem` says what is wrong in the words the CLI's
request checks use (casper.app.requests), or None.

Imports: stdlib only (and casper.protocols for a type).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from casper.protocols import JSONValue

_TYPES = {
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
}


def problem(schema: Mapping[str, JSONValue], arguments: object) -> str | None:
    """What is wrong with `arguments` for a tool whose parameters are `schema`, or None."""
    if not isinstance(arguments, Mapping):
        return "arguments must be an object of argument names and values"
    properties = _object(schema.get("properties"))
    unknown = sorted(str(name) for name in arguments if name not in properties)
    if unknown:
        takes = ", ".join(properties) or "no arguments"
        return f"unknown {', '.join(unknown)} (it takes {takes})"
    required = schema.get("required")
    for name in required if isinstance(required, list | tuple) else ():
        if arguments.get(name) is None:
            return f"{name} is required"
    for name, value in arguments.items():
        wrong = _wrong(_object(properties[name]), value)
        if wrong:
            return f"{name} must be {wrong}, not {_shown(value)}"
    return None


def _object(value: JSONValue) -> Mapping[str, JSONValue]:
    """A JSON Schema's object (its `properties`, one property), or {} when it is none."""
    return value if isinstance(value, Mapping) else {}


def _wrong(prop: Mapping[str, JSONValue], value: object) -> str | None:
    """What the value should have been, or None when it fits (null counts as left out)."""
    if value is None:
        return None
    kind = prop.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    if kinds and not any(_is(k, value) for k in kinds):
        return " or ".join(_TYPES.get(str(k), str(k)) for k in kinds)
    choices = prop.get("enum")
    if isinstance(choices, list | tuple) and value not in choices:
        return "one of " + ", ".join(str(c) for c in choices)
    longest = prop.get("maxLength")
    if isinstance(value, str) and isinstance(longest, int) and len(value) > longest:
        return f"at most {longest:,} characters ({len(value):,})"
    return None


def _is(kind: JSONValue, value: object) -> bool:
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


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
