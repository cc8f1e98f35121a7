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
    from casper.app.outfile import destination, write_out
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
    target = None if json else destination(path, force)  # before the work, not after it
    privacy = share_privacy() if share else mode_privacy(cfg.privacy)
    doc = build_review(store, tz, chosen, privacy, shared=share)
    if json:
        print_json(doc)
        return
    from casper.cli.review_html import review_html

    write_out(target, review_html(doc).encode("utf-8"), force=force)
    print_summary(doc, target)


def print_summary(doc: ReviewDoc, path: Path | None) -> None:
    """The review in a few lines (on stderr when the page itself went to standard output)."""
    from rich.text import Text

    from casper.cli.guard import stderr_console
    from casper.cli.render import console
    from casper.cli.review_html import comparison_said, days_said, total
    from casper.cli.stats_view import duration

    c = console() if path is not None else stderr_console()
    this, before, compared = doc["this"], doc["before"], doc["compared"]
    c.print(Text(f"{doc['year']} in messages", style="bold"))
    line = f"  {total(this):,} messages ({this['sent']:,} sent, {this['received']:,} received)"
    if compared is not None and before is not None:
        first, last = compared["days"]
        if total(compared["this"]) != total(this):  # the year's own count on those dates too
            line += f" · {first} → {last}: {total(compared['this']):,}"
        line += f" · {before['year']}: {total(before):,}"
    c.print(Text(line))
    if compared is None or not compared["whole_year"]:
        c.print(Text(f"  {comparison_said(doc)}", style="dim"))
    c.print(Text(f"  {this['active_days']} active days · {this['people']} people · longest "
                 f"streak {this['longest_streak']} days"))  # fmt: skip
    day = doc["busiest_day"]
    if day["days"]:
        said = "busiest days" if len(day["days"]) > 1 else "busiest day"
        c.print(Text(f"  {said} {days_said(day['days'], day['messages'])}"))
    r = this["median_reply_s"]
    line = f"  median reply: me {duration(r['me'])} · them {duration(r['them'])}"
    if before is not None:
        rb = before["median_reply_s"]
        line = (f"  median reply: me {duration(r['me'])} (was {duration(rb['me'])}) · "
                f"them {duration(r['them'])} (was {duration(rb['them'])})")  # fmt: skip
    c.print(Text(line))
    if this["top_emoji"]:
        c.print(Text("  top emoji: " + " ".join(f"{e}×{n}" for e, n in this["top_emoji"])))
    if doc["top_people"]:
        c.print(Text("  top people (one-to-one both ways, and theirs in groups):"))
        for i, p in enumerate(doc["top_people"], 1):
            split = f"{p['one_to_one']:,} one-to-one, {p['in_groups']:,} in groups"
            if before is not None:
                rank = p["rank_before"]
                split += "; new" if rank is None else f"; #{rank} in {before['year']}"
            c.print(Text(f"    {i}. {p['name']} {p['messages']:,} ({split})"))
    if doc["new_people"]:
        c.print(Text("  new this year: " + ", ".join(doc["new_people"])))
    c.print(Text(f"wrote {path if path is not None else 'the page to standard output'}",
                 style="dim"))  # fmt: skip
