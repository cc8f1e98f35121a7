"""One line of `casper doctor`: what was checked, how it stands (ok, warn, fail), what was found
and the fix. The one shape the doctor's modules (doctor, doctor_service, doctor_schema) build.

Imports: stdlib only.
"""

from __future__ import annotations

from typing import Any

Check = dict[str, Any]


def check(name: str, status: str, detail: str, hint: str | None = None) -> Check:
    return {"name": name, "status": status, "detail": detail, "hint": hint}
