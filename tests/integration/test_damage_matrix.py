"""The corruption matrix (issue 20): every file an indexed data dir holds × {truncated, random
bytes}. For each case the first commands a user types either answer as before or refuse with
`error:` naming the file and `hint: casper index --rebuild` (config.toml: its line), never
"unexpected"; `doctor` exits 1 whenever a command fails; `index --rebuild` exits 0 and search and
stats then answer as on the undamaged home. The home is built once per session and copied per
case (tests/damage.py holds the cases, the commands and the verdicts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.damage import (
    DAMAGES,
    Answers,
    Case,
    answers,
    build_home,
    clean,
    doctor_truthful,
    recovered,
    refused_with_its_line,
    run_case,
    targets,
)

pytestmark = pytest.mark.slow  # 64 cases × 9 commands: about 2-3 minutes on 2 cores

# every file `casper index` leaves in a data dir, by label (see tests/damage.py); a file a new
# version writes fails test_the_matrix_covers_every_file so that it is added here
FILES = (
    "casper.sqlite",
    "config.toml",
    "index.lance/chunks.lance/_indices/person_ids_idx/bitmap_page_lookup.lance",
    "index.lance/chunks.lance/_indices/text_idx/metadata.lance",
    "index.lance/chunks.lance/_indices/text_idx/part_0_docs.lance",
    "index.lance/chunks.lance/_indices/text_idx/part_0_invert.lance",
    "index.lance/chunks.lance/_indices/text_idx/part_0_tokens.lance",
    "index.lance/chunks.lance/_indices/id_idx/page_data.lance",
    "index.lance/chunks.lance/_indices/id_idx/page_lookup.lance",
    "index.lance/chunks.lance/_indices/end_idx/page_data.lance",
    "index.lance/chunks.lance/_indices/end_idx/page_lookup.lance",
    "index.lance/chunks.lance/_indices/start_idx/page_data.lance",
    "index.lance/chunks.lance/_indices/start_idx/page_lookup.lance",
    "index.lance/chunks.lance/_indices/cjk_idx/metadata.lance",
    "index.lance/chunks.lance/_indices/cjk_idx/part_0_docs.lance",
    "index.lance/chunks.lance/_indices/cjk_idx/part_0_invert.lance",
    "index.lance/chunks.lance/_indices/cjk_idx/part_0_tokens.lance",
    "index.lance/chunks.lance/_indices/chat_id_idx/page_data.lance",
    "index.lance/chunks.lance/_indices/chat_id_idx/page_lookup.lance",
    "index.lance/chunks.lance/_indices/dates_idx/metadata.lance",
    "index.lance/chunks.lance/_indices/dates_idx/part_0_docs.lance",
    "index.lance/chunks.lance/_indices/dates_idx/part_0_invert.lance",
    "index.lance/chunks.lance/_indices/dates_idx/part_0_tokens.lance",
    "index.lance/chunks.lance/_transactions/N.txn",
    "index.lance/chunks.lance/_versions/N.manifest",
    "index.lance/chunks.lance/_versions/latest_version_hint.json",
    "index.lance/chunks.lance/data/N.lance",
    "index.lance/codes-N.npy",
    "index.lance/generation.json",
    "index.lance/keys-N.npy",
    "index.lance/manifest.json",
    "index.lance/mean-N.npy",
    "index.lance/rows-N.npy",
    "index.lance/vectors-N.npy",
    "index.lance/vectors.sqlite",
    "index.lock",
)
# files whose damage changes nothing a user sees: what reads them tolerates any content (a lock
# file's bytes, Lance's version hint and transaction log), so `doctor` rightly passes there
HARMLESS = {
    "index.lance/chunks.lance/_transactions/N.txn",
    "index.lance/chunks.lance/_versions/latest_version_hint.json",
    "index.lock",
}


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_home(tmp_path_factory.mktemp("damage-template"))


@pytest.fixture(scope="session")
def undamaged(template: Path, tmp_path_factory: pytest.TempPathFactory) -> Answers:
    return answers(template, tmp_path_factory.mktemp("undamaged") / "home")


def test_the_matrix_covers_every_file(template: Path) -> None:
    assert sorted(targets(template)) == sorted(FILES)


@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.parametrize("label", FILES)
def test_damage_is_named_and_rebuilt(
    label: str, how: str, template: Path, undamaged: Answers, tmp_path: Path
) -> None:
    case = run_case(template, tmp_path / "home", label, how, undamaged)
    crashed = {k: s.crashed for k, s in case.steps.items() if s.crashed}
    assert not crashed, crashed
    for key in ("search", "search cjk", "stats", "index"):
        assert clean(case, key), f"{key}: {_said(case, key)}"
    assert doctor_truthful(case), f"doctor passed though a command failed: {_said(case, 'doctor')}"
    if label not in HARMLESS:
        assert case.steps["doctor"].code == 1, f"doctor: {_said(case, 'doctor')}"
    if label == "config.toml":  # the user's own file: never moved, its line named instead
        assert refused_with_its_line(case), _said(case, "rebuild")
        assert not list((tmp_path / "home").glob("config.toml.damaged-*"))
        return
    assert recovered(case), {k: _said(case, k) for k in ("rebuild", "search again", "stats again")}
    if label not in HARMLESS and not label.endswith("-N.npy"):
        # what was damaged is kept, renamed, for the user (a search cache is not: the first
        # search after the damage already built it again)
        assert list((tmp_path / "home").rglob("*.damaged-*")), "nothing was moved aside"


def _said(case: Case, key: str) -> str:
    step = case.steps[key]
    return f"exit {step.code}: {step.output[-600:]}"
