"""`casper chat` history: persisted in the data dir (0600), bounded by a token budget.

Older turns beyond the budget are folded into a one-line summary. Imports: stdlib.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

CHARS_PER_TOKEN = 4  # rough, but only used to bound prompt growth


@dataclass
class History:
    path: Path
    budget_tokens: int = 2000
    turns: list[tuple[str, str]] = field(default_factory=list)
    summary: str = ""

    @classmethod
    def load(cls, path: Path, budget_tokens: int = 2000) -> History:
        try:
            data = json.loads(path.read_text())
            turns = [(q, a) for q, a in data.get("turns", [])]
            return cls(path, budget_tokens, turns, data.get("summary", ""))
        except (OSError, ValueError):
            return cls(path, budget_tokens)

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
        hints += [f"Earlier question: {q} — your answer: {a[:300]}" for q, a in self.turns[-3:]]
        return tuple(hints)

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"turns": self.turns, "summary": self.summary}, f)
