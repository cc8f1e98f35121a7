"""The redaction's tables (phone number metadata, the Public Suffix List) come from the packages
that ship them: loading and using them opens no socket, resolves no name and writes no file, in
a fresh interpreter where they load for the first time (every open and every socket call is
recorded by an audit hook)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import REPO

CHILD = r"""
import json, sys
seen = []
def hook(event, args):
    if event.startswith("socket.") or event in ("urllib.Request", "http.client.connect"):
        seen.append([event, repr(args)[:200]])
    elif event == "open" and isinstance(args[1], str) and any(m in args[1] for m in "wax+"):
        seen.append([event, str(args[0])])
    elif event == "open" and isinstance(args[2], int) and args[2] & 0o3:  # O_WRONLY, O_RDWR
        seen.append([event, str(args[0])])
sys.addaudithook(hook)
from casper.agent.redact import mask
shown = mask("call 415 - 555 - 0199, see evil.de/x and clan.gg, GB82WEST12345698765432")
found = list(seen)
import os, tempfile
handle, canary = tempfile.mkstemp()  # the hook sees a write: it is listening
os.close(handle)
open(canary, "w").close()
os.unlink(canary)
print(json.dumps({"shown": shown, "seen": found, "canary": [e for e, _ in seen[len(found):]]}))
"""


def test_the_tables_load_offline_and_write_nothing() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          cwd=REPO, timeout=120, check=True)  # fmt: skip
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["shown"] == "call [phone], see [link] and [link], [number]", found["shown"]
    assert found["seen"] == [], found["seen"]
    assert "open" in found["canary"]
