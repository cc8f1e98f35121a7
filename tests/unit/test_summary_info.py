"""message_summary_info: edit history and unsent parts from the real fixture plists."""

from __future__ import annotations

import json
import plistlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.body import encode_attributed_body
from ingest.dates import APPLE_EPOCH_OFFSET
from ingest.summary_info import SummaryInfo, parse_summary_info
from tests.paths import CHATDB_FIXTURES

EDITED = CHATDB_FIXTURES / "imessage-exporter" / "edited_message"


def _expected() -> list[dict[str, Any]]:
    data = json.loads((CHATDB_FIXTURES / "derived" / "expected.json").read_text("utf-8"))
    return data["message_summary_info"]


def _parse(name: str) -> SummaryInfo:
    return parse_summary_info((EDITED / name).read_bytes())


@pytest.mark.parametrize("entry", _expected(), ids=lambda e: e["file"].rsplit("/", 1)[-1])
def test_matches_expected_decoding(entry: dict[str, Any]) -> None:
    info = parse_summary_info((CHATDB_FIXTURES / entry["file"]).read_bytes())
    decoded = entry["decoded"]
    history = decoded.get("ec", {})
    assert info.edited_parts == {
        int(part): [v["t"]["typedstream_text"] for v in versions]
        for part, versions in history.items()
    }
    assert info.unsent_parts == frozenset(decoded.get("rp", []))
    for part, versions in history.items():
        edits = info.edits[int(part)]
        assert [e.ts for e in edits] == [v["d"] + APPLE_EPOCH_OFFSET for v in versions]
        assert [e.guid for e in edits] == [v.get("bcg") for v in versions]
    ranges = {int(p): (r["lo"], r["le"]) for p, r in decoded.get("otr", {}).items()}
    assert info.part_ranges == ranges


def test_edited_history_oldest_first() -> None:
    info = _parse("Edited.plist")
    assert info.edited_parts == {0: ["First message  ", "Edit 1", "Edit 2", "Edited message"]}
    assert info.current_text_of_part(0) == "Edited message"
    assert info.current_text_of_part(1) is None
    assert info.edited and not info.unsent_parts


def test_edit_to_a_link_in_a_later_part() -> None:
    info = _parse("EditedToLink.plist")
    assert info.current_text_of_part(1) == "https://github.com/ReagentX/imessage-exporter/issues/10"
    assert info.current_text_of_part(0) is None


def test_xml_plist_with_formatting_only_edit() -> None:
    info = _parse("EditedWithFormatting.plist")
    assert info.edited_parts == {0: ["Test", "Test"]}


def test_unsent_parts_partial_vs_full() -> None:
    assert _parse("Deleted.plist").is_fully_unsent()
    partial = _parse("MultiPartOneDeleted.plist")
    assert partial.unsent_parts == {3} and not partial.is_fully_unsent()
    edited_unsent = _parse("EditedAndUnsent.plist")
    assert edited_unsent.unsent_parts == {3} and not edited_unsent.is_fully_unsent()
    assert edited_unsent.current_text_of_part(2) == "Second test was edited!"
    assert SummaryInfo(unsent_parts=frozenset({0})).is_fully_unsent()
    assert SummaryInfo(unsent_parts=frozenset({0})).is_fully_unsent(part_count=1)
    assert not SummaryInfo(unsent_parts=frozenset({0})).is_fully_unsent(part_count=2)
    assert not SummaryInfo().is_fully_unsent()


def test_plain_rows_have_no_edits() -> None:
    info = parse_summary_info(plistlib.dumps({"amc": 0, "ust": True}, fmt=plistlib.FMT_BINARY))
    assert info == SummaryInfo()
    assert not info.edited


def test_undecodable_versions_are_skipped_and_junk_keys_ignored() -> None:
    plist = {
        "ec": {
            "0": [
                {"t": b"not a typedstream", "d": 1.0},
                {"t": encode_attributed_body("ok"), "d": 2},
            ],
            "x": [{"t": encode_attributed_body("junk key")}],
            "1": "not a list",
            "2": [None, {"d": 3.0}],
        },
        "rp": [1, "2", None, -1, True],
        "otr": {"0": {"lo": 0, "le": 2}, "1": "bad", "2": {"lo": "a"}},
    }
    info = parse_summary_info(plistlib.dumps(plist, fmt=plistlib.FMT_BINARY))
    assert info.edited_parts == {0: ["ok"]}
    assert info.edits[0][0].ts == 2 + APPLE_EPOCH_OFFSET
    assert info.unsent_parts == {1, 2}
    assert info.part_ranges == {0: (0, 2)}


@pytest.mark.parametrize(
    "blob",
    [
        None,
        b"",
        b"garbage",
        b"bplist00garbage",
        "text, not bytes",
        plistlib.dumps([1, 2, 3], fmt=plistlib.FMT_BINARY),
        plistlib.dumps({"ec": [], "rp": {}, "otr": []}, fmt=plistlib.FMT_BINARY),
        b'<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaa">]><plist><dict/></plist>',
    ],
)
def test_garbage_gives_empty_info(blob: Any) -> None:
    assert parse_summary_info(blob) == SummaryInfo()


def test_truncated_plists_never_raise() -> None:
    blob = (EDITED / "Edited.plist").read_bytes()
    for cut in range(len(blob)):
        assert isinstance(parse_summary_info(blob[:cut]), SummaryInfo)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(tail: bytes) -> None:
    assert isinstance(parse_summary_info(b"bplist00" + tail), SummaryInfo)
