"""The time a question names, and whether a memory lies in it.

"What did Maria donate in December 2023?", "Where was Tim the week before 16 November 2023?", "What
did I buy two weeks ago?": the words name the thing, the date names *when*, and a memory said or
dated then is the likelier answer. The phrases are found and resolved by the rule extractor's time
expressions (:mod:`graphmem.extraction.rules.dates`) against the time the question is asked, and
each becomes a span of days that a memory's time (its ``event_time``, or the time it was said) falls
in or not.

A span is widened after its end: what happened in June is often told in July ("last month"), and a
day named in a question is usually the day something was said about the days before it ("the week
before 16 November"). So a day covers the week before it and the two days after, a week the
next two weeks too, a month the first two weeks of the next, a year its next month.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ..models import MemoryRecord

_TIME_WORDS: Final = re.compile(
    r"\b(?:\d{4}|yesterday|today|tonight|ago|last|past|previous|weekend|week|month|year|"
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"spring|summer|autumn|fall|winter)\b", re.IGNORECASE)
"""A question without one of these names no time: the resolver (dateparser) is not even imported."""
_UNANCHORED: Final = re.compile(
    r"(?:on )?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|.+ (?:before|later|earlier)",
    re.IGNORECASE)
"""Phrases a question does not date from its own time: a bare weekday names a kind of day ("the Sunday
mass", "on Monday": which one?), and "two weeks before" counts from something else it names."""
_BEFORE: Final = {"day": 7, "week": 0, "month": 0, "year": 0}
_AFTER: Final = {"day": 2, "week": 14, "month": 14, "year": 31}


@dataclass(frozen=True)
class Span:
    """Days ``[start, end)`` a question names, from its ``phrase``."""

    phrase: str
    start: datetime
    end: datetime

    def holds(self, at: datetime) -> bool:
        return self.start <= at < self.end


def asked_spans(question: str, now: datetime) -> list[Span]:
    """The spans of the past ``question`` names, resolved against ``now`` (when it is asked). A time
    from today on ("tonight", "next month") names no span: what to watch tonight is answered by what
    was said before, so nothing is lowered for having been said then."""
    if _TIME_WORDS.search(question) is None:
        return []
    from ..extraction.rules.dates import find_times

    out = []
    for found in find_times(question, now):
        if _UNANCHORED.fullmatch(found.text) or found.value >= now.date():
            continue
        first = found.value
        if found.precision == "month":
            first = first.replace(day=1)
            last = (first.replace(day=28) + timedelta(days=4)).replace(day=1)
        elif found.precision == "year":
            first = first.replace(month=1, day=1)
            last = first.replace(year=first.year + 1)
        else:
            last = first + timedelta(days=7 if found.precision == "week" else 1)
        out.append(Span(found.text, _day(first - timedelta(days=_BEFORE[found.precision])),
                        _day(last + timedelta(days=_AFTER[found.precision]))))
    return out


def _day(d: date) -> datetime:
    return datetime.combine(d, time(), tzinfo=UTC)


def in_span(record: MemoryRecord, spans: list[Span]) -> bool:
    """Whether the memory happened or was said in one of ``spans``."""
    times = [t for t in (record.event_time, record.created_at) if t is not None]
    return any(span.holds(t) for span in spans for t in times)
