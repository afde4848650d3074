"""``import spacy`` without its command line, which the rules never use.

spaCy's package ``__init__`` imports ``spacy.cli`` for one name (``spacy.info``), and the command
line pulls in typer, weasel, httpx and requests: much of spaCy's import time, paid by the
first ``add`` of every process (``bench/startup.py``). The first import of spaCy here therefore
finds a stand-in for ``spacy.cli.info`` whose ``info`` imports the real one when called, and
``spacy.cli`` is imported on first use of the attribute; ``import spacy.cli`` loads the real package
as always. :func:`import_spacy` runs before the rules' first use of spaCy (:func:`.resources.load`);
it does nothing when spaCy is already imported.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from pathlib import Path
from typing import Any

_LOCK = threading.Lock()


def _info(*args: Any, **kwargs: Any) -> Any:
    from spacy.cli.info import info

    return info(*args, **kwargs)


def _cli(name: str) -> Any:
    if name == "cli":
        return importlib.import_module("spacy.cli")
    raise AttributeError(f"module 'spacy' has no attribute {name!r}")


def import_spacy() -> None:
    with _LOCK:
        if "spacy" in sys.modules:
            return
        spec = importlib.util.find_spec("spacy")
        if spec is None or spec.origin is None:
            return  # not installed: the rules' own import says so
        cli = types.ModuleType("spacy.cli")
        cli.__path__ = [str(Path(spec.origin).parent / "cli")]
        info = types.ModuleType("spacy.cli.info")
        info.info = _info  # type: ignore[attr-defined]
        sys.modules["spacy.cli"], sys.modules["spacy.cli.info"] = cli, info
        try:
            import spacy
        finally:
            for name, module in (("spacy.cli", cli), ("spacy.cli.info", info)):
                if sys.modules.get(name) is module:
                    del sys.modules[name]
        if "__getattr__" not in vars(spacy) and "cli" not in vars(spacy):
            vars(spacy)["__getattr__"] = _cli  # PEP 562: spacy.cli on first use
