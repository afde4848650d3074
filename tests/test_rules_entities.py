"""rules.mentions, rules.entities, rules.classes, rules.concepts: finding, registering and typing entities."""

from __future__ import annotations

from graphmem.extraction import KnownEntity
from graphmem.extraction.rules import classes, concepts, entities, mentions
from graphmem.extraction.rules.state import ChunkState, Entity

from .rules_support import mention_names, prepare, resources


def spans(text: str) -> list[tuple[str, str]]:
    """(span text, kind) of what ``mentions.find`` keeps in the first sentence of ``text``."""
    state = prepare(text, mentions=False)
    sent = state.sentences[0]
    found = mentions.find(resources().english, state.known, sent.msg, sent.start, sent.end)
    return [(sent.msg.span_text(c.start, c.end), c.kind) for c in found]


def test_finders_and_overlap() -> None:
    assert spans("Lately, the Bank of America and Procter & Gamble met in May 2020.") == [
        ("Bank of America", "cap"), ("Procter & Gamble", "cap")]  # "Lately", "The", "May" are not names
    assert spans('She sang "Hello Love" at https://x.org/a, see OPS-42 and v1.2.3.') == [
        ('Hello Love', "quote"), ("https://x.org/a", "id"), ("OPS-42", "id"), ("v1.2.3", "id")]
    # the title is evidence of a person and stays in the name ("Ana Lopez" becomes its alias)
    assert spans("Dr. Ana Lopez saw a Mexican film.") == [("Dr. Ana Lopez", "person"), ("Mexican", "demonym")]
    assert spans("Snow fell on Hank Snow.") == [("Snow", "weak"), ("Hank Snow", "cap")]


def test_a_saint_owns_an_institution_but_a_person_owns_a_thing() -> None:
    assert [s for s, _ in spans("She is a nurse at St Mary's Hospital in Leeds.")] == ["St Mary's Hospital", "Leeds"]
    assert [s for s, _ in spans("He trained at St. Thomas' Hospital.")] == ["St. Thomas' Hospital"]
    assert [s for s, _ in spans("I met Tom's brother at Google.")] == ["Tom", "Google"]


def test_known_names_match_in_any_case_but_not_common_words() -> None:
    known = (KnownEntity(1, "Project Atlas"), KnownEntity(2, "Snow"))
    state = prepare("I love project atlas and the snow.", known=known)
    assert mention_names(state) == [("Project Atlas", "known")]
    assert state.entities["project atlas"].existing == 1


def test_speakers_heading_and_topic() -> None:
    state = prepare("Maya: hi\nassistant: hello", speakers=("Maya", "assistant"))
    assert state.entities["maya"].speaker and state.entities["maya"].type == "Person"
    assert "assistant" not in state.entities  # a role, not a person: no entity
    state = prepare("Avery County (North Carolina)\nIt lies in the mountains.")
    heading = state.entities[state.topic or ""]
    assert heading.name == "Avery County" and heading.type == "Region"
    assert "Avery County (North Carolina)" in heading.aliases


def test_short_forms_fold_into_their_long_name() -> None:
    state = prepare("Hank Snow was a singer. Snow moved to Nashville.")
    assert "snow" not in state.entities
    assert "Snow" in state.entities["hank snow"].aliases
    assert ("Hank Snow", "short") in mention_names(state, 1)
    # two long names could own "Snow": it stays unresolved rather than guessed
    state = prepare("Hank Snow was a singer. Jimmie Snow was his son. Snow moved to Nashville.")
    assert "Snow" not in state.entities["hank snow"].aliases and "Snow" not in state.entities["jimmie snow"].aliases
    mel = prepare("Melanie: I told Mel about it.", speakers=("Melanie",))
    assert "mel" not in mel.entities and "Mel" in mel.entities["melanie"].aliases


def test_nested_names_and_output() -> None:
    state = prepare("The Rank Organisation\nThe Rank Organisation sold it to the Philbrook Museum of Tulsa.")
    assert "tulsa" in state.nested
    out = {e.name: e for e in entities.output(state)}
    assert {"Rank Organisation", "Philbrook Museum of Tulsa", "Tulsa"} <= set(out)
    assert out["Rank Organisation"].aliases == ["The Rank Organisation"]


def test_type_from_words() -> None:
    res = resources()

    def typed(*words: str) -> str | None:
        ent = Entity(key="x", name="x", order=0)
        classes.type_from_words(res, ent, list(words))
        return ent.type

    assert typed("initech", "inc.") == "Company"
    assert typed("avery", "county") == "Region"
    assert typed("university", "of", "porto") == "University"
    assert typed("lake", "tahoe") == "Place"
    assert typed("g.", "stanley", "hall") is None  # an initial: a person, whatever "hall" says
    assert typed("hank", "snow") is None


def test_type_from_context_and_rank() -> None:
    res = resources()
    state = prepare("Tennessee is a state in the US. Ana grew up in the city of Lyon. Wellesley is a state university.")
    for sent in state.sentences:
        classes.type_from_context(res, state, sent)
    assert state.entities["tennessee"].type == "Region"
    assert state.entities["lyon"].type == "City"
    assert state.entities["wellesley"].type == "University"  # "a state university" is not a state
    ent = state.entities["tennessee"]
    ent.set_type("City", 2)  # a weaker guess does not replace pattern evidence
    assert ent.type == "Region"


def test_noun_compounds() -> None:
    state: ChunkState = prepare("I joined a support group for mental health awareness last week.")
    concepts.add_compounds(resources().english, state, state.sentences[0])
    assert [name for name, kind in mention_names(state) if kind == "concept"] == [
        "support group", "mental health awareness"]
    state = prepare("I had a great time today.")
    concepts.add_compounds(resources().english, state, state.sentences[0])
    assert not state.sentences[0].mentions  # evaluative and generic words make no concept
