"""PURE: a tool's arguments declared once, as a frozen dataclass, and read two ways from it:
the JSON Schema the model and an MCP client are shown (`schema`), and the model's JSON object
read into the dataclass (`read`).

Each field's type gives the JSON type — `str`, `str | None`, `int`, or a `Literal` of strings
(an enum) — and an `Arg` in `Annotated` the rest: the description, the bounds an integer is
clamped into, characters stripped from the front of a string. A field without a default is
required; a default other than None is shown in the schema. Reading forgives what small models
write (`"limit": "7"` is 7, an out-of-range number is clamped, an empty string is left out) and
refuses the rest with `ArgError`, whose words the model reads.

Imports: stdlib, casper.protocols (JSONValue).
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from casper.protocols import JSONValue
from casper.vocab import MAX_ARGUMENT_CHARS

Arguments = Mapping[str, JSONValue]  # a tool call's arguments: a JSON object
A = TypeVar("A")


class ArgError(ValueError):
    """The model passed arguments a tool can't use."""


@dataclass(frozen=True, slots=True)
class Arg:
    """What a field's type does not say: `Annotated[int, Arg("max results", bounds=(1, 10))]`."""

    description: str | None = None
    bounds: tuple[int, int] | None = None  # an integer is clamped into [lo, hi]
    lstrip: str = ""  # stripped from the front once read ("#12" is message 12)
    # a string argument the schema also takes as a whole number, read as its digits: a message
    # id, which every result shows as `[#2441]`, is written 2441 as often as "2441"
    integer_too: bool = False


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    kind: Literal["string", "integer"]
    arg: Arg
    required: bool
    default: str | int | None
    choices: tuple[str, ...]  # a Literal's values: the JSON Schema's enum


def schema(args: type) -> dict[str, JSONValue]:
    """The JSON Schema object of the tool whose arguments are the dataclass `args`."""
    properties: dict[str, JSONValue] = {}
    for f in _fields(args):
        prop: dict[str, JSONValue] = {"type": ["integer", f.kind] if f.arg.integer_too else f.kind}
        if f.arg.description is not None:
            prop["description"] = f.arg.description
        if f.choices:
            prop["enum"] = list(f.choices)
        if f.default is not None:
            prop["default"] = f.default
        properties[f.name] = prop
    required: list[JSONValue] = [f.name for f in _fields(args) if f.required]
    return {"type": "object", "properties": properties, "required": required}


def client_schema(parameters: Mapping[str, JSONValue]) -> dict[str, JSONValue]:
    """A tool's JSON Schema as an MCP client is shown it: each free string capped at
    MAX_ARGUMENT_CHARS (`maxLength`), which the wire refuses past at once (casper.cli.mcp_wire)
    and `read` refuses too. The model's copy goes without: it is read by `read` alike, and the
    prompt stays as short as it was."""
    properties = parameters.get("properties")
    if not isinstance(properties, Mapping):
        return dict(parameters)
    capped: dict[str, JSONValue] = {}
    for name, prop in properties.items():
        kind = prop.get("type") if isinstance(prop, Mapping) else None
        text = kind == "string" or (isinstance(kind, list) and "string" in kind)  # id: int too
        free = text and isinstance(prop, Mapping) and "enum" not in prop
        capped[name] = {**prop, "maxLength": MAX_ARGUMENT_CHARS} if free else prop  # type: ignore[dict-item]
    return {**parameters, "properties": capped}


def read(args: type[A], arguments: Arguments) -> A:
    """`arguments` as an instance of the dataclass `args`; ArgError names the first problem.

    Checked in this order, each group in declared order, so that a call with two problems is
    always told the same one: the required fields (all of them named when one is missing), then
    the ones limited to a few values, then the rest."""
    declared: type = args  # (a class is hashable; mypy does not see it of `type[A]`)
    fields = _fields(declared)
    required = [f for f in fields if f.required]
    values = {f.name: _read(f, arguments) for f in required}
    if not all(values.values()):
        names = " and ".join(f.name for f in required)
        raise ArgError(f"{names} {'is' if len(required) == 1 else 'are'} required")
    for f in sorted(fields, key=lambda f: not f.choices):  # stable: declared order within each
        if not f.required:
            values[f.name] = _read(f, arguments)
    for f in fields:
        value = values[f.name]
        if f.arg.lstrip and isinstance(value, str):
            values[f.name] = value.lstrip(f.arg.lstrip)
    return args(**values)


def _read(f: _Field, arguments: Arguments) -> str | int | None:
    if f.kind == "integer":
        return _int(arguments, f.name, f.default, f.arg.bounds)
    value = _opt_str(arguments, f.name)
    if value is None:
        return f.default
    if len(value) > MAX_ARGUMENT_CHARS:
        raise ArgError(f"{f.name} is {len(value):,} characters; at most {MAX_ARGUMENT_CHARS:,}")
    if f.choices and value not in f.choices:
        *most, last = f.choices
        raise ArgError(f"{f.name} must be {', '.join(most)} or {last}" if most
                       else f"{f.name} must be {last}")  # fmt: skip
    return value


def _opt_str(args: Arguments, key: str) -> str | None:
    value = args.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str | int | float):
        raise ArgError(f"{key} must be a string")
    return str(value)


def _int(
    args: Arguments, key: str, default: str | int | None, bounds: tuple[int, int] | None
) -> int:
    value = args.get(key)
    if value is None or value == "":
        value = default
    try:
        if not isinstance(value, str | int | float):  # a list, an object: int() refuses them too
            raise TypeError(key)
        number = int(value)
    except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: 1e309 reads as inf
        raise ArgError(f"{key} must be an integer") from exc
    return number if bounds is None else max(bounds[0], min(bounds[1], number))


@functools.cache
def _fields(args: type) -> tuple[_Field, ...]:
    """Each field of the dataclass `args`, its JSON type and rules read from its annotation; a
    declaration this cannot read fails when the tool is declared (at import), not when called."""
    hints = get_type_hints(args, include_extras=True)
    out = []
    for field in dataclasses.fields(args):
        where = f"{args.__name__}.{field.name}"
        hint, extra = hints[field.name], Arg()
        if get_origin(hint) is Annotated:
            hint, *extras = get_args(hint)
            extra = next((e for e in extras if isinstance(e, Arg)), extra)
        if get_origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint):
            hint = next(t for t in get_args(hint) if t is not type(None))  # str | None
        choices: tuple[str, ...] = get_args(hint) if get_origin(hint) is Literal else ()
        if hint is int:
            kind: Literal["string", "integer"] = "integer"
        elif hint is str or (choices and all(isinstance(c, str) for c in choices)):
            kind = "string"
        else:
            raise TypeError(f"{where}: a tool argument is str, int or a Literal of strings")
        required = field.default is dataclasses.MISSING
        default = None if required else field.default
        if not isinstance(default, str | int | None) or (kind == "integer" and default is None):
            raise TypeError(
                f"{where}: an integer argument needs a default, a string one None or text"
            )
        if extra.integer_too and (kind != "string" or choices):
            raise TypeError(f"{where}: only a free string argument is taken as a number too")
        out.append(_Field(field.name, kind, extra, required, default, choices))
    return tuple(out)
