"""Apple's encodings a synthetic chat.db needs: dates, tapback text, summary plists, UTIs."""

from __future__ import annotations

import plistlib
from datetime import UTC, datetime
from importlib import resources
from typing import Literal

from ingest.body import encode_attributed_body
from ingest.dates import unix_to_apple_ns, unix_to_apple_seconds

Body = Literal["text", "attributed", "both", "none"]  # which body columns a row fills
ORC = "\ufffc"  # one per attachment in the body text
SCHEMA_FILE = "schema_ventura.sql"
# Functions only Messages registers; without stubs every DELETE fails: "no such function".
TRIGGER_FUNCTIONS = (
    "after_delete_message_plugin",
    "before_delete_attachment_path",
    "delete_attachment_path",
)

TAPBACK_VERBS = {
    0: "Loved",
    1: "Liked",
    2: "Disliked",
    3: "Laughed at",
    4: "Emphasized",
    5: "Questioned",
}
REMOVAL_VERBS = {
    0: "Removed a heart from",
    1: "Removed a like from",
    2: "Removed a dislike from",
    3: "Removed a laugh from",
    4: "Removed an exclamation from",
    5: "Removed a question mark from",
}
UTIS = {
    "image/heic": "public.heic",
    "image/jpeg": "public.jpeg",
    "image/png": "public.png",
    "image/gif": "com.compuserve.gif",
    "video/quicktime": "com.apple.quicktime-movie",
    "video/mp4": "public.mpeg-4",
    "application/pdf": "com.adobe.pdf",
    "audio/x-m4a": "com.apple.m4a-audio",
    "text/vcard": "public.vcard",
}

# Messages writes {amc: 0, ust: true} on almost every modern row [FX].
DEFAULT_SUMMARY = plistlib.dumps({"amc": 0, "ust": True}, fmt=plistlib.FMT_BINARY)


def load_schema() -> str:
    """The bundled Ventura DDL (Apple's tables, indexes and triggers)."""
    return resources.files("ingest.synthetic").joinpath(SCHEMA_FILE).read_text("utf-8")


def to_unix(ts: datetime | float) -> float:
    """Unix seconds from a datetime (naive means UTC) or a number of Unix seconds."""
    if isinstance(ts, datetime):
        return (ts if ts.tzinfo else ts.replace(tzinfo=UTC)).timestamp()
    return float(ts)


def apple_ns(ts: datetime | float) -> int:
    """Nanoseconds since 2001-01-01 UTC, as `message.date` stores them."""
    return unix_to_apple_ns(to_unix(ts))


def apple_seconds(ts: datetime | float) -> float:
    """Seconds since 2001-01-01 UTC (attachment dates, edit times)."""
    return unix_to_apple_seconds(to_unix(ts))


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit Apple's ranges and run lengths use."""
    return len(text.encode("utf-16-le")) // 2


def quote_of(text: str, mime: str | None = None) -> str:
    """What a tapback's fallback text quotes: the text, or a noun for an attachment-only message."""
    clean = text.replace(ORC, "").strip()
    if clean:
        return f"“{clean}”"
    if mime and mime.startswith("image/"):
        return "an image"
    if mime and mime.startswith("video/"):
        return "a video"
    return "an attachment"


def tapback_text(kind: int, quoted: str, emoji: str | None = None) -> str:
    """Apple's fallback body for a tapback row (2000–2007) or its removal (3000–3007)."""
    removal, index = kind >= 3000, kind % 1000
    if index == 6:
        return (
            f"Removed {emoji or '👍'} from {quoted}" if removal else f"Reacted {emoji} to {quoted}"
        )
    if index == 7:
        return (
            f"Removed a sticker from {quoted}" if removal else f"Reacted with a sticker to {quoted}"
        )
    verbs = REMOVAL_VERBS if removal else TAPBACK_VERBS
    return f"{verbs[index]} {quoted}"


def edit_summary(history: list[tuple[float, str]], part: int = 0) -> bytes:
    """`message_summary_info` for an edited part: `ec` {part: [{d, t}…]}, oldest first."""
    entries = [{"d": d, "t": encode_attributed_body(t)} for d, t in history]
    info = {
        "amc": 0,
        "ust": True,
        "ec": {str(part): entries},
        "ep": [part],
        "otr": {str(part): {"lo": 0, "le": utf16_len(history[0][1])}},
    }
    return plistlib.dumps(info, fmt=plistlib.FMT_BINARY)


def unsend_summary(parts: list[str]) -> bytes:
    """`message_summary_info` for a fully unsent message: every part index in `rp`."""
    otr, lo = {}, 0
    for i, part in enumerate(parts):
        otr[str(i)] = {"lo": lo, "le": utf16_len(part)}
        lo += utf16_len(part)
    info = {"amc": 0, "ust": True, "otr": otr, "rp": list(range(len(parts)))}
    return plistlib.dumps(info, fmt=plistlib.FMT_BINARY)


def split_parts(text: str) -> list[str]:
    """A body's parts as Apple numbers them: one per attachment placeholder, then the text."""
    n = len(text) - len(text.lstrip(ORC))
    rest = text[n:]
    return [ORC] * n + ([rest] if rest else [])


def uti_for(mime: str | None) -> str:
    """The uniform type identifier Messages stores next to a MIME type."""
    return UTIS.get(mime or "", "public.data")
