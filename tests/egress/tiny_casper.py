"""`casper` with the demo corpus swapped for the tiny one (~70 rows, every feature): the egress
test runs the real commands, in their own processes, in seconds instead of minutes. Everything
else is the product as installed: `python tiny_casper.py demo` is `casper demo`."""

from __future__ import annotations

import ingest.synthetic as synthetic
from casper.cli import app


def _tiny(dest, **_):  # noqa: ANN001, ANN202 - build_demo_corpus's shape
    return synthetic.build_tiny_corpus(dest)


synthetic.build_demo_corpus = _tiny  # type: ignore[assignment]
app(prog_name="casper")
