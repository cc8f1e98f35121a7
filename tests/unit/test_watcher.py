"""The service's auto-index timing (casper.service.watcher), driven by a fake clock: a burst of
writes is one run, runs never overlap, failures back off exponentially up to a cap and are
retried without a new write, a skipped run is not a failure."""

from __future__ import annotations

from casper.service.watcher import Policy, Watcher

POLICY = Policy(poll_s=1.0, settle_poll_s=0.25, quiet_s=0.5, max_delay_s=10.0,
                backoff_s=5.0, backoff_max_s=60.0)  # fmt: skip


def settled(now: float = 0.0) -> Watcher:
    """A watcher past its catch-up run, having seen the files once (stamp "a")."""
    w = Watcher(POLICY, now=now)
    w.observe("a", now)
    assert w.due(now)  # the catch-up run: what arrived while the service was off
    w.started(now)
    w.finished(now + 0.5, "ok")
    assert not w.due(now + 1)
    return w


def test_a_write_runs_once_the_files_are_quiet() -> None:
    w = settled()
    assert w.observe("b", 10.0)
    assert not w.due(10.2)  # still being written, perhaps
    assert w.due(10.5)
    w.started(10.5)
    w.finished(11.0, "ok")
    assert not w.due(20.0)
    assert not w.observe("b", 20.0)  # the same files: nothing new


def test_a_burst_of_writes_is_one_run() -> None:
    w = settled()
    runs = 0
    t = 10.0
    for i in range(40):  # a write every 0.2 s for 8 s: never quiet for 0.5 s
        w.observe(f"burst{i}", t)
        if w.due(t):
            runs += 1
            w.started(t)
            w.finished(t, "ok")
        t += 0.2
    assert runs == 0
    assert w.due(t + 0.5)


def test_a_stream_that_never_pauses_still_gets_a_run_every_max_delay() -> None:
    w = settled()
    t, first_due = 10.0, None
    while first_due is None:
        w.observe(t, t)  # a new stamp every 0.1 s
        if w.due(t):
            first_due = t
        t += 0.1
    assert abs(first_due - (10.0 + POLICY.max_delay_s)) < 0.11


def test_runs_never_overlap_and_writes_during_a_run_make_the_next_one() -> None:
    w = settled()
    w.observe("b", 10.0)
    assert w.due(11.0)
    w.started(11.0)
    w.observe("c", 12.0)  # written while the run reads
    assert not w.due(20.0)  # never a second run at once
    assert w.state(20.0) == "running"
    w.finished(21.0, "ok")
    assert w.due(21.0)  # "c" is not covered by the run that started before it


def test_failures_back_off_exponentially_up_to_the_cap_and_retry_without_a_write() -> None:
    w = settled()
    w.observe("b", 10.0)
    t = 11.0
    waits = []
    for _ in range(6):
        assert w.due(t)
        w.started(t)
        w.finished(t, "failed")
        retry = w.retry_at
        assert retry is not None
        waits.append(retry - t)
        assert not w.due(retry - 0.01)
        assert w.state(retry - 0.01) == "backing off"
        t = retry  # no new write: the retry comes anyway
    assert waits == [5.0, 10.0, 20.0, 40.0, 60.0, 60.0]
    assert w.failures == 6
    w.started(t)
    w.finished(t, "ok")
    assert w.failures == 0 and w.retry_at is None and not w.due(t + 100)


def test_backing_off_is_not_cut_short_by_new_writes() -> None:
    w = settled()
    w.observe("b", 10.0)
    w.started(10.5)
    w.finished(10.6, "failed")  # retry at 15.6
    w.observe("c", 12.0)
    assert not w.due(13.0)
    assert w.due(15.6)


def test_a_skipped_run_retries_after_a_poll_and_is_not_a_failure() -> None:
    w = settled()
    w.observe("b", 10.0)
    w.started(10.5)
    w.finished(10.5, "skipped")  # a manual `casper index` held the lock
    assert w.failures == 0
    assert not w.due(11.0)
    assert w.due(11.5)


def test_nothing_indexed_yet_leaves_nothing_pending() -> None:
    w = Watcher(POLICY, now=0.0)
    w.started(0.0)
    w.finished(0.1, "idle")
    assert not w.due(100.0) and w.failures == 0


def test_it_polls_slowly_while_idle_and_quickly_while_writes_settle() -> None:
    w = settled()
    assert w.next_poll(5.0) == POLICY.poll_s
    w.observe("b", 10.0)
    assert w.next_poll(10.0) == POLICY.settle_poll_s
    w.started(10.5)
    w.finished(10.5, "failed")
    assert w.next_poll(15.0) == 0.5  # wakes up for the retry at 15.5


def test_waiting_since_is_the_first_write_not_indexed_yet() -> None:
    w = settled()
    assert w.waiting_since() is None  # the catch-up run is not a write anybody waits for
    w.observe("b", 10.0)
    w.observe("c", 10.3)
    assert w.waiting_since() == 10.0
    w.started(11.0)
    assert w.waiting_since() == 10.0  # still waiting while the run goes
    w.finished(12.0, "failed")
    assert w.waiting_since() == 10.0  # and after it failed
    w.started(17.0)
    w.finished(17.5, "ok")
    assert w.waiting_since() is None
