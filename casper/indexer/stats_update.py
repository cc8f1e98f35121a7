"""Each person's stats after an ingest run: folded in from this run's rows where they only add
to last run's saved state, computed in memory when the store was empty, read back from the
store otherwise.

Imports: casper.stats, casper.store, casper.indexer.rows, casper.records. Split from
`casper.indexer.pipeline` (the run's control flow stays there; the stats decisions live here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import tzinfo

from casper.indexer.rows import UNKNOWN_SENDER, NewRows
from casper.records import ME
from casper.stats import LocalClock, StatsState
from casper.store.db import Store


@dataclass(slots=True)
class Fresh:
    """Stats computed in memory from the rows read into an empty store, by person."""

    store_was_empty: bool
    states: dict[str, StatsState] = field(default_factory=dict)


def stats_from_memory(fresh: Fresh, new: NewRows, everybody: set[str], tz: tzinfo) -> None:
    """Into an empty store: everyone's state from this run's rows alone (no SQL needed)."""
    clock = LocalClock(tz)
    for pid in everybody:
        if new.states is not None:  # read by workers: their states, joined
            if pid not in new.reread:  # else re-read from the store
                have = new.states.get(pid)
                fresh.states[pid] = have[0] if have else StatsState()
            continue
        state = fresh.states[pid] = StatsState()
        state.add(new.timelines.get(pid, []), new.authored.get(pid, []), clock)


def forget(new: NewRows, fresh: Fresh, people: set[str] | frozenset[str]) -> None:
    """Drop what this run's rows say of `people` (their rows were purged after being read):
    people kept out get no stats, the others are read back from the store."""
    for pid in people:
        new.timelines.pop(pid, None)
        new.authored.pop(pid, None)
        new.reread.discard(pid)
        if new.states is not None:
            new.states.pop(pid, None)
        fresh.states.pop(pid, None)


def update_stats(
    store: Store,
    tz: tzinfo,
    new: NewRows,
    one_to_one: dict[str, list[int]],
    redo: set[str],
    fresh: dict[str, StatsState],
) -> None:
    """Stats of everyone the new rows touch (and of `redo`), stored with their state.

    A person's state from the last run takes this run's rows when they only add to it
    (in time order); otherwise, or without a state, the store's rows are read back.
    """
    timelines, authored, partial = new.timelines, new.authored, new.states
    clock = LocalClock(tz)
    for pid in sorted((redo | new.touched()) - {ME, UNKNOWN_SENDER}):
        timeline = timelines.get(pid, [])
        state = fresh.get(pid)
        if state is None and pid not in redo:
            saved = store.stats_state(pid)
            state = StatsState.from_json(saved) if saved else None
            if state is None:
                pass
            elif partial is not None:  # read by workers: join their state to the saved one
                joined = pid in partial and state.extend(*partial[pid])
                state = state if joined else None
            elif state.accepts(timeline):
                state.add(timeline, authored.get(pid, []), clock)
            else:
                state = None
        if state is None:
            state = StatsState()
            state.add(*store.stat_rows(pid, one_to_one.get(pid, [])), clock)
        store.set_stats(pid, state.result(), state.to_json())
