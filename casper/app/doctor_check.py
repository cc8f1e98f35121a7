"""One line of `casper doctor`: what was checked, how it stands (ok, warn, fail), what was found
and the fix. The one shape the doctor's modules (doctor, doctor_service, doctor_schema) build.

Its type is `documents.Check`, the line of `doctor --json`.
"""

from __future__ import annotations

from casper.app.documents import Check


def check(name: str, status: str, detail: str, hint: str | None = None) -> Check:
    return {"name": name, "status": status, "detail": detail, "hint": hint}
