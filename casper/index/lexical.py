"""The alternative lexical leg: rank-bm25's BM25Okapi over the index's chunks, persisted.

The fitted model, ids and filter columns are pickled next to the table (owner-only); a rebuild
re-tokenises only chunks whose content changed.
Imports: numpy, pyarrow, casper.index (chunk_index, chunk_text, vectors); rank_bm25 in `_build`
(a heavy library: only fitting needs it, and unpickling the model loads it by itself).
"""

from __future__ import annotations

import os
import pickle
import re
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from casper.index.chunk_index import ChunkIndex, Filter
from casper.index.chunk_text import unsegmented_text, without_unsegmented
from casper.index.files import BM25_FILE
from casper.index.vectors import FilterColumns, private_files
from casper.records import MESSAGE_UNIT

if TYPE_CHECKING:
    from rank_bm25 import BM25Okapi

SIDECAR = BM25_FILE
FORMAT = 2
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_COLUMNS = ["id", "content_hash", "text", "chat_id", "start", "end", "person_ids"]


class Bm25State(TypedDict):
    """The pickled sidecar: the fitted model and, in table order, each chunk's id, content hash
    and filter columns."""

    format: int
    table_version: int
    ids: list[str]
    hashes: list[str]
    vocab: list[str]  # token id → token
    bm25: BM25Okapi | None  # None for an empty table
    chat_id: list[int]
    start: list[float]
    end: list[float]
    person_ids: list[list[str]]


def tokenize(text: str) -> list[str]:
    """Lowercase words; CJK/emoji runs become character unigrams and bigrams."""
    lowered = text.lower()
    tokens = _WORD.findall(without_unsegmented(lowered))
    for run in unsegmented_text(lowered).split():
        tokens.extend(run)
        tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
    return tokens


class RankBM25Index:
    """BM25Okapi over every window's `text`; rebuilt when the LanceDB table version changes."""

    def __init__(self, index: ChunkIndex, path: Path | None = None) -> None:
        self.index = index
        self.path = path or index.dir / SIDECAR
        self._state: Bm25State | None = None
        self._vocab: dict[str, int] = {}
        self._filters: FilterColumns | None = None

    def refresh(self) -> bool:
        """Bring the model up to the table's version; True when it had to be rebuilt."""
        version = self.index.version
        if self._state is not None and self._state["table_version"] == version:
            return False
        state = self._read()
        rebuilt = state is None or state.get("table_version") != version
        if rebuilt:
            state = self._build(version, state)
            self._write(state)
        assert state is not None
        self._adopt(state)
        return rebuilt

    def _build(self, version: int, old: Bm25State | None) -> Bm25State:
        from rank_bm25 import BM25Okapi

        rows = self.index.scan(_COLUMNS)
        # the windows only: a message alone is searched by LanceDB's own column (one BM25
        # over both would count every message twice)
        windows = pc.invert(pc.ends_with(rows["id"], f":{MESSAGE_UNIT}"))
        rows = rows.filter(windows)
        ids = rows["id"].to_pylist()
        hashes = rows["content_hash"].to_pylist()
        reuse = _reusable(old)
        vocab: dict[str, int] = {}
        docs = []
        for cid, digest, text in zip(ids, hashes, rows["text"].to_pylist(), strict=True):
            tokens = reuse.get((cid, digest)) or tokenize(text or "")
            docs.append([vocab.setdefault(t, len(vocab)) for t in tokens])
        return {
            "format": FORMAT,
            "table_version": version,
            "ids": ids,
            "hashes": hashes,
            "vocab": list(vocab),
            # the fitted model itself: unpickling it is ~3x faster than refitting
            "bm25": BM25Okapi(docs) if docs else None,
            "chat_id": rows["chat_id"].to_pylist(),
            "start": rows["start"].to_pylist(),
            "end": rows["end"].to_pylist(),
            "person_ids": rows["person_ids"].to_pylist(),
        }

    def _adopt(self, state: Bm25State) -> None:
        table = pa.table(
            {
                "chat_id": pa.array(state["chat_id"], pa.int64()),
                "start": pa.array(state["start"], pa.float64()),
                "end": pa.array(state["end"], pa.float64()),
                "person_ids": pa.array(state["person_ids"], pa.list_(pa.string())),
            }
        )
        self._filters = FilterColumns.from_arrow(table)
        self._vocab = {t: i for i, t in enumerate(state["vocab"])}
        self._state = state

    def _read(self) -> Bm25State | None:
        try:
            with self.path.open("rb") as fh:
                # our own file, owner-only, next to the index: a Bm25State when FORMAT matches
                state: Bm25State = pickle.load(fh)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError):
            return None
        return state if isinstance(state, dict) and state.get("format") == FORMAT else None

    def _write(self, state: Bm25State) -> None:
        tmp = self.path.with_suffix(".tmp")
        with private_files():
            with tmp.open("wb") as fh:
                pickle.dump(state, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.path)

    def search(self, query: str, n: int, where: Filter | None = None) -> list[tuple[str, float]]:
        """Top-n (id, BM25) among the windows passing `where`; windows sharing no term are left
        out. The messages alone are not in this backend: none for their unit."""
        if where is not None and where.unit == "message":
            return []
        self.refresh()
        assert self._state is not None and self._filters is not None
        bm25 = self._state["bm25"]
        # words the corpus never uses score 0 in BM25Okapi anyway
        terms = [self._vocab[t] for t in tokenize(query) if t in self._vocab]
        if bm25 is None or not terms or n <= 0:
            return []
        mask = self._filters.mask(where)
        if mask is None:
            rows = np.arange(len(self._state["ids"]))
            scores = np.asarray(bm25.get_scores(terms), dtype=np.float64)
        else:
            rows = np.flatnonzero(mask)
            if not len(rows):
                return []
            scores = np.asarray(bm25.get_batch_scores(terms, rows.tolist()), dtype=np.float64)
        hits = np.flatnonzero(scores > 0)
        if not len(hits):
            return []
        top = hits[np.argsort(-scores[hits], kind="stable")[:n]]
        ids = self._state["ids"]
        return [(ids[rows[i]], float(scores[i])) for i in top]


def _reusable(old: Bm25State | None) -> dict[tuple[str, str], list[str]]:
    """(id, content_hash) → tokens of an earlier build (bag of words: order does not matter)."""
    bm25 = old.get("bm25") if old else None
    if not old or bm25 is None:
        return {}
    vocab = old["vocab"]
    return {
        key: [vocab[t] for t, count in freqs.items() for _ in range(count)]
        for key, freqs in zip(
            zip(old["ids"], old["hashes"], strict=True), bm25.doc_freqs, strict=True
        )
    }
