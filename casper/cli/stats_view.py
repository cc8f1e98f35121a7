"""`casper stats` in the terminal: the figures, then pictures drawn with block characters —
messages over time (sent under received, a person's group messages apart, the legend saying
what each counts), the hour × weekday heatmap, streaks, reply times and their trend, who
starts conversations, quiet gaps. Reads only the `stats --json` document,
so what it draws is what `--json` carries.

Imports: stdlib, casper.cli.render, rich (lazily); the document types and rich's Text for checking
only.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING, NamedTuple

from casper.cli.render import console

if TYPE_CHECKING:
    from rich.text import Text

    from casper.app.documents import Days, StatsDoc
    from casper.app.stats_series import PeriodCount

SENT_STYLE = "cyan"
RECEIVED_STYLE = "magenta"
GROUPS_STYLE = "#f0b8dc"  # a person's messages outside our 1:1 chats: received, set apart
PART_STYLES = (SENT_STYLE, RECEIVED_STYLE, GROUPS_STYLE)
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


def column_cells(
    parts: Sequence[int], peak: int, rows: int = CHART_ROWS
) -> list[tuple[int, int] | None]:
    """One column of the time chart, bottom row first: the parts stacked in order (sent
    first), each cell (the part that fills most of it, the lower on a tie; eighths filled),
    None where empty."""
    if peak <= 0:
        return [None] * rows
    tops, running = [], 0
    for n in parts:
        running += n
        tops.append(round(8 * rows * running / peak))
    total = tops[-1] if tops else 0
    cells: list[tuple[int, int] | None] = []
    for row in range(rows):
        low, high = row * 8, min(row * 8 + 8, total)
        if high <= low:
            cells.append(None)
            continue
        bottoms = [0, *tops[:-1]]
        filled = [
            max(0, min(top, high) - max(bottom, low))
            for bottom, top in zip(bottoms, tops, strict=True)
        ]
        cells.append((filled.index(max(filled)), high - low))
    return cells


class Part(NamedTuple):
    label: str  # what it counts, as the legend says it
    values: list[int]  # one a period


def over_time_parts(data: StatsDoc) -> list[Part]:
    """What the bars over time stack, bottom first, each with what it counts. A person's
    `sent` is our 1:1 chats and their `received` every chat: drawn as sent one-to-one,
    received one-to-one and theirs in groups, so two different things never stand as a pair."""
    rows = data["series"]["over_time"]
    sent = [r["sent"] for r in rows]
    if "person" in data and all("in_groups" in r for r in rows):
        groups = [r.get("in_groups", 0) for r in rows]
        direct = [r["received"] - g for r, g in zip(rows, groups, strict=True)]
        return [Part("sent one-to-one", sent), Part("received one-to-one", direct),
                Part("theirs in groups", groups)]  # fmt: skip
    return [Part("sent", sent), Part("received", [r["received"] for r in rows])]


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
    out += _time_chart(data, columns, text)
    out += _heatmap(series["heatmap"], text)
    out += _rhythm(data, text)
    return out


def _time_chart(data: StatsDoc, columns: int, text: type[Text]) -> list[Text]:
    rows, period = data["series"]["over_time"], data["series"]["period"]
    if not rows:
        return [text("  no messages in this range", style="dim")]
    shown = fit_periods(rows, columns - 10)
    parts = [part.values[len(rows) - len(shown) :] for part in over_time_parts(data)]
    peak = max(r["sent"] + r["received"] for r in shown)
    title = text(f"\n  messages by {period}", style="bold")
    legend = text("")
    for part, style in zip(over_time_parts(data), PART_STYLES, strict=False):
        legend.append("  ")
        legend.append(f"█ {part.label}", style=style)
    if len(shown) < len(rows):
        legend.append(f"  (the last {len(shown)} of {len(rows)})", style="dim")
    if len(title.plain) + len(legend.plain) <= columns:
        title.append_text(legend)
        out = [title]
    else:  # a line of its own rather than a legend cut in two
        out = [title, legend]
    cols = [column_cells([p[i] for p in parts], peak) for i in range(len(shown))]
    for row in reversed(range(CHART_ROWS)):
        label = f"{peak:>6} " if row == CHART_ROWS - 1 else " " * 7
        line = text(label, style="dim")
        for cells in cols:
            cell = cells[row]
            if cell is None:
                line.append(" ")
            else:
                line.append(BLOCKS[cell[1]], style=PART_STYLES[cell[0]])
        out.append(line)
    if period == "month":  # the year where one starts
        marks = [[r["period"][:4] for r in shown]]
    else:  # the month where one starts, and under it the year
        mondays = [_monday(r["period"]) for r in shown]
        marks = [[m.strftime("%b") for m in mondays], [str(m.year) for m in mondays]]
    for labels in marks:
        out.append(text(" " * 7 + _axis(labels), style="dim"))
    return out


def _axis(labels: Sequence[str]) -> str:
    """One axis line: each label where it changes, if it fits before the next one."""
    axis = [" "] * len(labels)
    last = ""
    for i, mark in enumerate(labels):
        free = all(a == " " for a in axis[max(0, i - 1) : i + len(mark)])
        if mark != last and i + len(mark) <= len(axis) and free:
            axis[i : i + len(mark)] = list(mark)
        last = mark
    return "".join(axis).rstrip()


def _monday(week: str) -> date:
    """ "2024-W03" → the Monday it starts on."""
    return date.fromisocalendar(int(week[:4]), int(week[6:]), 1)


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
