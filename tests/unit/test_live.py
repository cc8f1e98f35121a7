"""`ask` while it works: the event stream rendered (tool + arguments, timings) and a footer."""

from __future__ import annotations

import io

from rich.console import Console

from casper.cli.live import AskView, fmt_args, usage_footer


def view() -> tuple[AskView, io.StringIO]:
    out = io.StringIO()
    clock = iter(float(x) for x in range(100))
    return AskView(console=Console(file=out, width=80), live=False, clock=lambda: next(clock)), out


def test_tool_calls_are_shown_with_their_arguments_and_time() -> None:
    v, out = view()
    v({"event": "step", "iteration": 1})
    v({"event": "tool", "name": "search_messages", "arguments": {"query": "dentist", "k": 5}})
    v({"event": "tool_done", "name": "search_messages", "ok": True, "elapsed_s": 0.214})
    v({"event": "token", "text": "Priya moved it [#12]"})
    text = out.getvalue()
    assert '→ search_messages query="dentist" k=5' in text
    assert "✓ search_messages 0.21s" in text
    assert "Priya moved it" not in text  # streamed text lives in the transient area only
    assert v.status.stream == "Priya moved it [#12]"


def test_footer_reports_time_calls_tokens_and_model() -> None:
    doc = {"elapsed_s": 3.2, "iterations": 2, "tool_calls": [{}], "model": "qwen",
           "tokens": {"prompt": 1180, "completion": 96}}  # fmt: skip
    assert usage_footer(doc) == (
        "3.2 s · 2 model calls · 1 tool call · 1,180 prompt + 96 completion tokens · qwen"
    )
    assert usage_footer({"elapsed_s": 0.4, "model": None}, wall_s=2.0) == (
        "2.0 s · no model (search only)"
    )
    v, out = view()
    v.finish(doc)
    assert "1,180 prompt + 96 completion tokens" in out.getvalue()


def test_json_mode_prints_nothing() -> None:
    out = io.StringIO()
    v = AskView(console=Console(file=out), live=False, quiet=True)
    v({"event": "tool", "name": "x", "arguments": {}})
    v.finish({"elapsed_s": 1})
    assert out.getvalue() == ""


def test_long_arguments_stay_on_one_line() -> None:
    assert len(fmt_args({"query": "x" * 500})) == 120


def test_events_from_the_service_and_grounding_shapes_render() -> None:
    v, out = view()
    v({"event": "loading", "what": "the model"})
    assert v.status.doing == "loading the model"
    v({"event": "tool", "name": "search_messages", "arguments": {"query": "x"}, "prefetch": True})
    done = {"event": "tool_done", "name": "search_messages", "ok": True, "elapsed_s": 0.1}
    v({**done, "messages": 3})
    v({"event": "step", "iteration": 2, "final": True})
    assert v.status.doing == "writing the answer"
    v({"event": "notice", "text": "cannot load the model", "hint": "run casper pull"})
    text = out.getvalue()
    assert "looking up search_messages" in text and "· 3 messages" in text
    assert "notice: cannot load the model" in text and "hint: run casper pull" in text
    doc = {"elapsed_s": 5.0, "load_s": 2.0, "model": "qwen", "tool_calls": [],
           "usage": {"iterations": 3, "prompt_tokens": 10, "completion_tokens": 5,
                     "tokens_per_s": 12.34, "first_token_s": 0.8}}  # fmt: skip
    assert usage_footer(doc) == (
        "5.0 s (loading 2.0 s) · 3 model calls · 10 prompt + 5 completion tokens · 12.3 tok/s"
        " · first token 0.8 s · qwen"
    )
