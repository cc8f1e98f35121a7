"""docs/cli.md's command and settings reference, generated from the code with cog (cogapp):
every command, argument and option as the typer app declares it, and every setting as
`casper/config.py` declares it (type, default, what it accepts, its one-line `doc`).

docs/cli.md calls these between `[[[cog` and `[[[end]]]` markers. `make docs` rewrites the
generated blocks; `make lint` runs `cog --check`, which fails when a block differs from what
the code says now. Nothing is rendered through rich or read from the terminal (no width, no
colour), so the text is the same on every machine.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

# Options every command that has them declares the same way: described once (`shared`) and
# named on each command's "also" line instead of repeated in every table.
SHARED = ("--home", "--json", "--no-service", "--verbose")
_DEFAULT = re.compile(r"\s*\\?\[default: ([^\]]*)\]\s*$")  # `default_of` in casper/cli/base.py
# click's type names (typer's own click says "int" and "str") in words
_TYPES = {"int": "whole number", "integer": "whole number", "float": "number", "str": "text"}


def _root() -> Any:
    import typer.main

    from casper.cli import app

    return typer.main.get_command(app)


def _commands() -> dict[str, Any]:
    """The commands in the order `casper --help` lists them."""
    root = _root()
    return {name: root.commands[name] for name in root.commands}


def _cell(text: str) -> str:
    """Text for a Markdown table cell: `|` escaped (inside code spans too), one line."""
    return " ".join(text.split()).replace("|", "\\|")


def _help(param: Any) -> tuple[str, str]:
    """(the help without its `[default: …]` note, that note's text)."""
    text = (param.help or "").replace("\\[", "[")
    found = _DEFAULT.search(text)
    if not found:
        return text, ""
    return text[: found.start()], found.group(1)


def _names(param: Any) -> str:
    if param.param_type_name == "argument":
        return f"`{(param.metavar or param.name).upper()}`"
    return ", ".join(f"`{o}`" for o in sorted(param.opts, key=lambda o: (len(o) < 3, o)))


def _takes(param: Any) -> str:
    if getattr(param, "is_flag", False):
        return ""
    if param.type.name == "choice":
        kind = " | ".join(f"`{c}`" for c in param.type.choices)  # `_cell` escapes the bars
    else:
        kind = _TYPES.get(param.type.name, param.type.name)
    if param.param_type_name == "argument":
        kind += ", required" if param.required else ", optional"
    if getattr(param, "multiple", False):
        kind += ", repeatable"
    return kind


def _default(param: Any, noted: str) -> str:
    if noted:  # the setting it falls back to: `8, setting top_k`
        return re.sub(r"setting (\w+)", r"setting `\1`", noted)
    if getattr(param, "is_flag", False) or param.default is None or param.multiple:
        return ""
    return f"`{param.default}`"


def _row(param: Any) -> str:
    text, noted = _help(param)
    cells = (_names(param), _takes(param), _default(param, noted), text)
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _usage(name: str, command: Any) -> str:
    words = [f"casper {name}"]
    for p in command.params:
        if p.param_type_name == "argument":
            shown = (p.metavar or p.name).upper()
            words.append(shown if p.required else f"[{shown}]")
    return " ".join(words) + " [options]"


def _examples(command: Any) -> list[str]:
    """The `$ casper …` lines of the command's help epilog (casper/cli/base.py EXAMPLES)."""
    lines = (command.epilog or "").splitlines()
    return [line.strip()[2:] for line in lines if line.strip().startswith("$ ")]


def _shared(param: Any) -> bool:
    return param.param_type_name == "option" and param.opts[-1] in SHARED


def overview() -> str:
    """| command | does |: every command, its first line of help, a link to its section."""
    out = ["| command | does |", "|---|---|"]
    for name, command in _commands().items():
        first = (command.help or "").split("\n\n")[0]
        out.append(f"| [`casper {name}`](#casper-{name}) | {_cell(first)} |")
    return "\n".join(out) + "\n"


def command(name: str) -> str:
    """One command: heading, usage, its help, the examples its help ends with, its own
    arguments and options, and the shared ones it takes."""
    cmd = _commands()[name]
    out = [f"### casper {name}", "", f"`{_usage(name, cmd)}`", ""]
    out += [" ".join(p.split()) + "\n" for p in (cmd.help or "").split("\n\n")]
    examples = _examples(cmd)
    if examples:
        out += ["```bash", *examples, "```", ""]
    own = [p for p in cmd.params if not _shared(p)]
    if own:
        out += ["| argument / option | takes | default | what it does |", "|---|---|---|---|"]
        out += [_row(p) for p in own]
        out.append("")
    also = [f"`{p.opts[0]}`" for p in cmd.params if _shared(p)]
    if also:
        out += [
            f"Also takes {', '.join(also)} ([global options](#global-options-and-environment)).",
            "",
        ]
    return "\n".join(out)


def shared() -> str:
    """The options many commands take, described once (each must read the same everywhere)."""
    seen: dict[str, Any] = {}
    users: dict[str, list[str]] = {}
    for name, cmd in _commands().items():
        for p in cmd.params:
            if not _shared(p):
                continue
            key = p.opts[-1]
            if key in seen and _row(seen[key]) != _row(p):
                raise ValueError(f"{key} reads differently on `casper {name}`: not shared")
            seen.setdefault(key, p)
            users.setdefault(key, []).append(name)
    every = len(_commands())
    out = ["| option | takes | commands | what it does |", "|---|---|---|---|"]
    for key in SHARED:
        p = seen[key]
        text, _ = _help(p)
        names = users[key]
        where = "every command" if len(names) == every else ", ".join(f"`{n}`" for n in names)
        out.append("| " + " | ".join(_cell(c) for c in (_names(p), _takes(p), where, text)) + " |")
    return "\n".join(out) + "\n"


def _toml(value: Any) -> str:
    """A default as it would be written in config.toml; paths under $HOME with `~`."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, Path):
        home = str(Path.home())
        text = str(value)
        value = "~" + text[len(home) :] if text.startswith(home + "/") else text
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, tuple):
        return "`[" + ", ".join(f'"{v}"' for v in value) + "]`"
    return f"`{value}`"


def settings() -> str:
    """The settings table: every field of casper.config.Config but the data dir (that is
    `--home`), with the words a refused value is told, its default and its `doc`."""
    from casper.config import Config, takes

    out = ["| setting | takes | default | what it is for |", "|---|---|---|---|"]
    for f in dataclasses.fields(Config):
        if f.name == "data_dir":
            continue
        doc = f.metadata.get("doc")
        if not doc:
            raise ValueError(f"casper/config.py: {f.name} has no doc= in its setting(...)")
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        cells = (f"`{f.name}`", takes(f.name), _toml(default), doc)
        out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(out) + "\n"
