"""What one `ask` request's searches say of its answer (casper.agent.answer_run): the words of
the question no message holds, those no hit holds, and a search-only answer to words nowhere."""

from __future__ import annotations

from types import SimpleNamespace

from casper.agent.answer import Asked
from casper.agent.answer_run import SearchTrail, settled


def _result(words: tuple[str, ...], absent: tuple[str, ...], texts: list[str], reranked: bool):  # noqa: ANN202
    messages = [SimpleNamespace(text=t) for t in texts]
    return SimpleNamespace(
        hits=[SimpleNamespace(messages=messages)],
        words=words,
        words_not_found=absent,
        reranked=reranked,
    )


def _asked(grounding: str, cited: tuple[str, ...] = ()) -> Asked:
    citations = [{"guid": f"g{i}", "rowid": i, "ts": None, "sender": "Sam", "text": t}
                 for i, t in enumerate(cited)]  # fmt: skip
    return Asked("answer", citations, 0, [], [], None, 0.0, grounding=grounding)


def test_only_the_question_s_own_search_speaks_for_its_words() -> None:
    results = iter([
        _result(("dentist", "moved"), ("moved",), ["the dentist called"], reranked=False),
        _result(("other",), ("other",), [], reranked=True),
    ])  # fmt: skip
    trail = SearchTrail(lambda query, **options: next(results), "dentist moved")
    trail(" dentist moved ")
    trail("another query")
    run = settled(_asked("cited"), trail.runs)
    assert run.searches == 2 and run.reranked
    assert run.words_not_found == ("moved",)  # the second search's words are not the question's
    assert run.words_not_in_hits == ()


def test_a_word_only_the_cited_messages_hold_is_found() -> None:
    results = iter([_result(("dentist", "pie"), (), ["the dentist called"], reranked=False)])
    trail = SearchTrail(lambda query, **options: next(results), "dentist pie")
    trail("dentist pie")
    assert settled(_asked("cited"), trail.runs).words_not_in_hits == ("pie",)
    cited = settled(_asked("cited", ("pumpkin pie on thursday",)), trail.runs)
    assert cited.words_not_in_hits == ()


def test_search_alone_on_words_no_message_holds_found_nothing() -> None:
    results = iter([_result(("zebra",), ("zebra",), ["closest thing"], reranked=False)])
    trail = SearchTrail(lambda query, **options: next(results), "zebra")
    trail("zebra")
    assert settled(_asked("search_only"), trail.runs).asked.grounding == "nothing_found"
    assert settled(_asked("stats"), trail.runs).asked.grounding == "stats"
    nothing_searched = settled(_asked("search_only"), [])
    assert nothing_searched.asked.grounding == "search_only"
    assert nothing_searched.searches == 0 and not nothing_searched.reranked
