"""attributedBody (NSArchiver typedstream) ↔ message text, plus its attribute runs. Pure, stdlib."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

HEADER = b"\x04\x0bstreamtyped\x81\xe8\x03"
PART_KEY = "__kIMMessagePartAttributeName"
FILE_KEY = "__kIMFileTransferGUIDAttributeName"
MENTION_KEY = "__kIMMentionConfirmedMention"
LINK_KEY = "__kIMLinkAttributeName"
TRANSCRIPTION_KEY = "IMAudioTranscription"

_NEW, _NIL, _END, _FLOAT = 0x84, 0x85, 0x86, 0x83
_INT_SIZES = {0x81: 2, 0x82: 4, 0x87: 8}
_REF_BASE = -110  # reference numbers start right above the tag range (0x92 as a signed byte)
_MAX_DEPTH = 64
_ROOT_CLASSES = frozenset({b"NSMutableAttributedString", b"NSAttributedString"})
_STRING_CLASSES = frozenset({b"NSMutableString", b"NSString"})
_DICT_CLASSES = frozenset({b"NSDictionary", b"NSMutableDictionary"})
_LIST_CLASSES = frozenset({b"NSArray", b"NSMutableArray", b"NSSet", b"NSMutableSet"})
_DATA_CLASSES = frozenset({b"NSData", b"NSMutableData"})
_ERRORS = (IndexError, ValueError, KeyError, TypeError, struct.error, RecursionError)


@dataclass(frozen=True, slots=True)
class AttributeRun:
    """A span of the text (in UTF-16 code units, as Apple counts) sharing one attribute set."""

    index: int
    start: int
    length: int
    attributes: dict[str, Any]

    @property
    def part(self) -> int | None:
        value = self.attributes.get(PART_KEY)
        return value if isinstance(value, int) else None


@dataclass(frozen=True, slots=True)
class BodyDetails:
    """The decoded body text with what its attribute runs say about it."""

    text: str
    transcription: str | None = None
    attachment_guids: tuple[str, ...] = ()
    mentions: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    runs: tuple[AttributeRun, ...] = ()

    def part_text(self, part: int) -> str:
        """Text of one message part, numbered as tapbacks (`p:N/`) and replies number them."""
        units = self.text.encode("utf-16-le")
        spans = (units[2 * r.start : 2 * (r.start + r.length)] for r in self.runs if r.part == part)
        return b"".join(spans).decode("utf-16-le", errors="replace")


class _Bad(ValueError):
    """The bytes are not the typedstream shape this module understands."""


class _ClassName(bytes):
    """A class entry of the object table (objects, classes and C strings share one table)."""


class _Obj:
    """An archived object of a class this module does not interpret."""

    __slots__ = ("name", "groups")

    def __init__(self, name: bytes | None, groups: list[list[Any]]) -> None:
        self.name, self.groups = name, groups


class _Reader:
    """Cursor over a typedstream with its shared-string and object reference tables."""

    __slots__ = ("buf", "pos", "strings", "objects", "depth")

    def __init__(self, buf: bytes) -> None:
        self.buf, self.pos, self.depth = buf, len(HEADER), 0
        self.strings: list[bytes] = []
        self.objects: list[Any] = []

    def head(self) -> int:
        byte = self.buf[self.pos]
        self.pos += 1
        return byte

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.buf):
            raise _Bad("length runs past the end of the blob")
        out, self.pos = self.buf[self.pos : end], end
        return out

    def int_(self, h: int, signed: bool = True) -> int:
        if h < 0x80 or h > 0x91:
            return h - 256 if signed and h > 0x7F else h
        if h not in _INT_SIZES:
            raise _Bad("tag where an integer belongs")
        return int.from_bytes(self.take(_INT_SIZES[h]), "little", signed=signed)

    def ref(self, h: int, table: list[Any]) -> Any:
        i = self.int_(h) - _REF_BASE
        if not 0 <= i < len(table):
            raise _Bad("dangling reference")
        return table[i]

    def string(self, h: int) -> bytes | None:
        if h != _NEW:
            return None if h == _NIL else self.ref(h, self.strings)
        s = self.take(self.int_(self.head(), signed=False))
        self.strings.append(s)
        return s

    def class_name(self, h: int) -> bytes | None:
        name = None
        while h == _NEW:
            new = self.string(self.head())
            if new is None:
                raise _Bad("nil class name")
            self.int_(self.head())  # class version
            self.objects.append(_ClassName(new))
            name = new if name is None else name
            h = self.head()
        if h == _NIL:
            return name
        parent = self.ref(h, self.objects)
        if not isinstance(parent, _ClassName):
            raise _Bad("class reference to a non-class")
        return bytes(parent) if name is None else name

    def object(self, h: int) -> Any:
        if h != _NEW:
            return None if h == _NIL else self.ref(h, self.objects)
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _Bad("nesting too deep")
        slot = len(self.objects)
        self.objects.append(None)
        name, groups = self.class_name(self.head()), []
        while (h := self.head()) != _END:
            groups.append([self.value(t) for t in _split(self.string(h) or b"")])
        self.depth -= 1
        self.objects[slot] = value = _interpret(name, groups)
        return value

    def value(self, enc: bytes) -> Any:
        c = enc[0]
        if c == 0x40:  # @ object
            return self.object(self.head())
        if c == 0x2B:  # + length-prefixed bytes
            return self.take(self.int_(self.head(), signed=False))
        if c in b"iIsSlLqQ":
            return self.int_(self.head(), signed=c in b"islq")
        if c in b"cCB":  # single bytes are stored literally, never tagged
            byte = self.head()
            return byte - 256 if c == 0x63 and byte > 0x7F else byte
        if c in b"fd":
            if (h := self.head()) != _FLOAT:
                return float(self.int_(h))
            return struct.unpack("<f" if c == 0x66 else "<d", self.take(4 if c == 0x66 else 8))[0]
        if c == 0x2A:  # * C string: an object-table entry wrapping a shared string
            if (h := self.head()) != _NEW:
                return None if h == _NIL else self.ref(h, self.objects)
            self.objects.append(s := self.string(self.head()))
            return s
        if c in b"%:":
            return self.string(self.head())
        if c == 0x23:  # # class
            return self.class_name(self.head())
        if c == 0x5B:  # [count type]
            inner = enc[1:-1]
            elem = inner.lstrip(b"0123456789")
            count = int(inner[: len(inner) - len(elem)] or b"-1")
            if elem in (b"c", b"C") and count >= 0:
                return self.take(count)
            # "!" reads no bytes: refusing it keeps the work bounded by the blob's size
            if not 0 <= count <= len(self.buf) - self.pos or b"!" in elem or len(_split(elem)) != 1:
                raise _Bad("malformed array")
            return [self.value(elem) for _ in range(count)]
        if c == 0x7B:  # {name=fields}
            inner = enc[1:-1]
            return [self.value(t) for t in _split(inner[inner.find(b"=") + 1 :])]
        if c == 0x21:  # ! ignored field
            return None
        raise _Bad(f"unsupported type encoding {enc!r}")


_SPLIT_CACHE: dict[bytes, list[bytes]] = {}


def _split(enc: bytes) -> list[bytes]:
    """One type encoding per value: b"iI" → [b"i", b"I"], b"{r=ii}c" → [b"{r=ii}", b"c"]."""
    if (cached := _SPLIT_CACHE.get(enc)) is not None:
        return cached
    out, i = [], 0
    while i < len(enc):
        j, depth = i, 0
        while True:
            if j == len(enc):
                raise _Bad("unbalanced type encoding")
            depth += (enc[j] in b"[{(") - (enc[j] in b"]})")
            j += 1
            if depth <= 0:
                break
        out.append(enc[i:j])
        i = j
    if not out:
        raise _Bad("empty type encoding")
    if len(_SPLIT_CACHE) < 512:
        _SPLIT_CACHE[enc] = out
    return out


def _interpret(name: bytes | None, groups: list[list[Any]]) -> Any:
    """Turn the Foundation classes found in message bodies into plain Python values."""
    flat = [v for g in groups for v in g]
    if name in _STRING_CLASSES:
        raw = flat[0] if flat else b""
        return raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else None
    if name == b"NSNumber":
        return flat[-1] if flat else None
    if name == b"NSURL":
        return next((v for v in reversed(flat) if isinstance(v, str)), None)
    if name in _DICT_CLASSES:
        pairs = zip(flat[1::2], flat[2::2], strict=False)
        return {k: v for k, v in pairs if isinstance(k, str | int | float | bytes)}
    if name in _LIST_CLASSES:
        return flat[1:]
    if name in _DATA_CLASSES:
        return flat[-1] if flat and isinstance(flat[-1], bytes) else b""
    return _Obj(name, groups)


def _encode_int(value: int) -> bytes:
    if -110 <= value <= 127:
        return bytes((value & 0xFF,))
    if -32768 <= value <= 32767:
        return b"\x81" + struct.pack("<h", value)
    return b"\x82" + struct.pack("<i", value)


def _new(s: bytes) -> bytes:
    return b"\x84" + _encode_int(len(s)) + s


# The two preambles Messages writes, up to the string's `+` type; the first is also what
# encode_attributed_body writes, byte for byte like the AttributedBodyTextOnly fixture.
_MUTABLE_HEAD = (
    HEADER + _new(b"@") + b"\x84\x84" + _new(b"NSMutableAttributedString") + b"\x00\x84"
    + _new(b"NSAttributedString") + b"\x00\x84" + _new(b"NSObject") + b"\x00\x85\x92\x84\x84"
    + _new(b"NSMutableString") + b"\x01\x84" + _new(b"NSString") + b"\x01\x95" + _new(b"+")
)  # fmt: skip
_PLAIN_HEAD = (
    HEADER + _new(b"@") + b"\x84\x84" + _new(b"NSAttributedString") + b"\x00\x84"
    + _new(b"NSObject") + b"\x00\x85\x92\x84\x84" + _new(b"NSString") + b"\x01\x94" + _new(b"+")
)  # fmt: skip
_PART_ZERO_RUN_TAIL = (
    b"\x92\x84\x84" + _new(b"NSDictionary") + b"\x00\x95" + _new(b"i") + b"\x01\x92\x84\x98\x98"
    + _encode_int(len(PART_KEY)) + PART_KEY.encode() + b"\x86\x92\x84\x84" + _new(b"NSNumber")
    + b"\x00\x84" + _new(b"NSValue") + b"\x00\x95" + _new(b"*") + b"\x84\x9b\x9b\x00\x86\x86"
)  # fmt: skip


def _read_text(buf: bytes) -> str | None:
    r = _Reader(buf)
    for classes in (_ROOT_CLASSES, _STRING_CLASSES):
        if r.string(r.head()) != b"@" or r.head() != _NEW:
            return None
        r.objects.append(None)
        if r.class_name(r.head()) not in classes:
            return None
    if r.string(r.head()) != b"+":
        return None
    raw = r.take(r.int_(r.head(), signed=False))
    return raw.decode("utf-8") if r.head() == _END else None


def decode_attributed_body(blob: bytes | None) -> str | None:
    """The text of an attributedBody blob; None when it is malformed or not a message body."""
    buf = blob if type(blob) is bytes else _as_bytes(blob)
    if not buf:
        return None
    # Matching a whole known preamble reaches the same state as the generic walk (tests compare
    # both paths) in a fraction of the time; this runs once per message on every index.
    pos = len(_MUTABLE_HEAD) if buf.startswith(_MUTABLE_HEAD) else 0
    if not pos and buf.startswith(_PLAIN_HEAD):
        pos = len(_PLAIN_HEAD)
    try:
        if pos and not 0x80 <= (n := buf[pos]) <= 0x91:
            pos += 1
        elif pos and n == 0x81:
            n, pos = buf[pos + 1] | buf[pos + 2] << 8, pos + 3
        else:
            return _read_text(buf) if buf.startswith(HEADER) else None
        end = pos + n
        return buf[pos:end].decode("utf-8") if buf[end] == _END else None
    except _ERRORS:
        return None


def _as_bytes(blob: object) -> bytes | None:
    if isinstance(blob, bytearray | memoryview):
        blob = bytes(blob)
    return blob if isinstance(blob, bytes) and blob.startswith(HEADER) else None


def _read_runs(buf: bytes) -> list[AttributeRun]:
    r = _Reader(buf)
    root = r.object(r.head()) if r.string(r.head()) == b"@" else None
    if not isinstance(root, _Obj):
        raise _Bad("root is not an attributed string")
    spans: list[tuple[int, int, int]] = []
    sets: dict[int, dict[str, Any]] = {}
    start = 0
    for group in root.groups[1:]:
        if len(group) == 2 and all(type(v) is int for v in group):
            spans.append((group[0], start, group[1]))
            start += group[1]
        elif len(group) == 1 and isinstance(group[0], dict) and spans:
            sets.setdefault(spans[-1][0], group[0])
    return [AttributeRun(i, s, n, sets.get(i, {})) for i, s, n in spans]


def _values(runs: list[AttributeRun], key: str) -> tuple[str, ...]:
    found = (run.attributes.get(key) for run in runs)
    return tuple(dict.fromkeys(v for v in found if isinstance(v, str) and v))


def decode_body_details(blob: bytes | None) -> BodyDetails | None:
    """Text plus attachment GUIDs, transcript, mentions, links and runs; None when unreadable."""
    text = decode_attributed_body(blob)
    if text is None:
        return None
    try:
        runs = _read_runs(_as_bytes(blob) or b"")
    except _ERRORS:
        return BodyDetails(text)
    transcripts = _values(runs, TRANSCRIPTION_KEY)
    return BodyDetails(
        text=text,
        transcription=transcripts[0] if transcripts else None,
        attachment_guids=_values(runs, FILE_KEY),
        mentions=_values(runs, MENTION_KEY),
        links=_values(runs, LINK_KEY),
        runs=tuple(runs),
    )


def encode_attributed_body(text: str) -> bytes:
    """A real NSMutableAttributedString typedstream for plain text (one run, message part 0)."""
    raw = text.encode("utf-8")
    out = bytearray(_MUTABLE_HEAD) + _encode_int(len(raw)) + raw + b"\x86"
    if units := len(text.encode("utf-16-le")) // 2:
        out += _new(b"iI") + b"\x01" + _encode_int(units) + _PART_ZERO_RUN_TAIL
    out.append(_END)
    return bytes(out)
