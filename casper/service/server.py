"""The service: a threaded Unix-socket server around one warm Runtime.

One process per data dir, guaranteed by an exclusive flock on `service.lock` held for the
process's life (so a socket left by a dead service is known to be stale and is replaced).
Data access (SQLite, LanceDB, the embedder and reranker) is serialised by one lock; each chat
engine (the MLX models together, each model server apart) has its own lock and runs with the data
lock released, so a search, a refusal or another server's answer is not stuck behind a long one.
Logs go to stderr and never contain message text or queries.
"""

from __future__ import annotations

import fcntl
import logging
import os
import resource
import signal
import socket
import socketserver
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from casper.app import handlers
from casper.app.damage import explain
from casper.app.requests import COMMANDS, Request, parse
from casper.app.runtime import Runtime, engine_key
from casper.config import Config, load_config
from casper.datadir import unusable
from casper.errors import BadRequest, CasperError, DataDamaged
from casper.service import protocol
from casper.service.autoindex import AutoIndexer
from casper.service.handover import INDEX, serve_index
from casper.service.launchagent import installed
from casper.service.memory import release
from casper.service.protocol import Frame
from casper.store.db import ensure_private_dir

if TYPE_CHECKING:
    from casper.app.documents import Document
    from casper.errors import ModelUnavailable
    from casper.protocols import ChatMessage, Engine, Reply, ToolSpec

log = logging.getLogger("casper.service")


DRAIN_S = 30.0  # a stopping service lets its requests run this long
REQUEST_DEADLINE_S = 10.0  # a client has this long to send its whole request line
DIR_CHECK_S = 5.0  # how often a service checks that its data dir is still there
# idle this long after a request, the service gives freed memory back (casper.service.memory):
# after the burst of a chat, not between its turns
RELEASE_IDLE_S = 10.0
STOPPING = "stopping"  # the pid file's last word while a service finishes and exits


class AlreadyRunning(CasperError):
    default_hint = "stop it with `casper serve --stop`, or use the running one"


@contextmanager
def _released(lock: threading.Lock) -> Iterator[None]:
    """Run a block with a lock this thread holds temporarily given up."""
    lock.release()
    try:
        yield
    finally:
        lock.acquire()


class _LockedEngine:
    """An Engine whose calls give up the data lock and take the model lock."""

    def __init__(self, inner: Engine, data_lock: threading.Lock, engine_lock: threading.Lock):
        self._inner, self._data, self._model = inner, data_lock, engine_lock

    def __getattr__(self, name: str) -> Any:  # `name`, and whatever else the engine has
        return getattr(self._inner, name)

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        on_token: Callable[[str], None] | None = None,
    ) -> Reply:
        with _released(self._data), self._model:
            return self._inner.chat(messages, tools, on_token=on_token)


class EngineLocks:
    """One lock per engine: only a generation waits for a generation of the same engine. The
    MLX models share one (one GPU, one model's memory at a time); each model server has its
    own, so a refused or failing server, or another server's answer, never queues behind a
    running one (a refusal once took 61 s behind another server's generation)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def lock(self, base_url: str | None, model: str) -> threading.Lock:
        key = "mlx" if not base_url else engine_key(model, base_url)
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())


class ServiceRuntime(Runtime):
    """A Runtime whose chat models load and run under their own engine's lock, not the data
    lock."""

    def __init__(self, cfg: Config, data_lock: threading.Lock, engine_locks: EngineLocks):
        super().__init__(cfg)
        self.data_lock, self.engine_locks = data_lock, engine_locks

    def engine(
        self, model: str | None = None, base_url: str | None = None
    ) -> tuple[Engine | None, ModelUnavailable | None]:
        url = base_url or self.cfg.llm_base_url
        lock = self.engine_locks.lock(url, model or self.cfg.llm_model)
        with _released(self.data_lock), lock:
            engine, failure = super().engine(model, base_url)
        if engine is None:
            return None, failure
        return _LockedEngine(engine, self.data_lock, lock), None


def _config_stamp(home: Path) -> tuple[int, int] | None:
    try:
        st = (home / "config.toml").stat()
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_size


def _rss_mb() -> float | None:
    """Resident memory now (Linux /proc), else the peak from getrusage (macOS: bytes)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


