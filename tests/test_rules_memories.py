"""rules.memories: grouping sentences into memories and typing them."""

from __future__ import annotations

from pathlib import Path

from graphmem import Memory
from graphmem.extraction.rules.dates import find_times
from graphmem.extraction.rules.memories import groups, is_procedural, memories
from graphmem.models import MemoryType

from .rules_support import REF, prepare, resources

TEXT = "Maya: Wow! I moved to Porto last year. Thanks.\nAna: Me too, since 2020."


def test_short_sentences_join_a_neighbour_of_the_same_message() -> None:
    state = prepare(TEXT, speakers=("Maya", "Ana"), mentions=False)
    got = [[s.text for s in g] for g in groups(state.sentences, "sentence", 4)]
    # "Wow!" waits for the next sentence; the short last one joins the group before it
    assert got == [["Wow!", "I moved to Porto last year.", "Thanks."], ["Me too, since 2020."]]
    assert [[s.text for s in g] for g in groups(state.sentences, "sentence", 1)] == [
        ["Wow!"], ["I moved to Porto last year."], ["Thanks."], ["Me too, since 2020."]]
    assert len(groups(state.sentences, "message", 4)) == 2


def test_memories_are_typed_dated_attributed_and_indexed() -> None:
    state = prepare(TEXT, speakers=("Maya", "Ana"), mentions=False)
    for sent in state.sentences:
        sent.times = find_times(sent.text, REF)
    out, skipped = memories(resources().english, state.sentences, "sentence", 4)
    assert skipped == []
    assert [(m.text, m.attributed_to, m.memory_type, m.event_time) for m in out] == [
        ("Wow! I moved to Porto last year. Thanks.", "Maya", MemoryType.EPISODIC, "2023-01-01"),
        ("Me too, since 2020.", "Ana", MemoryType.EPISODIC, "2020-01-01")]
    assert [s.memory for s in state.sentences] == [0, 0, 0, 1]


def test_procedural_needs_a_verb_where_the_pattern_has_one() -> None:
    eng = resources().english

    def proc(text: str) -> bool:
        return is_procedural(eng, prepare(text, mentions=False).sentences[0])

    assert proc("Always back up the database before a release.")
    assert proc("To reset the router, hold the button for ten seconds.")
    assert proc("Make sure the lights are off.")
    assert not proc("Never thought I would enjoy running so much.")  # "thought" is no imperative
    assert not proc("Always back up the database?")  # a question is no rule
    assert not proc("The database is backed up nightly.")


def test_a_wish_and_what_is_asked_for_are_not_memories(tmp_path: Path) -> None:
    """"Merry Christmas Eve!" names a day and keeps nothing; "a dessert I could make" describes what is asked
    for, not the speaker."""
    with Memory({"home": str(tmp_path), "embedder": {"provider": "hashing"}, "llm": {"provider": "none"}}) as m:
        out = m.add([{"role": "user", "content": "Merry Christmas Eve! Can you suggest a quick dessert I could "
                      "make in under 30 minutes?"}, {"role": "assistant", "content": "Sure!"}], user_id="u")
        assert out["results"] == []
        assert any(s["reason"] == "question to the assistant" for s in out["skipped"])
        out = m.add([{"role": "user", "content": "Happy St David's Day! I grew up in Llanberis."},
                     {"role": "assistant", "content": "Diolch!"}], user_id="u")
        assert [r["memory"] for r in out["results"]] == ["I grew up in Llanberis."]
