"""Terminal views built from the `--json` documents, so the service path and the in-process
path print the same thing. Stdlib + rich markup only (the thin client imports this)."""

from __future__ import annotations

from typing import Any


def esc(text: str) -> str:
    """Escape rich markup in user text."""
    return text.replace("[", "\\[")


def when(iso: str | None, width: int = 16) -> str:
    return (iso or "")[:width].replace("T", " ")


def hits_lines(hits: list[dict[str, Any]]) -> list[str]:
    """`search` results: one heading per chunk, then its messages with their ids."""
    lines: list[str] = []
    for n, hit in enumerate(hits, 1):
        lines.append(
            f"[bold]{n}. {esc(hit['chat'] or '')}[/]  "
            f"[dim]{when(hit['start'], 10)} · score {hit['score']:.3f}[/]"
        )
        for m in hit["messages"]:
            lines.append(
                f"   [dim]{when(m['ts'])}[/]  [cyan]{esc(m['sender'])}[/]: {esc(m['text'])}"
                f"  [dim]#{m['rowid']}[/]"
            )
    return lines


def message_line(m: dict[str, Any]) -> str:
    """`2024-03-02 18:04  Sam: text  [#123]` (plain text; the caller escapes it)."""
    body = m.get("event") if m.get("kind") == "system" and m.get("event") else m.get("text")
    extra = ""
    if m.get("reactions"):
        extra += "  " + " ".join(label for _, label in m["reactions"])
    if m.get("edited"):
        extra += "  (edited)"
    return f"{when(m['ts'])}  {m['sender']}: {body}{extra}  [#{m['rowid']}]"
