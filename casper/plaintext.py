"""PURE: text with nothing in it that is not text.

What people wrote (a message, a contact's or a group's name, an attachment's file name) may hold
bytes a terminal acts on: ESC sequences that clear the screen, set the window title or make an
OSC 8 hyperlink, C1 controls (U+009B is a CSI of its own), a carriage return that overwrites the
line. `plain` takes them out before such text reaches a terminal or a document another program
renders (a Markdown export); the console every command prints with applies it to everything
it is given (casper.cli.render.console).

`INVISIBLE` is a regex character class of what shows nothing — every format character (Unicode
category Cf: soft hyphen, zero-width space and joiners, word joiner, direction marks, BOM, tag
characters), the fillers, the combining grapheme joiner and the variation selectors: the tag
escaping (casper.agent.quoting) and the redaction (casper.agent.redact) read past them as a
model or a person does.

Imports: stdlib only.
"""

from __future__ import annotations

import re

# a whole escape sequence: CSI (ESC [ or U+009B) with its parameters and final byte; a string
# sequence (OSC, DCS, SOS, PM, APC: ESC ] P X ^ _ or their C1 forms) up to its terminator (BEL,
# ST) or the next ESC when it has none; any other ESC with its intermediates and final byte
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
# what is left: C0 but tab and newline, DEL, C1; and the bidirectional embeddings, overrides
# and isolates, which make a terminal show text in another order than it is (a name that
# reads `exe.txt` backwards); the left-to-right and right-to-left marks stay
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# Unicode's format characters (Cf, as of Unicode 15.1: a test holds this to the running
# Python's tables) and the other characters that print nothing
INVISIBLE = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
    "\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0\ufe00-\ufe0f\U000e0100-\U000e01ef"
)


def plain(text: str) -> str:
    """`text` without escape sequences (whole), control characters (tab and newline stay) and
    bidirectional overrides."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub("", _SEQUENCE.sub("", text))


def one_line(text: str) -> str:
    """`plain(text)` on one line: line breaks (of any kind) become spaces (a name, a title)."""
    return " ".join(plain(text).replace("\u2028", "\n").replace("\u2029", "\n").split("\n"))


def has_control(text: str) -> bool:
    """Does `text` hold a control character `plain` would take out?"""
    return _CONTROL.search(text) is not None
