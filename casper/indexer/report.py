"""What one `casper index` run did, and the per-stage wall/CPU timings it records.

Imports: stdlib only. Split from `casper.indexer.pipeline` (the run's control flow stays there).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

# "embed @ CPU · onnxruntime": a progress stage and where it runs (casper.cli.progress shows the
# part after it beside the stage's label)
DETAIL = " @ "


def detailed(stage_name: str, detail: str | None) -> str:
    """The progress stage name `stage_name`, saying where it runs when `detail` is given."""
    return f"{stage_name}{DETAIL}{detail}" if detail else stage_name


@dataclass(slots=True)
class IngestReport:
    """What one `casper index` run did (the `index --json` shape plus timings)."""

    messages_total: int = 0
    messages_new: int = 0
    chunks_total: int = 0
    chunks_new: int = 0
    decode_failures: int = 0
    reactions: int = 0
    events: int = 0
    deleted: int = 0
    undated: int = 0  # messages whose chat.db date is unset (0): no day, kept out of figures
    recently_deleted_skipped: int = 0
    coverage: dict[str, float | None] = field(default_factory=lambda: {"first": None, "last": None})
    elapsed_s: float = 0.0
    noop: bool = False
    # chat.db's history was rewritten and read again (casper.indexer.reconcile): why, and by
    # guid what vanished, what is new, what was renumbered or kept; the run adds the chunks it
    # wrote again and how many of their vectors were found by content (None: not rewritten)
    reconciled: dict[str, Any] | None = None
    timings: dict[str, float] = field(default_factory=dict)  # wall seconds per stage
    cpu_s: dict[str, float] = field(default_factory=dict)  # process CPU seconds per stage

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@contextlib.contextmanager
def stage(report: IngestReport, name: str) -> Iterator[None]:
    """Record a stage's wall time (`timings`) and process CPU time, all threads (`cpu_s`)."""
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        record_stage(report, name, wall, cpu)


def record_stage(report: IngestReport, name: str, wall: float, cpu: float) -> None:
    report.timings[name] = round(time.perf_counter() - wall, 3)
    report.cpu_s[name] = round(time.process_time() - cpu, 3)
