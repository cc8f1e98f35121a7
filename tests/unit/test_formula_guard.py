"""The CSV formula guard, by OWASP's rule: a cell that starts with `=`, `+`, `-`, `@`, a tab or
a carriage return gets a leading apostrophe, so a spreadsheet shows it as text and never runs
it — except a cell that is a plain number (a phone number written as one, `+13125550177`, is a
number to a spreadsheet too): nothing in it can call a function or name a cell. A cell that
only starts like a number ("-5 degrees", "+1 for that") is guarded: `-2+3+cmd|…` starts so
too. `guard=False` writes every cell as it is."""

from __future__ import annotations

import csv
import io

import pytest

from casper.app.export import ExportRow
from casper.app.export_formats import to_csv


def _row(text: str, sender: str = "Eve", chat: str = "Crew") -> ExportRow:
    return ExportRow(id=1, guid="g1", chat_id=7, chat=chat, sender_id="p_x", sender=sender,
                     time="2024-01-02T10:00:00-08:00", text=text, kind="text", edited=False,
                     reply_to=None, reactions=(), attachments=())  # fmt: skip


def cells(data: bytes) -> dict[str, str]:
    return next(csv.DictReader(io.StringIO(data.decode("utf-8"), newline="")))


@pytest.mark.parametrize("plain", ["-5", "+5", "-0.25", "+13125550177", "-1", "42", "see you at 5"])
def test_plain_numbers_and_text_are_left_alone(plain: str) -> None:
    assert cells(to_csv([_row(plain)]))["text"] == plain


@pytest.mark.parametrize(
    "formula",
    [
        "=1+2",
        '=HYPERLINK("http://x","y")',
        "+1 for that",
        "-5 degrees",
        "@SUM(A1)",
        "-2+3+cmd|' /C calc'!A0",
        "\t=1",
        "\r=1",
        "+",
        "-",
        "+1 312 555 0177",
        "+44 20",
        "=+13125550177",
        "-5\n=1",
        "1e3",
    ],  # fmt: skip
)
def test_what_could_start_a_formula_is_guarded(formula: str) -> None:
    shown = cells(to_csv([_row(formula)]))["text"]
    if formula[:1] in "=+-@\t\r":
        assert shown == "'" + formula
    else:
        assert shown == formula  # "1e3" starts with no trigger: nothing to guard


def test_a_contact_known_by_their_number_stays_a_number() -> None:
    row = cells(to_csv([_row("hi", sender="+13125550177", chat="+13125550177")]))
    assert row["sender"] == "+13125550177" and row["chat"] == "+13125550177"


def test_without_the_guard_every_cell_is_as_written() -> None:
    for text in ("=1+2", "+1 for that", "-5 degrees", "@x", "\t=1"):
        assert cells(to_csv([_row(text, sender="=me")], guard=False))["text"] == text
        assert cells(to_csv([_row(text, sender="=me")], guard=False))["sender"] == "=me"


def test_a_carriage_return_in_a_message_keeps_it_one_row() -> None:
    """A lone CR ends a row for a spreadsheet: a cell holding one is quoted (RFC 4180)."""
    data = to_csv([_row("one\rtwo"), _row("three")])
    table = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    assert [r[7] for r in table[1:]] == ["one\rtwo", "three"]
    assert '"one\rtwo"' in data.decode("utf-8")
