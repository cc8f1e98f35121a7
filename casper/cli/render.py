"""What a person reads in a terminal: search hits, citations, people, chats, stats.

Everything here builds rich renderables from user data as `Text` objects, never as markup, so
a message saying "[bold]" prints as typed, and with `highlight=False` consoles so digits in
timestamps stay uncoloured. Long messages wrap under their own column (a hanging indent).

Imports: stdlib, rich (lazily), casper.protocols, casper.dates.zones.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, tzinfo
from functools import cache
from types import SimpleNamespace as NS
from typing import TYPE_CHECKING, Any

from casper.dates.zones import iso

if TYPE_CHECKING:  # numpy behind it: the thin client renders without it
    from rich.console import Console, Group, RenderableType
    from rich.segment import Segment
    from rich.table import Table
    from rich.text import Text

    from casper.agent.answer_json import Citation
    from casper.app.documents import AskDoc, ChatJson, ContactJson, HitJson, MessageJson
    from casper.protocols import Hit

TERM_STYLE = "bold red"  # ripgrep's match colour
BAR_CELLS = 5
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# words that match nearly everything in a chat history; highlighting them is noise
_STOP = (
    "a an and are at be did do does for from had has have how i in is it me my of on or our "
    "she he her him his they them their the to was we were what when where which who why "
    "will with you your about didn't than that this there"
)
STOPWORDS = frozenset(_STOP.split())


def console(*, stderr: bool = False, **options: Any) -> Console:
    """The Console every command prints with: it never auto-highlights (numbers, dates), reads
    no markup unless a call asks for it (`markup=True`, every hole `escape`d: a test holds
    the code to that), and takes control characters and escape sequences out of everything it
    is given (casper.plaintext.plain) while its own colours and cursor moves pass: a message,
    a name or a file name cannot clear the screen, set the title or plant a link."""
    options = {"highlight": False, "markup": False, **options}
    return _plain_console()(stderr=stderr, **options)


@cache
def _plain_console() -> type[Console]:
    """The Console class whose output passes `plain` (rich imported on first use)."""
    from rich.console import Console
    from rich.segment import Segment

    from casper.plaintext import has_control, plain

    class PlainConsole(Console):
        def _render_buffer(self, buffer: Iterable[Segment]) -> str:
            # rich's own sequences are control segments and styles, added after this
            return super()._render_buffer(
                Segment(plain(s.text), s.style, s.control)
                if not s.control and has_control(s.text) else s
                for s in buffer
            )  # fmt: skip

    return PlainConsole


def query_terms(query: str) -> list[str]:
    """The words of a query worth highlighting: no stopwords, no single letters."""
    seen: list[str] = []
    for word in _WORD.findall(query.lower()):
        if (len(word) > 1 or not word.isascii()) and word not in STOPWORDS and word not in seen:
            seen.append(word)
    return seen


def highlighted(text: str, terms: Sequence[str], style: str = "") -> Text:
    """`text` as a rich Text with every occurrence of a term (at a word start) emphasised."""
    from rich.text import Text

    out = Text(text, style=style)
    if terms:
        pattern = r"(?<![^\W_])(?:" + "|".join(re.escape(t) for t in terms) + ")"
        out.highlight_regex(re.compile(pattern, re.IGNORECASE), TERM_STYLE)
    return out


def match_bar(found: int, searched: int) -> str:
    """A 5-cell bar: the share of the searched words a hit contains (all five cells: every
    word; none: it matched by meaning, a date or a person alone). Absolute, not the rank."""
    filled = round(BAR_CELLS * found / searched) if searched else 0
    if found and not filled:
        filled = 1  # one word of many is still a word
    return "▰" * filled + "▱" * (BAR_CELLS - filled)


def _day(ts: float, tz: tzinfo) -> str:
    return (iso(ts, tz) or "")[:10]


def _clock(ts: float, tz: tzinfo) -> str:
    return datetime.fromtimestamp(ts, tz).strftime("%H:%M")


def short_names(names: Sequence[str]) -> dict[str, str]:
    """First names where they are unambiguous among `names` ("Priya Natarajan" → "Priya"), so
    the message text keeps its room; phone numbers and clashing first names stay whole."""
    firsts: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        first = name.split(" ", 1)[0]
        firsts.setdefault(first.lower(), []).append(name)
    out = {}
    for name in dict.fromkeys(names):
        first = name.split(" ", 1)[0]
        unique = len(firsts[first.lower()]) == 1 and first[:1].isalpha()
        out[name] = first if unique else name
    return out


def hits_view(
    hits: Sequence[Hit], tz: tzinfo, query: str = "", words: Sequence[str] | None = None
) -> Group:
    """Numbered hits; each message once (a later hit only lists what is new in it). `words`:
    the searched words, whose share in each hit (`matched_words`) its bar shows; None or
    none (a vector search): no bar."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    terms = query_terms(query)
    shown: dict[int, int] = {}  # rowid -> hit number it was printed under
    senders = [m.sender for h in hits for m in h.messages] + [
        p for h in hits for p in h.participants
    ]
    short = short_names(senders)
    parts: list[RenderableType] = []
    for n, hit in enumerate(hits, 1):
        head = Text()
        head.append(f"{n}. ", style="bold")
        head.append(hit.chat, style="bold")
        head.append(f"  {_day(hit.start, tz)}", style="dim")
        if words:
            found = len(getattr(hit, "matched_words", ()))
            head.append("  " + match_bar(found, len(words)), style="green")
        parts.append(head)
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(width=2)  # indent under the number
        grid.add_column(no_wrap=True, style="dim")  # time (with date when another day)
        grid.add_column(no_wrap=True, style="cyan", max_width=16)  # sender
        grid.add_column(ratio=1, overflow="fold")  # text: wraps in its own column
        grid.add_column(no_wrap=True, style="dim", justify="right")  # rowid
        repeated = []
        for m in hit.messages:
            if m.rowid in shown:
                repeated.append(shown[m.rowid])
                continue
            shown[m.rowid] = n
            when = _clock(m.ts, tz)
            if _day(m.ts, tz) != _day(hit.start, tz):
                when = f"{_day(m.ts, tz)[5:]} {when}"
            grid.add_row(
                "", when, Text(short.get(m.sender, m.sender), overflow="ellipsis"),
                highlighted(m.text, terms),
                f"#{m.rowid}",
            )  # fmt: skip
        if grid.row_count:
            parts.append(grid)
        if repeated:
            where = ", ".join(str(x) for x in sorted(set(repeated)))
            plural = "s" if len(repeated) > 1 else ""
            parts.append(
                Text(f"   + {len(repeated)} message{plural} shown under {where}", style="dim")
            )
    return Group(*parts)


