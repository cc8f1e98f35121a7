"""`casper stats`: one person's precomputed stats, or computed for a --since/--until range."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from casper.cli.base import Home, Json, NoService, Verbose, app, config, guarded, print_json

if TYPE_CHECKING:
    from casper.app.documents import Days, StatsDoc


@app.command()
@guarded
def stats(
    person: Annotated[str, typer.Argument(help="name, handle or id")],
    since: Annotated[str | None, typer.Option("--since", help="ISO date or phrase")] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="ISO date or phrase (whole day)")
    ] = None,
    home: Home = None,
    json: Json = False,
    no_service: NoService = False,
    verbose: Verbose = False,
) -> None:
    """One person's stats (precomputed; computed for the range with --since/--until)."""
    from casper.cli.transport import execute

    args = {"person": person, "since": since, "until": until}
    data: StatsDoc = execute("stats", args, config(home), no_service=no_service)
    if json:
        print_json(data)
        return
    _print_stats(data, _range_label(data["range"]))


def _range_label(days: Days) -> str:
    """The days a --since/--until range resolved to, so "last March" can be checked."""
    if days["since"] is None and days["until"] is None:
        return "all time"
    return f"{days['since'] or 'start'} → {days['until'] or 'today'}"


def _print_stats(data: StatsDoc, range_label: str = "all time") -> None:
    from rich.text import Text

    from casper.cli.render import console, month_bars

    c = console()
    p = data["person"]
    head = Text(p["name"], style="bold")
    head.append(f"  {p['id']} · {', '.join(p['handles'])}", style="dim")
    c.print(head)
    c.print(f"  range: {range_label}")
    c.print(
        f"  sent {data['sent']} (one-to-one) · received {data['received']} (all chats) · "
        f"active days {data['active_days']}"
    )
    split = data.get("chats")
    if split and (split["sent_in_groups"] or split["received_in_groups"]):
        c.print(
            f"  one-to-one: sent {split['sent_one_to_one']} · received "
            f"{split['received_one_to_one']}; in shared groups: sent {split['sent_in_groups']}"
            f" · received {split['received_in_groups']}"
        )
    c.print(f"  first {(data['first'] or '-')[:10]} · last {(data['last'] or '-')[:10]}")
    r = data["median_reply_s"]
    fmt = lambda s: "-" if s is None else (f"{s / 60:.0f} min" if s < 3600 else f"{s / 3600:.1f} h")  # noqa: E731
    c.print(f"  median reply: me {fmt(r['me'])} · them {fmt(r['them'])}")
    i = data["initiations"]
    c.print(f"  conversations started: me {i['me']} · them {i['them']}")
    if data["top_emoji"]:
        c.print("  top emoji: " + " ".join(f"{e}×{n}" for e, n in data["top_emoji"]))
    if data["busiest_hours"]:
        c.print(
            "  busiest hours: " + ", ".join(f"{h:02d}h ({n})" for h, n in data["busiest_hours"])
        )
    months = month_bars(data.get("by_month") or {}, c.width)
    if months:
        c.print("  messages by month:")
        for line in months:
            c.print(f"    {line}")
