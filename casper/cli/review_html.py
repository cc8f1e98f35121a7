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


def cards(this: YearFigures, before: YearFigures) -> str:
    total, total_before = this["sent"] + this["received"], before["sent"] + before["received"]
    me, me_before = this["median_reply_s"]["me"], before["median_reply_s"]["me"]
    them, them_before = this["median_reply_s"]["them"], before["median_reply_s"]["them"]
    return '<div class="cards">' + "".join([
        _card(f"{total:,}", f"messages ({this['sent']:,} sent, {this['received']:,} received)",
              change(total, total_before)),
        _card(str(this["active_days"]), "days with messages",
              change(this["active_days"], before["active_days"])),
        _card(str(this["people"]), "people", change(this["people"], before["people"])),
        _card(str(this["longest_streak"]), "days: the longest streak"),
        _card(minutes(me), "my median reply", change(me, me_before, lower_is_better=True)),
        _card(minutes(them), "their median reply", change(them, them_before, lower_is_better=True)),
        _card(" ".join(str(e) for e, _n in this["top_emoji"][:3]) or "–", "top emoji"),
        _card(f"{total_before:,}", f"messages in {before['year']}"),
    ]) + "</div>"  # fmt: skip


def months_svg(over_time: list, width: int = 880, height: int = 220) -> str:
    """Messages per month, sent under received, with each month's total above its bar."""
    rows = {p["period"][5:7]: p for p in over_time}
    peak = max((p["sent"] + p["received"] for p in over_time), default=0) or 1
    step, chart = width / 12, height - 40
    parts = [f'<svg viewBox="0 0 {width} {height}" width="100%" role="img" '
             'aria-label="messages by month">']  # fmt: skip
    for i, name in enumerate(MONTHS):
        p = rows.get(f"{i + 1:02d}", {"sent": 0, "received": 0})
        x = i * step + step * 0.15
        w = step * 0.7
        hs, hr = chart * p["sent"] / peak, chart * p["received"] / peak
        base = height - 22
        parts.append(f'<rect x="{x:.1f}" y="{base - hs:.1f}" width="{w:.1f}" height="{hs:.1f}" '
                     f'fill="{SENT}"/>')  # fmt: skip
        parts.append(f'<rect x="{x:.1f}" y="{base - hs - hr:.1f}" width="{w:.1f}" '
                     f'height="{hr:.1f}" fill="{RECEIVED}"/>')  # fmt: skip
        total = p["sent"] + p["received"]
        parts.append(f'<text x="{x + w / 2:.1f}" y="{base - hs - hr - 4:.1f}" font-size="11" '
                     f'text-anchor="middle">{total}</text>')  # fmt: skip
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
    when = escape((m["ts"] or "")[:16].replace("T", " "))
    head = f"<p>{escape(title)}: {when}, {escape(m['sender'])} in {escape(m['chat'])}</p>"
    body = f"<blockquote>{escape(m['text'])}</blockquote>" if m["text"] else ""
    return head + body


def review_html(doc: ReviewDoc) -> str:
    this, before = doc["this"], doc["before"]
    series = doc["stats"]["series"]
    people = "".join(
        f"<tr><td>{i + 1}</td><td>{escape(p['name'])}</td><td>{p['messages']:,}</td>"
        f"<td>{'new in the top' if p['rank_before'] is None else '#' + str(p['rank_before'])}"
        "</td></tr>"
        for i, p in enumerate(doc["top_people"])
    )
    day = doc["busiest_day"]
    streak = series["streaks"]["longest"]
    new = ", ".join(escape(n) for n in doc["new_people"]) or "nobody new"
    shared = " · shared copy: no message text, people as initials" if doc["shared"] else ""
    body = [
        f"<h1>{doc['year']} in messages</h1>",
        f'<div class="sub">compared with {before["year"]} · times in {escape(doc["zone"])}'
        f"{shared}</div>",
        cards(this, before),
        "<h2>Month by month</h2>",
        f'<p><span style="color:{SENT}">■ sent</span> &nbsp; '
        f'<span style="color:{RECEIVED}">■ received</span></p>',
        months_svg(series["over_time"]),
        "<h2>When</h2>",
        heatmap_svg(series["heatmap"]),
        "<h2>Top people</h2>",
        "<table><tr><th></th><th>who</th><th>messages</th>"
        f"<th>in {before['year']}</th></tr>{people}</table>",
        "<h2>Moments</h2>",
        f"<p>Busiest day: {escape(str(day['day'] or '–'))} ({day['messages']} messages). "
        f"Longest streak: {streak['days']} days"
        + (f" ({streak['first']} → {streak['last']})" if streak["first"] else "")
        + "</p>",
        f"<p>New this year: {new}</p>",
        _moment("First message of the year", doc["first_message"]),
        _moment("Last message of the year", doc["last_message"]),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{doc['year']} in messages</title><style>{STYLE}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )
