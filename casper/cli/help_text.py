"""Help that teaches: `-h` everywhere and a worked example under every command's options.

Applied once in `casper.cli` after all commands are registered, so command modules keep their
decorators plain and a new command only needs an entry here.
"""

from __future__ import annotations

from typing import Any

# Typer's rich help collapses single newlines inside an epilog; blank lines keep one per line.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "index": ("casper index", "casper index --rebuild --json > index.json"),
    "contacts": ("casper contacts", "casper contacts --json | jq '.[0].id'"),
    "chats": ("casper chats", 'casper search "dinner" --chat 7'),
    "stats": (
        "casper stats Sam",
        'casper stats p_034e2395 --since "last March" --until 2024-06-30',
    ),
    "search": (
        'casper search "dentist"',
        'casper search "dinner plans" --person Priya --since "2 weeks ago" -k 3',
    ),
    "ask": (
        'casper ask "when did Sam and I plan Thanksgiving?"',
        'casper ask "who do I text the most?" --json',
        'casper ask "who is bringing pie?" --base-url http://127.0.0.1:11434/v1 --model qwen3:4b',
    ),
    "chat": (
        "casper chat",
        "casper chat --no-llm",
        "casper chat --base-url http://127.0.0.1:8080/v1 --model default_model",
    ),
    "mcp": ("casper mcp", "casper mcp --home ~/.casper/demo"),
    "show": ("casper show 48213", "casper show 48213 --before 10 --after 2"),
    "doctor": ("casper doctor", "casper doctor --json"),
    "eval": ("casper eval --dataset synthetic", "casper eval --dataset my_gold.jsonl -k 5 -k 10"),
    "demo": ("casper demo", 'casper demo "what did Priya say about the dentist?"'),
    "serve": ("casper serve --status", "casper serve --stop", "casper serve --idle-minutes 60 -v"),
    "pull": ("casper pull", "casper pull --model mlx-community/Qwen3-4B-Instruct-2507-4bit"),
}

HELP_OPTIONS = ["-h", "--help"]


def epilog(name: str) -> str | None:
    lines = EXAMPLES.get(name)
    if not lines:
        return None
    return "Examples:\n\n" + "\n\n".join(f"  $ {line}" for line in lines)


def reflowed(doc: str) -> str:
    """A docstring as help: each paragraph one line, which the terminal wraps. Typer's rich
    help joins the first paragraph's lines but keeps the later ones' line breaks, so a
    source line end became a break in mid-sentence."""
    import inspect

    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


def teach(app: Any) -> None:
    """Add the examples as epilogs (unless a command set its own); every paragraph of the help
    is one line (`reflowed`)."""
    for info in app.registered_commands:
        name = info.name or (info.callback.__name__ if info.callback else "")
        if not info.epilog:
            info.epilog = epilog(name.replace("_", "-"))
        if info.help is None and info.callback is not None and info.callback.__doc__:
            info.help = reflowed(info.callback.__doc__)
