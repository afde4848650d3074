"""Sentence boundaries: spaCy's rule-based ``sentencizer`` when spaCy is installed, else a regex.

Every line break also ends a sentence: chat transcripts, lists and code rarely end their lines with
punctuation, and a boundary too many only makes a piece smaller, while one too few can make a
"sentence" swallow a whole conversation. No model is needed: ``spacy.blank("en")`` works offline,
and its tokenizer exceptions keep "Mr.", "e.g." and "3.14" from ending a sentence.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.language import Language

_LINE_BREAK = re.compile(r"\n")
_NON_SPACE = re.compile(r"\S")
_HAS_INNER_END = re.compile(r"[.!?…。！？｡]\W*\s*\S")
"""A line needs the splitter only if sentence-final punctuation is followed by more text."""
_SPACY_MAX_CHARS = 200_000
"""Longer lines (minified JSON, logs) go to the regex: spaCy's cost and memory grow with the doc."""

# Regex fallback: ., !, ?, … followed by whitespace, and CJK full stops with or without it.
_LATIN_END = re.compile(r"[.!?…]+[\"'”’»)\]]*\s+")
_CJK_END = re.compile(r"[。！？｡]+[」』）〕】\"”’)]*\s*")
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc e.g i.e cf al inc ltd co corp no fig approx dept est jan feb mar apr"
    " jun jul aug sep sept oct nov dec mt ft".split()
)

_spacy_lock = threading.Lock()


@lru_cache(maxsize=1)
def _spacy() -> Language | None:
    try:
        import spacy
    except ImportError:
        return None
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.max_length = _SPACY_MAX_CHARS + 1
    return nlp


def splitter_name() -> str:
    """``spacy`` or ``regex``: which sentence splitter :func:`sentence_starts` uses here."""
    return "spacy" if _spacy() is not None else "regex"


def _regex_starts(line: str) -> list[int]:
    starts: list[int] = []
    for m in _LATIN_END.finditer(line):
        end = m.end()
        if end >= len(line):
            break
        if line[end].islower():
            continue  # "approx. ten", "this... and"
        if m.group().rstrip()[-1:] == "." and m.group().count(".") == 1:
            before = line[: m.start()].rsplit(None, 1)
            word = before[-1].lower() if before else ""
            if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                continue  # "Dr. Smith", "J. K. Rowling"
        starts.append(end)
    for m in _CJK_END.finditer(line):
        if m.end() < len(line):
            starts.append(m.end())
    return sorted(set(starts))


def _spacy_starts(nlp: Language, lines: list[str]) -> list[list[int]]:
    # A memory zone: the blank pipeline's vocabulary would otherwise keep every word it splits
    # (see extraction.rules.resources.parsing); the lock keeps other threads out of the zone.
    with _spacy_lock, nlp.memory_zone():
        return [[s.start_char for s in doc.sents][1:] for doc in nlp.pipe(lines, batch_size=256)]


def sentence_starts(text: str, lo: int = 0, hi: int | None = None, *, use_spacy: bool | None = None) -> list[int]:
    """Offsets in ``(lo, hi)`` where a sentence starts, sorted (see :func:`normalize_boundaries`).

    Pieces cut at these offsets tile the text. ``use_spacy=None`` uses spaCy when it is installed.
    """
    hi = len(text) if hi is None else hi
    nlp = _spacy() if use_spacy is not False else None
    if use_spacy and nlp is None:
        raise ImportError("spaCy is not installed")
    line_starts = [lo] + [m.end() for m in _LINE_BREAK.finditer(text, lo, hi)]
    raw: list[int] = line_starts[1:]
    spacy_lines: list[tuple[int, str]] = []
    for i, start in enumerate(line_starts):
        end = line_starts[i + 1] if i + 1 < len(line_starts) else hi
        line = text[start:end]
        if not _HAS_INNER_END.search(line):
            continue
        if nlp is not None and len(line) <= _SPACY_MAX_CHARS:
            spacy_lines.append((start, line))
        else:
            raw.extend(start + s for s in _regex_starts(line))
    if spacy_lines:
        assert nlp is not None
        for (start, line), starts in zip(spacy_lines, _spacy_starts(nlp, [s for _, s in spacy_lines]), strict=True):
            raw.extend(start + s for s in starts)
            raw.extend(start + s for m in _CJK_END.finditer(line) if (s := m.end()) < len(line))
    return normalize_boundaries(text, raw, lo, hi)


def normalize_boundaries(text: str, raw: list[int], lo: int, hi: int) -> list[int]:
    """Move each boundary past whitespace: to the next non-whitespace character, or to the start of
    its line when a line break comes first (indentation stays with its line). Sorted, unique, and
    strictly inside ``(lo, hi)``; a piece between two boundaries is never whitespace only (except a
    first piece that starts with it)."""
    out: list[int] = []
    resolved = -1
    for b in sorted(raw):
        if b <= resolved:  # inside a whitespace run already resolved for an earlier boundary
            continue
        m = _NON_SPACE.search(text, b, hi)
        resolved = m.start() if m else hi
        line_start = text.rfind("\n", lo, resolved) + 1
        target = line_start if line_start >= b else resolved
        if not lo < target < hi or (out and out[-1] == target):
            continue
        if not out and _NON_SPACE.search(text, lo, target) is None:
            continue  # the first piece would be whitespace only
        out.append(target)
    return out
