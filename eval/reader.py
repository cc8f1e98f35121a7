"""PURE: what a reader of the hits actually gets, beside message recall@k.

Message recall@k counts the first k distinct messages of a ranking, about 3-4 windows at
k = 10, while the agent's search tool shows 5 hits and `casper search` 8 (13 and 21 messages
today). These figures read the hits as they are shown:

- `reader_recall@n`: share of the gold messages inside the first n hits (every message they
  show, neighbours included); `reader_hit@n`: 1 when any gold message is there;
  `reader_messages@n`: how many messages those hits show (the reading it costs);
- `answer_words@n`: share of the gold answer's content words ("a pottery class" → pottery,
  class) found in the text of the first n hits, where the gold gives an answer (`answered`
  is 1 for those questions, 0 for the rest, so the coverage over them is
  mean(answer_words@n) / mean(answered), and the halves of a split still merge exactly);
- `session_chance@k`: the session recall@k a ranking with no information reaches, k over the
  sessions of the history (min 1), and `session_chance_chat@k` the same inside the chats that
  hold the evidence: session recall is read beside them, since ten sessions are a third of a
  LoCoMo conversation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

READER_HITS = (5, 8)  # the agent's search tool shows 5 hits, `casper search` 8
SESSION_KS = (5, 10)
# Words that carry no answer: articles, pronouns, auxiliaries, prepositions (a hit holding
# "the" proves nothing). Numbers count ("3 days"), single letters do not.
_STOP_WORDS = """a an the and or but of to in on at for with from by as about into over after before
    i me my we our you your he him his she her they them their it its this that these those
    is are was were be been being am do does did has have had will would can could should
    not no yes so very just also then than there here what which who when where why how
    s t"""
_STOP = frozenset(_STOP_WORDS.split())
_WORD = re.compile(r"[\w']+", re.UNICODE)


def words_of(text: str) -> list[str]:
    """Lower-case words, possessives and plurals folded ("dogs", "dog's" → dog; "classes" →
    class; "hobbies" → hobby)."""
    out = []
    for word in _WORD.findall(text.lower().replace("’", "'")):
        word = word.strip("'")
        if word.endswith("'s"):
            word = word[:-2]
        if len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes")):
            word = word[:-2]  # classes, dishes, beaches, boxes
        elif len(word) > 4 and word.endswith("ies"):
            word = word[:-3] + "y"  # hobbies
        elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
            word = word[:-1]
        if word:
            out.append(word)
    return out


def answer_words(answer: str) -> set[str]:
    """The content words of a gold answer (none when it says nothing checkable)."""
    return {w for w in words_of(answer) if w not in _STOP and (len(w) > 1 or w.isdigit())}


def score_reader(
    hits: Sequence[Sequence[str]],
    texts: Sequence[str],
    relevant: Collection[str],
    answer: str | None = None,
    budgets: Iterable[int] = READER_HITS,
) -> dict[str, float]:
    """Reader figures of one question: `hits` the message ids of each hit in the order shown,
    `texts` each hit's text (its messages joined), `answer` the gold answer if it gives one."""
    wanted = set(relevant)
    words = answer_words(answer) if answer else set()
    out: dict[str, float] = {"answered": float(bool(words))}
    for n in budgets:
        shown = {m for hit in hits[:n] for m in hit}
        out[f"reader_recall@{n}"] = len(shown & wanted) / len(wanted) if wanted else 0.0
        out[f"reader_hit@{n}"] = float(bool(shown & wanted))
        out[f"reader_messages@{n}"] = float(len(shown))
        found = {w for text in texts[:n] for w in words_of(text)}
        out[f"answer_words@{n}"] = len(words & found) / len(words) if words else 0.0
    return out


def answer_of(expected: Mapping[str, object] | None) -> str | None:
    """The gold answer a question's `expected` gives (`answer_contains`, first entry)."""
    contains = (expected or {}).get("answer_contains")
    if isinstance(contains, list | tuple) and contains and isinstance(contains[0], str):
        return contains[0]
    return None


def session_chance(
    relevant: Collection[str],
    session_of: Mapping[str, str | None],
    chat_of: Mapping[str, int],
    sessions_by_chat: Mapping[int, Collection[str]],
    ks: Iterable[int] = SESSION_KS,
) -> dict[str, float]:
    """Session recall@k by chance for one question: k over the sessions of the whole history,
    and k over the sessions of the chats its evidence is in (a ranking that only found the
    right chat). Empty when its evidence has no session."""
    if not any(session_of.get(m) for m in relevant):
        return {}
    total = len({s for sessions in sessions_by_chat.values() for s in sessions})
    chats = {chat_of[m] for m in relevant if m in chat_of}
    in_chats = len({s for c in chats for s in sessions_by_chat.get(c, ())})
    out: dict[str, float] = {}
    for k in ks:
        out[f"session_chance@{k}"] = min(1.0, k / total) if total else 0.0
        out[f"session_chance_chat@{k}"] = min(1.0, k / in_chats) if in_chats else 0.0
    return out


def sessions_by_chat(
    rows: Iterable[tuple[str, int]], session_of: Callable[[str], str | None]
) -> tuple[dict[str, str | None], dict[str, int], dict[int, set[str]]]:
    """From a history's (message id, chat id) rows: each message's session, its chat, and each
    chat's sessions (messages with no session, the ambiguous phones' filler, count for none)."""
    of: dict[str, str | None] = {}
    chat: dict[str, int] = {}
    by_chat: dict[int, set[str]] = {}
    for guid, chat_id in rows:
        session = of[guid] = session_of(guid)
        chat[guid] = chat_id
        if session:
            by_chat.setdefault(chat_id, set()).add(session)
    return of, chat, by_chat


def score_hits(
    hits: Sequence[object],
    relevant: Collection[str],
    expected: Mapping[str, object] | None,
    sessions: tuple[Mapping[str, str | None], Mapping[str, int], Mapping[int, Collection[str]]]
    | None = None,
) -> dict[str, float]:
    """`score_reader` and `session_chance` of one question from the hits a search returned
    (each with `messages`, each message with `guid` and `text`); `sessions` is what
    `sessions_by_chat` read from the history, None when it has no sessions."""
    shown = [list(getattr(hit, "messages", ())) for hit in hits]
    ids = [[m.guid for m in messages] for messages in shown]
    texts = ["\n".join(m.text for m in messages) for messages in shown]
    out = score_reader(ids, texts, relevant, answer_of(expected))
    if sessions is not None:
        out.update(session_chance(relevant, *sessions))
    return out


def ranked_messages(result: object, guid_of: Mapping[int, str]) -> list[str] | None:
    """The search's own message ranking as message ids (guids), or None when it has none (a
    search of windows alone: its hits' messages in order are its ranking)."""
    rowids = getattr(result, "messages", ())
    if not rowids:
        return None
    return [guid_of[r] for r in rowids if r in guid_of]
