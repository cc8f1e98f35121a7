"""`message.message_summary_info` (binary plist): edit history and unsent parts. Pure."""

from __future__ import annotations

import logging
import plistlib
from dataclasses import dataclass, field
from typing import Any

from ingest.body import decode_attributed_body
from ingest.dates import apple_to_unix

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Edit:
    """One version of an edited message part."""

    text: str
    ts: float | None  # Unix seconds; the plist stores seconds since 2001
    guid: str | None = None  # `bcg`: the GUID older devices received this version under


@dataclass(frozen=True, slots=True)
class SummaryInfo:
    """What message_summary_info says about edits and unsends; empty when absent or unreadable."""

    edited_parts: dict[int, list[str]] = field(default_factory=dict)  # oldest first
    unsent_parts: frozenset[int] = frozenset()
    edits: dict[int, tuple[Edit, ...]] = field(default_factory=dict)
    part_ranges: dict[int, tuple[int, int]] = field(default_factory=dict)  # `otr`: (start, len)

    @property
    def edited(self) -> bool:
        return any(len(history) > 1 for history in self.edited_parts.values())

    def current_text_of_part(self, part: int) -> str | None:
        """The latest text of an edited part; None when the part has no readable edit history."""
        history = self.edited_parts.get(part)
        return history[-1] if history else None

    def is_fully_unsent(self, part_count: int | None = None) -> bool:
        """True when every part was unsent (one unsent part of several is not the whole message)."""
        if not self.unsent_parts:
            return False
        parts = set(range(part_count)) if part_count else set(self.part_ranges)
        return parts <= self.unsent_parts if parts else self.unsent_parts == {0}


def _part(key: Any) -> int | None:
    if isinstance(key, bool):
        return None
    if isinstance(key, int):
        return key if key >= 0 else None
    if isinstance(key, str) and key.isdigit():
        return int(key)
    return None


def _edits(entries: Any) -> tuple[Edit, ...]:
    if not isinstance(entries, list):
        return ()
    out = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        text = decode_attributed_body(entry.get("t"))
        if text is None:
            continue  # an unreadable version; the current text still lives in attributedBody
        stamp = entry.get("d")
        guid = entry.get("bcg")
        ts = apple_to_unix(stamp) if isinstance(stamp, int | float) else None
        out.append(Edit(text, ts, guid if isinstance(guid, str) else None))
    return tuple(out)


def _ranges(otr: Any) -> dict[int, tuple[int, int]]:
    if not isinstance(otr, dict):
        return {}
    out = {}
    for key, span in otr.items():
        part = _part(key)
        if part is not None and isinstance(span, dict):
            start, length = span.get("lo"), span.get("le")
            if isinstance(start, int) and isinstance(length, int):
                out[part] = (start, length)
    return out


def parse_summary_info(blob: bytes | None) -> SummaryInfo:
    """Decode message_summary_info; never raises (garbage gives an empty SummaryInfo)."""
    if not isinstance(blob, bytes | bytearray | memoryview) or not blob:
        return SummaryInfo()
    try:  # binary in chat.db; XML in some exports (plistlib refuses XML entity declarations)
        info = plistlib.loads(bytes(blob))
    except Exception:  # plistlib raises many types on corrupt input; a bad row must not stop a scan
        log.debug("unreadable message_summary_info (%d bytes)", len(blob))
        return SummaryInfo()
    if not isinstance(info, dict):
        return SummaryInfo()
    edits: dict[int, tuple[Edit, ...]] = {}
    history = info.get("ec")
    for key, entries in history.items() if isinstance(history, dict) else ():
        part = _part(key)
        if part is not None and (versions := _edits(entries)):
            edits[part] = versions
    unsent = info.get("rp")
    unsent_parts = (_part(p) for p in unsent) if isinstance(unsent, list) else ()
    return SummaryInfo(
        edited_parts={part: [e.text for e in versions] for part, versions in edits.items()},
        unsent_parts=frozenset(p for p in unsent_parts if p is not None),
        edits=edits,
        part_ranges=_ranges(info.get("otr")),
    )