def citations_view(
    citations: Sequence[Citation], terms: Sequence[str] = (), width: int = 80
) -> Group | Table:
    """The `Sources` block under an answer: `#rowid  date time  sender  text`, the text wrapped
    in its own column; below 72 columns the text goes, indented, under its header line."""
    from rich.console import Group
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    rows = []
    for c in citations:
        when = (c.get("time") or "")[:16].replace("T", " ")
        text = c.get("text") or ""
        if len(text) > 240:
            text = text[:239] + "…"
        rows.append((f"#{c['id']}", when, c.get("sender") or "", highlighted(text, terms)))
    if width < 72:
        parts: list[RenderableType] = []
        for rowid, when, sender, body in rows:
            head = Text(f"  {rowid} {when} ", style="dim")
            head.append(sender, style="cyan")
            parts += [head, Padding(body, (0, 0, 0, 4))]
        return Group(*parts)
    grid = Table.grid(padding=(0, 1), expand=True)
    grid.add_column(width=1)
    grid.add_column(no_wrap=True, style="dim", justify="right")
    grid.add_column(no_wrap=True, style="dim")
    grid.add_column(no_wrap=True, style="cyan", max_width=16)
    grid.add_column(ratio=1, overflow="fold")
    for rowid, when, sender, body in rows:
        grid.add_row("", rowid, when, Text(sender, overflow="ellipsis"), body)
    return grid


