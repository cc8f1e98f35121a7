"""What a setting accepts and how a value from config.toml or the command line is checked
against it: the field's annotation is its type (a set of words is a `Literal`), `setting(...)`
declares the rest beside it (a range, a check of its own, one line of what it is for). Generic
over any frozen dataclass of settings; `casper/config.py` declares Casper's.

Imports: stdlib only.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from casper.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Accepts:
    """What a setting accepts beyond its type (declared beside the field with `setting`): a
    range for numbers, or a check of its own (`valid` returns why a value is refused, or None).
    The type itself comes from the field's annotation (a set of words is a `Literal`), so a new
    field is checked by its type with no more work."""

    at_least: float | None = None
    at_most: float | None = None
    valid: Callable[[Any], str | None] | None = None
    words: str = ""  # what a check of its own accepts, in words ("an IANA time zone name")
    secret: bool = False  # a refused value is not repeated (it may be a key pasted by mistake)


def setting(
    default: Any = dataclasses.MISSING,
    *,
    doc: str,
    factory: Callable[[], Any] | None = None,
    at_least: float | None = None,
    at_most: float | None = None,
    valid: Callable[[Any], str | None] | None = None,
    words: str = "",
    secret: bool = False,
) -> Any:
    """A Config field, what it accepts and what it is for, in one line (`doc`, for people:
    docs/cli.md's settings table is generated from it): `top_k: int = setting(8, at_least=1,
    at_most=1000, doc="hits a search returns")`. `factory` builds a default per Config."""
    accepts = Accepts(at_least=at_least, at_most=at_most, valid=valid, words=words, secret=secret)
    metadata = {"accepts": accepts, "doc": doc}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def checked(key: str, value: Any, hint: Any, spec: dataclasses.Field) -> tuple[Any, str | None]:
    """(the value as the field holds it, None) or (None, what the field accepts, in words)."""
    if value is None and _optional(hint):
        return None, None
    kind = kind_of(hint)
    accepts: Accepts = spec.metadata.get("accepts", Accepts())
    words = accepted_words(kind, accepts)
    converted = _convert(value, kind)
    if converted is _REFUSED:
        return None, words
    if isinstance(converted, int | float) and not isinstance(converted, bool):
        low, high = accepts.at_least, accepts.at_most
        if (low is not None and converted < low) or (high is not None and converted > high):
            return None, words
    if (
        isinstance(converted, str)
        and accepts.at_least is not None
        and len(converted) < accepts.at_least
    ):
        return None, words
    if accepts.valid is not None and accepts.valid(converted) is not None:
        return None, words
    return converted, None


_REFUSED = object()


def _optional(hint: Any) -> bool:
    return type(None) in typing.get_args(hint)


def kind_of(hint: Any) -> Any:
    """The type a field's value is checked as: its annotation without None (None for a union
    of several types)."""
    kinds = [a for a in typing.get_args(hint) if a is not type(None)] if _optional(hint) else [hint]
    return kinds[0] if len(kinds) == 1 else None


def _convert(value: Any, kind: Any) -> Any:
    """`value` as a `kind` (the field's type without None), or _REFUSED. TOML and the command
    line give str, int, float, bool, lists; a whole number is a float too, never a bool."""
    if kind is bool:
        return value if isinstance(value, bool) else _REFUSED
    if kind is int:
        return value if isinstance(value, int) and not isinstance(value, bool) else _REFUSED
    if kind is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return value if ok and math.isfinite(value) else _REFUSED  # an int is a float too
    if kind is str:
        return value if isinstance(value, str) and "\x00" not in value else _REFUSED
    if typing.get_origin(kind) is Literal:  # one of a set of words
        return value if isinstance(value, str) and value in typing.get_args(kind) else _REFUSED
    if kind is Path:
        if isinstance(value, Path):
            return value
        if isinstance(value, str) and value.strip() and "\x00" not in value:
            return Path(value).expanduser()
        return _REFUSED
    if typing.get_origin(kind) is tuple:  # tuple[str, ...]: one text or a list of texts
        items = [value] if isinstance(value, str) else value
        if isinstance(items, list | tuple) and all(isinstance(i, str) for i in items):
            return tuple(items)
        return _REFUSED
    return value if kind is not None and isinstance(value, kind) else _REFUSED


def accepted_words(kind: Any, accepts: Accepts) -> str:
    """What a setting accepts, in words: `a whole number from 1 to 1000`."""
    if typing.get_origin(kind) is Literal:
        return "one of " + ", ".join(f'"{c}"' for c in typing.get_args(kind))
    if accepts.words:
        return accepts.words
    low, high = accepts.at_least, accepts.at_most
    if kind in (int, float):
        noun = "a whole number" if kind is int else "a number"
        if low is not None and high is not None:
            return f"{noun} from {low:g} to {high:g}"
        if low is not None:
            return f"{noun} of at least {low:g}"
        return noun
    return {
        bool: "true or false",
        str: "a quoted text" + (" (not empty)" if low else ""),
        Path: "a quoted path",
    }.get(kind, "a list of quoted texts" if typing.get_origin(kind) is tuple else str(kind))


def toml_value(value: object) -> str:
    """A value as it would be written in config.toml."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def refused(
    key: str, value: object, words: str, where: str, spec: dataclasses.Field
) -> ConfigError:
    secret = spec.metadata.get("accepts", Accepts()).secret
    shown = "(a value, not shown)" if secret else toml_value(value)
    default = spec.default if spec.default is not dataclasses.MISSING else None
    fix = (
        f"set {key} to {words} in {where}, or remove the line to use the default"
        + (f" ({toml_value(default)})" if default not in (None, "", ()) else "")
        if where.endswith("config.toml")
        else f"give {key} as {words}"
    )
    return ConfigError(f"{where}: {key} = {shown[:80]} is not accepted: {key} takes {words}",
                       hint=fix)  # fmt: skip
