"""`python -m tests.tty_casper ARGS`: the real casper CLI with the test fakes for its models,
for driving it in a real terminal (tmux) in tests/slow/test_terminal.py. Never product code."""

from __future__ import annotations

import casper.backends.factory as factory
from casper.errors import ModelUnavailable
from tests.fakes_search import HashEmbedder, OverlapReranker


def _no_engine(cfg: object) -> object:
    raise ModelUnavailable("no language model in terminal tests")


factory.make_embedder = lambda cfg: HashEmbedder(64)
factory.make_reranker = lambda cfg: (OverlapReranker(), None)
factory.make_engine = _no_engine

if __name__ == "__main__":
    from casper.cli import app

    app(prog_name="casper")
