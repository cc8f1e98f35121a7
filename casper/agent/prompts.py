"""PURE: the texts the agent shows the model: system prompt, tool results, hints and nudges.

Imports: stdlib, casper.protocols and casper.agent.quoting only. Kept short on purpose: small
models have little context.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from casper.agent import quoting

SYSTEM_TEMPLATE = """\
You are Casper. You answer questions about the user's own iMessage history.
Today is {weekday} {today}; time zone {tz}. "I" and "me" mean the user.
Look things up with the tools before answering; never invent messages.
Cite each message you rely on by its id, like [#1234].
If the tools find nothing relevant, say you could not find it.
Answer briefly, in plain text."""

NUDGE_EMPTY = "Your reply was empty. Call a tool, or answer the question."
NUDGE_UNGROUNDED = (
    "Answer from the messages above and cite them like [#1234]. "
    "If none of them answers the question, say you could not find it."
)
EVIDENCE_HEADER = "Messages that may be relevant (cite them like [#1234]):"
NUDGE_NARRATED = "Do not describe what you will do: call the tool now, with a <tool_call> block."
SYNTHESIS = (
    "Stop calling tools. Answer the question now, using only the tool results above. "
    "Cite message ids like [#1234]. If nothing relevant was found, say so."
)
FALLBACK_INTRO = "I could not write an answer, but these results look relevant:"
FALLBACK_NOTHING = "I could not find anything about that in your messages."
TRUNCATION_NOTICE = "[… truncated: {n} more characters not shown]"


def cite_tag(rowid: int) -> str:
    """The marker tool results put on each message line, and answers cite: `[#rowid]`."""
    return f"[#{rowid}]"


OWNER_LINE = 'The user\'s own name is {names}: "{first}" in a question means the user (me).'


def system_prompt(
    today: date, tz_name: str, tools_text: str = "", owner: Sequence[str] = ()
) -> str:
    """The system prompt; `tools_text` is `toolcalls.tools_as_text(...)` for plain templates;
    `owner` the user's own names (the `me_names` setting)."""
    text = SYSTEM_TEMPLATE.format(weekday=today.strftime("%A"), today=today.isoformat(), tz=tz_name)
    if owner:
        names = " / ".join(owner)
        mean = '"I" and "me" mean the user.'
        text = text.replace(mean, f"{mean}\n{OWNER_LINE.format(names=names, first=owner[0])}", 1)
    return f"{text}\n\n{tools_text}" if tools_text else text


def format_tool_result(result_text: str, max_chars: int) -> str:
    """Cap a tool result at `max_chars` (cut at a line end when one is near) plus a notice; a
    framed result (casper.agent.quoting) keeps its closing boundary line after the notice."""
    if len(result_text) <= max_chars:
        return result_text
    framed = quoting.framed_parts(result_text)
    if framed is not None:
        inner, close = framed
        return f"{format_tool_result(inner, max(1, max_chars - len(close) - 1))}\n{close}"
    cut = result_text.rfind("\n", 0, max_chars + 1)
    if cut < max_chars // 2:
        cut = max_chars
    kept = result_text[:cut].rstrip()
    notice = TRUNCATION_NOTICE.format(n=len(result_text) - len(kept))
    return f"{kept}\n{notice}"


def format_hints(hints: Sequence[str]) -> str:
    """Hints (e.g. resolved dates) appended under the question; empty when there are none."""
    kept = [h.strip() for h in hints if h.strip()]
    if not kept:
        return ""
    return "Notes:\n" + "\n".join(f"- {h}" for h in kept)


def evidence_block(result_text: str) -> str:
    """The prefetched messages under a short header; empty when there are none."""
    return f"{EVIDENCE_HEADER}\n{result_text.strip()}" if result_text.strip() else ""


def user_message(question: str, hints: Sequence[str] = (), evidence: str = "") -> str:
    """The user turn: the question, then the prefetched evidence, then any hints."""
    parts = [question.strip(), evidence, format_hints(hints)]
    return "\n\n".join(p for p in parts if p)


def nudge_malformed(errors: Sequence[str]) -> str:
    """Tell the model its tool call could not be read, showing (the start of) what it wrote."""
    shown = "; ".join(_clip(e, 200) for e in errors[:2])
    return (
        f"Your tool call could not be parsed: {shown}. Call the tool again with valid JSON: "
        '<tool_call>{"name": "...", "arguments": {...}}</tool_call>'
    )


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"
