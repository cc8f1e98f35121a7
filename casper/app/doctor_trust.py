"""`casper doctor`'s lines on what could leave or be swapped: the libraries' telemetry
(casper.telemetry) and the embedder's model cache (casper.backends.onnx_cache), only looked at:
nothing is tightened or made again here (the next command that loads the embedder does that).

Imports: casper.config, casper.telemetry, casper.backends (onnx_cache, onnx_embedder, loading,
placement), casper.app.doctor_check; no model library.
"""

from __future__ import annotations

from casper.app.doctor_check import check
from casper.app.documents import Check
from casper.backends import onnx_cache, placement
from casper.backends.onnx_embedder import COPY_FILES, cache_key, check_folder, model_identity
from casper.config import Config
from casper.telemetry import SWITCHED_OFF, cache_dir, onnxruntime_records, telemetry_state


def trust_checks(cfg: Config) -> list[Check]:
    return [telemetry_check(), model_cache_check(cfg)]


def telemetry_check() -> Check:
    state = telemetry_state()
    on = [name for name, off in state.items() if not off]
    if on:
        return check(
            "telemetry", "warn", f"not switched off in this process: {', '.join(on)}",
            "run Casper through the `casper` command (it switches them off before any library "
            "loads), or call casper.telemetry.switch_off() first",
        )  # fmt: skip
    detail = f"off ({', '.join(SWITCHED_OFF)}); library caches kept in {cache_dir()}"
    left = onnxruntime_records()
    if left is not None:
        return check(
            "telemetry", "warn", f"{detail}; onnxruntime's earlier record of this machine is "
            f"still in {left}",
            "it was written before the switch (by an earlier Casper or another program that "
            f"loads onnxruntime); Casper no longer adds to it: delete it with `rm -r {left}`",
        )  # fmt: skip
    return check("telemetry", "ok", detail)


def model_cache_check(cfg: Config) -> Check:
    """Owner-only, no links out of it, and the onnxruntime copy still the one this data dir
    recorded when it first used it. A cache this user cannot even look into (another user's
    folder, no permission) is that check failing, not an unexpected error of doctor's."""
    try:
        return _model_cache_check(cfg)
    except OSError as exc:
        return check("model cache", "fail", f"cannot read {cache_dir()}: {exc.strerror or exc}",
                     "give the folder back to your user (chown) or set CASPER_CACHE to a folder "
                     "of yours")  # fmt: skip


def _model_cache_check(cfg: Config) -> Check:
    cache = cache_dir()
    # placement.onnxruntime_installed is looked up at the call: tests swap it
    if cfg.embed_backend == "torch" or not placement.onnxruntime_installed():
        return check("model cache", "ok", f"{cache} (not used: the embedder runs on torch)")
    try:
        name, checksum = model_identity(cfg.embed_model)
        folder = cache / "onnx" / cache_key(name, checksum)
    except Exception as exc:  # noqa: BLE001 - the embedder's own line says why it cannot load
        return check("model cache", "warn", f"{cache}: the model is not identified ({exc})")
    found = onnx_cache.inspect(cache, folder, tighten=False)
    fix = "the next `casper index` or search makes the copy again"
    if found.refusal:
        return check(
            "model cache", "fail", found.refusal,
            "give the folder back to your user (chown) or set CASPER_CACHE to a folder of yours",
        )  # fmt: skip
    if found.notices:
        return check("model cache", "warn", "; ".join(found.notices),
                     "the next command that loads the embedder makes them owner-only")  # fmt: skip
    if not folder.exists() and not folder.is_symlink():
        return check("model cache", "ok", f"{cache} owner-only; no onnxruntime copy yet")
    ledger = cfg.data_dir / onnx_cache.LEDGER_FILE
    recorded = onnx_cache.recorded(ledger, folder)
    problem = found.problem or check_folder(folder, recorded)
    if problem:
        return check("model cache", "warn", f"the onnxruntime copy in {folder}: {problem}", fix)
    if recorded is None:
        return check("model cache", "ok", f"{cache} owner-only; the onnxruntime copy is checked "
                     "and its sha256 recorded in this data dir when it is next used")  # fmt: skip
    digest = recorded.get(COPY_FILES[0], "")[:12]
    return check("model cache", "ok", f"{cache} owner-only; the onnxruntime copy matches the "
                 f"sha256 recorded in {ledger.name} ({digest}…)")  # fmt: skip
