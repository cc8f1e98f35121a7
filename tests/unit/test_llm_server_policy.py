"""Which model servers Casper may send message text to: hosts on this machine only, unless
`allow_remote_llm`; decided from the URL's text, so a refusal makes no network attempt."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.backends import factory
from casper.cli import app
from casper.config import Config, llm_server, load_config
from casper.errors import ConfigError, RemoteLLMRefused

runner = CliRunner()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/v1",
        "http://127.9.9.9/v1",
        "http://localhost:11434/v1/",
        "https://[::1]:1234/v1",
        "http://[::ffff:127.0.0.1]:8080/v1",
    ],
)
def test_hosts_on_this_machine_are_allowed(url: str) -> None:
    base, local = llm_server(url, allow_remote=False)
    assert local and base == url.strip().rstrip("/")


@pytest.mark.parametrize(
    "url",
    [
        "https://api.openai.com/v1",
        "http://192.168.1.20:8080/v1",  # the Mac mini in the next room is not this machine
        "http://10.0.0.2/v1",
        "http://0.0.0.0:8080/v1",
        "http://localhost.example.com/v1",  # a name that merely starts with localhost
        "http://127.0.0.1.nip.io/v1",  # a name that resolves to loopback today, anywhere later
        "http://[2001:db8::1]/v1",
        "http://mac-studio.local:1234/v1",
    ],
)
def test_other_hosts_are_refused_unless_allowed(url: str) -> None:
    with pytest.raises(RemoteLLMRefused) as info:
        llm_server(url, allow_remote=False)
    assert "would leave this machine" in info.value.message
    assert info.value.hint and "allow_remote_llm = true" in info.value.hint
    assert llm_server(url, allow_remote=True)[1] is False


@pytest.mark.parametrize(
    "url", ["127.0.0.1:8080/v1", "ftp://127.0.0.1/v1", "http:///v1", "http://127.0.0.1:port/v1"]
)
def test_urls_that_are_not_http_with_a_host_are_config_errors(url: str) -> None:
    with pytest.raises(ConfigError):
        llm_server(url, allow_remote=True)


@pytest.fixture
def network_attempts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every name lookup and connection from here on (sockets are blocked in tests anyway: an
    attempt would fail differently, this records that it was made at all)."""
    made: list[str] = []

    def record(kind: str):  # noqa: ANN202
        def refuse(*args: object, **kwargs: object) -> None:
            made.append(f"{kind} {args[:2]}")
            raise OSError("network attempt in a test")

        return refuse

    monkeypatch.setattr(socket, "getaddrinfo", record("getaddrinfo"))
    monkeypatch.setattr(socket, "create_connection", record("create_connection"))
    monkeypatch.setattr(socket.socket, "connect", record("connect"))
    yield made


def test_the_factory_refuses_a_remote_server_before_building_anything(
    tmp_path: Path, network_attempts: list[str]
) -> None:
    cfg = Config(data_dir=tmp_path, llm_base_url="https://api.example.com/v1")
    with pytest.raises(RemoteLLMRefused):
        factory.make_engine(cfg)
    assert network_attempts == []


def test_ask_with_a_remote_base_url_is_refused_with_no_network_attempt(
    tmp_path: Path, network_attempts: list[str]
) -> None:
    """Refused in the CLI, before the service starts or the index is opened: exit 1 with the
    reason and the setting that would allow it."""
    result = runner.invoke(
        app,
        ["ask", "when is thanksgiving?", "--base-url", "http://203.0.113.7:8080/v1",
         "--home", str(tmp_path / "home")],
    )  # fmt: skip
    assert result.exit_code == 1
    assert "would leave this machine" in result.stderr
    assert "allow_remote_llm = true" in result.stderr
    assert network_attempts == []
    assert not (tmp_path / "home").exists()  # nothing was started or written for it


def test_a_remote_llm_base_url_in_the_config_is_refused_by_chat_too(
    tmp_path: Path, network_attempts: list[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('llm_base_url = "https://llm.example.com/v1"\n')
    result = runner.invoke(app, ["chat", "--home", str(home)], input="/quit\n")
    assert result.exit_code == 1 and "would leave this machine" in result.stderr
    assert network_attempts == []


def test_the_server_settings_load_from_the_config(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        'llm_base_url = "http://127.0.0.1:8080/v1"\nllm_model = "qwen3:4b"\n'
        'llm_api_key_env = "MY_LLM_KEY"\nallow_remote_llm = false\nllm_timeout_s = 5.0\n'
    )
    cfg = load_config(tmp_path)
    assert (cfg.llm_base_url, cfg.llm_model, cfg.llm_api_key_env) == (
        "http://127.0.0.1:8080/v1", "qwen3:4b", "MY_LLM_KEY",
    )  # fmt: skip
    assert cfg.allow_remote_llm is False and cfg.llm_timeout_s == 5.0


def test_an_api_key_variable_that_is_not_set_is_said_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MY_LLM_KEY", raising=False)
    cfg = Config(
        data_dir=tmp_path, llm_base_url="http://127.0.0.1:9/v1", llm_api_key_env="MY_LLM_KEY"
    )
    with pytest.raises(ConfigError, match="MY_LLM_KEY"):
        factory.make_engine(cfg)
