"""Where a sentence names something: quoted titles, identifiers, known names and capitalized spans.

Each finder proposes token spans (``Candidate``); ``find`` keeps the longest non-overlapping ones, known
names before plain capitalization. Turning a span into an entity is ``entities``' job.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from spacy.lang.en.stop_words import STOP_WORDS

from .state import KnownNames
from .text import Message
from .words import (
    COUNTRY_OF_DEMONYM,
    DEMONYMS,
    EVALUATIVE,
    INTERJECTIONS,
    JOB_ACRONYMS,
    LEAVE_FORMS,
    LEGAL_SUFFIXES,
    MONTHS,
    NAME_CONNECTORS,
    NAME_SUFFIXES,
    PERSON_TITLES,
    PROJECT_HEADS,
    WEEKDAYS,
    English,
)

EMAIL: Final = re.compile(r"^[\w.+-]+@[\w-]+(?:\.[\w-]+)+$")
_VERSION: Final = re.compile(r"^(?:v\d+(?:\.\d+)*|\d+\.\d+\.\d+(?:\.\d+)?)$", re.IGNORECASE)
_TICKET: Final = re.compile(r"^[A-Z][A-Z0-9]{1,9}-\d+$")
_QUOTES: Final = re.compile(r"“([^”\n]{1,120})”|\"([^\"\n]{1,120})\"|``\s*([^`'\n]{1,120}?)\s*''|"
                            r"(?:(?<=\s)|^)'([A-Z0-9][^'\n]{0,100}?)'(?=[\s.,;:!?)]|$)|‘([^’\n]{1,120})’")
_DATE_PREPS: Final = frozenset({"in", "on", "since", "until", "by", "of", "last", "next", "early", "late", "mid",
                                "this", "during", "from", "through", "till", "before", "after", "every"})


class Candidate(NamedTuple):
    start: int
    end: int
    """Token range, end exclusive."""
    priority: int
    """Between spans of one length, the lower wins."""
    kind: str
    """quote, id, known, demonym, weak, person or cap."""
    name: str | None
    """The name to register (a quote's inner text, a known entity's key, a demonym's country), if not the span."""


def find(eng: English, known: KnownNames | None, msg: Message, s: int, e: int) -> list[Candidate]:
    """The mentions of sentence ``msg[s:e]``, left to right, none overlapping."""
    cands = [*quoted(msg, s, e), *identifiers(msg, s, e), *known_names(eng, known, msg, s, e),
             *capitalized(eng, msg, s, e)]
    cands.sort(key=lambda c: (-(c[1] - c[0]), c[2], c[0]))
    taken = [False] * (e - s)
    chosen: list[Candidate] = []
    for c in cands:
        if any(taken[k - s] for k in range(c[0], c[1])):
            continue
        for k in range(c[0], c[1]):
            taken[k - s] = True
        chosen.append(c)
    chosen.sort()
    return chosen


def quoted(msg: Message, s: int, e: int) -> list[Candidate]:
    """Quoted titles ("Hello Love"), not quoted speech or questions."""
    lo, hi = msg.starts[s], msg.end_char(e - 1)
    text = msg.text
    out: list[Candidate] = []
    if not any(q in text[lo:hi] for q in ("\"", "“", "'", "‘", "``")):
        return out
    for m in _QUOTES.finditer(text, lo, hi):
        gi = next(i for i in range(1, 6) if m.group(i) is not None)
        inner = m.group(gi).strip()
        words = inner.split()
        if not 1 <= len(words) <= 12 or not any(ch.isalpha() for ch in inner) or inner.endswith("?"):
            continue
        first = words[0].lower().strip("'\".,!")
        titled = len(words) > 1 and all(w[:1].isupper() or w.lower() in NAME_CONNECTORS for w in words)
        if (first in STOP_WORDS and first not in ("the", "a", "an")) or (first in INTERJECTIONS and not titled):
            continue
        if not (inner[0].isupper() or inner[0].isdigit()):
            continue
        if len(words) >= 4 and sum(1 for w in words if w[:1].isupper()) * 2 < len(words):
            continue
        a, b = m.start(gi), m.start(gi) + len(m.group(gi))
        toks = [k for k in range(s, e) if msg.starts[k] >= a and msg.end_char(k) <= b]
        if toks:
            out.append(Candidate(toks[0], toks[-1] + 1, 0, "quote", inner.rstrip(".,;:!")))
    return out


def identifiers(msg: Message, s: int, e: int) -> list[Candidate]:
    """Emails, URLs, versions, tickets and "#123"."""
    out: list[Candidate] = []
    for k in range(s, e):
        t = msg.texts[k]
        if len(t) < 2:
            if t == "#" and k + 1 < e and msg.texts[k + 1].isdigit() and not msg.space_before[k + 1]:
                out.append(Candidate(k, k + 2, 0, "id", "#" + msg.texts[k + 1]))
            continue
        if "@" in t and EMAIL.match(t):
            out.append(Candidate(k, k + 1, 0, "id", t))
        elif ("://" in t or t.lower().startswith("www.")) and len(t) > 6:
            out.append(Candidate(k, k + 1, 0, "id", t.rstrip(".,;:!?)")))
        elif _VERSION.match(t) or _TICKET.match(t):
            out.append(Candidate(k, k + 1, 0, "id", t))
    return out


def known_names(eng: English, known: KnownNames | None, msg: Message, s: int, e: int) -> list[Candidate]:
    """Known entities, speakers and the heading in any case ("project atlas", "NORTHWIND"), longest first."""
    out: list[Candidate] = []
    if known is None or not known.table:
        return out
    lowers, caps = msg.lowers, msg.caps
    for k in range(s, e):
        if lowers[k] not in known.firsts:
            continue
        for n in range(min(known.longest, e - k), 0, -1):
            key = known.table.get(tuple(lowers[k:k + n]))
            if key is None:
                continue
            if n == 1 and not caps[k] and (eng.is_common(lowers[k]) or len(lowers[k]) < 3):
                continue  # "snow" is not the known "Snow"
            out.append(Candidate(k, k + n, 1, "known", key))
            break
    return out


def capitalized(eng: English, msg: Message, s: int, e: int) -> list[Candidate]:
    """Runs of capitalized words joined by connectors ("Bank of America"), minus titles and openers."""
    out: list[Candidate] = []
    k = s
    while k < e:
        if not msg.caps[k] or _date_word(msg, k, s, e):
            k += 1
            continue
        last = _name_last(eng, msg, k, s, e)
        cand = _name_candidate(eng, msg, k, last, e)
        if cand is not None and cand.kind == "cap" and cand.end < e and msg.lowers[cand.end] in PROJECT_HEADS \
                and cand.start > s and msg.lowers[cand.start - 1] in ("the", "my", "our", "a"):
            cand = cand._replace(end=cand.end + 1)  # "the Atlas migration": the project, not Atlas
            last = cand.end - 1
        if cand is not None:
            out.append(cand)
        k = last + 1
    return out


def _name_last(eng: English, msg: Message, k: int, s: int, e: int) -> int:
    """The last token of the capitalized name starting at ``k``."""
    caps, lowers, texts = msg.caps, msg.lowers, msg.texts
    last = k
    j = k + 1
    while j < e:
        lo = lowers[j]
        if (texts[j] == "I" and j + 1 < e and not msg.lowers[j + 1].isalpha()) or (
                texts[j] == "I" and j + 1 < e and msg.lowers[j + 1] == "of"):
            last = j  # "World War I", "Albert I of Belgium"
            j += 1
        elif caps[j] and not _date_word(msg, j, s, e) and not (texts[j - 1].endswith(".") and lo in STOP_WORDS):
            last = j
            j += 1
        elif _joins(msg, j, e) and not (last == k and lowers[k] in DEMONYMS and lo.isalpha()) \
                and not (lo == "for" and any(lowers[i] in LEAVE_FORMS for i in range(max(s, k - 6), k + 1))):
            j += 1  # not "Japanese on Duolingo": a language or nationality starts no "X on Y" name;
            # nor "(left) Dublin for Cork (and Zalando for Siemens)": one left for another
        elif lo in ("of", "for") and j + 2 < e and lowers[j + 1] == "the" and caps[j + 2]:
            j += 2
        elif lo in ("'s", "’s", "'", "’") and j + 1 < e and caps[j + 1] and _possessive_name(eng, msg, k, j):
            j += 1
        elif texts[j].isdigit() and len(texts[j]) <= 3 and j == last + 1:
            last = j
            j += 1
        else:
            break
    return last


def _name_candidate(eng: English, msg: Message, k: int, last: int, e: int) -> Candidate | None:
    """What the capitalized span ``k..last`` is: a demonym, a short form to be, a person, a name, or nothing."""
    caps, lowers, texts = msg.caps, msg.lowers, msg.texts
    end = last + 1
    if end + 1 < e and texts[end] == "," and (lowers[end + 1] in LEGAL_SUFFIXES or lowers[end + 1] in NAME_SUFFIXES):
        end += 2
    single = end - k == 1
    if single and lowers[k] in JOB_ACRONYMS:
        return None  # "a senior PM", "my GP": a job word, not a name
    if single and lowers[k] in COUNTRY_OF_DEMONYM:
        return Candidate(k, end, 2, "demonym", COUNTRY_OF_DEMONYM[lowers[k]])
    if single and lowers[k] in DEMONYMS and end < e and (texts[end] == "-" or (
            lowers[end].isalpha() and not caps[end] and lowers[end] not in STOP_WORDS
            and (msg.doc is None or msg.doc[end].pos_ in ("NOUN", "PROPN", "ADJ", "NUM")))):
        return None  # "the Catholic church": an adjective, not a name ("English fluently" is one)
    if single and msg.initial[k] and lowers[k].endswith("ly"):
        return None  # "Lately, ...", "Actually, ..."
    if single and msg.initial[k] and lowers[k] not in STOP_WORDS and lowers[k] not in INTERJECTIONS \
            and eng.is_common(lowers[k]):
        return Candidate(k, end, 3, "weak", None)  # "Snow moved ...": kept only as a short form
    start = k
    titled: int | None = None
    while start < end:
        lo = lowers[start]
        if lo in PERSON_TITLES and end - start > 1:
            titled = start if titled is None else titled
        elif not _strip_first(eng, msg, start, end):
            break
        start += 1
    if end - start == 1 and lowers[start] in JOB_ACRONYMS:
        return None  # "My GP": the job word left once "My" is stripped
    if start < end and not (end - start == 1 and lowers[start] in ("'s", "’s")) \
            and any(ch.isalpha() for t in texts[start:end] for ch in t):
        if titled is not None:  # "Dr Hale": the title stays in the name, "Hale" becomes its alias
            return Candidate(titled, end, 2, "person", " ".join(msg.span_text(titled, end).split()))
        return Candidate(start, end, 2, "cap", None)
    return None


def _strip_first(eng: English, msg: Message, start: int, end: int) -> bool:
    """A leading word that is not part of the name: "The", "Hey" at a sentence start, "Painting" alone,
    "Left" of chat's verb-first "Left Dublin for Cork"."""
    lo = msg.lowers[start]
    if lo in STOP_WORDS and not (lo in INTERJECTIONS and not msg.initial[start]):
        return True
    if not msg.initial[start]:
        return False
    if lo in LEAVE_FORMS:
        return True
    if lo in INTERJECTIONS or (end - start == 1 and eng.is_common(lo)):
        return True
    # "Poor Pixel", "Enjoy CloudConf": a word that is no noun (or a judging adjective) opens the sentence
    return eng.is_common(lo) and (lo not in eng.nouns or lo in EVALUATIVE or lo in ("poor", "dear", "lucky"))


def _date_word(msg: Message, k: int, s: int, e: int) -> bool:
    """A month or weekday used as a date ("in May", "May 3", "Monday"), not a name ("Jan Solovej")."""
    lo = msg.lowers[k]
    if lo not in MONTHS and lo not in WEEKDAYS:
        return False
    if lo in WEEKDAYS:
        return True
    nxt = msg.texts[k + 1] if k + 1 < e else ""
    prev = msg.lowers[k - 1] if k > s else ""
    return nxt[:1].isdigit() or prev[:1].isdigit() or prev in _DATE_PREPS or not (k + 1 < e and msg.caps[k + 1])


def _possessive_name(eng: English, msg: Message, k: int, j: int) -> bool:
    """"Freedom's Journal", "Men's Studies Press": a common word owning a capitalized name; "St Mary's
    Hospital", "St. Thomas' Hospital": a saint owning one."""
    if msg.lowers[k] in _SAINT and 1 <= j - k - 1 <= 2:
        return True
    return msg.lowers[j] in ("'s", "’s") and eng.is_common(msg.lowers[j - 1]) and not msg.initial[j - 1] \
        and (j - k == 1 or msg.lowers[j - 1] in _PLURAL_OWNERS)  # "Sonnenhof Children's Practice"


_SAINT: Final = frozenset({"st", "st.", "saint", "ste", "ste."})
_PLURAL_OWNERS: Final = frozenset({"children", "women", "men", "people", "veterans", "workers"})


def _joins(msg: Message, j: int, e: int) -> bool:
    """A connector inside a name: "Bank of America", "Procter & Gamble", "Wiley-Blackwell"."""
    if j + 1 >= e or not msg.caps[j + 1] or msg.lowers[j + 1] in MONTHS:
        return False
    lo = msg.lowers[j]
    if (lo in NAME_CONNECTORS and msg.texts[j] == lo) or lo == "&":
        return True
    return msg.texts[j] in ("-", "'", "’", ".") and not msg.space_before[j] and not msg.space_before[j + 1]
