"""The citation check line by line (casper.agent.quotes, pure): a message line shows its message
as the store has it, a misattribution is put right and marked on its own line, a quotation
must be that message's words, a named sender its sender, and a cut-off answer says so."""

from __future__ import annotations

import pytest

from casper.agent.quotes import CORRECTED, CUT_OFF, MARK, Cited, check, holds

CITED = {
    2442: Cited(2442, "2023-11-03 18:42", "Sam Rivera", "p_sam", "YES. I'm in"),
    2447: Cited(2447, "2023-11-03 18:43", "me", "me", "perfect, I'll do the turkey and stuffing"),
    2606: Cited(2606, "2023-12-16 17:41", "Dana Okafor", "p_dana", "anyone climbing saturday?"),
    2607: Cited(2607, "2023-12-16 17:45", "Alex Chen", "p_alex", "yes! 7?"),
    2608: Cited(2608, "2023-12-16 17:49", "Dana Okafor", "p_dana", "6:30 works"),
}
PEOPLE = {
    "sam": frozenset({"p_sam"}), "sam rivera": frozenset({"p_sam"}),
    "dana": frozenset({"p_dana"}), "dana okafor": frozenset({"p_dana"}),
    "alex": frozenset({"p_alex"}), "alex chen": frozenset({"p_alex"}),
    "me": frozenset({"me"}), "i": frozenset({"me"}), "you": frozenset({"me"}),
}  # fmt: skip


def checked(answer: str) -> tuple[str, tuple[int, ...]]:
    found = check(answer, CITED, PEOPLE)
    return found.answer, found.misattributed


@pytest.mark.parametrize(
    "line",
    [
        "[#2606] 2023-12-16 17:41 Dana Okafor: anyone climbing saturday?",
        "[#2606] Dana: anyone climbing saturday?",
        "- Dana Okafor: anyone climbing saturday? [#2606]",
        'Dana asked "anyone climbing saturday?" [#2606].',
        "You said “perfect, I'll do the turkey” [#2447].",
        "Alex said yes to 7 [#2607].",  # a paraphrase: no wording claimed
    ],
)
def test_what_the_message_says_stands_as_written(line: str) -> None:
    assert checked(line) == (line, ())


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("[#2447] 2023-11-28 15:35 Sam Rivera: I'm in.", "a neighbour's words, sender, time"),
        ("[#2607] 2023-12-16 17:41 Dana Okafor: 7:30 works", "the next message, one digit off"),
        ("[#2607] Dana Okafor: yes! 7?", "another sender"),
        ("[#2607] 2023-12-15 17:45 Alex Chen: yes! 7?", "another day"),
        ("- Sam: I'm in [#2447]", "a transcript line ended by the tag"),
    ],
)
def test_a_message_line_that_lies_shows_the_message_marked(line: str, why: str) -> None:
    answer, bad = checked(line)
    rowid = int(line.split("[#")[1].split("]")[0])
    message = CITED[rowid]
    assert bad == (rowid,), why
    assert message.text in answer and message.sender in answer and answer.endswith(CORRECTED)


def test_a_lying_line_is_marked_on_its_own_line() -> None:
    answer, bad = checked(
        "Planned:\n[#2606] Dana Okafor: anyone climbing saturday?\n[#2607] Dana Okafor: 7:30 works"
    )
    lines = answer.splitlines()
    assert bad == (2607,)
    assert lines[1] == "[#2606] Dana Okafor: anyone climbing saturday?"
    assert lines[2] == f"[#2607] Alex Chen: yes! 7?{CORRECTED}"


@pytest.mark.parametrize(
    "line",
    [
        'Sam said "I\'m in" [#2447].',  # another message's words
        'Sam said "perfect, I\'ll do the turkey and stuffing" [#2447].',  # the owner's words
        'Sam Rivera said "yes" [#2607].',  # one word is still a quotation
        'Sam said "I\'m in [#2447]".',  # the tag inside the quotation
    ],
)
def test_a_false_quotation_loses_its_tag_and_is_marked(line: str) -> None:
    answer, bad = checked(line)
    assert bad and "[#" not in answer and MARK in answer


def test_a_cut_off_answer_says_so() -> None:
    found = check("[#2606] Dana Okafor: anyone climbing saturday?\n[#2", CITED, PEOPLE)
    assert found.cut_off and found.answer.endswith(f"saturday?\n{CUT_OFF}")
    assert found.kept == (2606,)


@pytest.mark.parametrize(
    ("words", "text", "held"),
    [
        ("I'M IN", "YES. I'm in", True),
        ("im in", "YES. I'm in", True),
        ("perfect … turkey and stuffing", "perfect, I'll do the turkey and stuffing", True),
        ("turkey … perfect", "perfect, I'll do the turkey and stuffing", False),
        ("7:30 works", "6:30 works", False),
        ("I'm not in", "YES. I'm in", False),
        ("YES I'm", "YES. I'm in", True),
    ],
)
def test_words_hold_when_they_are_that_messages(words: str, text: str, held: bool) -> None:
    assert holds(words, text) is held
