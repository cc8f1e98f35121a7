"""Does a JSON value match a TypedDict? The check the `--json` tests make of every document.

mypy holds the producers and the renderers to the types in casper/app/documents.py; this holds
what a command really printed to them, after the JSON round trip: every required key there, no
key the type does not name, each value of its type (a tuple is a JSON list of that length, an
int is no bool, a float may be written as an int).
"""

from __future__ import annotations

import functools
import importlib
import types
import typing
from typing import Any, Literal, NotRequired, Required, Union, get_args, get_origin


def mismatches(value: Any, tp: Any, where: str = "$") -> list[str]:
    """What in `value` does not match the type `tp`, one line each (empty: it matches).

    A TypedDict's annotations that name types its module imports for checking only (under
    TYPE_CHECKING) are read with those types from the modules in TYPE_HOMES."""
    if tp is Any:
        return []
    if typing.is_typeddict(tp):
        return _typeddict(value, tp, where)
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        if any(not mismatches(value, option, where) for option in args):
            return []
        return [f"{where}: {_shown(value)} is none of {_name(tp)}"]
    if origin is Literal:
        return [] if value in args else [f"{where}: {_shown(value)} is not one of {args}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {_shown(value)} is not a list"]
        return [
            e for i, item in enumerate(value) for e in mismatches(item, args[0], f"{where}[{i}]")
        ]
    if origin is tuple:
        if not isinstance(value, (list, tuple)) or len(value) != len(args):
            return [f"{where}: {_shown(value)} is not a {len(args)}-item list"]
        pairs = enumerate(zip(value, args, strict=True))
        return [e for i, (v, t) in pairs for e in mismatches(v, t, f"{where}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: {_shown(value)} is not an object"]
        errors = []
        for key, item in value.items():
            errors += mismatches(key, args[0], f"{where} key {key!r}")
            errors += mismatches(item, args[1], f"{where}[{key!r}]")
        return errors
    return [] if _is_scalar(value, tp) else [f"{where}: {_shown(value)} is not {_name(tp)}"]


def _typeddict(value: Any, tp: Any, where: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: {_shown(value)} is not a {tp.__name__} object"]
    # with `from __future__ import annotations` Python 3.11 counts every key as required in
    # __required_keys__; the NotRequired/Required wrappers kept in the hints tell them apart
    hints = typing.get_type_hints(tp, localns=_checking_only_names(), include_extras=True)
    errors = [
        f"{where}: {key!r} is not a key of {tp.__name__}" for key in value if key not in hints
    ]
    for key, hint in hints.items():
        wrapper = get_origin(hint)
        required = wrapper is Required or (tp.__total__ and wrapper is not NotRequired)
        inner = get_args(hint)[0] if wrapper in (Required, NotRequired) else hint
        if key not in value:
            if required:
                errors.append(f"{where}: {tp.__name__} key {key!r} is missing")
            continue
        errors += mismatches(value[key], inner, f"{where}.{key}")
    return errors


# where the documents' blocks made below casper.app are typed (casper/app/documents.py imports
# them under TYPE_CHECKING, so they are not in its namespace at run time)
TYPE_HOMES = (
    "casper.stats",
    "casper.app.stats_series",
    "casper.search.query",
    "casper.agent.answer_json",
)


@functools.cache
def _checking_only_names() -> dict[str, Any]:
    names: dict[str, Any] = {}
    for home in TYPE_HOMES:
        module = importlib.import_module(home)
        names.update({k: v for k, v in vars(module).items() if typing.is_typeddict(v)})
    return names


def _is_scalar(value: Any, tp: Any) -> bool:
    if tp is None or tp is type(None):
        return value is None
    if tp is float:  # JSON writes 3.0 as 3.0, but a float field may hold an int
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp in (str, bool):
        return isinstance(value, tp)
    raise TypeError(f"the checker does not know {tp!r}")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")
