"""Give memory the service no longer uses back to the system.

A long-lived process keeps what its allocators freed: glibc keeps freed heap pages in its
arenas (one per thread that allocated; the service answers each request on a new thread) and
Arrow's mimalloc pool keeps its own. After an auto-index run, and once the service has been
idle a while, `release` hands those pages back; nothing that is in use is touched (the models,
the open index, the store). Measured in docs/performance.md ("Service memory").

Imports: stdlib; pyarrow only when it is loaded already.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
from functools import cache
from typing import Any


@cache
def _libc() -> Any | None:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


def release(*, collect: bool = False) -> None:
    """Return free pages: Arrow's pool, then the C heap (glibc's `malloc_trim`; macOS's
    `malloc_zone_pressure_relief`); a few ms, safe at any time. `collect` first runs a full
    garbage collection: over torch's and the libraries' millions of objects that holds the GIL
    for a second or more (1.4 s measured under load), so only when the service is idle."""
    if collect:
        gc.collect()
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
