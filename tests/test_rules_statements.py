"""rules.statements: memories as short self-contained statements, one per clause, in the third person."""

from __future__ import annotations

import pytest

from graphmem import Memory
from graphmem.extraction import Extraction, ExtractionContext, RuleExtractor
from graphmem.extraction.rules.statements import third_singular
from graphmem.ontology import Ontology

from .rules_support import REF


@pytest.fixture(scope="module")
def extractor() -> RuleExtractor:
    return RuleExtractor(Ontology.load(), granularity="statement")


def run(extractor: RuleExtractor, text: str, user: str | None = None) -> Extraction:
    speakers = list(dict.fromkeys(line.split(":")[0] for line in text.splitlines()))
    roles = {s: "assistant" if s == "assistant" else "user" for s in speakers}
    return extractor.extract(text, ExtractionContext(extractor.ontology, REF, speakers, roles=roles, user=user))


def texts(result: Extraction) -> list[str]:
    return [m.text for m in result.memories]


def test_coordinated_clauses_are_statements_of_their_own(extractor: RuleExtractor) -> None:
    out = run(extractor, "Lucas: I'm 34, I was born in Curitiba and I'm Brazilian.")
    assert texts(out) == ["Lucas is 34.", "Lucas was born in Curitiba.", "Lucas is Brazilian."]
    out = run(extractor, "Maya: Hi! I live in Lisbon and I work at Northwind as a product designer.")
    assert texts(out) == ["Maya lives in Lisbon.", "Maya works at Northwind as a product designer."]
    # each fact points at the statement that says it
    stated = {t.relation: out.memories[t.memory].text for t in out.triples if t.memory is not None}
    assert stated["livesIn"] == "Maya lives in Lisbon."
    assert stated["worksFor"] == "Maya works at Northwind as a product designer."


def test_an_apposition_of_a_name_is_a_statement(extractor: RuleExtractor) -> None:
    out = run(extractor, "Lena: I co-founded Brightleaf, a solar startup based in Munich, in 2021.")
    assert texts(out) == ["Lena co-founded Brightleaf in 2021.", "Brightleaf is a solar startup based in Munich."]
    # the date belongs to the clause that says it
    assert [m.event_time for m in out.memories] == ["2021-01-01", None]


def test_the_verb_agrees_and_contractions_open(extractor: RuleExtractor) -> None:
    out = run(extractor, "Maya: I don't eat pork and I've been vegetarian since May. I'd love to visit Japan.")
    assert texts(out) == ["Maya doesn't eat pork.", "Maya has been vegetarian since May.",
                          "Maya would love to visit Japan."]


def test_an_unnamed_user_stays_first_person(extractor: RuleExtractor) -> None:
    out = run(extractor, "user: I live in Oslo and I am allergic to peanuts.", user="kari")
    assert texts(out) == ["I live in Oslo.", "I am allergic to peanuts."]
    # once introduced, the name is used
    out = run(extractor, "user: I'm Tomás. I live in Oslo and I am allergic to peanuts.", user="u1")
    assert texts(out) == ["Tomás lives in Oslo.", "Tomás is allergic to peanuts."]


def test_one_clause_with_nothing_to_rewrite_is_kept_as_said(extractor: RuleExtractor) -> None:
    out = run(extractor, "Maya: e-mail: a@b.co\nMaya: The offsite moved to Lisbon")
    assert texts(out) == ["e-mail: a@b.co", "The offsite moved to Lisbon"]


def test_a_question_to_the_assistant_is_dropped_from_a_sentence_that_also_says_something(
        extractor: RuleExtractor) -> None:
    out = run(extractor, "Arjun: I'm pretty good with Python, what should I build next?\nassistant: A CLI tool.")
    assert texts(out) == ["Arjun is pretty good with Python."]
    assert [(s.text, s.reason) for s in out.skipped] == [("What should Arjun build next?", "question to the assistant"),
                                                          ("A CLI tool.", "assistant turn")]


def test_a_standing_instruction_is_kept(extractor: RuleExtractor) -> None:
    out = run(extractor, "Pavel: I'm type 1 diabetic, so keep carbs in mind when you suggest meals.\n"
                         "assistant: Noted.")
    assert "Pavel is type 1 diabetic." in texts(out)
    assert any("keep carbs in mind when you suggest meals" in t for t in texts(out))


def test_sentence_granularity_keeps_sentences_verbatim() -> None:
    verbatim = RuleExtractor(Ontology.load())  # the default
    out = run(verbatim, "Maya: I live in Lisbon and I work at Northwind.")
    assert texts(out) == ["I live in Lisbon and I work at Northwind."]


def test_third_singular() -> None:
    assert [third_singular(v) for v in ("live", "watch", "study", "play", "have", "do", "go", "'m", "fix")] == [
        "lives", "watches", "studies", "plays", "has", "does", "goes", "is", "fixes"]


def test_statements_reach_the_store(tmp_path: object) -> None:
    with Memory.from_config({"store": {"path": f"{tmp_path}/m.db"}, "embedder": {"provider": "hashing"},
                             "extraction": {"rules": {"granularity": "statement"}}}) as m:
        m.add("I live in Lisbon and I work at Northwind.", user_id="maya", speaker="Maya")
        got = sorted(r["memory"] for r in m.get_all(user_id="maya")["results"])
    assert got == ["Maya lives in Lisbon.", "Maya works at Northwind."]


def test_she_and_he_are_named_but_never_as_their_own_clause_subject(extractor: RuleExtractor) -> None:
    out = run(extractor, "Maya: My sister Inês lives in Porto. She works at a bakery.")
    assert texts(out) == ["Maya's sister Inês lives in Porto.", "Inês works at a bakery."]
    # "him" is not Theo, the subject of its own clause, and Biscuit is no person: left as said
    out = run(extractor, "Iris: We adopted a beagle called Biscuit. My son Theo adores him.")
    assert texts(out)[-1] == "Iris's son Theo adores him."
