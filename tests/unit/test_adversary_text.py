"""What an adversary's probes got past the trust boundary's pure gates (bench/results/
adversary.md), each held here: the redaction's reading of digits, spaces, dots and line breaks
as a model reads them, and what it must keep; `--json` and bidirectional overrides; a model
server's host written with a trailing dot; `casper mcp`'s line cap; exclude entries written
with a `tel:` link or a doubled space."""

from __future__ import annotations

import io
import json
import sys
import unicodedata

import pytest

from casper.agent.quoting import quote
from casper.agent.redact import OTHER_DIGITS, Ceiling, mask
from casper.cli import guard
from casper.cli.mcp_wire import INVALID_REQUEST, MAX_LINE_BYTES, screen
from casper.config import llm_server
from casper.errors import RemoteLLMRefused
from casper.indexer.exclude import resolve
from tests.unit.test_exclude_resolve import CHATS, PEOPLE

REDACTED = Ceiling("redacted")

# (how it was written, its digits or its text, what it must become a mask of)
GOT_THROUGH = [
    ("call ⁴¹⁵⁵⁵⁵⁰¹⁹⁹ ok", "[phone]"),  # superscript digits
    ("call ₄₁₅₅₅₅₀₁₉₉ ok", "[phone]"),  # subscript digits
    ("call ④①⑤⑤⑤⑤⓪①⑨⑨ ok", "[phone]"),  # circled digits
    ("call 4\u03015\u03015\u0301-5\u03015\u03015\u0301-0\u03011\u03019\u03019\u0301 ok", "[phone]"),
    ("call 415\u00a0555\u00a00199 ok", "[phone]"),  # no-break spaces (as phones paste)
    ("call 415\u2009555\u20090199 ok", "[phone]"),  # thin spaces
    ("call 415\u3000555\u30000199 ok", "[phone]"),  # ideographic spaces
    ("call 415\n555\n0199 ok", "[phone]"),  # one group a line
    ("call 415-555\r\n0199 ok", "[phone]"),
    ("call 4l5-555-O199 ok", "[phone]"),  # letters for digits
    ("go to evil\u3002com/x ok", "[link]"),  # the ideographic full stop: browsers read a dot
    ("go to ｅｖｉｌ．ｃｏｍ ok", "[link]"),  # fullwidth letters
    ("go to Evil.Com ok", "[link]"),
    ("mail dana＠example.com ok", "[email]"),  # fullwidth at: the name part showed
    ("mail dana﹫example.com ok", "[email]"),
    ("mail dana@example\u3002com ok", "[email]"),
    ("call 4155-55-01 99:99 ok", "[phone]"),  # no date: month 55, hour 99
    ("call 415~555~0199 ok", "[phone]"),
    ("call 415+555+0199 ok", "[phone]"),
]


@pytest.mark.parametrize(("written", "label"), GOT_THROUGH, ids=[w for w, _ in GOT_THROUGH])
def test_what_got_past_the_masks_is_masked(written: str, label: str) -> None:
    shown = REDACTED.field(written)  # quoted first, as every tool's field is
    assert label in shown, shown
    digits = "".join(str(unicodedata.digit(c)) for c in shown if unicodedata.digit(c, None))
    assert len(digits) < 4, shown  # not even part of it
    for word in ("evil", "dana"):
        assert word not in shown.casefold().replace("ｅｖｉｌ", "evil"), shown
    assert shown.startswith(("call ", "go to ", "mail ")) and shown.endswith(" ok"), shown


@pytest.mark.parametrize(
    "kept",
    ["paid $1,234.56 today", "it was 1234.50 in all", "12,345 steps", "at 18:30 on 2024-10-29",
     "€ 99,999.99 left"],
)  # fmt: skip
def test_amounts_dates_and_times_stay(kept: str) -> None:
    assert mask(kept) == kept


def test_a_quoted_marker_in_a_body_is_not_taken_for_casper_s_own() -> None:
    """Quoting makes a body's `[#4155550199]` a `[＃…]`: read as a marker, its number stayed."""
    assert "4155550199" not in REDACTED.field("see [#4155550199] ok")


