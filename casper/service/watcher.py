"""When the service indexes on its own: a pure state machine over chat.db's file stamps and time.

The service's auto-index thread (casper.service.autoindex) stats chat.db and chat.db-wal, tells
the Watcher what it saw (`observe`), and runs the index when `due()`; `started` and `finished`
bracket the run. Everything that decides timing is here, with the clock passed in, so the tests
drive it with a fake one:

- debounce: a run starts once the files have been quiet for `quiet_s`, so a burst of messages
  (Messages writes several rows and a checkpoint per message) is one run; a stream that never
  pauses still gets a run every `max_delay_s`;
- never two at once: nothing is due while a run is going; what was written meanwhile is seen
  afterwards (the stamp differs from the one the run started from) and makes the next run;
- a failed run is retried after an exponential, capped backoff, even with no new write, and a
  success resets it; a skipped run (a manual `casper index` holds the lock) retries after one
  poll, without counting as a failure.

Imports: stdlib only.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

Stamp = Hashable  # whatever identifies the files' state; only compared for equality


@dataclass(frozen=True, slots=True)
class Policy:
    """The watcher's timings, in seconds."""

    poll_s: float = 1.0  # stat chat.db this often while nothing is pending (~50 µs a poll)
    settle_poll_s: float = 0.25  # and this often while waiting for the writes to pause
    quiet_s: float = 0.5  # a run starts after the files were unchanged this long
    max_delay_s: float = 10.0  # … or this long after the first write it has not indexed
    backoff_s: float = 5.0  # first retry after a failure; doubles per failure
    backoff_max_s: float = 300.0  # and never waits longer than this


class Watcher:
    """Decides when the next automatic run starts. Times are monotonic seconds."""

    def __init__(self, policy: Policy | None = None, *, now: float, catch_up: bool = True) -> None:
        self.policy = policy or Policy()
        self.stamp: Stamp | None = None  # what the files looked like last time
        self.changed_at = now - self.policy.quiet_s  # when they last changed (quiet at start)
        # the first change not indexed yet; a service starts by catching up with what arrived
        # while it was not running (a run with nothing new is a 0.5 s check)
        self.pending_since: float | None = now if catch_up else None
        self.seen_since: float | None = None  # the first write seen and not indexed yet
        self.running = False
        self.failures = 0  # consecutive failed runs
        self.retry_at: float | None = None  # no run before this (backoff, or a skipped run)
        self._covering: tuple[float | None, float | None] = (None, None)  # the running run's

    # ---- what the thread reports -------------------------------------------------------------
    def observe(self, stamp: Stamp, now: float) -> bool:
        """The files as stat'ed now; True when they changed since the last look."""
        if stamp == self.stamp:
            return False
        first_look = self.stamp is None
        self.stamp = stamp
        if first_look:
            return False  # the baseline; the catch-up run covers what came before it
        self.changed_at = now
        self.pending_since = _earliest(self.pending_since, now)
        self.seen_since = _earliest(self.seen_since, now)
        return True

    def started(self, now: float) -> None:
        """A run starts now from the files as last observed: it covers what is pending."""
        self.running = True
        self._covering = (self.pending_since, self.seen_since)
        self.pending_since = self.seen_since = None

    def finished(self, now: float, outcome: str) -> None:
        """The run ended: "ok", "skipped" (the lock was taken: try again after a poll),
        "idle" (nothing to keep current: no store yet) or "failed" (backoff, then retry)."""
        self.running = False
        covered, self._covering = self._covering, (None, None)
        if outcome in ("ok", "idle"):
            self.failures, self.retry_at = 0, None
            return
        # the work is still to do, new writes or not
        self.pending_since = _earliest(self.pending_since, covered[0] or now)
        self.seen_since = _earliest(self.seen_since, covered[1])
        if outcome == "skipped":
            self.retry_at = now + self.policy.poll_s
            return
        self.failures += 1
        self.retry_at = now + self.backoff()

    # ---- what the thread asks ---------------------------------------------------------------
    def backoff(self) -> float:
        """The wait after the current run of failures: backoff_s · 2^(failures-1), capped."""
        if self.failures == 0:
            return 0.0
        doubled = self.policy.backoff_s * 2 ** min(self.failures - 1, 30)
        return min(doubled, self.policy.backoff_max_s)

    def due(self, now: float) -> bool:
        """True when a run should start now."""
        if self.running or self.pending_since is None:
            return False
        if self.retry_at is not None and now < self.retry_at:
            return False
        quiet = now - self.changed_at >= self.policy.quiet_s
        overdue = now - self.pending_since >= self.policy.max_delay_s
        return quiet or overdue or self.retry_at is not None

    def next_poll(self, now: float, *, heard: bool = False) -> float:
        """Seconds until the thread should look again. `heard`: the OS reports every change
        (casper.service.filewatch), so while writes are pending the next look is when they will
        have been quiet long enough (a new write wakes the thread sooner), not a settle poll."""
        if self.retry_at is not None and now < self.retry_at:
            return max(0.0, min(self.policy.poll_s, self.retry_at - now))
        if self.pending_since is not None:
            if heard and not self.running:
                due = min(self.changed_at + self.policy.quiet_s,
                          self.pending_since + self.policy.max_delay_s)  # fmt: skip
                return max(0.0, min(due - now, self.policy.settle_poll_s))
            return self.policy.settle_poll_s
        return self.policy.poll_s

    def waiting_since(self) -> float | None:
        """The first write seen and not indexed yet, counting those a running run covers."""
        return _earliest(self.seen_since, self._covering[1] if self.running else None)

    def state(self, now: float) -> str:
        """One word for `casper serve --status`."""
        if self.running:
            return "running"
        if self.failures and self.retry_at is not None and now < self.retry_at:
            return "backing off"
        if self.pending_since is not None:
            return "waiting for writes to pause"
        return "watching"


def _earliest(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)
