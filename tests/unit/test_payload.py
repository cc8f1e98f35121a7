"""URL previews from payload_data (NSKeyedArchiver) in the real fixtures."""

from __future__ import annotations

import json
import plistlib
import sqlite3
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.payload import UrlPreview, parse_url_preview
from tests.paths import CHATDB_FIXTURES

URLS = CHATDB_FIXTURES / "imessage-exporter" / "url_message"


def _expected() -> list[dict[str, Any]]:
    data = json.loads((CHATDB_FIXTURES / "derived" / "expected.json").read_text("utf-8"))
    return data["url_message_payload"]


@pytest.mark.parametrize("entry", _expected(), ids=lambda e: e["file"].rsplit("/", 1)[-1])
def test_matches_upstream_expectations(entry: dict[str, Any]) -> None:
    preview = parse_url_preview((CHATDB_FIXTURES / entry["file"]).read_bytes())
    assert preview is not None
    for key, value in entry["expected_by_upstream_test"].items():
        assert getattr(preview, key) == value, key


def test_database_row_with_null_balloon_bundle_id() -> None:
    db = CHATDB_FIXTURES / "imessage-exporter" / "db" / "test.db"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        row = conn.execute(
            "SELECT payload_data, balloon_bundle_id FROM message WHERE ROWID = 123445"
        ).fetchone()
    payload, bundle = row
    assert bundle is None
    preview = parse_url_preview(payload)
    assert preview is not None
    assert preview.title == "LastPass no longer listed on the Chrome Web Store - gHacks Tech News"
    url = "https://www.ghacks.net/2020/01/23/lastpass-no-longer-listed-on-the-chrome-web-store/"
    assert preview.link == url
    assert preview.summary is not None and preview.summary.startswith("LastPass customers")
    assert preview.as_text().startswith(url + " — LastPass no longer listed")


def test_preview_with_only_the_original_url() -> None:
    preview = parse_url_preview((URLS / "Reminder.plist").read_bytes())
    assert preview is not None and preview.url is None
    assert preview.link == preview.original_url
    assert preview.as_text() == preview.original_url


def _keyed(objects: list[Any]) -> bytes:
    archive = {
        "$archiver": "NSKeyedArchiver",
        "$version": 100000,
        "$top": {"root": plistlib.UID(1)},
        "$objects": ["$null", *objects],
    }
    return plistlib.dumps(archive, fmt=plistlib.FMT_BINARY)


def test_relative_url_is_joined_with_its_base() -> None:
    uid = plistlib.UID
    blob = _keyed(
        [
            {"richLinkMetadata": uid(2)},
            {"URL": uid(3), "title": uid(6)},
            {"NS.base": uid(4), "NS.relative": uid(5)},
            {"NS.base": uid(0), "NS.relative": "https://example.com/dir/"},
            "page.html",
            {"NS.string": "Archived NSString title"},
        ]
    )
    preview = parse_url_preview(blob)
    assert preview == UrlPreview(
        title="Archived NSString title", url="https://example.com/dir/page.html"
    )


def test_cyclic_and_dangling_references_do_not_hang() -> None:
    uid = plistlib.UID
    blob = _keyed([{"richLinkMetadata": uid(2)}, {"URL": uid(3), "title": uid(99)}, uid(3)])
    assert parse_url_preview(blob) is None


@pytest.mark.parametrize(
    "blob",
    [
        None,
        b"",
        b"not a plist",
        "a string",
        plistlib.dumps({"amc": 0, "ust": True}, fmt=plistlib.FMT_BINARY),
        plistlib.dumps([1, 2], fmt=plistlib.FMT_BINARY),
        (CHATDB_FIXTURES / "imessage-exporter" / "edited_message" / "Edited.plist").read_bytes(),
    ],
)
def test_non_previews_give_none(blob: Any) -> None:
    assert parse_url_preview(blob) is None


def test_truncated_payloads_never_raise() -> None:
    blob = (URLS / "Twitter.plist").read_bytes()
    for cut in range(len(blob)):
        assert parse_url_preview(blob[:cut]) in (None, parse_url_preview(blob))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(tail: bytes) -> None:
    result = parse_url_preview(b"bplist00" + tail)
    assert result is None or isinstance(result, UrlPreview)
