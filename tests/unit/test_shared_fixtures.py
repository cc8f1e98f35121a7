"""A test whose shared fixture is missing skips on a developer's machine and fails on CI."""

from __future__ import annotations

import pytest

from tests.paths import REPO, SHARED, shared_fixture

NEEDS_A_MISSING_FIXTURE = f"""
import sys
sys.path.insert(0, {str(REPO)!r})
from pathlib import Path
from tests.paths import shared_fixture

def test_reads_it():
    shared_fixture(Path({str(SHARED / "fixtures" / "no-such-fixture.db")!r}))
"""


@pytest.mark.parametrize(
    ("ci", "outcome", "said"),
    [
        ("true", {"failed": 1}, "*FAILED*no-such-fixture.db not present: on CI (CI=true)*"),
        ("1", {"failed": 1}, "*FAILED*no-such-fixture.db not present: on CI (CI=true)*"),
        (None, {"skipped": 1}, "*SKIPPED*no-such-fixture.db not present"),
        ("", {"skipped": 1}, "*SKIPPED*no-such-fixture.db not present"),
    ],
)
def test_a_missing_shared_fixture_fails_on_ci_and_skips_elsewhere(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    ci: str | None,
    outcome: dict[str, int],
    said: str,
) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    pytester.makepyfile(NEEDS_A_MISSING_FIXTURE)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rfs")
    result.assert_outcomes(**outcome)
    result.stdout.fnmatch_lines([said])


def test_a_present_shared_fixture_is_its_path() -> None:
    assert shared_fixture(SHARED) == SHARED