class Service:
    """State shared by the request threads: the runtime, locks, counters, the idle clock."""

    def __init__(self, home: Path, idle_s: float) -> None:
        self.home = home
        self.idle_s = idle_s
        self.data_lock = threading.Lock()
        self.engine_locks = EngineLocks()
        self.state_lock = threading.Lock()
        self.started = time.time()
        self.last_active = time.monotonic()
        self.released = False  # freed memory given back since the last request
        self.inflight = 0
        self.served: Counter[str] = Counter()
        self.stopping = threading.Event()
        self.server: socketserver.BaseServer | None = None
        self.auto: AutoIndexer | None = None  # None: started with --no-auto-index
        self._config_stamp = _config_stamp(home)
        self._dir_id = _dir_id(home)
        self.rt = ServiceRuntime(load_config(home), self.data_lock, self.engine_locks)
        # `exclude` applied before any answer: one request (or the idle watch) purges, the
        # others wait for it (keep_out)
        self.keep_out_lock = threading.Lock()
        self._purger: AutoIndexer | None = None  # runs the purge with --no-auto-index
        self._looked_at = self._config_stamp  # the config.toml the idle watch last looked at

    @property
    def cfg(self) -> Config:
        return self.rt.cfg

    # called with the data lock held
    def current_runtime(self) -> ServiceRuntime:
        """Reload on a config.toml change (models too); reopen data when `casper index` published
        a new run (the index's generation record)."""
        stamp = _config_stamp(self.home)
        if stamp != self._config_stamp:
            log.info("config.toml changed: rebuilding everything")
            self._config_stamp = stamp
            self.rt = ServiceRuntime(load_config(self.home), self.data_lock, self.engine_locks)
        elif self.rt.refresh():
            number = self.rt.generation.number
            log.info("index generation %d: reopening the store and index", number)
        return self.rt

    def keep_out(self) -> None:
        """Before an answer: when config.toml keeps out someone the store may still hold,
        purge them now (the run `casper index` would do); requests arriving meanwhile wait
        here. A CasperError when it cannot (then no request is answered from them either:
        casper.app.handlers refuses while they are not purged)."""
        with self.keep_out_lock:
            with self.data_lock:
                rt = self.current_runtime()
                cfg = rt.cfg
                if not cfg.exclude or not cfg.store_path.exists():
                    return
                from casper.indexer.exclude import not_applied

                if not not_applied(rt.store(), cfg.exclude):
                    return
            if self.auto is None and self._purger is None:
                self._purger = AutoIndexer(self, self.home)  # its run, never its thread
            runner = self.auto or self._purger
            assert runner is not None
            runner.keep_out_now(cfg)

    def _keep_out_if_changed(self) -> None:
        """From the idle watch: config.toml changed, so `exclude` may have; applied within
        seconds even when no request comes (what `casper doctor` says)."""
        stamp = _config_stamp(self.home)
        if stamp == self._looked_at:
            return
        self._looked_at = stamp
        try:
            self.keep_out()
        except Exception as exc:  # noqa: BLE001 - the next request tries again and says why
            log.warning("could not apply exclude yet: %s", type(exc).__name__)

    def status(self) -> dict[str, object]:
        with self.state_lock:
            inflight, served = self.inflight, dict(self.served)
        return {
            "running": True,
            "pid": os.getpid(),
            "version": protocol.build_id(),
            "data_dir": str(self.home),
            "socket": str(protocol.socket_path(self.home)),
            "uptime_s": round(time.time() - self.started, 1),
            "rss_mb": _rss_mb(),
            "loaded": self.rt.loaded(),
            "index_generation": self.rt.generation.number,
            "requests": sum(served.values()),
            "by_command": served,
            "inflight": inflight,  # status requests are not counted
            "idle_exit_s": self.idle_s if self.idle_s != float("inf") else None,
            "auto_index": self.auto.status()
            if self.auto is not None
            else {"enabled": False, "off_reason": "--no-auto-index", "state": "off"},
        }

    def stop(self, why: str) -> None:
        if self.stopping.is_set():
            return
        log.info("stopping: %s", why)
        self.stopping.set()
        _mark_stopping(self.home)  # a successor waits for the lock instead of giving up
        if self.server is not None:
            threading.Thread(target=self.server.shutdown, daemon=True).start()

    @contextmanager
    def busy(self, cmd: str) -> Iterator[None]:
        with self.state_lock:
            self.inflight += 1
            self.served[cmd] += 1  # counted on arrival: a client that has its answer sees it
        try:
            yield
        finally:
            with self.state_lock:
                self.inflight -= 1
                self.last_active = time.monotonic()
                self.released = False

    def watch_idle(self) -> None:
        """Stop after `idle_s` without a request, or when the data dir was deleted (or
        replaced): a service for a folder that is gone would serve nothing, and hold a socket
        a service for a new folder of that name needs."""
        step = max(0.05, min(DIR_CHECK_S, self.idle_s / 4, RELEASE_IDLE_S / 2))
        while not self.stopping.wait(step):
            if _dir_id(self.home) != self._dir_id:
                self.stop("the data dir is gone")
                return
            self._keep_out_if_changed()
            with self.state_lock:
                quiet = time.monotonic() - self.last_active if self.inflight == 0 else 0.0
                idle = quiet > self.idle_s
                trim = quiet > RELEASE_IDLE_S and not self.released
                self.released = self.released or trim
            if idle:
                self.stop(f"idle for {self.idle_s:.0f} s")
            elif trim:
                with self.data_lock:  # not beside a request or an index run's embedding
                    release(full=True)


