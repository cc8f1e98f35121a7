"""The words a message row stands for when it isn't plain text: system events, attachments,
link previews, app messages, partial unsends. Pure (no database): the row converter calls it
with a row's decoded body and its EXTRA_FIELDS; kept apart so the converter's hot loop stays
readable beside it.

Imports: ingest only (never casper).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ingest.body import decode_body_details
from ingest.payload import parse_url_preview
from ingest.queries import X_ACTION, X_BALLOON, X_OTHER_HANDLE, X_PAYLOAD, X_SHARE_STATUS, X_TITLE

if TYPE_CHECKING:
    from ingest.queries import AttachmentRow

ORC, REPL = "\ufffc", "\ufffd"  # object-replacement (an attachment's place) and undecodable
_URL_BALLOON = "com.apple.messages.URLBalloonProvider"
_PLACEHOLDERS = re.compile("[\ufffc\ufffd]+")
_GROUP_ACTIONS = {0: "left the group", 1: "changed the group photo", 2: "removed the group photo",
                  4: "changed the chat background", 6: "removed the chat background"}  # fmt: skip
_OTHER_EVENTS = {5: "kept an audio message", 6: "started a FaceTime call"}
_APPS = {
    "com.apple.Handwriting.HandwritingProvider": "handwritten message",
    "com.apple.DigitalTouchBalloonProvider": "Digital Touch message",
    "com.apple.PassbookUIService.PeerPaymentMessagesExtension": "Apple Pay",
    "com.apple.messages.Polls": "poll",
}


def _label(att: AttachmentRow) -> str:
    mime = att.record.mime or ""
    kind = "file"
    if att.sticker:
        kind = "sticker"
    elif mime[:6] in ("image/", "video/", "audio/"):
        kind = {"image/": "photo", "video/": "video", "audio/": "audio"}[mime[:6]]
    return f"[{kind} {att.record.name}]" if att.record.name else f"[{kind}]"


def describe_event(
    item_type: int, handle: int | None, ex: Sequence, address: Callable[[int], str | None]
) -> str:
    """Plain words for a system row (item_type ≠ 0), e.g. 'renamed the group to X'."""
    action, other = ex[X_ACTION] or 0, ex[X_OTHER_HANDLE]
    if item_type == 1:
        if other and other == handle and action == 0:
            return "changed their phone number"
        who = address(other) or "someone"
        return f"removed {who}" if action == 1 else f"added {who}"
    if item_type == 2:
        return f"renamed the group to {ex[X_TITLE]}" if ex[X_TITLE] else "removed the group name"
    if item_type == 3:
        return _GROUP_ACTIONS.get(action, "changed the group")
    if item_type == 4:
        return "stopped sharing location" if ex[X_SHARE_STATUS] else "started sharing location"
    return _OTHER_EVENTS.get(item_type, f"system event (type {item_type})")


_MEMBER_VERBS = ("added ", "removed ")  # describe_event's words for a member event


def event_handle(event: str | None) -> str | None:
    """The handle a member event names ("added X", "removed X", as `describe_event` words
    them), or None for any other event."""
    for verb in _MEMBER_VERBS:
        if event and event.startswith(verb) and event[len(verb) :] != "someone":
            return event[len(verb) :]
    return None


def without_parts(blob: bytes, parts: frozenset[int]) -> str | None:
    """Body text minus the given message parts (a partial unsend), cut by attribute runs."""
    details = decode_body_details(blob)
    if details is None or not any(r.part in parts for r in details.runs):
        return None
    units = details.text.encode("utf-16-le")
    kept: list[bytes] = []
    previous = None
    for r in details.runs:
        if r.part not in parts:
            if kept and r.part != previous:
                kept.append(ORC.encode("utf-16-le"))  # keep the parts apart
            kept.append(units[2 * r.start : 2 * (r.start + r.length)])
            previous = r.part
    return b"".join(kept).decode("utf-16-le", errors="replace")


def is_audio(att: AttachmentRow) -> bool:
    return (att.record.mime or "").startswith("audio/")


def join_parts(body: str) -> str:
    """Drop U+FFFC/U+FFFD placeholders; the text parts they separated are joined by a space."""
    return " ".join(s for p in _PLACEHOLDERS.split(body) if (s := p.strip()))


def annotate(
    body: str, atts: list[AttachmentRow], ex: tuple, transcript: str | None
) -> tuple[str, str]:
    """Searchable text and kind: body plus attachment, Genmoji, transcript and link notes."""
    notes: list[str] = []
    for att in atts:
        if att.description:
            notes.append(f"[sticker: {att.description}]")
        elif not body and not (transcript and is_audio(att)):
            notes.append(_label(att))
    if transcript:
        notes.append(f"[voice message: {transcript.strip()}]")
    payload, balloon = ex[X_PAYLOAD], ex[X_BALLOON]
    # test.db shows a link preview with a NULL balloon_bundle_id, so NULL counts as "maybe a URL".
    if payload and (balloon is None or balloon == _URL_BALLOON):
        preview = parse_url_preview(payload)
        if preview is not None:
            link = " — ".join(p for p in (preview.title, preview.summary) if p)
            if not body and preview.url:
                link = f"{link} {preview.url}".strip()
            if link:
                notes.append(f"[link: {link}]")
    elif balloon and not body and not notes:
        notes.append(f"[{_APPS.get(balloon, 'app message')}]")
    if not notes:
        return body, "text"
    return (f"{body} {' '.join(notes)}", "text") if body else (" ".join(notes), "attachment")
