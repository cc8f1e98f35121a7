"""`casper stats` in the terminal: the figures, then pictures drawn with block characters —
messages over time (sent under received), the hour × weekday heatmap, streaks, reply times
and their trend, who starts conversations, quiet gaps. Reads only the `stats --json` document,
so what it draws is what `--json` carries.

Imports: stdlib, casper.cli.render, rich (lazily); the document types and rich's Text for checking
only.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING

from casper.cli.render import console

if TYPE_CHECKING:
    from rich.text import Text

    from casper.app.documents import Days, StatsDoc
    from casper.app.stats_series import PeriodCount

SENT_STYLE = "cyan"
RECEIVED_STYLE = "magenta"
HEAT = (" ", "░", "▒", "▓", "█")  # readable without colour too
HEAT_STYLES = ("", "#4f7f46", "#5fa24a", "#7fcf5a", "bold #b5f58a")  # shade and glyph agree
BLOCKS = " ▁▂▃▄▅▆▇█"
CHART_ROWS = 6
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def range_label(days: Days) -> str:
    """The days a --since/--until range resolved to, so "last March" can be checked."""
    if days["since"] is None and days["until"] is None:
        return "all time"
    return f"{days['since'] or 'start'} → {days['until'] or 'today'}"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def days(n: int) -> str:
    return f"{n} day" if n == 1 else f"{n} days"


def heat_level(n: int, peak: int) -> int:
    """0 for none, else 1–4 by the share of the busiest cell (a quarter each)."""
    if n <= 0 or peak <= 0:
        return 0
    return min(4, 1 + (4 * n - 1) // peak)


def fit_periods(rows: Sequence[PeriodCount], width: int) -> list[PeriodCount]:
    """The periods that fit `width` columns: all of them, else the latest."""
    return list(rows[-width:]) if width > 0 else []


def column_cells(sent: int, received: int, peak: int, rows: int = CHART_ROWS) -> list[str]:
    """One column of the time chart, bottom row first: 's' sent, 'r' received, ' ' empty,
    a block character's eighths after the letter for the top cell (e.g. 'r3')."""
    if peak <= 0:
        return [" "] * rows
    total = round(8 * rows * (sent + received) / peak)
    mine = round(8 * rows * sent / peak)
    cells = []
    for row in range(rows):
        low = row * 8
        side = "s" if mine >= low + 4 or (mine > low and mine >= total) else "r"
        if total >= low + 8:
            cells.append(side + "8")
        elif total > low:
            cells.append(side + str(total - low))
        else:
            cells.append(" ")
    return cells


def print_stats(data: StatsDoc, width: int | None = None) -> None:
    from rich.text import Text

    c = console() if width is None else console(width=width)
    for part in stats_view(data, c.width, Text):
        c.print(part)


def stats_view(data: StatsDoc, columns: int, text: type[Text]) -> list[Text]:
    """The whole view as a list of rich Texts (`text` is rich.text.Text)."""
    out: list[Text] = []
    scope = data["scope"]
    head = text(scope["name"], style="bold")
    if "person" in data:
        head.append(f"  {data['person']['id']} · {', '.join(data['person']['handles'])}",
                    style="dim")  # fmt: skip
    elif scope["kind"] == "chat":
        others = scope["members"]
        head.append(f"  chat {scope['id']} · me and {others} other{'s' if others != 1 else ''}",
                    style="dim")  # fmt: skip
    else:
        head.append("  everyone, every chat", style="dim")
    out.append(head)
    out.append(text(f"  range: {range_label(data['range'])} · zone {data['zone']}"))
    if "person" in data:  # a person's `sent` is one-to-one, `received` every chat
        out.append(text(f"  sent {data['sent']} (one-to-one) · received {data['received']} "
                        f"(all chats) · active days {data['active_days']}"))  # fmt: skip
    else:
        out.append(text(f"  sent {data['sent']} · received {data['received']} · "
                        f"active days {data['active_days']}"))  # fmt: skip
    split = data.get("chats")
    if split and (split["sent_in_groups"] or split["received_in_groups"]):
        one = f"sent {split['sent_one_to_one']} · received {split['received_one_to_one']}"
        groups = f"sent {split['sent_in_groups']} · received {split['received_in_groups']}"
        out.append(text(f"  one-to-one: {one}; in shared groups: {groups}"))
    out.append(text(f"  first {(data['first'] or '-')[:10]} · last {(data['last'] or '-')[:10]}"))
    if data["top_emoji"]:
        out.append(text("  top emoji: " + " ".join(f"{e}×{n}" for e, n in data["top_emoji"])))
    series = data["series"]
    out += _time_chart(series["over_time"], series["period"], columns, text)
    out += _heatmap(series["heatmap"], text)
    out += _rhythm(data, text)
    return out


