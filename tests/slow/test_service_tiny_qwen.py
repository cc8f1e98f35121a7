"""`casper ask` through the warm service with the real MlxEngine (tiny Qwen): the model loads
once, on the first question, and the second question pays no load."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper.service import client
from tests.service_helpers import status

pytestmark = pytest.mark.slow


def test_second_question_reuses_the_loaded_model(
    home: Path,
    services,
    tiny_qwen_path: Path,  # noqa: ANN001
) -> None:
    services.start(home, "--fakes", "embedder,reranker")  # the engine is the real MlxEngine
    runs = []
    for question in ("when is thanksgiving?", "who is bringing pie?"):
        events: list[dict] = []
        args = {"question": question, "model": str(tiny_qwen_path), "max_iterations": 1}
        doc = client.call(home, "ask", args, on_event=events.append, autostart=False)
        runs.append((doc, [e["event"] for e in events]))
    (first, first_events), (second, second_events) = runs
    assert first["model"] == second["model"] == str(tiny_qwen_path)
    assert "model_unavailable" not in first["guards"] + second["guards"]
    assert "loading" in first_events and "loading" not in second_events
    assert status(home)["loaded"]["loads"]["engine"] == 1
    assert status(home)["loaded"]["engines"] == [str(tiny_qwen_path)]