def contacts_table(rows: Sequence[ContactJson], width: int = 80) -> Table:
    """People: the id column never shrinks (hints ask people to pass it); one handle a line;
    below 72 columns the `last` date gives its room to names and handles."""
    from rich.table import Table
    from rich.text import Text

    wide = width >= 72
    table = Table(box=None, header_style="bold", pad_edge=False)
    id_width = max((len(r["id"]) for r in rows), default=2)
    table.add_column("id", no_wrap=True, min_width=id_width)
    table.add_column("name", ratio=1, overflow="fold")
    table.add_column("handles", ratio=1, overflow="fold")
    table.add_column("sent", justify="right", no_wrap=True)
    table.add_column("recv", justify="right", no_wrap=True)
    if wide:
        table.add_column("last", no_wrap=True)
    for r in rows:
        sent = str(r["sent"])
        if not r["sent"] and r.get("sent_in_groups"):  # why 0: said below the table
            sent = "0*"
        cells: list[str | Text] = [r["id"], Text(r["name"]), Text("\n".join(r["handles"])),
                                   sent, str(r["received"])]  # fmt: skip
        table.add_row(*cells, *([(r["last"] or "")[:10]] if wide else []))
    return table


def contacts_notes(rows: Sequence[ContactJson]) -> list[str]:
    """Under the contacts table: why someone you write to shows `sent 0*` (`sent` counts
    one-to-one chats; you write to them only in groups)."""
    return [
        f"* {r['name']}: sent 0 one-to-one; {r['sent_in_groups']:,} in groups"
        for r in rows
        if not r["sent"] and r.get("sent_in_groups")
    ]


def people_stats_table(rows: Sequence[Mapping[str, Any]], width: int = 80) -> Table:
    """The demo's people with their stats: as `contacts_table`, the id column never shrinks
    (every other command takes it); below 72 columns the top emoji give their room."""
    from rich.table import Table
    from rich.text import Text

    wide = width >= 72
    table = Table(box=None, header_style="bold", pad_edge=False)
    id_width = max((len(r["id"]) for r in rows), default=2)
    table.add_column("id", no_wrap=True, min_width=id_width)
    table.add_column("name", ratio=1, overflow="fold")
    for head in ("sent", "recv", "active days", "reply (them)"):
        table.add_column(head, justify="right", no_wrap=head in ("sent", "recv"))
    if wide:
        table.add_column("top emoji", no_wrap=True)
    for r in rows:
        reply = r.get("median_reply_them_s")
        cells = [
            r["id"], Text(r["name"]), str(r["sent"]), str(r["received"]), str(r["active_days"]),
            "-" if reply is None else f"{reply / 60:.0f} min",
        ]  # fmt: skip
        table.add_row(*cells, *([" ".join(r.get("top_emoji", ())[:3])] if wide else []))
    return table


