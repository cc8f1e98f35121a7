"""`casper chat` history: persisted in the data dir (0600), bounded by a token budget.

Older turns beyond the budget are folded into a one-line summary. Imports: stdlib; the salvage of
a damaged file inside its function (a CLI module imports no work at its top, tests/test_layers.py).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

CHARS_PER_TOKEN = 4  # rough, but only used to bound prompt growth
SHOWN = 3  # earlier turns the model is given word for word (older ones: their topics)


@dataclass
class History:
    path: Path
    budget_tokens: int = 2000
    turns: list[tuple[str, str]] = field(default_factory=list)
    summary: str = ""
    saved: float | None = None  # when it was last written (UTC seconds): "continuing … from"

    # a saved history that did not read, moved aside (kept for the user) before a new one
    # is written in its place: (where it went, why)
    moved_aside: tuple[Path, str] | None = None

    @classmethod
    def load(cls, path: Path, budget_tokens: int = 2000) -> History:
        """The saved history; empty when there is none. One that does not read as a history
        (a folder in its place, no permission, not JSON) is moved aside first, so this
        session's turns never overwrite it; `moved_aside` says where."""
        try:
            data = json.loads(path.read_text())
            turns = [(str(q), str(a)) for q, a in data.get("turns", [])]
            summary = data.get("summary", "")
            saved = data.get("saved")
            if not isinstance(saved, int | float):  # written before it said when
                saved = path.stat().st_mtime
            summary = summary if isinstance(summary, str) else ""
            return cls(path, budget_tokens, turns, summary, float(saved))
        except FileNotFoundError:
            return cls(path, budget_tokens)
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            fresh = cls(path, budget_tokens)
            why = exc.strerror if isinstance(exc, OSError) else "not a saved chat history"
            fresh.moved_aside = _aside(path, str(why))
            return fresh

    def add(self, question: str, answer: str) -> None:
        self.turns.append((question, answer))
        self._fit()

    def clear(self) -> None:
        self.turns, self.summary = [], ""
        self.save()

    def _size(self) -> int:
        return (len(self.summary) + sum(len(q) + len(a) for q, a in self.turns)) // CHARS_PER_TOKEN

    def _fit(self) -> None:
        """Fold the oldest turns into the summary until the history fits the budget."""
        while self.turns and self._size() > self.budget_tokens:
            q, _a = self.turns.pop(0)
            topics = (
                self.summary.removeprefix("Earlier the user asked about: ") + "; " + q[:80]
            ).strip("; ")
            self.summary = "Earlier the user asked about: " + topics[-400:]

    def as_hints(self) -> tuple[str, ...]:
        hints = [self.summary] if self.summary else []
        hints += [f"Earlier question: {q} — your answer: {a[:300]}" for q, a in self.turns[-SHOWN:]]
        return tuple(hints)

    def opening(self, day: str | None) -> str:
        """The line `casper chat` starts with: what the model will see of earlier chats."""
        if not self.turns and not self.summary:
            return "starting fresh: no earlier turns"
        n = len(self.turns)
        said = f"continuing {n} earlier turn{'s' if n != 1 else ''}" + (
            f" from {day}" if day else ""
        )
        if n > SHOWN or self.summary:
            said += f" (the model sees the last {min(n, SHOWN)} and the topics of older ones)"
        return said + "; /clear starts fresh"

    def save(self) -> bool:
        """Write the history (0600); False when its file cannot be written (a folder in its
        place, no permission): the session goes on with the history in memory."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                self.saved = time.time()
                json.dump({"turns": self.turns, "summary": self.summary, "saved": self.saved}, f)
        except OSError:
            return False
        return True


def _aside(path: Path, why: str) -> tuple[Path, str] | None:
    from casper.indexer.salvage import move_aside

    try:
        return move_aside(path), why
    except OSError:  # a data dir that cannot be written: the session keeps it in memory
        return None
