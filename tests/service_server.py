"""A `casper serve` process with test backends, for the service tests.

    python -m tests.service_server --home H [--fakes embedder,reranker,engine]
        [--embed-delay S] [--build-id X] [--idle-minutes M] [--no-auto-index]
        [--request-deadline S]

The real server code runs unchanged; only `casper.backends.factory` is swapped for the test
fakes (a service is its own process, so the tests' monkeypatching can't reach it).
"""

from __future__ import annotations

import argparse
import logging
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from casper.protocols import ChatMessage, Reply, ToolCall, ToolSpec
from tests.fakes_search import HashEmbedder, OverlapReranker


class SlowHashEmbedder(HashEmbedder):
    """HashEmbedder whose query embedding takes `delay` seconds (a request to kill mid-way)."""

    def __init__(self, delay: float) -> None:
        super().__init__(64)
        self.delay = delay

    def embed_query(self, text: str):  # noqa: ANN201
        time.sleep(self.delay)
        return super().embed_query(text)


class SearchThenAnswerEngine:
    """For every question: first a search_messages call, then an answer, streamed in tokens."""

    name = "search-then-answer"

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        on_token: Callable[[str], None] | None = None,
    ) -> Reply:
        if not any(m.role == "tool" for m in messages):
            asked = next(m.content for m in reversed(messages) if m.role == "user")
            question = asked.split("\n")[0]  # the question, without the hints below it
            return Reply(text="", tool_calls=(ToolCall("search_messages", {"query": question}),))
        asked = next(m.content for m in reversed(messages) if m.role == "user")
        question = asked.split("\n")[0]
        # cite the first message the search showed, as a grounded answer must
        shown = re.search(
            r"\[#\d+\]", next(m.content for m in reversed(messages) if m.role == "tool")
        )
        # and say something of its own: repeating an earlier answer word for word is an echo
        answer = f"Here is what your messages say. ({question})" + (
            f" {shown.group(0)}" if shown else ""
        )
        for word in answer.split(" "):
            if on_token is not None:
                on_token(word + " ")
        return Reply(text=answer)


def install(fakes: set[str], embed_delay: float) -> None:
    import casper.backends.factory as factory

    if "embedder" in fakes:
        factory.make_embedder = lambda cfg: (
            SlowHashEmbedder(embed_delay) if embed_delay else HashEmbedder(64)
        )
    if "reranker" in fakes:
        factory.make_reranker = lambda cfg: (OverlapReranker(), None)
    if "engine" in fakes:
        factory.make_engine = lambda cfg: SearchThenAnswerEngine()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--fakes", default="embedder,reranker,engine")
    parser.add_argument("--embed-delay", type=float, default=0.0)
    parser.add_argument("--build-id", default=None)
    parser.add_argument("--idle-minutes", type=float, default=2.0)
    parser.add_argument("--no-auto-index", action="store_true")
    parser.add_argument("--request-deadline", type=float, default=None)
    opts = parser.parse_args()
    install({f for f in opts.fakes.split(",") if f}, opts.embed_delay)
    from casper.service import protocol, server

    if opts.build_id:
        protocol._build = opts.build_id  # pretend to be another version
    if opts.request_deadline is not None:  # a slow client cut off sooner than in 10 s
        server.REQUEST_DEADLINE_S = opts.request_deadline
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    server.serve(opts.home, idle_minutes=opts.idle_minutes, auto_index=not opts.no_auto_index)


if __name__ == "__main__":
    main()
