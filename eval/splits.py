"""PURE tune/report halves, so a setting chosen on one half can be reported on the other.

LoCoMo is split by conversation: conv-26 … conv-43 is the tune half (five conversations), the
rest the report half. Every other set is split by question: a hash of the question's id, so a
question stays in its half whatever else changes, and both styles of a question (first person,
verbatim) share an id and so a half.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from casper.errors import CasperError
from eval.gold import GoldItem

SPLITS = ("all", "tune", "report")
LOCOMO_TUNE = range(26, 44)  # conv-26 … conv-43
_CONV = re.compile(r"^conv-(\d+)$")


def check(split: str) -> str:
    """The split, or CasperError naming the choices."""
    if split not in SPLITS:
        raise CasperError(f"unknown split {split!r}", hint="use --split tune, report or all")
    return split


def question_half(question_id: str) -> str:
    """`tune` or `report`, from the first byte of the id's SHA-256 (deterministic, ~50/50)."""
    return "tune" if hashlib.sha256(question_id.encode()).digest()[0] % 2 == 0 else "report"


def conversation_half(sample_id: str) -> str:
    """A LoCoMo conversation's half: conv-26 … conv-43 tune, the rest report (by hash if the
    id is not shaped conv-N)."""
    m = _CONV.match(sample_id)
    if m is None:
        return question_half(sample_id)
    return "tune" if int(m[1]) in LOCOMO_TUNE else "report"


def in_split(half: str, split: str) -> bool:
    return split == "all" or half == split


def keep(items: Iterable[GoldItem], split: str) -> list[GoldItem]:
    """The questions of `split`, each in its `question_half`."""
    return [i for i in items if in_split(question_half(i.id), split)]
