"""attributedBody decoding against real Messages blobs, and the plain-text encoder."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.body import (
    HEADER,
    decode_attributed_body,
    decode_body_details,
    encode_attributed_body,
)
from tests.paths import CHATDB_FIXTURES

TYPEDSTREAM = CHATDB_FIXTURES / "crabstep" / "typedstream"
LOVED = CHATDB_FIXTURES / "imessage-conversation-analyzer" / "LovedReaction_attributedBody"


@cache
def _expected() -> list[dict[str, Any]]:
    data = json.loads((CHATDB_FIXTURES / "derived" / "expected.json").read_text("utf-8"))
    return data["typedstream"]


def _blob(name: str) -> bytes:
    return (TYPEDSTREAM / name).read_bytes()


EXPECTED = _expected()
BODIES = [e for e in EXPECTED if e["is_attributed_body"]]
REAL_BODIES = [
    e for e in BODIES if "/typedstream/" in e["file"] and "/foundation/" not in e["file"]
]


def _ids(entries: list[dict[str, Any]]) -> list[str]:
    return [e["file"].rsplit("/", 1)[-1] for e in entries]


def test_fixture_inventory_is_complete() -> None:
    assert len(REAL_BODIES) == 39
    assert len(list((TYPEDSTREAM / "foundation").iterdir())) == 29


@pytest.mark.parametrize("entry", EXPECTED, ids=_ids(EXPECTED))
def test_decodes_every_fixture_to_its_expected_text(entry: dict[str, Any]) -> None:
    blob = (CHATDB_FIXTURES / entry["file"]).read_bytes()
    expected = entry["text"] if entry["is_attributed_body"] else None
    assert decode_attributed_body(blob) == expected


@pytest.mark.parametrize("entry", BODIES, ids=_ids(BODIES))
def test_generic_walk_agrees_when_the_preamble_is_unusual(entry: dict[str, Any]) -> None:
    # A different NSString class version defeats the fixed-preamble shortcut, so this runs the
    # full typedstream walk on the same blob.
    blob = (CHATDB_FIXTURES / entry["file"]).read_bytes()
    marker = b"\x08NSString\x01"
    assert marker in blob
    assert decode_attributed_body(blob.replace(marker, b"\x08NSString\x02", 1)) == entry["text"]


@pytest.mark.parametrize("entry", BODIES, ids=_ids(BODIES))
def test_runs_match_the_expected_attribute_runs(entry: dict[str, Any]) -> None:
    details = decode_body_details((CHATDB_FIXTURES / entry["file"]).read_bytes())
    assert details is not None
    assert details.text == entry["text"]
    got = [
        {
            "attr_index": r.index,
            "utf16_length": r.length,
            "keys": sorted(r.attributes),
            "part": r.part,
        }
        for r in details.runs
    ]
    want = [
        {k: run.get(k) for k in ("attr_index", "utf16_length", "keys", "part")}
        for run in entry["runs"]
    ]
    assert got == want
    assert sum(r.length for r in details.runs) == (entry["utf16_units"] if details.runs else 0)
    guids = tuple(
        dict.fromkeys(r["file_transfer_guid"] for r in entry["runs"] if "file_transfer_guid" in r)
    )
    assert details.attachment_guids == guids
    mentions = tuple(r["mention"] for r in entry["runs"] if "mention" in r)
    assert details.mentions == mentions


@pytest.mark.parametrize("name", ["ExtraData", "HugeWithRefs"])
def test_malformed_and_non_message_blobs_are_rejected(name: str) -> None:
    assert decode_attributed_body(_blob(name)) is None
    assert decode_body_details(_blob(name)) is None


def test_naive_first_nsstring_is_not_returned_for_a_non_message_root() -> None:
    blob = _blob("HugeWithRefs")
    assert b"{294.275, 313.361}" in blob
    assert decode_attributed_body(blob) is None


@pytest.mark.parametrize(
    "path", sorted((TYPEDSTREAM / "foundation").iterdir()), ids=lambda p: p.name
)
def test_foundation_archives_never_crash(path: Any) -> None:
    text = decode_attributed_body(path.read_bytes())
    details = decode_body_details(path.read_bytes())
    if path.name == "NSAttributedString":
        assert text == "Hello, world"
        assert details is not None and details.text == text
    else:
        assert text is None and details is None


def test_loved_reaction_fallback_text() -> None:
    text = decode_attributed_body(LOVED.read_bytes())
    assert text == "Loved “Same here! 🤣 Catch you later!”"
    details = decode_body_details(LOVED.read_bytes())
    assert details is not None and [r.length for r in details.runs] == [38]


def test_long_message_uses_the_two_byte_length() -> None:
    blob = _blob("LongMessage")
    assert b"\x2b\x81\x37\x09" in blob
    assert len((decode_attributed_body(blob) or "").encode()) == 2359


def test_transcription_and_attachment_of_a_voice_message() -> None:
    details = decode_body_details(_blob("Transcription"))
    assert details is not None
    assert details.text == "\ufffc"
    assert details.transcription == "This is a test"
    assert details.attachment_guids == ("4C339597-EBBB-4978-9B87-521C0471A848",)


def test_links_and_mentions() -> None:
    url = decode_body_details(_blob("URL"))
    mention = decode_body_details(_blob("Mention"))
    assert url is not None and url.links == ("https://github.com/ReagentX/Logria",)
    assert mention is not None and mention.mentions == ("+15558675309",)
    assert decode_body_details(_blob("AttributedBodyTextOnly")) is not None


def test_part_text_slices_by_utf16_runs() -> None:
    details = decode_body_details(_blob("MultiPart"))
    assert details is not None
    assert [details.part_text(p) for p in range(6)] == [
        "\ufffc", "test 1", "\ufffc", "test 2 ", "\ufffc", "test 3",
    ]  # fmt: skip
    loved = decode_body_details(LOVED.read_bytes())
    assert loved is not None and loved.part_text(0) == loved.text


@pytest.mark.parametrize("name", ["AttributedBodyTextOnly", "LongMessage", "MultiPart", "Currency"])
def test_truncated_blobs_never_yield_wrong_text(name: str) -> None:
    blob = _blob(name)
    full = decode_attributed_body(blob)
    for cut in range(len(blob)):
        assert decode_attributed_body(blob[:cut]) in (None, full)
        details = decode_body_details(blob[:cut])
        assert details is None or details.text == full


@pytest.mark.parametrize("name", ["Attachment", "Mention", "URL", "Transcription", "Blank"])
def test_corrupted_bytes_never_raise(name: str) -> None:
    blob = _blob(name)
    for i in range(len(HEADER), len(blob)):
        for value in (0x00, 0x81, 0x82, 0x84, 0x86, 0x87, 0x92, 0xFF):
            mutated = blob[:i] + bytes((value,)) + blob[i + 1 :]
            details = decode_body_details(mutated)
            assert (details.text if details else None) == decode_attributed_body(mutated)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_after_the_header_never_raise(tail: bytes) -> None:
    for blob in (HEADER + tail, HEADER + b"\x84\x01@\x84" + tail, tail):
        text = decode_attributed_body(blob)
        details = decode_body_details(blob)
        assert (details.text if details else None) == text


@pytest.mark.parametrize("value", [None, b"", "streamtyped", 42, b"\x04\x0bstreamtyped"])
def test_non_blobs_give_none(value: Any) -> None:
    assert decode_attributed_body(value) is None
    assert decode_body_details(value) is None


def test_accepts_bytearray_and_memoryview() -> None:
    blob = _blob("Arabic")
    assert decode_attributed_body(bytearray(blob)) == decode_attributed_body(memoryview(blob))
    assert decode_attributed_body(bytearray(blob)) == "أهلاً بالعالم"


def test_encoder_matches_messages_byte_for_byte() -> None:
    assert encode_attributed_body("Noter test") == _blob("AttributedBodyTextOnly")


def test_encoder_writes_long_run_lengths_like_messages() -> None:
    blob = _blob("AppleMusicLyrics")
    text = decode_attributed_body(blob)
    assert text is not None and len(text) == 145
    run = b"\x84\x02iI\x01\x81\x91\x00"
    assert run in blob and run in encode_attributed_body(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello",
        "emoji 🤣🅱️ and ZWJ 👩‍👩‍👧",
        "日本語のテキスト、漢字",
        "أهلاً بالعالم",
        "x" * 127,
        "x" * 128,
        "é" * 100,
        "a" * 3000,
        "🤣" * 17500,
        "b" * 70000,
        "tab\tnewline\ncr\rnul\x00",
        "\ufffc attachment",
    ],
    ids=lambda t: f"{len(t.encode())}B",
)
def test_encode_decode_round_trip(text: str) -> None:
    blob = encode_attributed_body(text)
    assert decode_attributed_body(blob) == text
    details = decode_body_details(blob)
    assert details is not None and details.text == text
    units = len(text.encode("utf-16-le")) // 2
    assert [(r.start, r.length, r.part) for r in details.runs] == ([(0, units, 0)] if units else [])


def test_length_prefix_forms() -> None:
    assert b"+\x81\xb8\x0b" in encode_attributed_body("a" * 3000)
    assert b"+\x82\x70\x11\x01\x00" in encode_attributed_body("b" * 70000)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_round_trip_property(text: str) -> None:
    assert decode_attributed_body(encode_attributed_body(text)) == text


def test_decoder_gives_the_text_or_none_so_the_reader_falls_back_to_the_text_column() -> None:
    assert decode_attributed_body(_blob("AttributedBodyTextOnly")) == "Noter test"
    assert decode_attributed_body(_blob("ExtraData")) is None
    assert decode_attributed_body(None) is None
