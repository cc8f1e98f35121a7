"""The embedder's model cache held like ssh's files (casper.backends.onnx_cache): modes that let
others write are tightened and said, another user's folder refused, links not followed, and a
copy swapped together with its meta.json noticed through the data dir's own record."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from casper.app.doctor_trust import model_cache_check
from casper.backends import onnx_cache
from casper.backends.onnx_embedder import (
    MODEL_FILE,
    TOKENIZER_FILE,
    OnnxUnusable,
    prepare,
    sha256_of,
    write_meta,
)
from casper.config import load_config


class FakeExport:
    """Writes what an export writes: a model, a tokenizer and a meta.json naming its sha256."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, model: str, folder: Path) -> None:
        self.calls += 1
        folder.mkdir(mode=0o700)
        (folder / MODEL_FILE).write_bytes(b"graph and weights %d" % self.calls)
        (folder / TOKENIZER_FILE).write_text("{}")
        write_meta(folder, {"name": model, "model_sha256": sha256_of(folder / MODEL_FILE)})


def _prepare(tmp_path: Path, export: FakeExport, ledger: Path | None = None):  # noqa: ANN202
    data = tmp_path / "data"
    data.mkdir(mode=0o700, exist_ok=True)
    return prepare("m", name="m", checksum="abc", cache=tmp_path / "cache", export=export,
                   ledger=data / onnx_cache.LEDGER_FILE if ledger is None else ledger)  # fmt: skip


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_cache_writable_by_others_is_made_owner_only_and_said(tmp_path: Path) -> None:
    export = FakeExport()
    made = _prepare(tmp_path, export)
    assert made.notice is None
    (tmp_path / "cache").chmod(0o777)
    (made.folder / MODEL_FILE).chmod(0o666)
    again = _prepare(tmp_path, export)
    assert again.folder == made.folder and export.calls == 1  # same copy, still unchanged
    assert again.notice and "writable by others (mode 777)" in again.notice
    assert f"{MODEL_FILE} was writable by others (mode 666)" in again.notice
    assert _mode(tmp_path / "cache") == 0o700 and _mode(made.folder / MODEL_FILE) == 0o600
    assert _prepare(tmp_path, export).notice is None  # said once: nothing left to tighten


def test_a_model_swapped_with_a_matching_meta_json_is_noticed_and_made_again(
    tmp_path: Path,
) -> None:
    export = FakeExport()
    made = _prepare(tmp_path, export)
    ledger = tmp_path / "data" / onnx_cache.LEDGER_FILE
    assert _mode(ledger) == 0o600
    recorded = json.loads(ledger.read_text())[str(made.folder)]["sha256"]
    assert recorded[MODEL_FILE] == sha256_of(made.folder / MODEL_FILE)
    # someone who can write the cache swaps the model and rewrites meta.json to match it
    (made.folder / MODEL_FILE).write_bytes(b"other weights that change every search")
    write_meta(made.folder, {"name": "m", "model_sha256": sha256_of(made.folder / MODEL_FILE)})
    again = _prepare(tmp_path, export)
    assert export.calls == 2
    assert again.notice and "is not the file this data dir checked" in again.notice
    assert (again.folder / MODEL_FILE).read_bytes() == b"graph and weights 2"
    # the record follows the copy made again, and that copy is then used as it is
    assert json.loads(ledger.read_text())[str(again.folder)]["sha256"][MODEL_FILE] == sha256_of(
        again.folder / MODEL_FILE
    )
    assert _prepare(tmp_path, export).notice is None and export.calls == 2


def test_the_same_swap_passed_unnoticed_without_the_data_dirs_record(tmp_path: Path) -> None:
    """What the record adds: meta.json alone, which the cache holds, vouches for any model."""
    export = FakeExport()
    made = prepare("m", name="m", checksum="abc", cache=tmp_path, export=export)
    (made.folder / MODEL_FILE).write_bytes(b"other weights")
    write_meta(made.folder, {"name": "m", "model_sha256": sha256_of(made.folder / MODEL_FILE)})
    assert prepare("m", name="m", checksum="abc", cache=tmp_path, export=export).notice is None
    assert export.calls == 1


def test_links_out_of_the_cache_are_not_followed(tmp_path: Path) -> None:
    export = FakeExport()
    made = _prepare(tmp_path, export)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / MODEL_FILE).write_bytes((made.folder / MODEL_FILE).read_bytes())
    (made.folder / MODEL_FILE).unlink()
    (made.folder / MODEL_FILE).symlink_to(outside / MODEL_FILE)
    again = _prepare(tmp_path, export)
    assert again.notice and f"{MODEL_FILE} is a link (to {outside / MODEL_FILE})" in again.notice
    assert export.calls == 2 and not (again.folder / MODEL_FILE).is_symlink()
    assert (outside / MODEL_FILE).exists()  # what the link pointed to is left alone
    # the copy's folder itself a link: made again in place, the linked folder untouched
    copy = tmp_path / "copy-elsewhere"
    again.folder.rename(copy)
    again.folder.symlink_to(copy)
    third = _prepare(tmp_path, export)
    assert third.notice and "its folder is a link" in third.notice and export.calls == 3
    assert not third.folder.is_symlink() and (copy / MODEL_FILE).exists()
    # the cache's onnx folder a link: refused (the embedder stays on torch and says why)
    onnx = tmp_path / "cache" / "onnx"
    onnx.rename(tmp_path / "onnx-elsewhere")
    onnx.symlink_to(tmp_path / "onnx-elsewhere")
    with pytest.raises(OnnxUnusable, match="is a link"):
        _prepare(tmp_path, export)


def test_a_cache_of_another_user_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export = FakeExport()
    _prepare(tmp_path, export)
    me = os.getuid()
    monkeypatch.setattr(onnx_cache.os, "getuid", lambda: me + 1)
    with pytest.raises(OnnxUnusable, match="belongs to another user"):
        _prepare(tmp_path, export)
    assert export.calls == 1


def test_doctor_says_the_cache_is_owner_only_and_names_a_swap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, home = tmp_path / "cache", tmp_path / "home"
    monkeypatch.setenv("CASPER_CACHE", str(cache))
    monkeypatch.setattr("casper.backends.placement.onnxruntime_installed", lambda: True)
    cfg = load_config(home)
    home.mkdir(mode=0o700)
    export = FakeExport()
    from casper.backends.onnx_embedder import model_identity

    name, checksum = model_identity(cfg.embed_model)
    made = prepare(cfg.embed_model, name=name, checksum=checksum, cache=cache, export=export,
                   ledger=home / onnx_cache.LEDGER_FILE)  # fmt: skip
    line = model_cache_check(cfg)
    assert line["status"] == "ok" and "matches the sha256 recorded" in line["detail"]
    (made.folder / MODEL_FILE).write_bytes(b"swapped")
    write_meta(made.folder, {"name": name, "model_sha256": sha256_of(made.folder / MODEL_FILE)})
    cache.chmod(0o777)
    line = model_cache_check(cfg)
    assert line["status"] == "warn" and "writable by others" in line["detail"]
    assert _mode(cache) == 0o777  # doctor only looks
    cache.chmod(0o700)
    line = model_cache_check(cfg)
    assert line["status"] == "warn"
    assert "is not the file this data dir checked" in line["detail"]