class Handler(socketserver.StreamRequestHandler):
    """One connection = one request; frames go out under a per-connection write lock."""

    server: _Server

    def handle(self) -> None:
        svc = self.server.service
        self.wlock = threading.Lock()
        self.gone = False
        uid = protocol.peer_uid(self.connection)
        if uid is not None and uid != os.getuid():
            log.warning("refused a connection from uid %s", uid)
            self.send({"event": "error", "message": "permission denied", "kind": "Forbidden"})
            return
        try:
            line = _read_request(self.connection, protocol.MAX_REQUEST, REQUEST_DEADLINE_S)
        except (TimeoutError, OSError):
            # one deadline for the whole line: a client sending a byte every few seconds
            # is cut off like a silent one, never holding a thread for as long as it likes
            log.warning("dropped a client whose request did not arrive in %.0f s",
                        REQUEST_DEADLINE_S)  # fmt: skip
            return
        try:
            req = protocol.decode(line)
        except ValueError:  # not UTF-8, not JSON, nested too deeply, longer than allowed
            req = None
        envelope = _envelope(req)
        if isinstance(envelope, BadRequest):  # answered, and the service keeps serving
            self.send_error(envelope)
            return
        cmd, args, version = envelope
        self.connection.settimeout(60.0)  # a client that stops reading for a minute is dropped
        if cmd == "ping":
            self.send({"event": "result", "result": {"pid": os.getpid()}})
        elif cmd == "status":
            self.send({"event": "result", "result": svc.status()})
        elif cmd == "stop":
            self.send({"event": "result", "result": {"stopping": True, "pid": os.getpid()}})
            svc.stop("asked to stop")
        elif version != protocol.build_id():
            self.send(
                {
                    "event": "error",
                    "kind": "version_mismatch",
                    "message": "the casper service runs a different version",
                    "version": protocol.build_id(),
                }
            )
            svc.stop("a client of another version asked")
        elif cmd == INDEX:
            serve_index(self, svc, args)
        else:
            try:  # checked before any data is touched, as the CLI checks it before sending
                request = parse(cmd, args)
            except BadRequest as exc:
                self.send_error(exc)
                return
            self.work(svc, cmd, request)

    def work(self, svc: Service, cmd: str, request: Request) -> None:
        def answered() -> Document:
            from casper.indexer.exclude import NotAppliedYet

            for again in (False, True):
                svc.keep_out()  # `exclude` purged before any answer, never after
                with svc.data_lock:
                    rt = svc.current_runtime()
                    if cmd == "ask":
                        rt.forget_failed_engines()
                    try:
                        return handlers.answer(rt, request, emit=self.send)
                    except NotAppliedYet:  # config.toml changed again just now
                        if again:
                            raise
            raise AssertionError("unreachable")

        self.answer(svc, cmd, answered)

    def answer(self, svc: Service, cmd: str, produce: Callable[[], object]) -> None:
        """Run `produce` for one request (counted busy, a heartbeat meanwhile) and send its
        result, or the error: a CasperError as it is, a damaged file or full disk by name, any
        other exception as "unexpected" with where the details are (the service keeps serving)."""
        done = threading.Event()
        beat = threading.Thread(target=self.heartbeat, args=(done,), daemon=True)
        started = time.perf_counter()
        ok = False
        with svc.busy(cmd):
            beat.start()
            try:
                doc = produce()
                ok = True
            except CasperError as exc:
                self.send_error(exc)
            except Exception as exc:  # noqa: BLE001 - report, keep serving
                named = explain(svc.cfg, exc)  # a damaged file or a full disk, by name
                if named is not None:
                    log.warning("request %s failed: %s", cmd, type(named).__name__)
                    self.send_error(named)
                else:
                    log.exception("request %s failed", cmd)
                    self.send(
                        {
                            "event": "error",
                            "kind": type(exc).__name__,
                            "message": f"unexpected {type(exc).__name__} in the casper service",
                            "hint": f"details in {protocol.log_path(svc.home)}; "
                            "`--no-service -v` runs it here with a traceback",
                        }
                    )
            finally:
                done.set()
            if ok:
                self.send({"event": "result", "result": doc})
        log.info("%s %s in %.1f ms", cmd, "ok" if ok else "failed", _ms(started))

    def send_error(self, exc: CasperError) -> None:
        self.send({"event": "error", "message": exc.message, "hint": exc.hint,
                   "kind": type(exc).__name__})  # fmt: skip

    def heartbeat(self, done: threading.Event) -> None:
        while not done.wait(protocol.HEARTBEAT_S):
            self.send({"event": "alive"})

    def send(self, frame: Frame) -> None:
        if self.gone:
            return
        data = protocol.encode(frame)
        with self.wlock:
            try:
                self.connection.sendall(data)
            except OSError:
                self.gone = True  # the client left; finish the work quietly


