"""Every setting's value is checked once, when the config loads: its type (the field's
annotation, so a setting added later is checked with no more work) and its range or choices
(declared beside the field). A refused value names the file, the key and what is accepted;
nothing else a config.toml can hold reaches a command as a wrong type. The loader is fuzzed
with random documents and random bytes: a Config of the declared types, or ConfigError.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from casper.config import Config, checked_config, load_config
from casper.errors import ConfigError

FIELDS = {f.name: f for f in dataclasses.fields(Config) if f.name != "data_dir"}
TYPES = typing.get_type_hints(Config)


def wrong_value(kind: Any) -> Any:
    """A TOML value of another type than `kind` accepts."""
    inner = [a for a in typing.get_args(kind) if a is not type(None)] or [kind]
    return {bool: "yes", int: "ten", float: "ten", str: 10, Path: 10}.get(inner[0], 10)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


@pytest.mark.parametrize("key", sorted(FIELDS))
def test_a_value_of_the_wrong_type_is_refused_naming_file_key_and_what_is_accepted(
    tmp_path: Path, key: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f"{key} = {toml_value(wrong_value(TYPES[key]))}\n")
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    message, hint = err.value.message, err.value.hint or ""
    assert str(path) in message and f"{key} = " in message and "takes" in message
    assert str(path) in hint and key in hint


def test_top_k_ten_in_words(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('top_k = "ten"\n')
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert err.value.message == (
        f'{tmp_path / "config.toml"}: top_k = "ten" is not accepted: '
        "top_k takes a whole number from 1 to 1000"
    )
    assert "remove the line to use the default (8)" in (err.value.hint or "")


@pytest.mark.parametrize(
    ("line", "accepted"),
    [
        ("top_k = 0", False), ("top_k = 1000", True), ("top_k = 1001", False),
        ("top_k = 8.0", False), ("top_k = true", False),
        ("candidates = -1", False), ("max_iterations = 51", False), ("max_iterations = 50", True),
        ("temperature = 0", True), ("temperature = 0.7", True), ("temperature = -0.1", False),
        ("temperature = nan", False), ("chunk_gap_s = inf", False), ("chunk_gap_s = 60", True),
        ("service_idle_minutes = 0", True), ("service_idle_minutes = -5", False),
        ('lexical = "rank-bm25"', True), ('lexical = "bm25s"', False),
        ('timezone = "Europe/London"', True), ('timezone = "Mars/Olympus"', False),
        ('timezone = "/etc/passwd"', False), ('locale = "en_GB"', True),
        ('locale = "de_DE.UTF-8"', True), ('locale = "english please"', False),
        ('me_names = "Kevin"', True), ('me_names = ["Kevin", "Kev"]', True),
        ("me_names = [1, 2]", False), ('llm_model = ""', False), ('chat_db = ""', False),
        ('chat_db = "~/Messages/chat.db"', True), ("rerank = 0", False),
        ('llm_base_url = "http://127.0.0.1:8080/v1"', True),
        ('llm_base_url = "127.0.0.1:8080"', False),
        ('llm_base_url = "ftp://127.0.0.1/v1"', False), ("llm_base_url = 8080", False),
        ('llm_api_key_env = "OPENAI_API_KEY"', True), ('llm_api_key_env = "sk-abc-123"', False),
        ("llm_timeout_s = 0", False), ("llm_timeout_s = 30", True), ("allow_remote_llm = 1", False),
        ("llm_first_token_timeout_s = 0", False), ("llm_first_token_timeout_s = 300", True),
        ("llm_max_tokens = 0", False), ("llm_max_tokens = 256", True),
        ('llm_max_tokens = "lots"', False),
        ('embed_backend = "onnx"', True), ('embed_backend = "coreml"', False),
        ('embed_device = "mps"', True), ('embed_device = "cuda"', False),
        ('embed_backend = "onnx"\nembed_device = "mps"', False),
    ],
)  # fmt: skip
def test_ranges_and_choices(tmp_path: Path, line: str, accepted: bool) -> None:
    (tmp_path / "config.toml").write_text(line + "\n")
    if accepted:
        load_config(tmp_path)
        return
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert line.split(" = ")[0] in err.value.message
    if line.startswith("llm_api_key_env"):  # what was refused may be a key pasted by mistake
        assert "sk-abc" not in err.value.message


def test_values_arrive_as_the_declared_types(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        'chunk_gap_s = 60\nme_names = "Kevin"\nchat_db = "~/x/chat.db"\n'
    )
    cfg = load_config(tmp_path)
    assert cfg.chunk_gap_s == 60.0
    assert cfg.me_names == ("Kevin",)
    assert cfg.chat_db == Path("~/x/chat.db").expanduser()


def test_checked_config_keeps_the_accepted_values_and_lists_every_refused_one(
    tmp_path: Path,
) -> None:
    (tmp_path / "config.toml").write_text('top_k = "ten"\nrerank = 1\ncandidates = 20\n')
    cfg, refused = checked_config(tmp_path)
    assert (cfg.top_k, cfg.rerank, cfg.candidates) == (8, True, 20)
    assert [e.message.split(": ")[1].split(" = ")[0] for e in refused] == ["rerank", "top_k"]


def test_a_flag_is_named_as_the_command_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path, top_k=0)
    assert err.value.message.startswith("the command line: top_k = 0")


def test_config_toml_that_is_a_directory_is_named(tmp_path: Path) -> None:
    (tmp_path / "config.toml").mkdir()
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert "config.toml" in err.value.message and "directory" in err.value.message


# ---- the loader, fuzzed -----------------------------------------------------------------------
# per test in the suite; CASPER_FUZZ_EXAMPLES=20000 for a longer run
EXAMPLES = int(os.environ.get("CASPER_FUZZ_EXAMPLES", "200"))
KEYS = st.sampled_from(sorted(FIELDS) + ["unknown_key", "top-k", "data_dir"])
SCALARS = (
    st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4), max_leaves=6)


def toml_of(value: Any) -> str:
    """A TOML literal (tomllib reads it back as `value`)."""
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    return "[" + ", ".join(toml_of(v) for v in value) + "]"


def assert_declared_types(cfg: Config) -> None:
    for name in FIELDS:
        value, kind = getattr(cfg, name), TYPES[name]
        inner = [a for a in typing.get_args(kind) if a is not type(None)]
        if value is None:
            assert type(None) in typing.get_args(kind), name
        elif typing.get_origin(kind) is tuple:
            assert isinstance(value, tuple) and all(isinstance(v, str) for v in value), name
        elif typing.get_origin(kind) is typing.Literal:  # one of a set of words
            assert value in typing.get_args(kind), (name, value)
        else:
            want = inner[0] if inner else kind
            want = int | float if want is float else want  # an int is a float too
            assert isinstance(value, want) and (want is bool or not isinstance(value, bool)), (
                name,
                value,
            )


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_any_document_loads_as_declared_or_is_refused_by_name(doc: dict[str, Any]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        text = "".join(f"{k} = {toml_of(v)}\n" for k, v in doc.items())
        (home / "config.toml").write_text(text)
        try:
            cfg = load_config(home)
        except ConfigError as exc:
            assert "config.toml" in exc.message or "chunk_stride" in exc.message
            return
        assert_declared_types(cfg)
        assert 1 <= cfg.top_k <= 1000 and 1 <= cfg.chunk_stride <= cfg.chunk_size


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_load_or_are_refused_by_name(data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "config.toml").write_bytes(data)
        try:
            assert_declared_types(load_config(home))
        except ConfigError as exc:
            assert "config.toml" in exc.message
