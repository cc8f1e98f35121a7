"""`redacted` against what people actually type (casper.agent.redact.mask): phone numbers with
any separator, invisible characters between the digits or keycap digits, numbers glued to a
word, card numbers (Luhn), IBANs (their checksum), account and SSN-like numbers, links on any
public suffix, numbered streets. And what it must leave alone: a tool's own ids, dates, times
and counts, and ordinary words with a dot in them."""

from __future__ import annotations

import re

import pytest

from casper.agent.redact import mask
from tests.hostile_text import SECRETS, secret_digits


@pytest.mark.parametrize(("label", "written", "kind"), SECRETS, ids=[s[0] for s in SECRETS])
def test_what_people_type_is_masked(label: str, written: str, kind: str) -> None:
    for text in (f"ok {written} see you", f"{written}", f"ok {written}.", f"ok ({written})"):
        shown = mask(text)
        assert written not in shown, (text, shown)
        if kind in ("link", "address"):
            core = written.split("/")[0]
            assert core not in shown and f"[{kind}]" in shown, shown
            continue
        digits = secret_digits(written)
        assert digits not in secret_digits(shown), (text, shown)
        # no part of it long enough to call or use is left either
        assert not re.search(r"\d{4}", secret_digits(shown).replace(digits, "")), shown


@pytest.mark.parametrize(
    "text",
    [
        "[#123456] 2024-03-15 18:30 Sam Rivera: hi",
        "Alex Chen (2024-10-29):",
        "+13125550177 (id p_1fea75e9): 20 sent, 34 received, last 2024-03-05",
        "whole range: Priya Natarajan 3, Mom 3, Sam Rivera 2",
        "3 tickets for 2024, $1,200 each, at 7:45, a 2 hour drive",
        "version 1.2.3 of the app, 3.5 stars, U.S. trip, e.g. this, Mr. Smith",
        "see you at 10.30, ok...sure, 99.9% done",
    ],
)
def test_what_is_not_a_secret_stays_as_written(text: str) -> None:
    kept = text.replace("+13125550177", "").replace("[#123456]", "")
    shown = mask(kept)
    assert shown == kept


def test_a_number_beside_a_count_leaves_the_count() -> None:
    shown = mask("+13125550177 266")
    assert shown.endswith(" 266") and "3125550177" not in shown


def test_a_number_at_a_line_end_never_joins_the_next_line() -> None:
    text = "call 415 555 0199\n2024-02: Priya 3\n2 more"
    shown = mask(text)
    assert shown.count("\n") == 2
    assert shown.splitlines()[1:] == ["2024-02: Priya 3", "2 more"]


def test_an_iban_with_a_wrong_checksum_is_still_a_long_number() -> None:
    assert "3704" not in mask("DE00 3704 0044 0532 0130 00")


def test_a_card_number_that_fails_luhn_is_masked_as_a_number() -> None:
    assert "1234" not in mask("4111–1111–1111–1234")


def test_masking_2000_characters_stays_cheap() -> None:
    import time

    line = "Sam said call 415–555–0199 or mail sam@example.com, see evil.de, 350 5th Ave. "
    text = (line * (2000 // len(line) + 1))[:2000]
    mask(text)  # warm whatever loads once
    started = time.perf_counter()
    for _ in range(20):
        mask(text)
    per_call = (time.perf_counter() - started) / 20
    assert per_call < 0.05, f"{per_call * 1000:.1f} ms for 2,000 characters"
