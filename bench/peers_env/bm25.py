"""A local snapshot of the Hugging Face repository ``Qdrant/bm25``, in the layout fastembed reads offline.

fastembed's ``Bm25`` has no weights: it needs a ``config.json`` (its ``model_file``, never parsed) and
one stop-word list per Snowball language (its ``additional_files``), found through huggingface_hub's
cache (``models--Qdrant--bm25/refs/main`` naming a folder under ``snapshots/``). With
``HF_HUB_OFFLINE=1`` fastembed resolves that snapshot without any request. The file names come from
fastembed's own model description, so a fastembed that asks for other files gets them. English gets
NLTK's stop-word list, as the hub's copy has; the other languages get empty lists (mem0 asks for
English only).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

REPO_ID = "Qdrant/bm25"
REVISION = "main"

# NLTK's English stop words (the ``stopwords`` corpus), in its order
ENGLISH_STOP_WORDS: tuple[str, ...] = (
    "i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "you're", "you've", "you'll",
    "you'd", "your", "yours", "yourself", "yourselves", "he", "him", "his", "himself", "she", "she's",
    "her", "hers", "herself", "it", "it's", "its", "itself", "they", "them", "their", "theirs",
    "themselves", "what", "which", "who", "whom", "this", "that", "that'll", "these", "those", "am",
    "is", "are", "was", "were", "be", "been", "being", "have", "has", "had", "having", "do", "does",
    "did", "doing", "a", "an", "the", "and", "but", "if", "or", "because", "as", "until", "while",
    "of", "at", "by", "for", "with", "about", "against", "between", "into", "through", "during",
    "before", "after", "above", "below", "to", "from", "up", "down", "in", "out", "on", "off", "over",
    "under", "again", "further", "then", "once", "here", "there", "when", "where", "why", "how", "all",
    "any", "both", "each", "few", "more", "most", "other", "some", "such", "no", "nor", "not", "only",
    "own", "same", "so", "than", "too", "very", "s", "t", "can", "will", "just", "don", "don't",
    "should", "should've", "now", "d", "ll", "m", "o", "re", "ve", "y", "ain", "aren", "aren't",
    "couldn", "couldn't", "didn", "didn't", "doesn", "doesn't", "hadn", "hadn't", "hasn", "hasn't",
    "haven", "haven't", "isn", "isn't", "ma", "mightn", "mightn't", "mustn", "mustn't", "needn",
    "needn't", "shan", "shan't", "shouldn", "shouldn't", "wasn", "wasn't", "weren", "weren't", "won",
    "won't", "wouldn", "wouldn't",
)


def snapshot_files() -> dict[str, str]:
    """The files of the snapshot and their text, named as fastembed's model description asks."""
    from fastembed.sparse.bm25 import supported_bm25_models

    model = next(m for m in supported_bm25_models if m.model == REPO_ID)
    files = {model.model_file: "{}\n"}
    for name in model.additional_files:
        files[name] = "\n".join(ENGLISH_STOP_WORDS) + "\n" if name == "english.txt" else ""
    return files


def write_snapshot(cache_dir: Path) -> Path:
    """Writes the snapshot under ``cache_dir`` (what ``FASTEMBED_CACHE_PATH`` names); returns its folder.

    The snapshot's "commit" is a digest of its files, so a changed list lands in a new folder and a
    rerun over the same cache reuses the same one.
    """
    from huggingface_hub.file_download import repo_folder_name

    files = snapshot_files()
    digest = hashlib.sha1()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    commit = digest.hexdigest()
    repo = cache_dir / repo_folder_name(repo_id=REPO_ID, repo_type="model")
    folder = repo / "snapshots" / commit
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / REVISION).write_text(commit, encoding="utf-8")  # read as is: no newline
    return folder
