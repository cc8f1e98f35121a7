"""The search modes and lexical backends, named once: the CLI's choices, the request checks and
the Retriever all read them from here.

Imports: stdlib only (the CLI reads it at import time, before anything heavy loads).
"""

from __future__ import annotations

from typing import Literal, get_args

Mode = Literal["hybrid", "bm25", "vector"]
Lexical = Literal["lancedb", "rank-bm25"]
MODES: tuple[Mode, ...] = get_args(Mode)
LEXICAL: tuple[Lexical, ...] = get_args(Lexical)
