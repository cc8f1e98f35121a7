"""The background chunk writer: writes land in the order given, a failure reaches the caller,
and an aborted run commits no half-streamed append."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper.index.chunk_index import ChunkIndex
from casper.index.chunk_table import pieces_to_arrow
from casper.index.chunk_writer import ChunkWriter
from casper.indexer.chunking import ChunkOptions, chunk_pieces
from casper.records import ChatInfo

CHAT = ChatInfo(3, "g", "Sam", False, ("p_sam",))


def _open(index_dir: Path) -> ChunkIndex:
    return ChunkIndex.open(
        index_dir, embedder_name="hash-64", dim=64, checksum="hash", chunker_version="t"
    )


def _pieces(n: int, word: str = "hello") -> list:
    rows = [(1000.0 + 60 * i, i + 1, "p_sam", f"{word} number {i}", f"g{i}") for i in range(n)]
    return chunk_pieces(rows, CHAT, {"p_sam": "Sam"}, ChunkOptions(3, 1))


def _texts(index: ChunkIndex) -> dict[str, str]:
    rows = index.scan(["id", "text"])
    return dict(zip(rows["id"].to_pylist(), rows["text"].to_pylist(), strict=True))


def test_writes_apply_in_order_and_appends_stream_together(tmp_path: Path) -> None:
    index = _open(tmp_path / "index")
    pieces = _pieces(40)
    first, second, third = pieces[:10], pieces[10:20], pieces[20:]
    changed = _pieces(40, word="edited")[15]
    writer = ChunkWriter(index)
    writer.append(pieces_to_arrow(first, 64))
    writer.append(pieces_to_arrow(second, 64))
    writer.delete([first[0].id])
    writer.upsert(pieces_to_arrow([changed], 64))
    writer.append(pieces_to_arrow(third, 64))
    writer.close()
    texts = _texts(index)
    assert set(texts) == {p.id for p in pieces} - {first[0].id}
    assert texts[changed.id] == changed.text and "edited" in changed.text
    assert texts[pieces[14].id] == pieces[14].text


def test_a_failed_write_is_raised_to_the_caller_and_later_writes_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _open(tmp_path / "index")

    def disk_full(rows: object) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr(index, "upsert_rows", disk_full)
    writer = ChunkWriter(index)
    writer.upsert(pieces_to_arrow(_pieces(5), 64))
    with pytest.raises(OSError, match="No space left"):
        writer.close()
    with pytest.raises(OSError, match="No space left"):
        writer.append(pieces_to_arrow(_pieces(5), 64))


def test_abort_commits_no_half_streamed_append(tmp_path: Path) -> None:
    index = _open(tmp_path / "index")
    writer = ChunkWriter(index)
    writer.append(pieces_to_arrow(_pieces(30), 64))
    writer.abort()
    assert index.count() == 0
    done = ChunkWriter(index)  # the index is still usable afterwards
    done.append(pieces_to_arrow(_pieces(30), 64))
    done.close()
    assert index.count() == len(_pieces(30))


def test_settle_returns_once_everything_queued_is_readable(tmp_path: Path) -> None:
    index = _open(tmp_path / "index")
    pieces = _pieces(30)
    writer = ChunkWriter(index)
    writer.append(pieces_to_arrow(pieces[:10], 64))
    writer.append(pieces_to_arrow(pieces[10:], 64))
    writer.settle()
    assert index.count() == len(pieces)
    writer.delete([pieces[0].id])
    writer.settle()
    assert index.count() == len(pieces) - 1
    writer.close()
