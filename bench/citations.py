"""The citation check (casper/agent/quotes.py) measured on answers built from the demo corpus.

Run `python -m bench.citations --home DIR` on a home with the demo indexed (`casper demo`
makes one). Writes bench/results/citations.md; tests/integration/test_citation_check.py builds
the same report from its own indexed demo and requires the committed file to equal it, so the
figures in docs/reliability.md#misquoted-citations are what the code does today. Times are
written and judged in UTC, so the report is the same whatever zone the home is in.

- *Misattributed*: a real `[#rowid]` with the words of a message from another chat (as a
  transcript line the tag leads or ends, a quotation after or before the tag, a quoted part),
  the words of the message next to it, another sender's name on its words, another day and time
  on it, and two reported cases (`[#id] … Sam Rivera: I'm planning to celebrate my …`). Each
  must be caught: the line corrected and marked, or the quotation marked and uncited.
- *Faithful*: the cited message's own words (whole, a part, retyped in other case and
  punctuation, a word dropped, curly quotes), with its day and time, under the sender's first
  name, and paraphrases in the answer's own words. None may be flagged.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo

from casper.agent import quotes
from casper.agent.verify import cited, people
from casper.store.db import Store

RESULTS = Path(__file__).resolve().parent / "results" / "citations.md"
UTC = ZoneInfo("UTC")
PER_KIND = 8  # cases per way of writing a claim
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Case:
    kind: str
    faithful: bool
    answer: str
    rowid: int  # the message the answer cites
    cited_text: str  # what that message says


def _eligible(store: Store) -> list[tuple[int, str, str, int]]:
    """(rowid, sender name, text, chat id) of text messages of 4 words or more, in rowid order."""
    names = store.names()
    rows = store.conn.execute(
        "SELECT rowid, sender, text, chat_id FROM messages WHERE kind = 'text' ORDER BY rowid"
    ).fetchall()
    return [
        (r, names.get(s, s), t, c)
        for r, s, t, c in rows
        if t and len(_WORD.findall(t)) >= 4 and "[#" not in t and '"' not in t
    ]


def build_cases(store: Store) -> list[Case]:
    """The cases, the same for the same store: messages picked at fixed strides."""
    pool = _eligible(store)
    step = max(1, len(pool) // (PER_KIND * 6))
    picked = pool[::step]
    texts = {r: t for r, _, t, _ in pool}
    cases: list[Case] = []
    # misattributed: the words of a message from another chat, on this message's id
    forms = (
        ("transcript, tag first", lambda r, who, t: f"[#{r}] {who}: {t}"),
        ("transcript, tag last", lambda r, who, t: f"- {who}: {t} [#{r}]"),
        ("quotation, tag after", lambda r, who, t: f'{who} said "{t}" [#{r}].'),
        ("quotation, tag before", lambda r, who, t: f"In [#{r}] {who} wrote “{t}”."),
        (
            "quoted part",
            lambda r, who, t: f'They agreed: "{" ".join(t.split()[:6])}" [#{r}]',
        ),
    )
    for i, (name, form) in enumerate(forms):
        for j in range(PER_KIND):
            cited = picked[(i * PER_KIND + j) % len(picked)]
            other = next(
                p
                for p in picked[(i * PER_KIND + j + len(picked) // 2) % len(picked) :] + picked
                if p[3] != cited[3]
            )
            if _norm(other[2]) in _norm(cited[2]):
                continue  # the other message's words are really there: no misquote
            answer = form(cited[0], cited[1], other[2])
            cases.append(Case(f"misquote: {name}", False, answer, cited[0], cited[2]))
    cases += _neighbour_cases(store, picked)
    cases += _issue_cases(store, texts)
    # faithful: the cited message's own words, or its neighbour's, or a paraphrase
    keep = (
        ("transcript, tag first", lambda r, who, t: f"[#{r}] {who}: {t}"),
        ("with its time", lambda r, who, t: f"[#{r}] {_when(store, r)} {who}: {t}"),
        ("first name", lambda r, who, t: f"- {who.split()[0]}: {t} [#{r}]"),
        ("transcript, tag last", lambda r, who, t: f"- {who}: {t} [#{r}]"),
        ("quotation", lambda r, who, t: f'{who} said "{t}" [#{r}].'),
        ("quoted part", lambda r, who, t: f'{who} wrote "{" ".join(t.split()[1:5])}" [#{r}]'),
        ("retyped", lambda r, who, t: f"[#{r}] {who}: {_retyped(t)}"),
        ("a word dropped", lambda r, who, t: f"“{_dropped(t)}” [#{r}]"),
        ("paraphrase", lambda r, who, t: f"{who} brought up {_topic(t)} [#{r}]."),
    )
    for i, (name, form) in enumerate(keep):
        for j in range(PER_KIND // 2 + 1):
            cited = picked[(i * 5 + j * 3 + 1) % len(picked)]
            cases.append(Case(f"faithful: {name}", True, form(*cited[:3]), cited[0], cited[2]))
    return cases


def _neighbour_cases(store: Store, picked: list[tuple[int, str, str, int]]) -> list[Case]:
    """What is right next to the cited message put on it: the next message's words, another
    sender's name, another day and time."""
    cases: list[Case] = []
    for j in range(PER_KIND):
        rowid, who, text, _ = picked[(j * 7 + 2) % len(picked)]
        message = store.message(rowid)
        assert message is not None
        near = [m for m in store.context(message, 1, 1) if m.rowid != rowid and m.text]
        if near and _norm(near[0].text) not in _norm(text):
            answer = f'Right after, "{near[0].text}" [#{rowid}]'
            cases.append(Case("misquote: the next message's words", False, answer, rowid, text))
        names = store.names()
        other = next((names.get(m.sender, m.sender) for m in near if m.sender != message.sender),
                     None)  # fmt: skip
        if other is not None and other != "me":
            answer = f'{other} said "{text}" [#{rowid}].'
            cases.append(Case("misquote: another sender", False, answer, rowid, text))
        if near and _when(store, near[0].rowid)[:10] != _when(store, rowid)[:10]:
            answer = f"[#{rowid}] {_when(store, near[0].rowid)} {who}: {text}"
            cases.append(Case("misquote: another day", False, answer, rowid, text))
    return cases