def _time_chart(
    rows: Sequence[PeriodCount], period: str, columns: int, text: type[Text]
) -> list[Text]:
    if not rows:
        return [text("  no messages in this range", style="dim")]
    shown = fit_periods(rows, columns - 10)
    peak = max(r["sent"] + r["received"] for r in shown)
    title = text(f"\n  messages by {period}", style="bold")
    title.append("  ")
    title.append("█ sent", style=SENT_STYLE)
    title.append("  ")
    title.append("█ received", style=RECEIVED_STYLE)
    if len(shown) < len(rows):
        title.append(f"  (the last {len(shown)} of {len(rows)})", style="dim")
    out = [title]
    cols = [column_cells(r["sent"], r["received"], peak) for r in shown]
    for row in reversed(range(CHART_ROWS)):
        label = f"{peak:>6} " if row == CHART_ROWS - 1 else " " * 7
        line = text(label, style="dim")
        for cells in cols:
            cell = cells[row]
            if cell == " ":
                line.append(" ")
            else:
                line.append(
                    BLOCKS[int(cell[1])], style=SENT_STYLE if cell[0] == "s" else RECEIVED_STYLE
                )
        out.append(line)
    axis = [" "] * len(shown)  # the year (months) or the month (weeks) where one starts
    last = ""
    for i, r in enumerate(shown):
        mark = r["period"][:4] if period == "month" else _week_month(r["period"])
        free = all(a == " " for a in axis[max(0, i - 1) : i + len(mark)])
        if mark != last and i + len(mark) <= len(axis) and free:
            axis[i : i + len(mark)] = list(mark)
        last = mark
    out.append(text(" " * 7 + "".join(axis).rstrip(), style="dim"))
    return out


def _week_month(week: str) -> str:
    """ "2024-W03" → "Jan": the month its Monday falls in."""
    monday = date.fromisocalendar(int(week[:4]), int(week[6:]), 1)
    return monday.strftime("%b")


def _heatmap(grid: Sequence[Sequence[int]], text: type[Text]) -> list[Text]:
    peak = max((n for row in grid for n in row), default=0)
    if peak == 0:
        return []
    out = [text("\n  when: hour of day × weekday (local)", style="bold")]
    out.append(text("       " + "".join(f"{h:<6}" for h in range(0, 24, 3)), style="dim"))
    for name, row in zip(WEEKDAYS, grid, strict=True):
        line = text(f"  {name}  ", style="dim")
        for n in row:
            level = heat_level(n, peak)
            line.append(HEAT[level] * 2, style=HEAT_STYLES[level])
        line.append(f"  {sum(row)}", style="dim")
        out.append(line)
    out.append(text(f"       ░ fewest … █ most ({peak} in the busiest hour)", style="dim"))
    return out


def _sparkline(values: Sequence[float | None]) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return ""
    # one slow month must not flatten the rest: the scale tops out at 3× the median
    ordered = sorted(known)
    peak = min(ordered[-1], 3 * ordered[len(ordered) // 2]) or 1
    return "".join(
        " " if v is None else BLOCKS[max(1, min(8, round(8 * v / peak)))] for v in values
    )


def _rhythm(data: StatsDoc, text: type[Text]) -> list[Text]:
    series, names = data["series"], data["names"]
    out = [text("")]
    s = series["streaks"]
    longest, current = s["longest"], s["current"]
    line = f"  streaks: longest {days(longest['days'])}"
    if longest["first"]:
        line += f" ({longest['first']} → {longest['last']})"
    line += f" · current {days(current['days'])}"
    out.append(text(line))
    r = series["replies"]
    out.append(text(f"  median reply: me {duration(r['median_s']['me'])} · "
                    f"them {duration(r['median_s']['them'])}"))  # fmt: skip
    recent = r["by_month"][-24:]
    if len(recent) > 1:
        out.append(text(f"    by month, {recent[0]['period']} → {recent[-1]['period']} "
                        "(taller is slower):", style="dim"))  # fmt: skip
        for side in ("me", "them"):
            values = [p["me"] if side == "me" else p["them"] for p in recent]
            out.append(text(f"    {side:<5}{_sparkline(values)}", style="dim"))
    st = series["starters"]
    line = f"  conversations started: me {st['me']} · them {st['them']}"
    if data["scope"]["kind"] != "person" and st["by_sender"]:
        line += " · most: " + ", ".join(
            f"{names.get(str(who), str(who))} {n}" for who, n in st["by_sender"][:5]
        )
    out.append(text(line))
    g = series["gaps"]
    line = (f"  quiet gaps (≥ {g['min_days']} days): {g['count']} · ended by me "
            f"{g['reconnected']['me']}, them {g['reconnected']['them']}")  # fmt: skip
    out.append(text(line))
    for gap in g["longest"][:3]:
        who = names.get(gap["back"], gap["back"])
        out.append(text(f"    {gap['days']} days, {gap['first']} → {gap['last']}, "
                        f"{who} wrote first", style="dim"))  # fmt: skip
    return out
