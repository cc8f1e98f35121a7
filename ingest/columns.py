"""chat.db message columns carried as they are into Casper's store: one declaration each.

A `Carried` column is read from chat.db by every reader (`NULL` where this chat.db lacks the
column: an older macOS), travels on `Message.carried` / `MessageRow.carried` in declaration
order, is written by every store insert (the single reader's, an ingest worker's staging file,
an edit) to the store column of the same name, and comes back on `StoredMessage.carried`, which
`show --json` writes under that name. With `words`, its value is searched too: the words are
added to the message's line in the chunk text. The store column itself is a migration in
casper/store/schema.py. The recipe: docs/development.md, "Adding a chat.db column".

Columns that need Python to make sense of them (bodies, dates, tapbacks) are not carried: the
row converter (`ingest.row_convert`) reads those by position from `ingest.queries`.

Imports: stdlib only (the readers, the store and the chunker all read these declarations).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

Value = str | int | float | None  # a value as SQLite returns it (BLOBs are not carried)


@dataclass(frozen=True, slots=True)
class Carried:
    """One chat.db message column stored as it is."""

    name: str  # the store column, the key in `carried` and in `show --json`
    column: str  # the chat.db `message` column it needs: NULL is read where it is missing
    sql: str = ""  # what is read, over `m.<column>` (SQL, so no Python runs per row); default: it
    words: Callable[[Value], str] | None = None  # its words in the chunk text (None: unsearched)

    @property
    def select(self) -> str:
        return self.sql or f"m.{self.column}"


# Every carried column, in the order of `Message.carried` and of the store's columns after the
# fixed ones. Adding one here needs its store column (a migration) in the same change.
CARRIED: tuple[Carried, ...] = ()

NAMES: tuple[str, ...] = tuple(c.name for c in CARRIED)
SEARCHED: tuple[Carried, ...] = tuple(c for c in CARRIED if c.words is not None)


def searched_text(text: str, values: Sequence[Value]) -> str:
    """A message's text as the chunk text holds it: its text, then the words of each searched
    column that has a value (`values` in SEARCHED order)."""
    words = [c.words(v) for c, v in zip(SEARCHED, values, strict=True) if v is not None and c.words]
    return " ".join((text, *words)) if words else text
