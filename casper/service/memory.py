"""Give memory the service no longer uses back to the system.

A long-lived process keeps garbage its full collections never get to, and what its allocators
freed: glibc keeps freed heap pages in its arenas (one per thread that allocated; the service
answers each request on a new thread) and Arrow's mimalloc pool keeps its own. After an
auto-index run, and once the service has been idle a while, `release` collects and hands those
pages back; nothing in use is touched (the models, the open index, the store). Measured in
docs/performance.md ("Service memory").

Imports: stdlib; pyarrow only when it is loaded already.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
from functools import cache

_state = {"frozen": False}  # a full collection has frozen what it left


@cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


def release(*, full: bool = False) -> None:
    """Collect what a run or a request left in reference cycles, then return free pages:
    Arrow's pool, then the C heap (glibc's `malloc_trim`; macOS's
    `malloc_zone_pressure_relief`).

    Python's full collection almost never runs by itself in this process (it waits until the
    objects made since the last one are a quarter of the millions torch and the libraries keep),
    so cyclic garbage of every auto-index run stayed; and one full collection holds the GIL for
    a second or more (1.4 s measured under load). So `full` (when idle) collects everything and
    then freezes what is left (`gc.freeze`: the models, the libraries, the open index), and
    otherwise (after a run) only what is not frozen is collected: milliseconds."""
    if full:
        gc.unfreeze()  # what was frozen and is garbage now (an index reopened since) goes too
        gc.collect()
        gc.freeze()
        _state["frozen"] = True
    elif _state["frozen"]:  # (gc.get_freeze_count() counts the frozen: 0.1 s itself)
        gc.collect()  # only what came since the last freeze
    pyarrow = sys.modules.get("pyarrow")
    if pyarrow is not None:
        pyarrow.default_memory_pool().release_unused()
    libc = _libc()
    if libc is None:
        return
    if hasattr(libc, "malloc_trim"):  # glibc
        libc.malloc_trim(0)
    elif hasattr(libc, "malloc_zone_pressure_relief"):  # macOS: every zone, all it can
        libc.malloc_zone_pressure_relief(None, 0)
