"""A bulk run's engine is chosen from the run itself (casper.backends.bulk.Race): both engines
embed slices of the run's own first passages in turn, the rest goes to the faster, and a later
slice re-checks it, so a choice never outlives the conditions it was made in. Nothing about the
choice is kept after the run. The engines here are fakes on a fake clock: each takes a set time
per character, which a test changes mid-run as a machine's load would."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from casper.backends import bulk


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Engine:
    """An engine that embeds a passage in `per_char` (fake) seconds a character; its vectors
    are the same whichever engine makes them (as onnxruntime's are torch's)."""

    name, dim, checksum = "m", 4, "c"

    def __init__(self, clock: Clock, per_char: float) -> None:
        self.clock, self.per_char = clock, per_char
        self.texts: list[str] = []

    def embed_documents(
        self, texts: Sequence[str], on_progress: Callable[[int, int], None] | None = None
    ) -> NDArray[np.float32]:
        self.clock.now += self.per_char * sum(len(t) for t in texts)
        self.texts += texts
        out = np.zeros((len(texts), 4), np.float32)
        out[:, 0] = [len(t) for t in texts]  # which passage, whatever embedded it
        return out

    def embed_query(self, text: str) -> NDArray[np.float32]:
        return self.embed_documents([text])[0]


def passages(n: int, start: int = 0) -> list[str]:
    return [f"passage {i} " + "x" * (i % 40) for i in range(start, start + n)]


def race(clock: Clock, onnx: Engine, torch: Engine) -> bulk.Race:
    built: list[str] = []

    def make(name: str, engine: Engine) -> Callable[[], Engine]:
        return lambda: built.append(name) or engine

    # the engines load at once here (the product loads the second one in the background)
    return bulk.Race({"onnx": make("onnx", onnx), "torch": make("torch", torch)},
                     clock=clock, background=False)  # fmt: skip


def test_the_faster_engine_on_this_runs_passages_embeds_the_rest() -> None:
    clock = Clock()
    onnx, torch = Engine(clock, 2e-4), Engine(clock, 1e-4)  # torch twice as fast here
    r = race(clock, onnx, torch)
    texts = passages(1280)
    out = np.concatenate([r.embed_documents(texts[i : i + 128]) for i in range(0, 1280, 128)])
    assert out[:, 0].tolist() == [len(t) for t in texts]  # every passage, in order
    assert onnx.texts and torch.texts  # both were timed on the run's own passages
    assert set(onnx.texts) | set(torch.texts) == set(texts)
    assert len(torch.texts) > 0.8 * len(texts)  # and the faster embedded the rest
    assert r.choice == "torch" and "torch" in r.why and "this run" in r.why


def test_the_other_way_round_onnxruntime_keeps_the_run() -> None:
    clock = Clock()
    onnx, torch = Engine(clock, 1e-4), Engine(clock, 1.6e-4)
    r = race(clock, onnx, torch)
    for i in range(0, 1280, 128):
        r.embed_documents(passages(128, i))
    assert r.choice == "onnx" and len(onnx.texts) > 0.8 * 1280


def test_when_the_chosen_engine_slows_down_the_run_switches() -> None:
    clock = Clock()
    onnx, torch = Engine(clock, 2e-4), Engine(clock, 1e-4)
    r = race(clock, onnx, torch)
    for i in range(0, 1280, 128):
        r.embed_documents(passages(128, i))
    assert r.choice == "torch"
    torch.per_char = 6e-4  # the machine got busy, and torch lost more to it than onnxruntime
    before = len(onnx.texts)
    for i in range(1280, 1280 + 128 * 40, 128):
        r.embed_documents(passages(128, i))
    assert r.choice == "onnx"
    assert len(onnx.texts) - before > 0.5 * 128 * 40


def test_nothing_outlives_the_run(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("CASPER_CACHE", str(tmp_path / "cache"))
    clock = Clock()
    r = race(clock, Engine(clock, 1e-4), Engine(clock, 2e-4))
    for i in range(0, 640, 128):
        r.embed_documents(passages(128, i))
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
    assert not hasattr(bulk, "remembered")  # no verdict is read back by a later run


def test_an_engine_that_does_not_load_leaves_the_run_to_the_default() -> None:
    clock = Clock()
    onnx = Engine(clock, 1e-4)

    def broken() -> Engine:
        raise OSError("no torch here")

    r = bulk.Race({"onnx": lambda: onnx, "torch": broken}, clock=clock, background=False)
    texts = passages(640)
    out = np.concatenate([r.embed_documents(texts[i : i + 128]) for i in range(0, 640, 128)])
    assert out[:, 0].tolist() == [len(t) for t in texts] and onnx.texts == texts
    assert r.why == "onnxruntime: torch did not load (OSError)"