def chats_table(rows: Sequence[ChatJson]) -> Table:
    """Chats for `casper chats`: the id column never shrinks (`--chat ID` takes it)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, header_style="bold", pad_edge=False)
    width = max((len(str(r["id"])) for r in rows), default=2)
    table.add_column("id", no_wrap=True, min_width=width, justify="right")
    table.add_column("name", ratio=1, overflow="fold")
    table.add_column("kind", no_wrap=True)
    table.add_column("messages", justify="right", no_wrap=True)
    table.add_column("last", no_wrap=True)
    for r in rows:
        table.add_row(
            str(r["id"]), Text(r["name"]), "group" if r["is_group"] else "1:1",
            str(r["messages"]), (r["last"] or "")[:10],
        )  # fmt: skip
    return table


def conversation_view(
    messages: Sequence[NS], names: Mapping[str, str], tz: tzinfo, target: int | None = None
) -> Table:
    """`casper show`: one message a row, wrapped under its own column; the target is marked
    `▶` in a gutter (seen in a pipe or a file too) and reversed on a terminal."""
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 1), expand=True)
    grid.add_column(no_wrap=True, width=1)  # the gutter: ▶ on the message asked for
    grid.add_column(no_wrap=True, style="dim")
    grid.add_column(no_wrap=True, style="cyan", max_width=16)
    grid.add_column(ratio=1, overflow="fold")
    grid.add_column(no_wrap=True, style="dim", justify="right")
    short = short_names([names.get(m.sender, m.sender) for m in messages])
    for m in messages:
        who = "me" if m.sender == "me" else short[names.get(m.sender, m.sender)]
        body = m.event if m.kind == "system" and m.event else m.text
        if m.reactions:
            body += "  " + " ".join(label for _, label in m.reactions)
        if m.edited:
            body += "  (edited)"
        asked = m.rowid == target
        when = (iso(m.ts, tz) or "")[:16].replace("T", " ")
        grid.add_row(
            Text("▶" if asked else " ", style="bold"), when, Text(who, overflow="ellipsis"),
            Text(body), f"#{m.rowid}", style="reverse" if asked else "",
        )  # fmt: skip
    return grid


def month_bars(by_month: Mapping[str, int], columns: int = 80, indent: int = 4) -> list[str]:
    """`2024-03  ████████▌ 123` lines scaled to the busiest month, fitting `columns`."""
    if not by_month:
        return []
    peak = max(by_month.values()) or 1
    width = max(5, min(40, columns - indent - len("2024-03  ") - 1 - len(str(peak))))
    lines = []
    for month, n in sorted(by_month.items()):
        eighths = round(8 * width * n / peak)
        bar = "█" * (eighths // 8) + ("", "▏", "▎", "▍", "▌", "▋", "▊", "▉")[eighths % 8]
        lines.append(f"{month}  {bar:<{width}} {n}")
    return lines


def print_answer(
    data: AskDoc,
    question: str = "",
    *,
    sources: bool = True,
    show_command: str = "casper show",
) -> None:
    """An answer on stdout (as typed: no markup), then its cited messages and the command that
    opens the first of them (`show_command` with its rowid, ready to paste)."""
    from rich.text import Text

    out = console()
    if data["answer"]:
        out.print(Text(data["answer"]))
    cited = len(data["citations"])
    if not sources and cited:  # chat keeps answers short; the sources are one command away
        out.print(Text(f"{cited} source{'s' if cited != 1 else ''} — /sources shows them", "dim"))
    if sources:
        print_sources(
            data["citations"], question, shown=data["answer"], show_command=show_command, out=out
        )


def print_sources(
    citations: Sequence[Citation],
    question: str = "",
    *,
    shown: str = "",
    show_command: str = "casper show",
    out: Console | None = None,
) -> None:
    """The cited messages under an answer (`Sources`) and the command that opens the first.
    A message the answer already shows in full (`shown`: the retrieval-only answer) is not
    repeated."""
    from rich.text import Text

    out = out or console()
    rest = [c for c in citations if not (c["text"] and c["text"][:80] in shown)]
    if rest:
        out.print()
        out.print(Text("Sources", style="bold"))
        out.print(citations_view(rest, query_terms(question), out.width))
    if citations:
        first = citations[0]["id"]
        # one line even when long: a command is pasted whole
        out.print(Text(f"open one with: {show_command} {first}", style="dim"), soft_wrap=True)


# ---- the `--json` documents → the views above -------------------------------------------------
# Commands render from the document the service (or the in-process handler) returned, so the
# views get light records rebuilt from it instead of store objects.
def _epoch(ts: str | None) -> float | None:
    return datetime.fromisoformat(ts).timestamp() if ts else None


def hits_from_doc(hits: Sequence[HitJson]) -> list[Any]:  # duck-typed Hits for hits_view
    """`search --json` hits → objects with the attributes `hits_view` reads."""
    return [
        NS(
            chat=h["chat"],
            score=h["score"],
            start=_epoch(h["start"]),
            participants=list(h.get("participants", [])),
            matched_words=list(h.get("matched_words", [])),
            messages=[
                NS(rowid=m["id"], ts=_epoch(m["time"]), sender=m["sender"], text=m["text"])
                for m in h["messages"]
            ],
        )
        for h in hits
    ]


def messages_from_doc(messages: Sequence[MessageJson]) -> list[NS]:
    """`show --json` messages → objects with the attributes `conversation_view` reads."""
    return [
        NS(
            rowid=m["id"],
            ts=_epoch(m["time"]),
            sender=m["sender"],
            text=m.get("text") or "",
            kind=m.get("kind"),
            event=m.get("event"),
            reactions=[tuple(r) for r in m.get("reactions", [])],
            edited=bool(m.get("edited")),
        )
        for m in messages
    ]
