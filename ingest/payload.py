"""`message.payload_data` (NSKeyedArchiver binary plist): rich link previews. Pure."""

from __future__ import annotations

import logging
import plistlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

log = logging.getLogger(__name__)

_METADATA_KEYS = ("richLinkMetadata", "metadata")  # RichLink, LPSharingMetadataWrapper
_MAX_HOPS = 16


@dataclass(frozen=True, slots=True)
class UrlPreview:
    """What a URL balloon showed: page title, description and address."""

    title: str | None = None
    summary: str | None = None
    url: str | None = None  # the resolved address (after redirects)
    original_url: str | None = None  # the address as sent
    site_name: str | None = None
    item_type: str | None = None  # e.g. "article"

    @property
    def link(self) -> str | None:
        return self.url or self.original_url

    def as_text(self) -> str:
        """One line for the index: address, title and description, in that order."""
        return " — ".join(p for p in (self.link, self.title, self.summary) if p)


class _Archive:
    """UID-resolving view over an NSKeyedArchiver `$objects` list."""

    def __init__(self, objects: list[Any]) -> None:
        self.objects = objects

    def get(self, value: Any, hops: int = 0) -> Any:
        while isinstance(value, plistlib.UID) and hops < _MAX_HOPS:
            index = value.data
            value = self.objects[index] if 0 <= index < len(self.objects) else None
            hops += 1
        return None if value == "$null" or isinstance(value, plistlib.UID) else value

    def class_name(self, obj: dict[str, Any]) -> str | None:
        cls = self.get(obj.get("$class"))
        name = cls.get("$classname") if isinstance(cls, dict) else None
        return name if isinstance(name, str) else None

    def text(self, value: Any) -> str | None:
        value = self.get(value)
        if isinstance(value, dict):  # NSString / NSMutableString archived as an object
            value = self.get(value.get("NS.string"))
        return value if isinstance(value, str) and value else None

    def url(self, value: Any, depth: int = 0) -> str | None:
        value = self.get(value)
        if not isinstance(value, dict) or depth > 4:
            return self.text(value)
        relative = self.text(value.get("NS.relative"))
        base = self.url(value.get("NS.base"), depth + 1)
        if relative and base:
            try:
                return urljoin(base, relative)
            except ValueError:  # e.g. a malformed IPv6 host
                return relative
        return relative or base


def _load(payload_data: bytes | None) -> tuple[_Archive, dict[str, Any]] | None:
    if not isinstance(payload_data, bytes | bytearray | memoryview):
        return None
    data = bytes(payload_data)
    try:  # binary in chat.db; XML in some exports (plistlib refuses XML entity declarations)
        plist = plistlib.loads(data)
    except Exception:  # plistlib raises many types on corrupt input; a bad row must not stop a scan
        log.debug("unreadable payload_data (%d bytes)", len(data))
        return None
    if not isinstance(plist, dict) or not isinstance(plist.get("$objects"), list):
        return None
    archive = _Archive(plist["$objects"])
    top = plist.get("$top")
    root = archive.get(top.get("root")) if isinstance(top, dict) else None
    return (archive, root) if isinstance(root, dict) else None


def parse_url_preview(payload_data: bytes | None) -> UrlPreview | None:
    """The link preview in a message's payload_data; None when there is none. Never raises."""
    loaded = _load(payload_data)
    if loaded is None:
        return None
    archive, root = loaded
    found = (archive.get(root.get(key)) for key in _METADATA_KEYS)
    meta = next((m for m in found if isinstance(m, dict)), None)
    if meta is None and archive.class_name(root) == "LPLinkMetadata":
        meta = root
    if meta is None:
        return None
    preview = UrlPreview(
        title=archive.text(meta.get("title")),
        summary=archive.text(meta.get("summary")),
        url=archive.url(meta.get("URL")),
        original_url=archive.url(meta.get("originalURL")),
        site_name=archive.text(meta.get("siteName")),
        item_type=archive.text(meta.get("itemType")),
    )
    return preview if preview != UrlPreview() else None