SERVICE_COMMANDS = ("ping", "status", "stop", INDEX)  # INDEX: casper.service.handover


def _read_request(sock: socket.socket, limit: int, deadline_s: float) -> bytes:
    """The request line (without its newline; more than `limit` bytes is cut there, which no
    JSON survives), read against one deadline. TimeoutError when it passes first."""
    end = time.monotonic() + deadline_s
    buf = bytearray()
    while b"\n" not in buf and len(buf) <= limit:
        left = end - time.monotonic()
        if left <= 0:
            raise TimeoutError("request line not received in time")
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
    return bytes(buf.split(b"\n", 1)[0][: limit + 1])


def _envelope(req: object) -> tuple[str, dict[str, object], str] | BadRequest:
    """(cmd, args, version) of a request line, or why it is not one. A request the service
    can't read is answered BadRequest; only a well-formed one of another version stops it."""
    if not isinstance(req, dict):
        return BadRequest("malformed request: not one JSON object on one line")
    cmd, args, version = req.get("cmd"), req.get("args"), req.get("version", "")
    if not isinstance(cmd, str) or not (cmd in SERVICE_COMMANDS or cmd in COMMANDS):
        return BadRequest(
            f"malformed request: unknown command {str(cmd)[:40]!r}",
            hint=f"one of {', '.join(COMMANDS + SERVICE_COMMANDS)}",
        )
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return BadRequest(f"malformed request: args must be an object, not {type(args).__name__}")
    if not isinstance(version, str) or ((cmd in COMMANDS or cmd == INDEX) and not version):
        return BadRequest("malformed request: no version", hint="send the client's build id")
    return cmd, args, version


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    allow_reuse_address = False
    request_queue_size = 128  # a burst of clients must queue, not be refused (default 5)
    service: Service


