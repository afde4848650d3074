"""Time expressions for the rule-based extractor: found by regular expressions, resolved by dateparser.

Finding is a regex over the sentence (cheap, deterministic, and it only fires on phrases that dateparser
can resolve), resolving is ``dateparser`` with ``RELATIVE_BASE`` = the message time, cached per
(phrase, reference day, past/future), because dateparser costs ~0.5 ms a call and chat repeats phrases.
Results are ISO dates (``YYYY-MM-DD``): a year-only phrase gives its first day, "last week" the day a week
before the reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import Final, Literal

from dateparser.date import DateDataParser  # type: ignore[import-untyped]

Precision = Literal["day", "week", "month", "year"]

_MONTH = (r"(?:jan(?:uary|\.)?|feb(?:ruary|\.)?|mar(?:ch|\.)?|apr(?:il|\.)?|may|june?|july?|aug(?:ust|\.)?|"
          r"sep(?:t(?:ember)?)?\.?|oct(?:ober|\.)?|nov(?:ember|\.)?|dec(?:ember|\.)?)")
_FULL_MONTH = r"(?:january|february|march|april|may|june|july|august|september|october|november|december)"
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_NUM = r"(?:\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|a couple of|several)"
_UNIT = r"(?:day|week|month|year|weekend|hour)s?"
_SEASON = r"(?:summer|winter|spring|fall|autumn)"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_YEAR = r"(?:1[0-9]{3}|20[0-9]{2}|2100)"

_PATTERNS: Final = [
    r"the day before yesterday", r"the day after tomorrow", r"yesterday", r"today", r"tonight", r"tomorrow",
    r"last night", r"this (?:morning|afternoon|evening)",
    rf"(?:last|next|this|past|coming|previous) (?:week|month|year|weekend|{_WEEKDAY}|{_FULL_MONTH}|{_SEASON})",
    r"(?:earlier|later) this (?:week|month|year)",
    rf"{_NUM} {_UNIT} (?:ago|later|from now|before|earlier)",
    rf"in (?:the )?(?:next |past |last )?{_NUM} {_UNIT}",
    rf"(?:on |last |next |this )?{_WEEKDAY}",
    rf"{_MONTH} {_DAY}(?:,? {_YEAR})?",
    rf"(?:the )?{_DAY} (?:of )?{_MONTH},? {_YEAR}",
    rf"(?:the )?{_DAY} of {_MONTH}",
    rf"(?:(?:early|mid|late)[- ])?{_MONTH},? {_YEAR}",
    rf"(?:in|since|during|by|until|before|after|around|circa|from|of|throughout|early|late|mid|c\.) {_YEAR}",
    r"(?:in|during|since|throughout|by) the (?:early |mid |late )?(?:1[0-9]{2}0|20[0-9]0)s",
    r"(?:in|during|since|throughout|by) the (?:early |mid |late )?(?:[2-9]0)s",
    rf"(?:in|since|until|by|early|late|mid|last|next|this) {_FULL_MONTH}(?!,? (?:\d|of\b))",
    r"\d{4}-\d{2}-\d{2}", r"\d{1,2}/\d{1,2}/\d{2,4}",
]
_TIME_RE: Final = re.compile(r"(?<![\w-])(?:" + "|".join(f"(?:{p})" for p in _PATTERNS) + r")(?![\w-])",
                             re.IGNORECASE)
_LEADING: Final = re.compile(r"^(?:on|since|during|by|until|before|after|around|circa|from|of|throughout|c\.|in)"
                             r"\s+", re.IGNORECASE)
_IN_UNITS: Final = re.compile(rf"^in (?:the )?(next |past |last )?({_NUM} {_UNIT})$", re.IGNORECASE)
_DECADE: Final = re.compile(r"the (?:(early|mid|late) )?(\d{2,4})s$", re.IGNORECASE)
_FUTURE_HINT: Final = re.compile(r"\b(?:will|'ll|going to|gonna|plan(?:ning)? to|next|tomorrow|upcoming|soon|"
                                 r"coming|shall|intend|hope to|about to)\b"
                                 r"|(?:\b(?:am|are|is)|'m|'re|'s)\s+(?:\w+ly\s+)?\w+ing\b(?!.*\bsince\b)",
                                 re.IGNORECASE)
"""Words that put an ambiguous date ("in August", "on Monday") ahead of the reference time; the
present progressive too ("we're moving to Lyon in August": a plan), unless "since" says otherwise."""
_REWRITES: Final = {
    "last weekend": "last saturday", "this weekend": "saturday", "next weekend": "next saturday",
    "past weekend": "last saturday", "coming weekend": "saturday", "previous weekend": "last saturday",
    "a few": "3", "a couple of": "2", "several": "3", "earlier this": "this", "later this": "this",
    "past week": "last week", "past month": "last month", "past year": "last year",
    "previous week": "last week", "previous month": "last month", "previous year": "last year",
    "coming week": "next week", "coming month": "next month", "coming year": "next year",
}
_SEASON_MONTH: Final = {"spring": 4, "summer": 7, "fall": 10, "autumn": 10, "winter": 1}
_PERIOD: Final[dict[str, Precision]] = {"day": "day", "week": "week", "month": "month", "year": "year",
                                        "time": "day", "part_of_day": "day"}


@dataclass(frozen=True)
class TimeExpr:
    start: int
    """Character offsets in the text searched."""
    end: int
    text: str
    value: date
    precision: Precision

    @property
    def iso(self) -> str:
        return self.value.isoformat()


def find_times(text: str, reference: datetime) -> list[TimeExpr]:
    """Every resolvable time expression in ``text``, left to right."""
    if not any(ch.isdigit() for ch in text) and _cheap_miss(text):
        return []
    prefer: Literal["past", "future"] = "future" if _FUTURE_HINT.search(text) else "past"
    ref = reference.replace(tzinfo=None) if reference.tzinfo is None else \
        reference.astimezone(reference.tzinfo).replace(tzinfo=None)
    out: list[TimeExpr] = []
    for m in _TIME_RE.finditer(text):
        phrase = m.group(0)
        if re.search(r"\b(?:may|march)\b", phrase):  # the verb "may", "march" (not the months)
            continue
        resolved = resolve(phrase, ref.date(), ref.hour, prefer)
        if resolved is not None:
            out.append(TimeExpr(m.start(), m.end(), phrase, resolved[0], resolved[1]))
    return out


_KEYWORDS: Final = re.compile(r"(?:day|tomorrow|week|month|year|night|morning|afternoon|evening|tonight|ago|"
                              r"jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|summer|winter|spring|fall|"
                              r"autumn)", re.IGNORECASE)


def _cheap_miss(text: str) -> bool:
    return _KEYWORDS.search(text) is None


@lru_cache(maxsize=8192)
def resolve(phrase: str, ref_day: date, ref_hour: int, prefer: Literal["past", "future"]
            ) -> tuple[date, Precision] | None:
    """ISO-resolvable value of one phrase against the reference day, or ``None``."""
    text = " ".join(phrase.lower().split())
    units = _IN_UNITS.match(text)
    if units:  # "in 2 weeks" is future; "in the past 2 weeks" is "2 weeks ago"
        text = f"{units.group(2)} ago" if units.group(1) in ("past ", "last ") else f"in {units.group(2)}"
    else:
        text = _LEADING.sub("", text)
    text = re.sub(r"^(?:early|mid|late)[- ](?=[a-z])", "", text)
    if text.startswith("the ") and not text.startswith(("the day", "the next", "the past", "the last")):
        text = text[4:]
    decade = _DECADE.match("the " + text) or _DECADE.match(text)
    if decade:
        return _decade(decade.group(1), decade.group(2), ref_day)
    season = re.fullmatch(r"(last|next|this|past|coming|previous) (summer|winter|spring|fall|autumn)", text)
    if season:
        return _season(season.group(1), season.group(2), ref_day)
    year = re.fullmatch(r"(?:(early|mid|late) )?(\d{4})", text)
    if year:
        return date(int(year.group(2)), 1, 1), "year"
    for old, new in _REWRITES.items():
        if old in text:
            text = text.replace(old, new)
    quick = _arithmetic(text, ref_day)
    if quick is not None:
        return quick
    base = datetime(ref_day.year, ref_day.month, ref_day.day, ref_hour)
    parser = _parser(base, prefer)
    try:
        data = parser.get_date_data(text)
    except (ValueError, OverflowError, TypeError):
        return None
    if data is None or data.date_obj is None:
        return None
    got: datetime = data.date_obj
    precision = _PERIOD.get(str(data.period), "day")
    if precision == "year" and not re.search(r"\d{4}", text):
        # "last year" -> the first day of that year; keep the year, it is what the phrase says.
        return date(got.year, 1, 1), "year"
    return got.date(), precision


_COUNTS: Final = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                  "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
_DAYS_OFF: Final = {"today": 0, "yesterday": -1, "tomorrow": 1, "the day before yesterday": -2,
                    "the day after tomorrow": 2}
_STEP: Final = {"last": -1, "this": 0, "next": 1}
_RELATIVE: Final = re.compile(r"(last|this|next) (year|month|week)|(\d{1,3}|[a-z]+) (day|week|month|year)s? ago")


def _arithmetic(text: str, ref_day: date) -> tuple[date, Precision] | None:
    """The commonest relative phrases ("yesterday", "last year", "3 weeks ago"), worked out here as
    dateparser would (``tests/test_rules_dates.py`` checks them against it): dateparser's first call in a
    process compiles its English patterns, a good share of a fresh process's first ``add``."""
    if text in _DAYS_OFF:
        return ref_day + timedelta(days=_DAYS_OFF[text]), "day"
    found = _RELATIVE.fullmatch(text)
    if found is None:
        return None
    if found[1]:
        step, unit = _STEP[found[1]], found[2]
    else:
        count = int(found[3]) if found[3].isdigit() else _COUNTS.get(found[3])
        if count is None:
            return None
        step, unit = -count, found[4]
    if unit == "day":
        return ref_day + timedelta(days=step), "day"
    if unit == "week":
        return ref_day + timedelta(weeks=step), "week"
    if unit == "month":
        months = ref_day.year * 12 + ref_day.month - 1 + step
        return date(months // 12, months % 12 + 1, 1), "month"
    return date(ref_day.year + step, 1, 1), "year"


@lru_cache(maxsize=16)  # ~250 KB each; one per (message hour, tense): a conversation's messages share a few
def _parser(base: datetime, prefer: Literal["past", "future"]) -> DateDataParser:
    settings = {"RELATIVE_BASE": base, "PREFER_DATES_FROM": prefer, "RETURN_TIME_AS_PERIOD": True,
                "PREFER_DAY_OF_MONTH": "first", "PREFER_MONTH_OF_YEAR": "first", "STRICT_PARSING": False}
    return DateDataParser(languages=["en"], settings=settings)


def _decade(part: str | None, digits: str, ref_day: date) -> tuple[date, Precision] | None:
    if len(digits) == 2:  # "the 90s": the most recent such decade not after the reference
        century = ref_day.year // 100 * 100
        year = century + int(digits)
        if year > ref_day.year:
            year -= 100
    else:
        year = int(digits)
    if not 1000 <= year <= 2100:
        return None
    offset = {"early": 0, "mid": 4, "late": 7}.get(part or "", 0)
    return date(year + offset, 1, 1), "year"


def _season(which: str, season: str, ref_day: date) -> tuple[date, Precision]:
    month = _SEASON_MONTH[season]
    this_year = date(ref_day.year, month, 1)
    if which in ("last", "past", "previous"):
        value = this_year if this_year + timedelta(days=90) <= ref_day else date(ref_day.year - 1, month, 1)
    elif which in ("next", "coming"):
        value = this_year if this_year > ref_day else date(ref_day.year + 1, month, 1)
    else:
        value = this_year
    return value, "month"