def test_other_digits_are_every_digit_unicode_knows_beyond_nd() -> None:
    import re

    held = re.compile(f"[{OTHER_DIGITS}]")
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        other = unicodedata.category(char) != "Nd" and unicodedata.digit(char, None) is not None
        assert bool(held.match(char)) == other, hex(code)


def test_a_line_break_a_body_quoted_still_reads_as_one_number() -> None:
    assert " ⏎ " in quote("415\n555\n0199")
    assert REDACTED.field("415\n555\n0199") == "[phone]"


def test_json_on_a_terminal_carries_no_bidirectional_override(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    doc = {"text": "invoice_\u202efdp.exe and \u2067isolated\u2069 \x9b31m"}
    guard.print_json(doc)
    written = out.getvalue()
    assert not any(c in written for c in "\u202e\u2067\u2069\x9b"), repr(written)
    assert json.loads(written) == doc  # the same document to a program


@pytest.mark.parametrize(
    "url", ["http://localhost./v1", "http://127.0.0.1.:8080/v1", "http://LOCALHOST.:80/v1"]
)
def test_a_host_with_a_trailing_dot_is_a_name_the_network_resolves(url: str) -> None:
    """`localhost.` is not in /etc/hosts: glibc asks the network's DNS, which may answer with
    any address; `127.0.0.1.` is no numeric host to getaddrinfo either."""
    with pytest.raises(RemoteLLMRefused):
        llm_server(url, allow_remote=False)
    assert llm_server("http://localhost:8080/v1", allow_remote=False)[1] is True


def test_an_over_long_line_is_refused_unread() -> None:
    parsed: list[str] = []
    line = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":['
        + b'"a",' * (MAX_LINE_BYTES // 4)
        + b'"a"]}}'
    )
    reply = screen(line, validate=parsed.append)
    assert isinstance(reply, dict) and reply["error"]["code"] == INVALID_REQUEST, reply
    assert "bytes" in reply["error"]["message"] and parsed == []
    call = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_messages",'
    call += b'"arguments":{"query":"' + b"\\ud83d\\ude00" * 1000 + b'"}}}'
    assert isinstance(screen(call), str)  # a call at the string cap, every character escaped


@pytest.mark.parametrize(
    ("entry", "people", "chats"),
    [
        ("tel:+1-312-555-0177", {"p_jordan"}, {4}),
        ("sms:3125550177", {"p_jordan"}, {4}),
        ("Sam  Rivera", {"p_sam"}, {1}),  # a doubled space
        ("chat:Climbing  crew", set(), {3}),
    ],
)
def test_an_entry_written_as_people_write_it_names_them(
    entry: str, people: set[str], chats: set[int]
) -> None:
    found = resolve([entry], PEOPLE, CHATS)
    assert (set(found.people), set(found.chats)) == (people, chats)


# what still gets through: read as people write them, they are also what no pattern can tell
# from ordinary text (an amount, a size, words); docs/reliability.md lists them, and
# `aggregate` is the mode that promises no text at all
OPEN = [
    ("call four one five five five five zero one nine nine ok", "numbers as words"),
    ("mail dana @ example.com ok", "spaces around @: 'meet @ home.now' is none"),
    ("go to evil[.]com ok", "a defanged link: three characters for a dot"),
]


@pytest.mark.xfail(strict=True, reason="pattern masks: a design change (docs/reliability.md)")
@pytest.mark.parametrize(("written", "why"), OPEN, ids=[w for w, _ in OPEN])
def test_what_still_gets_through(written: str, why: str) -> None:
    shown = REDACTED.field(written)
    assert not any(w in shown for w in ("0199", "nine", "dana", "evil")), (why, shown)


@pytest.mark.parametrize("written", ["call 415,555,0199 ok", "call 415x555x0199 ok"])
def test_a_phone_s_shape_joined_by_commas_or_an_x_is_a_phone(written: str) -> None:
    # the adversary's two open probes of the kind the issue named (separators between groups)
    assert REDACTED.field(written) == "call [phone] ok"


@pytest.mark.parametrize("kept", ["$415,555,019", "415,555,019 views", "1920x1080", "2x4x8"])
def test_amounts_and_sizes_of_other_shapes_stay(kept: str) -> None:
    assert REDACTED.field(kept) == kept
