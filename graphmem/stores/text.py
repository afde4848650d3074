"""Turning free user text into safe full-text queries, shared by every backend.

User text never reaches FTS5 or Lucene query syntax as-is: it is cut into word terms, and each
backend quotes those terms in its own syntax, so ``AND``, ``*``, ``:`` or quotes in a question are
plain words, not operators.
"""

from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 64

# Function words dropped from *queries* (not from the index): they match nearly every document, so
# they add almost nothing to BM25 but make the engine walk every posting list. Lucene's English
# analyzer drops its own stop set at index time already.
STOPWORDS = frozenset(
    # Lucene's English stop set
    """
    a an and are as at be but by for if in into is it no not of on or such that the their then there
    these they this to was will with
    """.split()
    # pronouns, question words, auxiliaries and contraction stubs
    + """
    i me my mine myself we us our ours you your yours he him his she her hers its them what which
    who whom whose when where why how do does did doing done have has had having am were been being
    can could would should shall may might must about from up down out over under again further once
    here all any both each few more most other some so than too very just also s t don didn doesn ll
    ve re d m o y
    """.split()
)


def query_terms(text: str) -> list[str]:
    """Distinct lower-cased content terms in first-seen order, at most :data:`MAX_TERMS`.

    Stopwords are dropped unless the query has nothing else.
    """
    seen: dict[str, None] = {}
    for match in _WORD.finditer(text.casefold()):
        seen.setdefault(match.group(), None)
    terms = [t for t in seen if t not in STOPWORDS] or list(seen)
    return terms[:MAX_TERMS]


def content_words(text: str) -> frozenset[str]:
    """Every distinct word of ``text`` that is not a stopword, normalized as entity names are
    (:func:`graphmem.models.norm_name`), so it compares with a query's one-word n-grams."""
    return frozenset(_WORD.findall(unicodedata.normalize("NFKC", text).casefold())) - STOPWORDS


def fts5_phrase(term: str) -> str:
    """A term as an FTS5 string: operators and punctuation in it stay plain text."""
    return '"' + term.replace('"', '""') + '"'


def fts5_query(terms: list[str], operator: str = "OR") -> str:
    """An FTS5 MATCH expression of quoted terms joined by ``operator`` (OR: BM25 ranks the overlap)."""
    return f" {operator} ".join(fts5_phrase(t) for t in terms)


_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')


def lucene_query(text: str) -> str | None:
    """A Lucene query: each term escaped and ORed (Lucene's default operator)."""
    terms = query_terms(text)
    return " OR ".join(_LUCENE_SPECIAL.sub(r"\\\1", t) for t in terms) or None


QUESTION_MARKS = ("?", "\uff1f")
"""What makes a memory one that asks (its answer, if stored, is the memory that follows it)."""


def asks(text: str) -> bool:
    """Whether a memory's text asks something."""
    return any(mark in text for mark in QUESTION_MARKS)
