"""Gold question files (CLI.md format): load, validate, write.

Questions with no relevant guids are unanswerable: they test abstention and are left out of
recall averages.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from casper.errors import CasperError

FORMAT_HINT = (
    'one JSON object per line: {"id": str, "question": str, "relevant_message_guids": [str], '
    '"category": str|null, "expected": {...}|null}'
)


class GoldError(CasperError):
    default_hint = FORMAT_HINT


@dataclass(frozen=True, slots=True)
class GoldItem:
    """One question with its relevant message guids."""

    id: str
    question: str
    relevant: tuple[str, ...] = ()
    category: str | None = None
    expected: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def answerable(self) -> bool:
        return bool(self.relevant)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.question,
            "relevant_message_guids": list(self.relevant),
            "category": self.category,
            "expected": dict(self.expected) if self.expected is not None else None,
        }


def parse_item(obj: Any, where: str = "item") -> GoldItem:
    """Validate one decoded JSON object; raises GoldError naming the problem."""
    if not isinstance(obj, dict):
        raise GoldError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    for key in ("id", "question"):
        if not isinstance(obj.get(key), str) or not obj[key].strip():
            raise GoldError(f"{where}: '{key}' must be a non-empty string")
    guids = obj.get("relevant_message_guids", [])
    if not isinstance(guids, list) or not all(isinstance(g, str) and g for g in guids):
        raise GoldError(f"{where}: 'relevant_message_guids' must be a list of strings")
    category = obj.get("category")
    if category is not None and not isinstance(category, str):
        raise GoldError(f"{where}: 'category' must be a string or null")
    expected = obj.get("expected")
    if expected is not None and not isinstance(expected, dict):
        raise GoldError(f"{where}: 'expected' must be an object or null")
    if expected is not None:
        contains = expected.get("answer_contains")
        if contains is not None and not (
            isinstance(contains, list) and all(isinstance(c, str) for c in contains)
        ):
            raise GoldError(f"{where}: 'expected.answer_contains' must be a list of strings")
    guids = list(dict.fromkeys(guids))  # repeated guids would inflate |R|
    return GoldItem(obj["id"], obj["question"], tuple(guids), category, expected)


def load_gold(path: Path) -> list[GoldItem]:
    """Read a gold JSONL file (blank lines and `#` comments skipped); ids must be unique."""
    path = Path(path)
    if not path.is_file():
        raise GoldError(f"gold file not found: {path}", hint="pass an existing .jsonl file")
    items: list[GoldItem] = []
    seen: set[str] = set()
    for lineno, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path.name}:{lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise GoldError(f"{where}: not valid JSON ({exc.msg})") from None
        item = parse_item(obj, where)
        if item.id in seen:
            raise GoldError(f"{where}: duplicate id {item.id!r}")
        seen.add(item.id)
        items.append(item)
    if not items:
        raise GoldError(f"{path} holds no questions")
    return items


def write_gold(items: Iterable[GoldItem], path: Path) -> Path:
    """Write items as JSONL (the inverse of load_gold)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(item.to_dict(), ensure_ascii=False) for item in items]
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path