def _dir_id(path: Path) -> tuple[int, int] | None:
    """Which file or folder is at `path` now (device, inode); None when nothing is."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _mark_stopping(home: Path) -> None:
    """Say in the pid file that this service is on its way out (finishing its requests)."""
    path = protocol.pid_path(home)
    try:
        line = path.read_text().split("\n", 1)[0]
        if not line.endswith(STOPPING):
            path.write_text(f"{line} {STOPPING}\n")
    except OSError:
        pass  # the data dir is gone: nobody waits on it


def _stopping(home: Path) -> bool:
    try:
        return protocol.pid_path(home).read_text().split("\n", 1)[0].endswith(STOPPING)
    except OSError:
        return False


def _take_lock(home: Path) -> int:
    """The per-data-dir lock, held for the process's life; AlreadyRunning if someone has it.
    A service that is stopping (it met a client of another version, or was asked to) is waited
    for while it finishes its requests: the hand-over to the new version then just works."""
    path = protocol.lock_path(home)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:  # a folder in its place, no permission
        raise DataDamaged("the service lock", path, unusable(path) or str(exc.strerror)) from exc
    tries = 0
    deadline = time.monotonic() + DRAIN_S + 5.0
    while time.monotonic() < deadline:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            tries += 1
            if tries >= 5 and not _stopping(home):  # a client's probe holds it for a moment
                break
            time.sleep(0.05)
    os.close(fd)
    pid = protocol.pid_path(home)
    who = pid.read_text().split()[0] if pid.exists() else "?"
    raise AlreadyRunning(f"a casper service already runs for {home} (pid {who})")


def _bind(path: Path) -> _Server:
    protocol.private_socket_dir(path)
    path.unlink(missing_ok=True)  # we hold the lock: whatever is there is stale
    old = os.umask(0o077)
    try:
        server = _Server(str(path), Handler, bind_and_activate=True)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    return server


def serve(home: Path, *, idle_minutes: float | None = None, auto_index: bool = True) -> None:
    """Run the service in the foreground until stopped, idle, or signalled.

    `idle_minutes` 0 (or, when not given, a LaunchAgent installed for this data dir: the service
    that starts with the login, or the one that took over from it) never exits for idleness.
    `auto_index` off: no watching of chat.db, whatever config.toml says."""
    home = Path(os.path.abspath(home.expanduser()))
    ensure_private_dir(home)
    lock_fd = _take_lock(home)
    svc_dir, bound, wrote_pid = _dir_id(home), None, False
    sock = protocol.socket_path(home)
    pid_file = protocol.pid_path(home)
    try:
        cfg = load_config(home)
        minutes = idle_minutes if idle_minutes is not None else _default_idle(home, cfg)
        svc = Service(home, idle_s=max(1.0, float(minutes) * 60) if minutes > 0 else float("inf"))
        server = _bind(sock)
        bound = _dir_id(sock)
        server.service = svc
        svc.server = server
        try:
            fd = os.open(pid_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError as exc:  # a folder in its place, no permission
            cannot = unusable(pid_file) or str(exc.strerror)
            raise DataDamaged("the service's pid file", pid_file, cannot) from exc
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{os.getpid()} {protocol.build_id()} {sock}\n")
        wrote_pid = True
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(sig, lambda *_: svc.stop("signal"))
        threading.Thread(target=svc.watch_idle, daemon=True).start()
        if auto_index:
            svc.auto = AutoIndexer(svc, home)
            svc.auto.start()
        log.info(
            "casper service %s listening on %s (pid %d)", protocol.build_id(), sock, os.getpid()
        )
        try:
            server.serve_forever(poll_interval=0.2)
        finally:
            server.server_close()
            _drain(svc, timeout=DRAIN_S)
            if svc.auto is not None:
                svc.auto.stop(timeout=30.0)  # let a run finish (a kill mid-run is safe too)
    finally:
        # only what is still ours: when the data dir was deleted and made again, a new service
        # may already listen at the same socket path
        if bound is not None and _dir_id(sock) == bound:
            sock.unlink(missing_ok=True)
        if wrote_pid and _dir_id(home) == svc_dir:  # not a file it could not write: doctor names it
            pid_file.unlink(missing_ok=True)
        os.close(lock_fd)  # releases the flock last: a new service may now start
    log.info("casper service stopped")


def _default_idle(home: Path, cfg: Config) -> float:
    """The configured idle time, or 0 (never) when a LaunchAgent starts this service at login."""
    return 0.0 if installed(home) else float(cfg.service_idle_minutes)


def _drain(svc: Service, timeout: float) -> None:
    """Let requests still running finish (bounded), so a stop never cuts an answer short."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with svc.state_lock:
            if svc.inflight == 0:
                return
        time.sleep(0.05)
