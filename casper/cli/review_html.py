"""`casper review` as one HTML file that needs nothing else: the styles inline, the charts
inline SVG drawn here, no script, font, stylesheet, image or link to fetch — it opens from
disk offline and shows the same on every machine. Every text from the history is escaped.

Imports: stdlib; the document types for checking only.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from casper.app.documents import Moment, ReviewDoc, YearFigures

SENT = "#1f6fb2"
RECEIVED = "#c2418f"
HEAT = ("#f1f1ee", "#cfe3c4", "#9ccb8a", "#5fa24a", "#2f6f22")
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

STYLE = """
body { background: #e9e9e6; color: #202124; font-family: -apple-system, system-ui, sans-serif;
       margin: 0; padding: 24px; }
main { max-width: 920px; margin: 0 auto; }
h1 { font-size: 30px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; }
.sub { color: #5f6368; margin-bottom: 18px; }
.cards { display: grid; grid-template-columns: repeat(4, 1fr); gap: 12px; }
.card { background: #fbfbf9; border-radius: 10px; padding: 12px 14px; }
.card b { display: block; font-size: 24px; } .card span { color: #5f6368; font-size: 13px; }
.up { color: #2f6f22; } .down { color: #a33; }
table { border-collapse: collapse; width: 100%; background: #fbfbf9; border-radius: 10px; }
td, th { text-align: left; padding: 6px 10px; border-bottom: 1px solid #e3e3df; }
blockquote { background: #fbfbf9; border-left: 4px solid #1f6fb2; margin: 6px 0;
             padding: 8px 12px; border-radius: 6px; white-space: pre-wrap; }
svg { background: #fbfbf9; border-radius: 10px; }
"""


def change(now: float | None, before: float | None, *, lower_is_better: bool = False) -> str:
    """ "+12%" against the year before, as a span coloured up or down ("" when not comparable)."""
    if now is None or not before:
        return ""
    pct = round(100 * (now - before) / before)
    good = (pct < 0) if lower_is_better else (pct > 0)
    return f' <span class="{"up" if good else "down"}">{pct:+d}%</span>' if pct else ""


def minutes(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds / 60:.0f} min"


def _card(value: str, label: str, delta: str = "") -> str:
    return f'<div class="card"><b>{value}{delta}</b><span>{escape(label)}</span></div>'


def comparison_said(doc: ReviewDoc) -> str:
    """What the year is compared with, in one line: the year before, the same dates of it
    (and why: where the history starts or ends), or nothing."""
    year, history, compared = doc["year"], doc["history"], doc["compared"]
    if compared is None:
        if history["first"] >= f"{year}-01-01":
            return f"not compared with {year - 1}: the history starts {history['first']}"
        return (f"not compared with {year - 1}: the history ({history['first']} → "
                f"{history['last']}) holds no date in both years")  # fmt: skip
    if compared["whole_year"]:
        return f"compared with {year - 1}"
    edges = []
    if history["first"] > f"{year - 1}-01-01":
        edges.append(f"starts {history['first']}")
    if history["last"] < f"{year}-12-31":
        edges.append(f"ends {history['last']}")
    first, last = compared["days"]
    return (f"compared with {year - 1} over the same dates, {first} → {last}: the history "
            f"{' and '.join(edges)}")  # fmt: skip


def total(figures: YearFigures) -> int:
    return figures["sent"] + figures["received"]


def cards(doc: ReviewDoc) -> str:
    """The year's figures; each change is against the same dates of the year before."""
    this, before, compared = doc["this"], doc["before"], doc["compared"]
    base = compared["this"] if compared else this  # the dates the year before is set against

    def vs(key: str, *, lower_is_better: bool = False) -> str:
        if before is None:
            return ""
        now, then = _figure(base, key), _figure(before, key)
        return change(now, then, lower_is_better=lower_is_better)

    def on_dates(key: str, label: str) -> str:
        """The label, and the figure a change is about when it is not the one shown (the
        year's own on the compared dates)."""

        def shown(figures: YearFigures) -> str:
            value = _figure(figures, key)
            return minutes(value) if key in ("me", "them") else f"{value or 0:,.0f}"

        if compared is None or before is None or shown(base) == shown(this):
            return label
        return f"{label} · {shown(base)} on {compared['days'][0]} → {compared['days'][1]}"

    me, them = this["median_reply_s"]["me"], this["median_reply_s"]["them"]
    if before is not None and compared is not None:
        first, last = compared["days"]
        dates = "" if compared["whole_year"] else f", {first} → {last}"
        last_card = _card(f"{total(before):,}", f"messages in {before['year']}{dates}")
    else:
        last_card = _card("–", f"{doc['year'] - 1}: not in the history")
    return '<div class="cards">' + "".join([
        _card(f"{total(this):,}", on_dates("messages", f"messages ({this['sent']:,} sent, "
              f"{this['received']:,} received)"), vs("messages")),
        _card(str(this["active_days"]), on_dates("active_days", "days with messages"),
              vs("active_days")),
        _card(str(this["people"]), on_dates("people", "people"), vs("people")),
        _card(str(this["longest_streak"]), "days: the longest streak"),
        _card(minutes(me), on_dates("me", "my median reply"), vs("me", lower_is_better=True)),
        _card(minutes(them), on_dates("them", "their median reply"),
              vs("them", lower_is_better=True)),
        _card(" ".join(str(e) for e, _n in this["top_emoji"][:3]) or "–", "top emoji"),
        last_card,
    ]) + "</div>"  # fmt: skip


def _figure(figures: YearFigures, key: str) -> float | None:
    if key == "messages":
        return total(figures)
    if key in ("me", "them"):
        return figures["median_reply_s"][key]
    return figures[key]  # type: ignore[literal-required]


def months_svg(over_time: list, width: int = 880, height: int = 220) -> str:
    """Messages per month, sent under received, with each month's total above its bar; a
    month the history does not reach (not in `over_time`) has no bar and no total."""
    rows = {p["period"][5:7]: p for p in over_time}
    peak = max((p["sent"] + p["received"] for p in over_time), default=0) or 1
    step, chart = width / 12, height - 40
    parts = [f'<svg viewBox="0 0 {width} {height}" width="100%" role="img" '
             'aria-label="messages by month">']  # fmt: skip
    for i, name in enumerate(MONTHS):
        x = i * step + step * 0.15
        w = step * 0.7
        p = rows.get(f"{i + 1:02d}")
        if p is None:  # before the history starts or after it ends: nothing known, no zero
            parts.append(f'<text x="{x + w / 2:.1f}" y="{height - 6}" font-size="12" '
                         f'text-anchor="middle" fill="#a0a0a0">{name}</text>')  # fmt: skip
            continue
        hs, hr = chart * p["sent"] / peak, chart * p["received"] / peak
        base = height - 22
        parts.append(f'<rect x="{x:.1f}" y="{base - hs:.1f}" width="{w:.1f}" height="{hs:.1f}" '
                     f'fill="{SENT}"/>')  # fmt: skip
        parts.append(f'<rect x="{x:.1f}" y="{base - hs - hr:.1f}" width="{w:.1f}" '
                     f'height="{hr:.1f}" fill="{RECEIVED}"/>')  # fmt: skip
        count = p["sent"] + p["received"]
        parts.append(f'<text x="{x + w / 2:.1f}" y="{base - hs - hr - 4:.1f}" font-size="11" '
                     f'text-anchor="middle">{count}</text>')  # fmt: skip
        parts.append(f'<text x="{x + w / 2:.1f}" y="{height - 6}" font-size="12" '
                     f'text-anchor="middle">{name}</text>')  # fmt: skip
    parts.append("</svg>")
    return "".join(parts)


def heatmap_svg(grid: list[list[int]], width: int = 880) -> str:
    """Hour of day × weekday: one square per hour, darker for more messages."""
    peak = max((n for row in grid for n in row), default=0)
    cell, left, top = (width - 50) / 24, 44, 18
    height = int(top + 7 * cell + 6)
    parts = [f'<svg viewBox="0 0 {width} {height}" width="100%" role="img" '
             'aria-label="messages by hour and weekday">']  # fmt: skip
    for h in range(0, 24, 3):
        parts.append(f'<text x="{left + h * cell:.1f}" y="12" font-size="11">{h:02d}</text>')
    for d, (name, row) in enumerate(zip(WEEKDAYS, grid, strict=True)):
        y = top + d * cell
        parts.append(f'<text x="4" y="{y + cell * 0.65:.1f}" font-size="12">{name}</text>')
        for h, n in enumerate(row):
            level = 0 if n == 0 or peak == 0 else min(4, 1 + (4 * n - 1) // peak)
            parts.append(f'<rect x="{left + h * cell:.1f}" y="{y:.1f}" width="{cell - 2:.1f}" '
                         f'height="{cell - 2:.1f}" rx="3" fill="{HEAT[level]}">'
                         f"<title>{WEEKDAYS[d]} {h:02d}h: {n}</title></rect>")  # fmt: skip
    parts.append("</svg>")
    return "".join(parts)


def _moment(title: str, m: Moment | None) -> str:
    if m is None:
        return ""
    when = escape((m["time"] or "")[:16].replace("T", " "))
    head = f"<p>{escape(title)}: {when}, {escape(m['sender'])} in {escape(m['chat'])}</p>"
    body = f"<blockquote>{escape(m['text'])}</blockquote>" if m["text"] else ""
    return head + body


def days_said(days: list[str], messages: int) -> str:
    """ "2023-04-16 (20 messages)", or every day of a tie: "2023-04-16 and 2023-11-06 (20
    messages each)"."""
    if len(days) < 2:
        return f"{days[0] if days else '–'} ({messages} messages)"
    return f"{', '.join(days[:-1])} and {days[-1]} ({messages} messages each)"


def edges_of_year(doc: ReviewDoc) -> tuple[str, str]:
    """The titles of the year's first and last message: the history's own first or last when
    it starts or ends inside the year (the year's would claim what is not known)."""
    year, history = doc["year"], doc["history"]
    first = "First message of the year"
    if history["first"] >= f"{year}-01-01":
        first = f"First message of the history (it starts {history['first']})"
    last = "Last message of the year"
    if history["last"] <= f"{year}-12-31":
        last = f"Last message of the history (the history ends {history['last']})"
    return first, last


def _people(doc: ReviewDoc) -> str:
    before = doc["before"]
    rows = []
    for i, p in enumerate(doc["top_people"]):
        cells = [str(i + 1), escape(p["name"]), f"{p['messages']:,}", f"{p['one_to_one']:,}",
                 f"{p['in_groups']:,}"]  # fmt: skip
        if before is not None:
            cells.append("new in the top" if p["rank_before"] is None else f"#{p['rank_before']}")
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = ["", "who", "messages", "one-to-one (both ways)", "theirs in groups"]
    if before is not None:
        head.append(f"in {before['year']}")
    return ("<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"
            + "".join(rows) + "</table>")  # fmt: skip


def review_html(doc: ReviewDoc) -> str:
    series = doc["stats"]["series"]
    day = doc["busiest_day"]
    streak = series["streaks"]["longest"]
    if doc["new_people"] is None:
        new = f"Who is new: not known, the history starts {escape(doc['history']['first'])}"
    else:
        new = "New this year: " + (", ".join(escape(n) for n in doc["new_people"]) or "nobody")
    shared = " · shared copy: no message text, people as initials" if doc["shared"] else ""
    first_title, last_title = edges_of_year(doc)
    busiest = "Busiest days" if len(day["days"]) > 1 else "Busiest day"
    body = [
        f"<h1>{doc['year']} in messages</h1>",
        f'<div class="sub">{escape(comparison_said(doc))} · times in {escape(doc["zone"])}'
        f"{shared}</div>",
        cards(doc),
        "<h2>Month by month</h2>",
        f'<p><span style="color:{SENT}">■ sent</span> &nbsp; '
        f'<span style="color:{RECEIVED}">■ received</span> &nbsp; every chat</p>',
        months_svg(series["over_time"]),
        "<h2>When</h2>",
        heatmap_svg(series["heatmap"]),
        "<h2>Top people</h2>",
        _people(doc),
        "<h2>Moments</h2>",
        f"<p>{busiest}: {escape(days_said(day['days'], day['messages']))}. "
        f"Longest streak: {streak['days']} days"
        + (f" ({streak['first']} → {streak['last']})" if streak["first"] else "")
        + "</p>",
        f"<p>{new}</p>",
        _moment(first_title, doc["first_message"]),
        _moment(last_title, doc["last_message"]),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{doc['year']} in messages</title><style>{STYLE}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )
