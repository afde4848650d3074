"""rules.text: messages, tokens and sentence boundaries."""

from __future__ import annotations

from graphmem.extraction.rules.text import split_messages, tokenize

from .rules_support import resources


def test_known_speakers_open_messages_and_continue_lines() -> None:
    msgs = split_messages("Maya: first line\nstill Maya\nAna: hello\n\nafter a blank", ["Maya", "Ana"])
    assert [(m.speaker, m.text) for m in msgs] == [("Maya", "first line\nstill Maya"),
                                                   ("Ana", "hello\n\nafter a blank")]
    assert msgs[1].offset == len("Maya: first line\nstill Maya\nAna: ")


def test_transcript_prefixes_count_only_when_most_lines_carry_one() -> None:
    transcript = split_messages("Ana: hi\nLuis: hello\nAna: bye", [])
    assert [m.speaker for m in transcript] == ["Ana", "Luis", "Ana"]
    note = split_messages("Note: the meeting moved.\nIt is on Friday now.\nBring slides.", [])
    assert [m.speaker for m in note] == [None]
    assert [m.text for m in split_messages("one\n\ntwo", [])] == ["one", "two"]


def test_sentences_caps_and_clause_initial_words() -> None:
    res = resources()
    (msg,) = tokenize("I met Ana in Lisbon. iPhone sales grew (Apple said). Wow!", [], res.nlp, res.english)
    assert [msg.span_text(s, e) for s, e in msg.sentences] == [
        "I met Ana in Lisbon.", "iPhone sales grew (Apple said).", "Wow!"]
    caps = {t for t, c in zip(msg.texts, msg.caps, strict=True) if c}
    assert caps == {"Ana", "Lisbon", "iPhone", "Apple", "Wow"}  # "I" is not a name
    initial = {t for t, i in zip(msg.texts, msg.initial, strict=True) if i}
    assert initial == {"I", "iPhone", "Apple", "Wow"}  # after "(" a clause starts again
    assert msg.lemmas[msg.texts.index("met")] == "meet"


def test_bare_punctuation_is_no_sentence() -> None:
    res = resources()
    (msg,) = tokenize("... !!! 🎉", [], res.nlp, res.english)
    assert [msg.span_text(s, e) for s, e in msg.sentences] == ["🎉"]
