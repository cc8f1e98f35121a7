"""PURE: export rows → the bytes of a file: JSON Lines (one message a line), CSV (one message a
row, a header first) or Markdown (a transcript: a heading per chat and per day, who said what
and when). Nothing here depends on the clock or the machine, so the same rows always give the
same bytes. Imports: stdlib, casper.app.export (the row type).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from datetime import datetime

from casper.app.export import ExportRow
from casper.plaintext import one_line, plain

FORMATS = ("jsonl", "csv", "md")
_INLINE = re.compile(r"[\\*_`\[\]<>#|]")  # what Markdown reads inside a line
# what else starts a block at a line's start (a setext underline, a rule or a list item, a
# fence): escaped there; a numbered item (`1.`, `1)`) at its `.` or `)`
_BLOCK_START = re.compile(r"^([ \t]*(?:\d{1,9})?)([.)](?<=\d[.)])|[=+~-])")
CSV_COLUMNS = ("id", "guid", "chat_id", "chat", "sender_id", "sender", "time", "text", "kind",
               "edited", "reply_to", "reactions", "attachments")  # fmt: skip


def row_json(r: ExportRow) -> dict:
    return {
        "id": r.id,
        "guid": r.guid,
        "chat_id": r.chat_id,
        "chat": r.chat,
        "sender_id": r.sender_id,
        "sender": r.sender,
        "time": r.time,
        "text": r.text,
        "kind": r.kind,
        "edited": r.edited,
        "reply_to": r.reply_to,
        "reactions": [[who, label] for who, label in r.reactions],
        "attachments": list(r.attachments),
    }


def to_jsonl(rows: Sequence[ExportRow]) -> bytes:
    lines = (json.dumps(row_json(r), ensure_ascii=False, separators=(",", ":")) for r in rows)
    return "".join(line + "\n" for line in lines).encode("utf-8")


def to_csv(rows: Sequence[ExportRow], *, guard: bool = True) -> bytes:
    """A header, then one row a message; RFC 4180's quoting and CRLF line ends, so a line break
    or a lone carriage return inside a message stays inside its cell. `guard`: people's text
    that a spreadsheet would run as a formula is shown as text (`_cell`)."""
    cell = _cell if guard else _as_is
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for r in rows:
        writer.writerow([
            r.id, r.guid, r.chat_id, cell(r.chat), r.sender_id, cell(r.sender), r.time or "",
            cell(r.text if r.text is not None else ""), r.kind, "yes" if r.edited else "",
            r.reply_to or "", cell("; ".join(f"{who}: {label}" for who, label in r.reactions)),
            cell("; ".join(r.attachments)),
        ])  # fmt: skip
    return out.getvalue().encode("utf-8")


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # OWASP: what a spreadsheet may run
PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d+)?|\.\d+)")  # -5, 0.25, +13125550177


def _cell(text: str) -> str:
    """People's text in a CSV cell, by OWASP's rule: one that starts like a formula (=, +, -,
    @, a tab or a carriage return) gets a leading apostrophe, so a spreadsheet shows it and
    never runs it — unless the whole cell is a plain number (a phone number written +1312…
    too), which a spreadsheet reads as a number and which cannot call or name anything. A cell
    that only starts like a number ("-5 degrees", "+1 for that") is guarded: a formula such as
    `-2+3+cmd|…` starts so too."""
    if text[:1] in FORMULA_START and PLAIN_NUMBER.fullmatch(text) is None:
        return "'" + text
    return text


def _as_is(text: str) -> str:
    return text


def _quote(text: str) -> str:
    """A message body inside a Markdown line: line breaks kept, nothing read as markup, no
    line that starts a block (a heading, a setext underline, a rule, a list, a quote, a
    table, a fence); control characters and escape sequences out (casper.plaintext)."""
    escaped = _INLINE.sub(r"\\\g<0>", plain(text))
    return "  \n  ".join(_BLOCK_START.sub(r"\1\\\2", line) for line in escaped.split("\n"))


def _name(text: str) -> str:
    """A name or a title inside a Markdown line (never at its start): on one line, nothing in
    it read as markup."""
    return _INLINE.sub(r"\\\g<0>", one_line(text))


def to_markdown(rows: Sequence[ExportRow], title: str, subtitle: str) -> bytes:
    lines = [f"# {_name(title)}", "", subtitle, ""]
    by_guid = {r.guid: r for r in rows}
    chat, day = None, None
    for r in rows:
        if r.chat_id != chat:
            chat, day = r.chat_id, None
            lines += [f"## {_name(r.chat)} (chat {r.chat_id})", ""]
        stamp = datetime.fromisoformat(r.time) if r.time else None
        today = stamp.strftime("%A %-d %B %Y") if stamp else "undated"
        if today != day:
            day = today
            lines += [f"### {today}", ""]
        clock = stamp.strftime("%H:%M") if stamp else "--:--"
        body = _quote(r.text) if r.text is not None else "*(text hidden)*"
        if r.attachments:
            files = " ".join(f"📎 {_name(a)}" for a in r.attachments)
            placeholder = r.kind == "attachment" and (r.text or "").startswith("[")
            body = files if placeholder else f"{body} {files}".strip()
        extra = []
        if r.edited:
            extra.append("edited")
        if r.reply_to:
            quoted = by_guid.get(r.reply_to)
            extra.append(f"replying to {_name(quoted.sender)} at {(quoted.time or '')[11:16]}"
                         if quoted else "a reply")  # fmt: skip
        tail = f" _({', '.join(extra)})_" if extra else ""
        lines.append(f"**{_name(r.sender)}** {clock} — {body}{tail}  ")
        if r.reactions:
            shown = ", ".join(f"{_name(label)} {_name(who)}" for who, label in r.reactions)
            lines.append(f"  ↳ {shown}  ")
        lines.append("")
    return ("\n".join(lines).rstrip("\n") + "\n").encode("utf-8")
