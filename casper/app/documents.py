"""The `--json` shapes from CLI.md, built from the store's records (terminal views of these
documents are in casper.cli.views).

Imports: stdlib, casper.protocols, casper.records, casper.dates.zones, casper.search.words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import tzinfo
from typing import Any

from casper.dates.zones import iso
from casper.protocols import Hit
from casper.records import Person, StoredMessage


def message_json(m: StoredMessage, names: Mapping[str, str], tz: tzinfo) -> dict[str, Any]:
    data: dict[str, Any] = {
        "rowid": m.rowid,
        "guid": m.guid,
        "ts": iso(m.ts, tz),
        "sender": names.get(m.sender, m.sender),
        "text": m.text,
        "chat_id": m.chat_id,
        "kind": m.kind,
    }
    if m.edited:
        data["edited"] = True
    if m.reply_to:
        data["reply_to"] = m.reply_to
    if m.reactions:
        data["reactions"] = [[names.get(s, s), label] for s, label in m.reactions]
    if m.attachments:
        data["attachments"] = [{"name": n, "mime": mime} for n, mime in m.attachments]
    if m.event:
        data["event"] = m.event
    return data


def stats_json(person: Person, stats: Mapping[str, Any], tz: tzinfo) -> dict[str, Any]:
    person_json = {"id": person.id, "name": person.name, "handles": list(person.handles)}
    out: dict[str, Any] = {"person": person_json}
    out.update(stats)
    out["first"] = iso(stats.get("first"), tz)
    out["last"] = iso(stats.get("last"), tz)
    return out


def hit_json(hit: Hit, tz: tzinfo, words: Sequence[str] = ()) -> dict[str, Any]:
    """One hit; `matched_words`: which of the searched `words` its messages contain."""
    from casper.search.words import matched

    return {
        "chunk_id": hit.chunk_id,
        "chat": hit.chat,
        "score": round(hit.score, 6),
        "start": iso(hit.start, tz),
        "end": iso(hit.end, tz),
        "participants": list(hit.participants),
        "messages": [
            {
                "rowid": m.rowid,
                "guid": m.guid,
                "ts": iso(m.ts, tz),
                "sender": m.sender,
                "text": m.text,
            }
            for m in hit.messages
        ],
        "matched_words": matched(words, (m.text for m in hit.messages)),
    }


def index_json(run: Any, tz: tzinfo) -> dict[str, Any]:
    """`index --json` from an IndexRunReport (casper.indexer.run): the ingest report, the
    coverage as timestamps, the vectors (`vectors_new`: embedded by this run) and where and how
    fast the embedder ran."""
    from casper.indexer.run import placement_of

    report = run.ingest
    data: dict[str, Any] = report.to_dict()
    data["coverage"] = {k: iso(v, tz) for k, v in report.coverage.items()}
    fill = run.vectors
    data["vectors_done"], data["vectors_total"] = (fill.done, fill.total) if fill else (0, 0)
    embedded = fill.embedded if fill else 0
    data["vectors_new"] = embedded
    spent = report.timings.get("embed", 0.0)
    data["embed_chunks_per_s"] = round(embedded / spent, 1) if embedded and spent > 0 else None
    placement = placement_of(run.embedder)
    data["embedder"] = None if placement is None else {
        "backend": placement.backend, "device": placement.device,
        "threads": placement.threads, "notice": placement.notice,
    }  # fmt: skip
    return data