def _when(store: Store, rowid: int) -> str:
    return cited(store, (rowid,), UTC)[rowid].when


def _issue_cases(store: Store, texts: dict[int, str]) -> list[Case]:
    """Reported answers: quotes from other conversations on real ids, and a real small
    model's (SmolLM2 through mlx_lm.server) words of a neighbour with its sender and time."""
    short = store.conn.execute(
        "SELECT rowid, text FROM messages WHERE kind = 'text' AND text = 'you?' LIMIT 1"
    ).fetchone() or next(iter(texts.items()))
    market = (
        store.conn.execute(
            "SELECT rowid, text FROM messages WHERE text LIKE '%farmers market probably%' LIMIT 1"
        ).fetchone()
        or list(texts.items())[-1]
    )

    def said(text: str) -> tuple[int, str]:
        found = store.conn.execute(
            "SELECT rowid, text FROM messages WHERE text = ? ORDER BY rowid LIMIT 1", (text,)
        ).fetchone()
        return found or next(iter(texts.items()))

    turkey, seven = said("perfect, I'll do the turkey and stuffing"), said("yes! 7?")
    return [
        Case(
            "misquote: reported",
            False,
            f"[#{turkey[0]}] 2023-11-28 15:35 Sam Rivera: I'm in.",
            *turkey,
        ),  # fmt: skip
        Case(
            "misquote: reported",
            False,
            f"[#{seven[0]}] 2023-12-16 17:41 Dana Okafor: 7:30 works",
            *seven,
        ),  # fmt: skip
        Case(
            "misquote: reported",
            False,
            f"[#{short[0]}] … Sam Rivera: I'm planning to celebrate my 2023-11-28th birthday…",
            short[0],
            short[1],
        ),
        Case(
            "misquote: reported",
            False,
            f"[#{market[0]}] Alex Chen: same energy as me and the dentist",
            market[0],
            market[1],
        ),
    ]


def _retyped(text: str) -> str:
    return re.sub(r"[^\w\s]", "", text).upper().replace("'", "\u2019")


def _dropped(text: str) -> str:
    words = text.split()
    return " ".join(words[:-1]) if len(words) > 4 else text


def _topic(text: str) -> str:
    words = [w for w in _WORD.findall(text) if len(w) > 3][:2]
    return " and ".join(words) or "it"


def _norm(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def judge(store: Store, case: Case) -> bool:
    """True when the check flags the case's citation (corrects and marks its line, or marks
    the quotation and drops the tag)."""
    found = quotes.check(case.answer, cited(store, (case.rowid,), UTC), people(store))
    return case.rowid in found.misattributed


def report(store: Store) -> str:
    cases = build_cases(store)
    flagged = [judge(store, c) for c in cases]
    bad = [f for c, f in zip(cases, flagged, strict=True) if not c.faithful]
    good = [f for c, f in zip(cases, flagged, strict=True) if c.faithful]
    lines = [
        "# The citation check on the demo corpus",
        "",
        "Generated by `python -m bench.citations --home DIR` (and checked by",
        "tests/integration/test_citation_check.py); what the cases are: bench/citations.py.",
        "",
        f"- misattributed answers caught: **{sum(bad)} of {len(bad)}** "
        f"(catch rate {sum(bad) / len(bad):.0%})",
        f"- faithful answers flagged: **{sum(good)} of {len(good)}** "
        f"(false-flag rate {sum(good) / len(good):.0%})",
        "",
        "| kind | answer | cited message says | flagged |",
        "|---|---|---|---|",
    ]
    for case, flag in zip(cases, flagged, strict=True):
        lines.append(
            f"| {case.kind} | {_cell(case.answer)} | {_cell(case.cited_text)} | "
            f"{'yes' if flag else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= 90 else text[:89] + "…"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True, help="a home with the demo indexed")
    args = parser.parse_args()
    store = Store.open(args.home / "casper.sqlite", create=False)
    RESULTS.write_text(report(store))
    print(RESULTS)


if __name__ == "__main__":
    main()
