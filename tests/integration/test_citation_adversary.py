"""An adversary's model replies against the citation check: what a reader would take for a
citation or an attribution, written the ways a model writes them (loose tags, list numbers, the
name after the quotation, other verbs, counts in words), through the same path every model
answer takes (casper.agent.answer.answer_question with a scripted model, on the demo store).

Each case is a line the reader must not see unmarked: the probe table with what held and what
is still open is bench/results/citation_adversary.md. Open cases are xfail(strict=True) with
why; they pass the day the check learns them.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from casper.agent.answer import Asked, answer_question
from casper.agent.core import Limits
from casper.agent.quotes import CUT_OFF, MARKS
from casper.protocols import Hit, HitMessage
from casper.store.db import Store
from tests.fakes import SameAnswer
from tests.model_servers import LOOPBACK, scripted_server

TZ = ZoneInfo("America/Los_Angeles")
NOW = datetime(2024, 11, 1, 12, tzinfo=TZ)
# the demo's Thanksgiving thread (local time): #2442 Sam "YES. I'm in" 18:42, #2443 Sam "I'll
# bring the pumpkin pie and mashed potatoes" 18:42, #2447 the owner's "perfect, I'll do the
# turkey and stuffing" 18:43, #2448 Sam "should I bring wine too" 18:44
FOUND = (2441, 2442, 2443, 2447, 2448, 2606, 2607, 2608)
ANCHOR = "[#2442] 2023-11-03 18:42 Sam Rivera: YES. I'm in"  # a line that holds: the answer is kept
OWNER = "I'll do the turkey and stuffing"
WINE = "should I bring wine too"
PIE = "I'll bring the pumpkin pie"
ZW = "\u200b"


@pytest.fixture(scope="module")
def store(
    indexed_template: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    home = tmp_path_factory.mktemp("adversary") / "home"
    shutil.copytree(indexed_template[0], home)
    store = Store.open(home / "casper.sqlite", create=False)
    yield store
    store.close()


def searching(store: Store, rowids: Sequence[int]) -> Callable[..., list[Hit]]:
    names, chats = store.names(), {c.id: c.name for c in store.chats()}
    hits = []
    for rowid in rowids:
        m = store.message(rowid)
        assert m is not None
        sender = "me" if m.sender == "me" else names.get(m.sender, m.sender)
        message = HitMessage(rowid, m.guid, m.ts, sender, m.text)
        hits.append(Hit(f"c{rowid}", chats.get(m.chat_id, "?"), 1.0, m.ts, m.ts, (), (message,)))
    return lambda query, **options: list(hits)


def answered(store: Store, reply: str, question: str = "what did Sam say about the pie?") -> Asked:
    return answer_question(
        question, store=store, search=searching(store, FOUND), engine=SameAnswer(reply), tz=TZ,
        limits=Limits(max_iterations=2), now=NOW,
    )  # fmt: skip


def unmarked(answer: str, words: str) -> list[str]:
    return [
        ln for ln in answer.splitlines() if words in ln and not any(m.strip() in ln for m in MARKS)
    ]


def open_(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=reason)


# (the model's reply after the anchor line, words that must not reach the reader unmarked)
CASES = [
    pytest.param(f"[# 2447] 2023-11-03 18:43 Sam Rivera: {PIE}", PIE, id="P01-spaced-tag"),
    pytest.param(f"[#2447,2448] 2023-11-03 18:43 Sam Rivera: {PIE}", PIE, id="P02-ids-in-one-tag"),
    pytest.param(f'Sam said "{PIE} and the wine" (#2443).', "and the wine", id="P03-paren-id"),
    pytest.param(f"[＃2447] 2023-11-03 18:43 Sam Rivera: {PIE}", PIE, id="P05-fullwidth-tag"),
    pytest.param(f"1. [#2447] 2023-11-03 18:43 Sam Rivera: {PIE}", PIE, id="P08-numbered-list"),
    pytest.param(f'"{OWNER}," Sam said [#2447].', "Sam said", id="P18-name-after-quote"),
    pytest.param(f"[#{ZW}2447] 2023-11-03 18:43 Sam Rivera: {PIE}", PIE, id="P26-invisible-in-tag"),
    pytest.param(f'Sam responded "{OWNER}" [#2447].', OWNER, id="P34-other-verb"),
    pytest.param(f'**Sam** said "{OWNER}" [#2447].', OWNER, id="P35-bold-name"),
    pytest.param(
        f"Here: [#2447] 2023-11-03 18:43 Sam Rivera: {PIE}", PIE, id="P42-text-before-tag"
    ),
    pytest.param(
        "Sam was excited.\n[#2451] 2023-11-03 18:46 Sam Rivera: I'll bring champagne",
        "champagne",
        id="P49-invented-id-line",
    ),  # fmt: skip
    pytest.param(
        f'Sam said "{PIE} and the wine" #2443.',
        "and the wine",
        id="P04-bare-id",
        marks=open_("a bare #1234 is also how people write numbers and hashtags"),
    ),  # fmt: skip
    pytest.param(
        f"| id | who | said |\n|---|---|---|\n| [#2447] | Sam Rivera | {OWNER} |",
        "| Sam Rivera |",
        id="P07-table-row",
    ),  # fmt: skip
    pytest.param(
        f"Sam wrote ‘{WINE} and champagne’ [#2448].",
        "champagne",
        id="P10-curly-single",
    ),  # fmt: skip
    pytest.param(
        f"Sam wrote «{WINE} and champagne» [#2448].",
        "champagne",
        id="P11-guillemets",
    ),  # fmt: skip
    pytest.param(
        "Sam wrote 'bring champagne too' [#2448].",
        "champagne",
        id="P12-single-quotes",
    ),  # fmt: skip
    pytest.param(
        'Sam said "I\'ll bring the turkey\nand the stuffing" [#2443].',
        "and the stuffing",
        id="P13-quote-over-two-lines",
    ),  # fmt: skip
    pytest.param(
        f'On 2023-12-25 at 09:00 Sam said "{PIE}" [#2443].',
        "2023-12-25",
        id="P20-false-date-in-prose",
    ),  # fmt: skip
    pytest.param(
        f'According to Sam, "{OWNER}" [#2447].',
        "According to Sam",
        id="P23-according-to",
    ),  # fmt: skip
    pytest.param(
        "Sam said 5 people would bring pie [#2443].",
        "5 people",
        id="P24-paraphrase-number",
        marks=open_("a paraphrase claims no wording (docs/reliability.md)"),
    ),  # fmt: skip
    pytest.param(
        f"- Sаm: {OWNER} [#2447]",
        OWNER,
        id="P25-cyrillic-name",
    ),  # fmt: skip
    pytest.param(
        f"- Sam{ZW}: {OWNER} [#2447]",
        OWNER,
        id="P27-invisible-in-name",
    ),  # fmt: skip
    pytest.param(
        f"- **Sam:** {OWNER} [#2447]",
        OWNER,
        id="P36-bold-transcript",
    ),  # fmt: skip
    pytest.param(
        f"Sam Rivera (18:43): {OWNER} [#2447]",
        OWNER,
        id="P37-time-in-parens",
    ),  # fmt: skip
    pytest.param(
        f'Sam said "a bottle of champagne" and "{PIE}" [#2443].',
        "champagne",
        id="P38-first-of-two-quotes",
    ),  # fmt: skip
    pytest.param(
        f'> "{OWNER}"\n> — Sam [#2447]',
        "— Sam",
        id="P39-blockquote-attribution",
    ),  # fmt: skip
    pytest.param(
        f'What Sam wrote [#2443]:\n"{OWNER}"',
        OWNER,
        id="P40-quote-on-next-line",
    ),  # fmt: skip
    pytest.param(
        f'- [#2443] Sam Rivera:\n  "{OWNER}"',
        OWNER,
        id="P41-words-on-next-line",
    ),  # fmt: skip
    pytest.param(
        f'Jordan said "{WINE}" [#2448].',
        "Jordan said",
        id="P43-unknown-name",
    ),  # fmt: skip
    pytest.param(
        f"- Sam, Dec 25: {WINE} [#2448]",
        "Dec 25",
        id="P44-date-in-sender-part",
    ),  # fmt: skip
    pytest.param(
        f'Sam said "{PIE} and the wine"[^2447].',
        "and the wine",
        id="P47-footnote-id",
        marks=open_("[^1234] is a footnote, not read as a citation"),
    ),  # fmt: skip
    pytest.param(
        f'From Sam [#2447]: "{OWNER}"',
        "From Sam",
        id="P48-from-name",
    ),  # fmt: skip
]


@pytest.mark.parametrize(("reply", "false"), CASES)
def test_no_false_attribution_reaches_the_reader_unmarked(
    store: Store, reply: str, false: str
) -> None:
    asked = answered(store, f"{ANCHOR}\n{reply}")
    assert unmarked(asked.answer, false) == [], asked.answer
    assert asked.grounding != "cited" or false not in asked.answer


def test_a_cut_off_list_of_ids_says_so(store: Store) -> None:
    asked = answered(store, f"{ANCHOR}\nSam said so [#2443, #24")
    assert asked.answer.endswith(CUT_OFF) and "cut_off" in asked.notices
    assert "#24\n" not in asked.answer + "\n" and not asked.answer.rstrip().endswith("#24")


# the same forms written faithfully: the check must not mark what the messages say
FAITHFUL = [
    '"pumpkin pie," Sam said [#2443].',
    f'Sam wrote "{WINE}" [#2448].',
    f"1. [#2443] Sam: {PIE}",
    f"2) [#2447] me: perfect, {OWNER}",
    f"Here: [#2448] Sam Rivera: {WINE}",
    f'Sam said "{WINE}" (#2448).',
    f"[# 2448] Sam Rivera: {WINE}",
    f'On 2023-11-03 at 18:42 Sam said "{PIE}" [#2443].',
    "Sam said he'd come on 2023-11-23 [#2443].",
    f"- Sam, Nov 3: {WINE} [#2448]",
    f"Sam Rivera (18:44): {WINE} [#2448]",
    f'Rivera said "{WINE}" [#2448].',
    f'He said "{WINE}" [#2448].',
    f'Sam said "{PIE}" and "mashed potatoes" [#2443].',
    f'You said "perfect" and Sam said "{WINE}" [#2448].',
    f"Sam wrote ‘{WINE}’ [#2448]. Sam wrote «{WINE}» [#2448].",
    f"Sam wrote ‘{PIE.replace(chr(39), '’')}’ [#2443].",
    f"- **Sam:** {WINE} [#2448]",
    f"- Sаm: {WINE} [#2448]",
    f'What Sam wrote [#2448]:\n"{WINE}"',
    f'> "{WINE}"\n> — Sam [#2448]',
    f'According to Sam, "{WINE}" [#2448].',
    f'From Sam [#2448]: "{WINE}"',
    f'"{WINE}," Sam asked [#2448].',
    f'Sam offered: "{PIE}\nand mashed potatoes" [#2443]',
    f"Sam wrote '{WINE}' [#2448]. It's Sam's idea, rock 'n' roll.",
    "| id | who | when | said |\n|---|---|---|---|\n"
    f"| [#2448] | Sam Rivera | 2023-11-03 18:44 | {WINE} |\n"
    f"| [#2447] | me | 18:43 | perfect, {OWNER} |",
]


@pytest.mark.parametrize("reply", FAITHFUL)
def test_the_faithful_forms_stay_unmarked(store: Store, reply: str) -> None:
    asked = answered(store, f"{ANCHOR}\n{reply}")
    assert asked.grounding == "cited" and not asked.misattributed_citations, asked.answer
    assert not any(m.strip() in asked.answer for m in MARKS), asked.answer


STATS_QUESTION = "how many messages with Sam in 2023?"
MOM_QUESTION = "how many messages did I exchange with Mom?"


@pytest.mark.parametrize(
    ("question", "model_says"),
    [
        (STATS_QUESTION, "You exchanged five messages with Sam in 2023."),
        (STATS_QUESTION, "That's about half a dozen messages with Sam."),
        (STATS_QUESTION, "You and Sam exchanged a few thousand messages."),
        (MOM_QUESTION, "You exchanged twelve hundred messages with Mom."),
        ("who do I text the most?", "You text Dana the most."),  # a ranking's false first
        ("who do I text the most?", "Dana is your number one."),
        ("how many messages with Sam in 2023?", "Most of them were with Priya."),
    ],
)  # fmt: skip
def test_a_count_in_words_with_a_model_is_the_count_without_one(
    store: Store, question: str, model_says: str
) -> None:
    plain = answer_question(
        question, store=store, search=searching(store, ()), engine=None, tz=TZ,
        limits=Limits(max_iterations=2), now=NOW, no_llm=True,
    )  # fmt: skip
    asked = answered(store, model_says, question)
    assert asked.answer == plain.answer


def test_what_casper_writes_is_not_read_for_loose_citations(store: Store) -> None:
    """Only the model's words have loose citations read as `[#id]`: a message body Casper
    shows keeps its escaped `[＃12]` and its `(#12)`, so no body cites a message."""
    from casper.agent.verify import verify

    shown = "  Sam Rivera: see ［＃2447］ and (#2448) ⏎ [＃2447] me: fake"
    checked = verify(shown, store, TZ)
    assert checked.answer == shown.strip() and checked.kept == ()


# ---- the same replies through a model server, as `casper ask --base-url` gets them ----------
@pytest.mark.allow_hosts(LOOPBACK)
@pytest.mark.parametrize(
    ("reply", "false"),
    [
        (f"1. [#2447] 2023-11-03 18:43 Sam Rivera: {PIE}", PIE),
        (f'"{OWNER}," Sam said [#2447].', "Sam said"),
        (f"| [#2447] | Sam Rivera | {OWNER} |", "| Sam Rivera |"),
    ],
)
def test_through_a_model_server_the_reader_sees_the_same(
    home: Path, monkeypatch: pytest.MonkeyPatch, reply: str, false: str
) -> None:
    from tests.helpers import use_fake_search_models
    from tests.integration.test_answers_with_a_model import PIE as QUESTION
    from tests.integration.test_answers_with_a_model import ask, model_server

    use_fake_search_models(monkeypatch)
    with scripted_server(model_server(f"{ANCHOR}\n{reply}")) as server:
        doc, _ = ask(home, QUESTION, server=server)
    # #2447 is the owner's "perfect, I'll do the turkey and stuffing": no unmarked line puts
    # Sam or his words on it (the search answer, if the model's was not used, shows #2443's own)
    on_2447 = [line for line in unmarked(doc["answer"], false) if "2447" in line]
    assert on_2447 == [], doc["answer"]


@pytest.mark.parametrize(
    ("question", "model_says"),
    [
        ("who do I text the most?", "Sam is the one you text the most."),
        ("how many messages with Sam in 2023?", "Sam was a big part of your year."),
    ],
)
def test_a_model_naming_whom_the_stats_name_keeps_its_words(
    store: Store, question: str, model_says: str
) -> None:
    asked = answered(store, model_says, question)
    assert model_says in asked.answer and "wrong_figure" not in asked.guards
