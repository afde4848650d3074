"""rules.triples, rules.roles, rules.values, rules.arguments: the triples of one sentence."""

from __future__ import annotations

from graphmem.extraction.rules import classes, roles, triples, values
from graphmem.extraction.rules.arguments import SentenceView, make, objects, subject
from graphmem.extraction.rules.dates import find_times
from graphmem.extraction.rules.state import ChunkState

from .rules_support import REF, prepare, resources


def ready(text: str, speakers: tuple[str, ...] = ()) -> ChunkState:
    """A chunk with mentions, context types, times and memory indexes, as ``triples`` receives it."""
    res = resources()
    state = prepare(text, speakers)
    for i, sent in enumerate(state.sentences):
        classes.type_from_context(res, state, sent)
        sent.times = find_times(sent.text, REF)
        sent.memory = i
    return state


def found(text: str, speakers: tuple[str, ...] = (), sent: int = 0) -> set[tuple[str, str, str]]:
    state = ready(text, speakers)
    return {(t.source, t.relation, t.target)
            for t in triples.sentence_triples(resources(), state, state.sentences[sent])}


def test_relation_patterns() -> None:
    assert found("Ana worked for Initech in Lisbon.") == {("Ana", "worksFor", "Initech"),
                                                          ("Initech", "locatedIn", "Lisbon")}
    assert ("Maya", "worksFor", "Northwind") in found("Maya: I work as an engineer at Northwind.", ("Maya",))
    assert found("Ana doesn't work for Initech.") == set()
    assert found("Nature Physics is published by the Nature Publishing Group.") == {
        ("Nature Publishing Group", "authored", "Nature Physics")}
    assert found("Ana knows Rome, Paris and Lyon.") == {("Ana", "knows", "Rome"), ("Ana", "knows", "Paris"),
                                                         ("Ana", "knows", "Lyon")}
    assert found("Ana lives in Rome and Paris.") == {("Ana", "livesIn", "Rome")}  # functional: one object


def test_matches_are_ranked_longest_first() -> None:
    res = resources()
    state = ready("Ana works for Initech.")
    ctx = SentenceView.of(state, state.sentences[0])
    best = triples.relation_matches(res, ctx)[0]
    assert best.pattern.relation.name == "worksFor" and len(best.toks) == 2


def test_arguments_and_domain_range() -> None:
    res = resources()
    state = ready("Maya: Yesterday I met Ana and Luis in Porto.", ("Maya",))
    ctx = SentenceView.of(state, state.sentences[0])
    met = ctx.sent.msg.texts.index("met")
    assert subject(ctx, met) == "maya"  # "I" is the speaker
    assert objects(res, ctx, met + 1, allow_np=False) == ["ana", "luis"]
    knows, works = res.ontology.relation_info("knows"), res.ontology.relation_info("worksFor")
    assert knows is not None and works is not None
    t = make(res, ctx, "maya", knows, "ana")
    assert t is not None and (t.source, t.target, t.valid_from) == ("Maya", "Ana", "2024-06-14")
    state.entities["porto"].set_type("City", 1)
    assert make(res, ctx, "porto", works, "ana") is None  # a City works for no one
    assert "porto" not in state.endpoints


def test_role_nouns() -> None:
    assert found("Maya: My sister Inês is great.", ("Maya",)) == {("Inês", "siblingOf", "Maya")}
    assert found("Maya: Luis is my husband.", ("Maya",)) == {("Luis", "marriedTo", "Maya")}
    assert found("Maya: Maya's manager Tomás called.", ("Maya",)) == {("Tomás", "manages", "Maya")}
    state = ready("Maya: My dog Rex sleeps a lot.", ("Maya",))
    got = roles.role_triples(resources(), SentenceView.of(state, state.sentences[0]), set())
    assert [(t.source, t.relation, t.target) for t in got] == [("Maya", "hasPet", "Rex")]
    assert state.entities["rex"].type == "Pet"


def test_values() -> None:
    assert found("Ana was born on 3 March 1990.") == {("Ana", "birthDate", "1990-03-03")}
    assert found("Ana is 34 years old.") == {("Ana", "age", "34")}
    assert found("Maya: You can reach me at maya@example.com anytime.", ("Maya",)) == {
        ("Maya", "email", "maya@example.com")}
    state = ready("Ana was born on 3 March 1990.")
    (t,) = triples.sentence_triples(resources(), state, state.sentences[0])
    assert t.valid_from is None  # the date is the value, not also when the fact started


def test_number_at() -> None:
    state = ready("They raised about 3,000 dollars, then thirty more, then 2 million.")
    msg = state.sentences[0].msg
    at = msg.texts.index
    assert values.number_at(msg, at("about"), len(msg.texts)) == 3000.0
    assert values.number_at(msg, at("thirty"), len(msg.texts)) == 30
    assert values.number_at(msg, at("2"), len(msg.texts)) == 2_000_000
    assert values.number_at(msg, at("They"), len(msg.texts)) is None
