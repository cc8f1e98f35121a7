"""Import LanceDB without its REST namespace client's API classes (cold: 1.06 s, not 1.90 s).

`lancedb` imports `lance_namespace`, which imports models from `lance_namespace_urllib3_client`,
whose package `__init__` also imports every REST API class; each of their ~370 methods is
wrapped in pydantic's `validate_call`, which builds a validator at import time. Casper only
opens local tables and never calls that client, yet a cold `casper search` spent over half its
import time there. So the package is registered without running its `__init__` (submodules such
as `.models` still import normally from its directory); the first attribute asked of the
package itself runs the real `__init__`, so nothing that uses it breaks.

Imports: stdlib only; lancedb inside `lancedb()`, after the client is deferred.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

CLIENT = "lance_namespace_urllib3_client"


def defer_namespace_client() -> None:
    """Register the client package lazily (once; a no-op when it is already imported)."""
    if CLIENT in sys.modules:
        return
    try:
        spec = importlib.util.find_spec(CLIENT)
    except (ImportError, ValueError):
        return
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def load_the_rest(name: str) -> object:
        package.__dict__.pop("__getattr__", None)
        loader.exec_module(package)  # the real __init__, now that someone needs it
        return getattr(package, name)

    package.__getattr__ = load_the_rest  # type: ignore[method-assign]
    sys.modules[CLIENT] = package


def lancedb() -> ModuleType:
    """The `lancedb` module, imported with the namespace client deferred."""
    defer_namespace_client()
    import lancedb as module

    return module
