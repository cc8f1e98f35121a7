"""Index progress on stderr: rich bars with rate and ETA on a terminal, plain lines elsewhere.

Stages report `(stage, done, total)`; `total=None` means "started, size unknown" (a model
loading, stats being computed) and `done >= total` means finished. Off a terminal (piped,
redirected, CI logs) a line is printed when a stage starts, every `every_s` seconds while it
runs and when it ends, so a long `casper index > log` never looks hung. Never on stdout.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from casper.plaintext import plain

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress as RichProgress
    from rich.progress import ProgressColumn, Task, TaskID

# inside: rich loads only when a bar is drawn; indexer.report as a CLI module imports no work at top

Progress = Callable[[str, int, "int | None"], None]

LABELS = {
    "read": "reading chat.db",
    "stats": "computing stats",
    "load": "loading embedder",
    "chunk": "chunking chats",
    "write": "writing index",
    "optimize": "indexing text",
    "embed": "embedding chunks",
    "score": "scoring questions",
}
_LOCK = threading.Lock()  # the ticker thread and the pipeline both write lines
UNITS = {"read": "rows", "embed": "chunks", "chunk": "messages", "score": "questions"}
WITHIN = " · "  # "synthetic 512/256 · embed": a stage of one part of a longer run (eval)


def split_detail(stage: str) -> tuple[str, str]:
    """(`embed`, `CPU · onnxruntime`) of `embed @ CPU · onnxruntime`: the stage and where it
    runs (casper.indexer.report.detailed); an empty detail for a stage that does not say."""
    from casper.indexer.report import DETAIL

    base, _, detail = stage.partition(DETAIL)
    return base, detail


def label(stage: str, *, detail: bool = True) -> str:
    """`embedding chunks`; `synthetic 512/256 · embedding chunks` for a stage within a part;
    `embedding chunks (CPU · onnxruntime)` for a stage that says where it runs."""
    base, where = split_detail(stage)
    part, _, name = base.rpartition(WITHIN)
    text = part + WITHIN * bool(part) + LABELS.get(name, name)
    return text + (f" ({where})" if where and detail else "")


def unit(stage: str) -> str:
    return UNITS.get(split_detail(stage)[0].rpartition(WITHIN)[2], "")


def fmt_duration(seconds: float) -> str:
    """`42s`, `3m05s`, `1h02m` — short enough for a progress line."""
    s = max(int(round(seconds)), 0)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


@dataclass
class _Stage:
    started: float
    done: int = 0
    total: int | None = None
    finished: bool = False
    last_line: float = 0.0


@dataclass
class PlainProgress:
    """Plain progress lines for a non-terminal stderr; `clock` is injectable for tests."""

    stream: TextIO
    every_s: float = 5.0
    prefix: str = "casper index"  # who speaks: each line starts "casper index: "
    clock: Callable[[], float] = time.monotonic
    stages: dict[str, _Stage] = field(default_factory=dict)

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        with _LOCK:
            self._update(stage, done, total)

    def tick(self) -> None:
        """A line for a stage that reports nothing while it works (a model loading)."""
        with _LOCK:
            now = self.clock()
            for name, st in self.stages.items():
                if not st.finished and not st.total and now - st.last_line >= self.every_s:
                    st.last_line = now
                    self._line(f"{label(name)}: still working, {fmt_duration(now - st.started)}")

    def _update(self, stage: str, done: int, total: int | None) -> None:
        now = self.clock()
        st = self.stages.get(stage)
        if st is None:
            st = self.stages[stage] = _Stage(started=now, last_line=now)
            self._finish_others(stage, now)
            self._line(f"{label(stage)} …")
        if st.finished:
            return
        st.done, st.total = done, total
        if total is not None and done >= total:
            st.finished = True
            self._line(self._summary(stage, st, now))
        elif total and now - st.last_line >= self.every_s:
            st.last_line = now
            self._line(self._running(stage, st, now))

    def close(self, *, stopped: bool = False) -> None:
        """The run is over; `stopped` (Ctrl-C, an error): unfinished stages say where they
        stopped instead of "done"."""
        with _LOCK:
            if not stopped:
                self._finish_others(None, self.clock())
                return
            for name, st in self.stages.items():
                if not st.finished:
                    st.finished = True
                    where = f" at {st.done:,}/{st.total:,}" if st.total else ""
                    self._line(f"{label(name)}: stopped{where}")

    def _finish_others(self, current: str | None, now: float) -> None:
        """A stage that never said it finished is over once the next one starts."""
        for name, st in self.stages.items():
            if name != current and not st.finished:
                st.finished = True
                self._line(self._summary(name, st, now))

    def _running(self, stage: str, st: _Stage, now: float) -> str:
        total = st.total or 0
        elapsed = max(now - st.started, 1e-9)
        rate = st.done / elapsed
        per = unit(stage)
        text = f"{label(stage)}: {st.done:,}/{total:,} ({100 * st.done / max(total, 1):.0f}%)"
        if st.done:
            text += f" · {rate:,.0f} {per}/s".replace("  ", " ")
            text += f" · eta {fmt_duration((total - st.done) / rate)}"
        return text + f" · {fmt_duration(elapsed)} elapsed"

    def _summary(self, stage: str, st: _Stage, now: float) -> str:
        elapsed = now - st.started
        if st.total and st.total > 1:
            per = unit(stage)
            text = f"{label(stage)}: done, {st.total:,} {per} in {fmt_duration(elapsed)}"
            if split_detail(stage)[1] and elapsed > 0:  # where it ran: how fast it went there
                text += f" · {st.total / elapsed:,.0f} {per}/s"
            return text.replace("  ", " ")
        return f"{label(stage)}: done in {fmt_duration(elapsed)}"

    def _line(self, text: str) -> None:
        self.stream.write(f"{self.prefix}: {plain(text)}\n")  # a chat's name may be in it
        self.stream.flush()


def _rich_progress(console: Console) -> tuple[RichProgress, Progress]:
    from rich.progress import (
        BarColumn,
        ProgressColumn,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.progress import (
        Progress as RichProgress,
    )
    from rich.text import Text

    class Count(ProgressColumn):
        """`1,234/5,000` for countable stages; nothing for a model load."""

        def render(self, task: Task) -> Text:
            if not task.fields.get("countable"):
                return Text("")
            return Text(
                f"{int(task.completed):,}/{int(task.total or 0):,}", style="progress.download"
            )

    class Rate(ProgressColumn):
        """`412 chunks/s`, and where the stage runs when it says (`· CPU · onnxruntime`)."""

        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            if not task.fields.get("countable") or not speed:
                return Text("")
            where = task.fields.get("where")
            return Text(
                f"{speed:,.0f} {task.fields.get('unit', '')}/s" + (f" · {where}" if where else ""),
                style="progress.data.speed",
            )

    class Eta(ProgressColumn):
        def render(self, task: Task) -> Text:
            if task.finished or not task.fields.get("countable"):
                return Text("")
            remaining = task.time_remaining
            return Text("eta " + (fmt_duration(remaining) if remaining is not None else "…"),
                        style="progress.remaining")  # fmt: skip

    from rich.table import Column

    # below 72 columns the rate gives its room to the bar (the ETA already says how fast)
    wide = console.width >= 72
    columns: list[ProgressColumn] = [
        SpinnerColumn(finished_text="[green]✓[/]"),
        TextColumn("{task.description}", table_column=Column(no_wrap=True, width=16)),
        BarColumn(bar_width=None, table_column=Column(ratio=1, min_width=6)),
        Count(table_column=Column(no_wrap=True)),
    ]
    if wide:
        columns.append(Rate(table_column=Column(no_wrap=True)))
    columns += [Eta(table_column=Column(no_wrap=True)), TimeElapsedColumn()]
    progress = RichProgress(
        *columns,
        console=console,
        transient=False,
        expand=True,
        speed_estimate_period=15.0,
    )
    tasks: dict[str, TaskID] = {}

    def update(stage: str, done: int, total: int | None) -> None:
        if stage not in tasks:
            for task in progress.tasks:  # the previous stage is over once the next starts
                if not task.finished:
                    progress.update(task.id, total=task.total or 1, completed=task.total or 1)
            # the label keeps to its column; where the stage runs goes beside its rate
            tasks[stage] = progress.add_task(
                label(stage, detail=False), total=total, countable=bool(total), unit=unit(stage),
                where=split_detail(stage)[1],
            )  # fmt: skip
        tid = tasks[stage]
        if total is not None and total > 0:
            progress.update(tid, completed=done, total=total, countable=total > 1)
        elif total == 0:
            progress.update(tid, completed=1, total=1)

    return progress, update


def _nothing(stage: str, done: int, total: int | None) -> None:
    pass


def _tick(plain: PlainProgress, stop: threading.Event) -> None:
    while not stop.wait(min(1.0, plain.every_s)):
        plain.tick()


@contextmanager
def stage_bars(
    enabled: bool = True,
    *,
    stream: TextIO | None = None,
    plain: bool = True,
    prefix: str = "casper index",
) -> Iterator[Progress]:
    """Yield a `(stage, done, total)` callback: rich bars on a terminal, plain lines elsewhere
    (`plain=False`, as with `--json`: nothing off a terminal, so a script reading stdout and
    stderr together gets the JSON document and no progress)."""
    from casper.cli.render import console as make_console

    if not enabled:
        yield _nothing
        return
    console = make_console(stderr=True) if stream is None else make_console(file=stream)
    if not console.is_terminal and not plain:
        yield _nothing
        return
    if not console.is_terminal:
        lines = PlainProgress(stream or sys.stderr, prefix=prefix)
        stop = threading.Event()
        # stages that cannot count (loading a model) get no callbacks: a ticker speaks for them
        ticker = threading.Thread(target=_tick, args=(lines, stop), daemon=True)
        ticker.start()
        stopped = True
        try:
            yield lines
            stopped = False
        finally:
            stop.set()
            ticker.join()
            lines.close(stopped=stopped)
        return
    progress, update = _rich_progress(console)
    with progress:
        yield update
