"""Service protocol details: where the socket goes, framing, the version fingerprint."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from casper.service import protocol


def test_socket_lives_in_the_data_dir_when_the_path_fits(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert protocol.socket_path(home) == home / "service.sock"


def test_too_long_a_path_moves_the_socket_to_a_private_per_user_dir(tmp_path: Path) -> None:
    home = tmp_path / ("x" * 120)
    path = protocol.socket_path(home)
    assert len(os.fsencode(str(path))) <= 100
    assert path.parent.name == f"casper-{os.getuid()}"
    assert path == protocol.socket_path(Path(str(home) + "/"))  # same dir, same socket
    assert path != protocol.socket_path(tmp_path / ("y" * 120))
    protocol.private_socket_dir(path)
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700


def test_frames_are_single_lines_even_with_newlines_in_text() -> None:
    frame = {"event": "token", "text": "line one\nline two ✓ 寿司"}
    data = protocol.encode(frame)
    assert data.count(b"\n") == 1 and data.endswith(b"\n")
    assert protocol.decode(data) == frame


def test_build_id_names_the_version_and_is_stable() -> None:
    import casper

    assert protocol.build_id().startswith(casper.__version__ + "+p")
    assert protocol.build_id() == protocol.build_id()
