"""rules.dates: time phrases found by pattern and resolved against the reference time."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from graphmem.extraction.rules.dates import find_times, resolve

REF = datetime(2024, 6, 15, 12, 0)  # a Saturday
DAY = REF.date()


@pytest.mark.parametrize(("phrase", "expected", "precision"), [
    ("yesterday", date(2024, 6, 14), "day"),
    ("3 days ago", date(2024, 6, 12), "day"),
    ("in the past 2 weeks", date(2024, 6, 1), "week"),
    ("in 2019", date(2019, 1, 1), "year"),
    ("last year", date(2023, 1, 1), "year"),
    ("the 90s", date(1990, 1, 1), "year"),
    ("in the late 1960s", date(1967, 1, 1), "year"),
    ("last summer", date(2023, 7, 1), "month"),
    ("next winter", date(2025, 1, 1), "month"),
    ("3 March 1990", date(1990, 3, 3), "day"),
])
def test_resolve(phrase: str, expected: date, precision: str) -> None:
    assert resolve(phrase, DAY, 12, "past") == (expected, precision)


def test_find_times_offsets_and_future_preference() -> None:
    text = "We fly to Rome next Tuesday and met Ana yesterday."
    found = find_times(text, REF)
    assert [(t.text, t.iso) for t in found] == [("next Tuesday", "2024-06-18"), ("yesterday", "2024-06-14")]
    assert all(text[t.start:t.end] == t.text for t in found)
    assert find_times("I will see her on Monday.", REF)[0].iso == "2024-06-17"  # future: the coming Monday
    assert find_times("I saw her on Monday.", REF)[0].iso == "2024-06-10"


def test_verbs_and_plain_text_are_not_dates() -> None:
    assert find_times("You may go now.", REF) == []
    assert find_times("Nothing temporal here at all.", REF) == []


def test_a_plan_in_the_present_progressive_looks_ahead() -> None:
    """"We're moving to Lyon in August" said in May is next August; "moved" and "since" look back."""
    ref = datetime(2026, 5, 4, tzinfo=UTC)
    assert [x.iso for x in find_times("We're moving to Lyon in August.", ref)] == ["2026-08-01"]
    assert [x.iso for x in find_times("We moved to Lyon in August.", ref)] == ["2025-08-01"]
    assert [x.iso for x in find_times("I'm living in Lyon since August.", ref)] == ["2025-08-01"]


_ONE = ("1", "a")
_WORKED_OUT = ["today", "yesterday", "tomorrow", "the day before yesterday", "the day after tomorrow",
               *(f"{w} {u}" for w in ("last", "this", "next") for u in ("year", "month", "week")),
               *(f"{n} {u}{'' if n in _ONE else 's'} ago" for n in ("1", "3", "11", "a", "two", "twelve")
                 for u in ("day", "week", "month", "year")),
               "a few days ago", "several weeks ago", "a couple of months ago"]


@pytest.mark.parametrize("prefer", ["past", "future"])
def test_phrases_worked_out_without_dateparser_match_it(prefer: str) -> None:
    """The relative phrases :func:`resolve` works out itself (for a fast first call) give what
    dateparser gives, across month ends, a leap day and year ends."""
    from graphmem.extraction.rules import dates

    refs = [date(2024, 2, 29), date(2024, 3, 31), date(2023, 1, 1), date(2023, 12, 31), date(2025, 5, 31),
            date(2024, 6, 15), date(2022, 10, 9)]
    for ref in refs:
        for phrase in _WORKED_OUT:
            text = phrase
            for old, new in dates._REWRITES.items():
                text = text.replace(old, new)
            quick = dates._arithmetic(text, ref)
            assert quick is not None, phrase
            got = dates._parser(datetime(ref.year, ref.month, ref.day, 12), prefer).get_date_data(text)  # type: ignore[arg-type]
            period = dates._PERIOD[str(got.period)]
            want = date(got.date_obj.year, 1, 1) if period == "year" else got.date_obj.date()
            assert quick == (want, period), (phrase, ref, prefer)
