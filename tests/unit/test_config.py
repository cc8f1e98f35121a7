"""Settings that would silently index less than the person has are refused when loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper.config import load_config
from casper.errors import ConfigError


@pytest.mark.parametrize(("size", "stride", "ok"), [(8, 4, True), (8, 8, True), (3, 1, True),
                                                    (2, 3, False), (8, 0, False)])  # fmt: skip
def test_a_stride_past_the_window_is_refused(
    tmp_path: Path, size: int, stride: int, ok: bool
) -> None:
    """A stride larger than the window would leave messages out of every chunk, silently."""
    (tmp_path / "config.toml").write_text(f"chunk_size = {size}\nchunk_stride = {stride}\n")
    if ok:
        assert load_config(tmp_path).chunk_stride == stride
        return
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert "chunk_stride" in err.value.message and err.value.hint
