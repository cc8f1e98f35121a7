"""An export is opened by other programs: message text stays data there too. A CSV cell that a
spreadsheet would run as a formula is shown as text; a chat's name cannot start a Markdown line."""

from __future__ import annotations

import csv
import io

from casper.app.export import ExportRow
from casper.app.export_formats import to_csv, to_markdown


def _row(text: str, chat: str = "Crew") -> ExportRow:
    return ExportRow(id=1, guid="g1", chat_id=7, chat=chat, sender_id="p_x", sender="Eve",
                     time="2024-01-02T10:00:00-08:00", text=text, kind="text", edited=False,
                     reply_to=None, reactions=(), attachments=())  # fmt: skip


def test_a_formula_in_a_message_is_text_in_the_csv() -> None:
    for body in ('=HYPERLINK("http://x","y")', "+1 312 555 0177", "-5 degrees", "@SUM(A1)"):
        cells = list(csv.reader(io.StringIO(to_csv([_row(body)]).decode())))[1]
        assert cells[7] == "'" + body
    plain = list(csv.reader(io.StringIO(to_csv([_row("see you at 5")]).decode())))[1]
    assert plain[7] == "see you at 5"  # ordinary text is untouched


def test_a_chat_name_cannot_start_a_markdown_line() -> None:
    text = to_markdown([_row("hi", chat="Crew\n# Forged heading")], "t", "s").decode()
    assert not any(line.startswith("# Forged") for line in text.splitlines())
