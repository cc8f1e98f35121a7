"""The corruption matrix: every file an indexed data dir holds × {truncated, random bytes, a
folder in its place, unreadable}. For each case the first commands a user types either answer
as before or refuse with `error:` naming the file and `hint: casper index --rebuild`
(config.toml: the file, which is the user's own), never "unexpected"; `doctor` exits 1 whenever
a command fails; `index --rebuild` exits 0 and every command then answers as on the undamaged
home. The home is built once per session and copied per case; the cases run in two worker
processes that cannot read an unreadable file even as root (tests/damage.py holds the cases, the
commands and the verdicts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.damage import (
    DAMAGES,
    Answers,
    Case,
    after_steps,
    answered,
    answers,
    build_home,
    clean,
    doctor_truthful,
    file_override_held,
    first_steps,
    recovered,
    refused_naming_it,
    run_cases,
    targets,
    workers_can_be_kept_out,
)

pytestmark = pytest.mark.slow  # 172 cases × 9-11 commands, in two workers

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
    # the full-text indexes of each message alone (empty unless `messages_alone` is on)
    "index.lance/chunks.lance/_indices/message_text_idx/metadata.lance",
    "index.lance/chunks.lance/_indices/message_cjk_idx/metadata.lance",
    "index.lance/chunks.lance/_indices/message_dates_idx/metadata.lance",
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
    # the small files beside them (casper.datadir)
    "auto_index.json",
    "chat_history.json",
    "chat_input_history",
    "notices.json",
    "service.lock",
    "service.log",
    "service.pid",
)
# files a command writes anew whole when it cannot read them: a search cache is built again by
# the first search, the notices and the auto-index record are written over (what they held
# did not read); only a folder in their place stays for --rebuild to move
REWRITTEN_WHOLE = {label for label in FILES if label.endswith("-N.npy")}
REWRITTEN_WHOLE |= {"notices.json", "auto_index.json"}
# damage that changes nothing a user sees: what reads these tolerates any content (a lock
# file's bytes, Lance's version hint and transaction log, the service's log and pid file), so
# `doctor` rightly passes there; a folder in their place or no permission is not harmless
CONTENT_NEVER_READ = {
    "index.lance/chunks.lance/_transactions/N.txn",
    "index.lance/chunks.lance/_versions/latest_version_hint.json",
    "index.lock",
    "service.lock",
    "service.log",
    "service.pid",
}
HARMLESS = {(label, how) for label in CONTENT_NEVER_READ for how in ("truncated", "random")}
# the input history cut in half is still lines of UTF-8 text: fewer of them
HARMLESS.add(("chat_input_history", "truncated"))
# a folder in place of the transaction log or the version hint: LanceDB never reads either
HARMLESS |= {
    ("index.lance/chunks.lance/_transactions/N.txn", "directory"),
    ("index.lance/chunks.lance/_transactions/N.txn", "unreadable"),
}


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_home(tmp_path_factory.mktemp("damage-template"))


@pytest.fixture(scope="session")
def undamaged(template: Path, tmp_path_factory: pytest.TempPathFactory) -> Answers:
    return answers(template, tmp_path_factory.mktemp("undamaged") / "home")


@pytest.fixture(scope="session")
def matrix(
    request: pytest.FixtureRequest,
    template: Path,
    undamaged: Answers,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[tuple[str, str], Case]:
    """Every case this session selected, run at once in the workers."""
    wanted = [
        (item.callspec.params["label"], item.callspec.params["how"])
        for item in request.session.items
        if item.originalname == "test_damage_is_named_and_rebuilt"
    ]
    return run_cases(template, tmp_path_factory.mktemp("cases"), wanted, undamaged)


def test_the_matrix_covers_every_file(template: Path) -> None:
    assert sorted(targets(template)) == sorted(FILES)


def test_unreadable_means_unreadable_to_the_workers() -> None:
    """chmod 000 keeps the workers out also when the suite runs as root (else every
    "unreadable" case would read the file and pass without testing anything)."""
    assert not file_override_held() or workers_can_be_kept_out()


@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.parametrize("label", FILES)
def test_damage_is_named_and_rebuilt(
    label: str, how: str, matrix: dict[tuple[str, str], Case], tmp_path: Path
) -> None:
    case = matrix[(label, how)]
    crashed = {k: s.crashed for k, s in case.steps.items() if s.crashed}
    assert not crashed, crashed
    assert not case.stray, f"a write left {case.stray} behind"
    for key in first_steps(label):
        if key != "doctor":
            assert clean(case, key), f"{key}: {_said(case, key)}"
    assert doctor_truthful(case), f"doctor passed though a command failed: {_said(case, 'doctor')}"
    if (label, how) not in HARMLESS:
        assert case.steps["doctor"].code == 1, f"doctor: {_said(case, 'doctor')}"
    if label == "config.toml":  # the user's own file: never moved, named instead
        assert refused_naming_it(case), _said(case, "rebuild")
        assert "damaged-" not in case.steps["rebuild"].output
        return
    failing = [k for k in after_steps(label) if not answered(case, k)]
    assert recovered(case), {k: _said(case, k) for k in failing}
    assert not case.unusable_after, f"still damaged after --rebuild: {case.unusable_after}"
    if (label, how) not in HARMLESS and label not in REWRITTEN_WHOLE:
        # what was damaged is kept, renamed, for the user (by --rebuild, or by `casper chat`
        # for its own history when it found it damaged)
        assert case.moved, _said(case, "rebuild")


def _said(case: Case, key: str) -> str:
    step = case.steps[key]
    return f"exit {step.code}: {step.output[-600:]}"
