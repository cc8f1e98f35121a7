"""Which engine embeds a bulk run (a first index, `--rebuild`, a large reconcile): the faster one
on this run's own passages, measured while the run embeds them.

onnxruntime loads in seconds and holds ~200 MB, so queries and the service's small runs keep it;
for hundreds of passages and more only the rate counts, and on some CPUs, passages and loads
torch embeds faster (docs/performance.md). No rate measured once decides later runs: the
conditions move (the machine's load, the passages' length). So a bulk run's engine is a `Race`:
the run's default engine embeds while the other loads in the background; then both embed
slices of the run's passages in turn (the first slice of each untimed: first calls allocate),
the faster — by characters a second — embeds what follows, and the other gets a slice again
every few thousand passages, or at once when the chosen engine's rate drops, so a choice that
stopped being right is undone. Nothing is kept after the run. On an Apple-silicon Mac torch on
the GPU (MPS) is chosen as for every run; a backend fixed in config.toml is kept (`decide`).
Every engine is held to torch-on-the-CPU's vectors (casper.backends.placement), so the vectors,
and search, do not depend on which engine embedded a passage.

Generic over what is embedded: any texts, any count; the run decides when racing pays
(casper.indexer.run.BULK_CHUNKS: from 20,000 chunks, measured).

Imports: stdlib, numpy, casper.backends.placement; engines are built by the caller (the factory).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from casper.backends.placement import choose

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from casper.protocols import Embedder

# another engine takes over only when it is this much faster: two rates within a few percent
# are the same rate on a busy machine, and switching back and forth would gain nothing
MARGIN = 1.05
SLICE = 32  # passages in one timed slice (a run's batch of 128 is cut into four)
RACE_PASSAGES = 96  # timed passages of each engine before a choice
RECHECK_EVERY = 2_048  # passages embedded by the chosen engine between two re-checks
SLOWED = 0.75  # the chosen engine's recent rate below this share of its race rate: re-check now
RECENT = 0.3  # weight of the latest slice in the chosen engine's recent rate
NAMES = {"onnx": "onnxruntime", "torch": "torch"}


@dataclass(frozen=True, slots=True)
class BulkChoice:
    """The engine the settings fix for a bulk run (the Apple GPU, a backend in config.toml, no
    onnxruntime): `backend` on `device`, and why, in words."""

    backend: str
    device: str
    why: str


def decide(
    backend: str, device: str, *, gpu: bool, onnx: bool, load: float = 0.0, cores: int = 1
) -> BulkChoice | None:
    """The bulk engine the settings `embed_backend`/`embed_device` fix on a machine with (or
    without) the Apple GPU and onnxruntime; None: race onnxruntime and torch on the CPU. A CPU
    already busier than its cores (`load`: the 1-minute load average) keeps onnxruntime without
    a race: there torch loses more to the other jobs than onnxruntime does (measured at every
    load above the core count here, docs/performance.md), and the race would pay torch's load
    and its share of slices for nothing."""
    plan = choose(backend, device, gpu=lambda: gpu, onnx=lambda: onnx)
    if plan.device == "mps":
        return BulkChoice("torch", "mps", "torch on the Apple GPU (mps), as for every run")
    if backend != "auto" or plan.backend == "torch":
        why = (
            f'embed_backend = "{backend}" in config.toml'
            if backend != "auto"
            else "onnxruntime is not installed"
        )
        return BulkChoice(plan.backend, plan.device, why)
    if load > cores:
        why = f"onnxruntime: the machine is busy (load {load:.1f} on {cores} cores)"
        return BulkChoice("onnx", "cpu", why)
    return None


@dataclass(slots=True)
class _Tally:
    """Characters and seconds one engine embedded, timed."""

    chars: int = 0
    seconds: float = 0.0
    texts: int = 0

    def add(self, chars: int, seconds: float, texts: int) -> None:
        self.chars, self.seconds, self.texts = (
            self.chars + chars, self.seconds + seconds, self.texts + texts,
        )  # fmt: skip

    @property
    def rate(self) -> float:
        return self.chars / self.seconds if self.seconds > 0 else 0.0


@dataclass(slots=True)
class _Entrant:
    name: str
    make: Callable[[], Embedder]
    engine: Embedder | None = None
    loading: threading.Thread | None = None
    failed: BaseException | None = None
    warmed: bool = False
    tally: _Tally = field(default_factory=_Tally)  # this round's timed slices

    @property
    def ready(self) -> bool:
        return self.engine is not None


class Race:
    """An embedder for one bulk run that embeds each slice of passages with the engine that is
    fastest on this run. `engines`: builders by name, the run's default first (it embeds while
    the others load, `background`: on a thread). `check` is called with every other engine
    once built (the same model, whatever runs it); `on_choice` after each choice, with `why`
    in words. The identity (name, dim, checksum) is the default engine's."""

    def __init__(
        self,
        engines: Mapping[str, Callable[[], Embedder]],
        *,
        clock: Callable[[], float] = time.perf_counter,
        background: bool = True,
        check: Callable[[Embedder], None] | None = None,
        on_choice: Callable[[str], None] | None = None,
    ) -> None:
        self.entrants = [_Entrant(name, make) for name, make in engines.items()]
        self.clock, self.background = clock, background
        self.check, self.on_choice = check, on_choice
        self.choice: str | None = None  # the engine embedding now (None: not raced yet)
        self.rates: dict[str, float] = {}  # characters a second, at the last race
        self.why = f"{NAMES.get(self.entrants[0].name, self.entrants[0].name)} (not raced yet)"
        self._since_choice = 0  # passages the choice embedded since it was made
        self._recent = 0.0  # the choice's recent rate
        self._racing = False
        first = self._build(self.entrants[0])
        self.name, self.dim = first.name, first.dim
        self.checksum = str(getattr(first, "checksum", ""))

    # ---- the Embedder protocol ----------------------------------------------------------------
    def embed_documents(
        self, texts: Sequence[str], on_progress: Callable[[int, int], None] | None = None
    ) -> NDArray[np.float32]:
        self._start_loading()
        parts = []
        for start in range(0, len(texts), SLICE):
            part = list(texts[start : start + SLICE])
            parts.append(self._embed(self._next(), part))
            if on_progress is not None:
                on_progress(min(start + SLICE, len(texts)), len(texts))
        if not parts:
            return self._build(self.entrants[0]).embed_documents([])
        return np.concatenate(parts).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        return self._build(self.entrants[0]).embed_query(text)

    @property
    def engine(self) -> Embedder:
        """The engine embedding now (the default until a race chose)."""
        return self._entrant(self.choice).engine or self.entrants[0].engine  # type: ignore[return-value]

    @property
    def placement(self) -> Any:
        """Where the passages are embedded now, and why (what `index --json` reports)."""
        placement = getattr(self.engine, "placement", None)
        return placement.with_why(self.why) if placement is not None else None

    # ---- choosing ----------------------------------------------------------------------------
    def _next(self) -> _Entrant:
        ready = [e for e in self.entrants if e.ready]
        if len(ready) < 2 or any(e.loading is not None for e in self.entrants):
            return self._entrant(self.choice) if self.choice else self.entrants[0]
        if not self._racing and self.choice is None:
            self._start_race()
        if self._racing:
            unwarmed = [e for e in ready if not e.warmed]
            if unwarmed:
                return unwarmed[0]
            behind = min(ready, key=lambda e: e.tally.texts)
            if behind.tally.texts < RACE_PASSAGES:
                return behind
            self._decide(ready)
        return self._entrant(self.choice)

    def _start_race(self) -> None:
        self._racing = True
        for e in self.entrants:
            e.tally = _Tally()

    def _decide(self, ready: list[_Entrant]) -> None:
        self._racing = False
        current = self._entrant(self.choice) if self.choice else self.entrants[0]
        fastest = max(ready, key=lambda e: e.tally.rate)
        if fastest is not current and fastest.tally.rate < MARGIN * current.tally.rate:
            fastest = current  # not clearly faster: the engine embedding keeps the run
        self.rates = {e.name: round(e.tally.rate, 1) for e in ready}
        changed = fastest.name != self.choice
        self.choice, self._since_choice = fastest.name, 0
        self._recent = fastest.tally.rate
        others = [e for e in ready if e is not fastest]
        best_other = max(others, key=lambda e: e.tally.rate)
        ratio = fastest.tally.rate / best_other.tally.rate if best_other.tally.rate else 0.0
        name, other = NAMES.get(fastest.name, fastest.name), NAMES.get(best_other.name, "")
        self.why = (
            f"{name}: {ratio:.1f}× {other} on this run's passages"
            if ratio >= 1.05
            else f"{name}: {other} only {1 / ratio:.2f}× its rate on this run's passages"
            if ratio
            else f"{name} on this run's passages"
        )
        if changed and self.on_choice is not None:
            self.on_choice(self.why)

    def _embed(self, entrant: _Entrant, part: list[str]) -> NDArray[np.float32]:
        engine = self._build(entrant)
        started = self.clock()
        vectors = np.asarray(engine.embed_documents(part), np.float32)
        took = self.clock() - started
        chars = sum(len(t) for t in part)
        if not entrant.warmed:
            entrant.warmed = True  # its first call allocates: not a rate
        elif self._racing:
            entrant.tally.add(chars, took, len(part))
        elif entrant.name == self.choice and took > 0:
            self._since_choice += len(part)
            self._recent = (1 - RECENT) * self._recent + RECENT * chars / took
            slowed = self._recent < SLOWED * self.rates.get(entrant.name, 0.0)
            if self._since_choice >= RECHECK_EVERY or slowed:
                self._start_race()  # each engine's next slices are timed again
        return vectors

    def _entrant(self, name: str | None) -> _Entrant:
        return next((e for e in self.entrants if e.name == name), self.entrants[0])

    # ---- loading -----------------------------------------------------------------------------
    def _build(self, entrant: _Entrant) -> Embedder:
        if entrant.engine is None:
            entrant.engine = entrant.make()
        return entrant.engine

    def _start_loading(self) -> None:
        """The other engines load once the run embeds (not before: a run that embeds nothing
        loads nothing), on a thread while the default engine embeds."""
        for e in self.entrants[1:]:
            if e.engine is not None or e.failed is not None:
                if e.loading is not None and not e.loading.is_alive():
                    e.loading = None
                continue
            if e.loading is None:
                e.loading = threading.Thread(target=self._load, args=(e,), daemon=True,
                                             name=f"load {e.name}")  # fmt: skip
                if self.background:
                    e.loading.start()
                else:
                    self._load(e)
                    e.loading = None

    def _load(self, entrant: _Entrant) -> None:
        try:
            engine = entrant.make()
            if self.check is not None:
                self.check(engine)
        except Exception as exc:  # noqa: BLE001 - the default engine carries the run alone
            entrant.failed = exc
            first = self.entrants[0].name
            self.why = (f"{NAMES.get(first, first)}: {NAMES.get(entrant.name, entrant.name)} "
                        f"did not load ({type(exc).__name__})")  # fmt: skip
            return
        entrant.engine = engine
