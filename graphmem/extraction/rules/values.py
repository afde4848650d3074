"""Datatype values next to a relation: dates, numbers, URLs, emails, phone numbers and short phrases.

Which reader applies follows the relation's range (``xsd:date``, ``xsd:integer``, ``xsd:anyURI``) or, for
plain strings, its name and labels ("email", "phone"); anything else takes up to five words ("data engineer").
"""

from __future__ import annotations

import re
from typing import Final

from ...ontology.model import RelationInfo
from .arguments import SentenceView, field_acronym
from .mentions import EMAIL
from .text import Message
from .words import CONJUNCTIONS, PREPOSITIONS

NUMBER_WORDS: Final = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                        "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20, "thirty": 30}
_SCALE: Final = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_NUMBER: Final = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$|^\d+(?:\.\d+)?$")
_PHONE: Final = re.compile(r"\+?\d[\d\s().-]{6,18}\d")
_NUMERIC: Final = frozenset({"integer", "int", "nonNegativeInteger", "positiveInteger", "decimal", "float", "double",
                             "long"})
_BEFORE_NUMBER: Final = frozenset({"of", "is", "was", "about", "around", "approximately", "over", "nearly", "almost",
                                   "roughly", "at", "to", "just", "only"})


def literal(ctx: SentenceView, rel: RelationInfo, k: int, *, before: int) -> str | None:
    """The value of ``rel`` starting at token ``k``; a number may also stand just before ``before``."""
    rng = rel.range[0] if rel.range else ""
    local = rng.rsplit("#", 1)[-1]
    if local in ("date", "dateTime"):
        return _date(ctx, k)
    if local in _NUMERIC:
        return _numeric(ctx, k, before, decimal=local in ("decimal", "float", "double"))
    if local == "anyURI":
        return _uri(ctx, k)
    words = " ".join((rel.name, rel.label, *rel.alt_labels)).lower()
    if "mail" in words:
        return _email(ctx, k)
    if "phone" in words or "telephone" in words:
        return _phone(ctx, k)
    return _phrase(ctx, k)


def _date(ctx: SentenceView, k: int) -> str | None:
    """A day-precise time phrase within two words of ``k``; it then dates nothing else."""
    msg, end = ctx.sent.msg, ctx.sent.end
    char = msg.starts[k] if k < end else ctx.sent.char_end
    for t in ctx.sent.times:
        abs_start = ctx.sent.char_start + t.start
        gap = msg.text[char:abs_start]
        if abs_start >= char and len(gap.split()) <= 2 and t.precision == "day":
            ctx.literal_times.add(t.start)
            return t.iso
    return None


def _numeric(ctx: SentenceView, k: int, before: int, *, decimal: bool) -> str | None:
    msg, end = ctx.sent.msg, ctx.sent.end
    value = number_at(msg, k, end)
    if value is None and before - 1 >= ctx.sent.start:
        value = number_at(msg, before - 1, before)
    if value is None:
        return None
    return str(value) if decimal else str(int(value))


def _uri(ctx: SentenceView, k: int) -> str | None:
    msg = ctx.sent.msg
    for j in range(k, min(k + 4, ctx.sent.end)):
        if "://" in msg.texts[j] or msg.lowers[j].startswith("www."):
            return msg.texts[j].rstrip(".,;:!?)")
    return None


def _email(ctx: SentenceView, k: int) -> str | None:
    msg = ctx.sent.msg
    for j in range(k, min(k + 5, ctx.sent.end)):
        if EMAIL.match(msg.texts[j]):
            return msg.texts[j]
    return None


def _phone(ctx: SentenceView, k: int) -> str | None:
    msg = ctx.sent.msg
    tail = msg.text[msg.starts[k]:ctx.sent.char_end] if k < ctx.sent.end else ""
    m = _PHONE.search(tail[:40])
    return m.group(0).strip() if m else None


def _phrase(ctx: SentenceView, k: int) -> str | None:
    """Up to five words after "is", "a", "as" ...: a job title, a name, stopping at a named mention."""
    msg, end = ctx.sent.msg, ctx.sent.end
    while k < end and msg.lowers[k] in ("is", "was", "a", "an", "the", ":", "of", "as"):
        k += 1
    words_out: list[str] = []
    while k < end and len(words_out) < 5:
        lo = msg.lowers[k]
        of_field = lo == "of" and words_out and k + 1 < end and msg.lowers[k + 1].isalpha() \
            and not msg.caps[k + 1] and msg.lowers[k + 1] not in PREPOSITIONS  # "head of quality"
        if not msg.alnum[k] or (lo in PREPOSITIONS and not of_field) or lo in CONJUNCTIONS or (
                k in ctx.ment_start and ctx.ment_start[k].kind != "concept" and not field_acronym(msg, k, end)):
            break
        words_out.append(msg.texts[k])
        k += 1
    return " ".join(words_out) if words_out else None


def number_at(msg: Message, k: int, end: int) -> float | None:
    """A number at ``k`` after filler words ("about 3,000", "thirty", "34-year-old"), times a scale word."""
    while k < end and msg.lowers[k] in _BEFORE_NUMBER:
        k += 1
    if k >= end:
        return None
    t = msg.lowers[k]
    value: float | None
    if _NUMBER.match(t):
        value = float(t.replace(",", ""))
    else:
        value = NUMBER_WORDS.get(t)
        if value is None:
            m = re.match(r"^(\d+)-years?-old$", t)
            value = float(m.group(1)) if m else None
    if value is None:
        return None
    if k + 1 < end and msg.lowers[k + 1] in _SCALE:
        value *= _SCALE[msg.lowers[k + 1]]
    return value
