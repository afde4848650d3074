"""Lowercase noun compounds ("support group", "mental health", "home country") as untyped entities.

In chat, proper names are rare and two messages about the same thing share these compounds instead, so
they are what links the memories for search.
"""

from __future__ import annotations

from typing import Final

from spacy.lang.en.stop_words import STOP_WORDS

from .state import ChunkState, Mention, Sentence
from .text import Message
from .words import DETERMINERS, EVALUATIVE, GENERIC_HEADS, INTERJECTIONS, MONTHS, PREPOSITIONS, WEEKDAYS, English

_TIME_NOUNS: Final = frozenset({"yesterday", "today", "tomorrow", "tonight", "morning", "evening", "night",
                                "weekend", "afternoon", "ago", "now", "lately", "recently", "soon"})


def add_compounds(eng: English, state: ChunkState, sent: Sentence) -> None:
    """Register two- and three-word compounds outside the sentence's other mentions."""
    msg, s, e = sent.msg, sent.start, sent.end
    taken = {k for m in sent.mentions for k in range(m.start, m.end)}
    k = s
    while k + 1 < e:
        if k in taken or k + 1 in taken or not _compound_start(msg, k, s, taken):
            k += 1
            continue
        if not modifier(eng, msg, k) or not compound_word(msg, k + 1):
            k += 1
            continue
        end = k + 2
        if end < e and end not in taken and noun_head(eng, msg, end) and modifier(eng, msg, k + 1):
            end += 1  # "mental health awareness"
        last = end - 1
        if not noun_head(eng, msg, last):
            k += 1
            continue
        words = [*msg.lowers[k:last], msg.lemmas[last]]
        ent = state.entity(" ".join(words))
        ent.mentioned = True
        sent.mentions.append(Mention(k, end, ent.key, "concept"))
        taken.update(range(k, end))
        k = end
    sent.mentions.sort(key=lambda m: m.start)


def modifier(eng: English, msg: Message, k: int) -> bool:
    """The first word of a compound: an uninflected noun or a classifying adjective ("mental")."""
    lo = msg.lowers[k]
    return compound_word(msg, k) and lo not in EVALUATIVE and not lo.endswith(("ly", "ed")) \
        and (lo in eng.nouns or lo in eng.adjectives)


def noun_head(eng: English, msg: Message, k: int) -> bool:
    """The last word of a compound: a noun that is not a generic, evaluative or time word."""
    lo, lemma = msg.lowers[k], msg.lemmas[k]
    return compound_word(msg, k) and lemma in eng.nouns and not lo.endswith("ed") \
        and lo not in GENERIC_HEADS and lemma not in GENERIC_HEADS and lo not in EVALUATIVE \
        and lo not in _TIME_NOUNS and (lo == lemma or lo.endswith("s") or lo in eng.nouns)


def compound_word(msg: Message, k: int) -> bool:
    """A lowercase content word of three letters or more, not a month or weekday."""
    lo = msg.lowers[k]
    return (lo.isalpha() or (lo.count("-") == 1 and lo.replace("-", "").isalpha())) and not msg.caps[k] \
        and lo not in STOP_WORDS and lo not in INTERJECTIONS and lo not in PREPOSITIONS and len(lo) > 2 \
        and lo not in MONTHS and lo not in WEEKDAYS


def _compound_start(msg: Message, k: int, s: int, taken: set[int]) -> bool:
    """After a determiner, preposition, conjunction or name: "a pottery class", "in mental health"."""
    if k == s or msg.initial[k]:
        return True
    prev = msg.lowers[k - 1]
    return prev in DETERMINERS or prev in PREPOSITIONS or prev in ("and", "or", ",", "'s", "’s") \
        or (k - 1) in taken
