"""Rich progress bars on stderr, one per pipeline stage; silent when stderr is not a terminal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

LABELS = {"read": "reading chat.db", "embed": "embedding chunks", "stats": "computing stats"}


@contextmanager
def stage_bars(enabled: bool = True) -> Iterator[Any]:
    """Yield a `(stage, done, total)` callback that drives one bar per stage."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not enabled or not console.is_terminal:
        yield lambda stage, done, total: None
        return
    progress = Progress(
        TextColumn("{task.description:<18}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    tasks: dict[str, Any] = {}

    def update(stage: str, done: int, total: int | None) -> None:
        if stage not in tasks:
            tasks[stage] = progress.add_task(LABELS.get(stage, stage), total=total)
        progress.update(tasks[stage], completed=done, total=total)

    with progress:
        yield update
