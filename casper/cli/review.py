"""`casper review [YEAR]`: a year of messages as one self-contained HTML file, and a summary
in the terminal; `--share` leaves out message text and names (initials instead)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from casper.cli.base import Home, Json, Verbose, app, config, guarded, print_json
from casper.dates.zones import local_tz

if TYPE_CHECKING:
    from casper.app.documents import ReviewDoc

# inside the commands: `casper --help` imports every command module; the work loads when it runs


@app.command()
@guarded
def review(
    year: Annotated[
        int | None, typer.Argument(help="the year (default: the year of the newest message)")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="the HTML file (default: casper-review-YEAR.html)"),
    ] = None,
    share: Annotated[
        bool, typer.Option("--share", help="no message text, people as initials")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="replace an existing file")] = False,
    home: Home = None,
    json: Json = False,
    verbose: Verbose = False,
) -> None:
    """Your year in messages, compared with the year before: top people, the busiest day,
    streaks, new people, the first and last messages, emoji, reply times."""
    from casper.app.outfile import refuse_existing, write_private
    from casper.app.review import build_review, default_year, mode_privacy, share_privacy
    from casper.app.runtime import store_to_show

    cfg = config(home)
    if not cfg.store_path.exists():
        from casper.cli.invocation import missing_index

        raise missing_index(cfg)
    tz = local_tz(cfg.timezone)
    store = store_to_show(cfg)
    chosen = year if year is not None else default_year(store, tz)
    path = out or Path(f"casper-review-{chosen}{'-shared' if share else ''}.html")
    if not json:
        refuse_existing(path, force)  # before the work, not after it
    privacy = share_privacy() if share else mode_privacy(cfg.privacy)
    doc = build_review(store, tz, chosen, privacy, shared=share)
    if json:
        print_json(doc)
        return
    from casper.cli.review_html import review_html

    write_private(path, review_html(doc).encode("utf-8"), force=force)
    print_summary(doc, path)


def print_summary(doc: ReviewDoc, path: Path) -> None:
    from rich.text import Text

    from casper.cli.render import console
    from casper.cli.stats_view import duration

    c = console()
    this, before = doc["this"], doc["before"]
    total, total_before = this["sent"] + this["received"], before["sent"] + before["received"]
    c.print(Text(f"{doc['year']} in messages", style="bold"))
    c.print(Text(f"  {total:,} messages ({this['sent']:,} sent, {this['received']:,} received)"
                 f" · {before['year']}: {total_before:,}"))  # fmt: skip
    c.print(Text(f"  {this['active_days']} active days · {this['people']} people · longest "
                 f"streak {this['longest_streak']} days"))  # fmt: skip
    day = doc["busiest_day"]
    if day["day"]:
        c.print(Text(f"  busiest day {day['day']} ({day['messages']} messages)"))
    r, rb = this["median_reply_s"], before["median_reply_s"]
    c.print(Text(f"  median reply: me {duration(r['me'])} (was {duration(rb['me'])}) · "
                 f"them {duration(r['them'])} (was {duration(rb['them'])})"))  # fmt: skip
    if this["top_emoji"]:
        c.print(Text("  top emoji: " + " ".join(f"{e}×{n}" for e, n in this["top_emoji"])))
    if doc["top_people"]:
        c.print(Text("  top people:"))
        for i, p in enumerate(doc["top_people"], 1):
            was = "new" if p["rank_before"] is None else f"#{p['rank_before']} in {before['year']}"
            c.print(Text(f"    {i}. {p['name']} {p['messages']:,} ({was})"))
    if doc["new_people"]:
        c.print(Text("  new this year: " + ", ".join(doc["new_people"])))
    c.print(Text(f"wrote {path}", style="dim"))
