"""Everything `casper mcp` hands a client passes the ceiling, not only the tool's text: the notes
added to it, the structured notices and citations, and an error the call raised. Driven through
the SDK's own client against `build_server`, with a session that says what a search could say
(a notice naming a number, an error quoting one)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from casper.errors import CasperError
from tests.hostile_text import CONTROL, ESC_BODY

PHONE = "415 - 555 - 0199"


class SayingSession:
    """A stand-in for casper.cli.transport.Session: one scripted tool document, one notice."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def answer(self, request: Any, on_event: Any = None) -> dict[str, Any]:
        if on_event is not None:
            on_event({"event": "notice", "text": f"a chat named {PHONE} {ESC_BODY} was skipped"})
        if self.fail:
            raise CasperError(f"no contact named {PHONE}", hint=f"try {PHONE} \x1b[2J again")
        when = "2024-03-01T12:00:00+00:00"
        citation = {"guid": "G", "id": 7, "time": when, "rowid": 7, "ts": when,
                    "sender": f"Eve {PHONE}", "chat": f"Fam {PHONE} {ESC_BODY}",
                    "text": f"call {PHONE} {ESC_BODY}"}  # fmt: skip
        return {
            "tool": request.name,
            "arguments": {},
            "ok": True,
            "text": "[#7] ok",
            "citations": [citation],
            "words_not_found": [],
            "indexed_through": None,
        }


def _call(session: SayingSession, privacy: str) -> Any:
    from mcp import Client

    from casper.cli.mcp import build_server

    server = build_server(session, privacy=privacy)  # type: ignore[arg-type]

    async def main() -> Any:
        async with Client(server) as client:
            return await client.call_tool("search_messages", {"query": "x"})

    return anyio.run(main)


def _everything(result: Any) -> str:
    text = "\n".join(c.text for c in result.content)
    return text + "\n" + json.dumps(result.structured_content or {}, ensure_ascii=False)


@pytest.mark.parametrize("fail", [False, True], ids=["a result", "an error"])
def test_redacted_masks_notes_notices_citations_and_errors(fail: bool) -> None:
    shown = _everything(_call(SayingSession(fail), "redacted"))
    assert "0199" not in shown, shown
    assert not CONTROL.search(shown.replace("\\u001b", "\x1b")), shown


def test_full_still_quotes_what_the_client_reads() -> None:
    result = _call(SayingSession(), "full")
    cited = result.structured_content["citations"][0]
    assert "blorf" in cited["text"] and not CONTROL.search(cited["text"]), cited
    assert not [n for n in result.structured_content["notices"] if CONTROL.search(n)]
