"""Turning free user text into safe full-text queries, shared by every backend.

User text never reaches FTS5 or Lucene query syntax as-is: it is cut into word terms, and each
backend quotes those terms in its own syntax, so ``AND``, ``*``, ``:`` or quotes in a question are
plain words, not operators.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 64


def query_terms(text: str) -> list[str]:
    """Distinct lower-cased word terms in first-seen order, at most :data:`MAX_TERMS`."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(text.casefold()):
        seen.setdefault(match.group(), None)
        if len(seen) >= MAX_TERMS:
            break
    return list(seen)


def fts5_query(text: str) -> str | None:
    """An FTS5 MATCH expression: each term a quoted string, ORed (BM25 ranks the overlap)."""
    terms = query_terms(text)
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms) or None


_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')


def lucene_query(text: str) -> str | None:
    """A Lucene query: each term escaped and ORed (Lucene's default operator)."""
    terms = query_terms(text)
    return " OR ".join(_LUCENE_SPECIAL.sub(r"\\\1", t) for t in terms) or None
