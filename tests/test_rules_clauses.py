"""The clause reader of the rule extractor: predicates from the dependency parse, mapped to the
ontology's relations by their surface forms, with domain and range choosing and evidence required
for plain nouns; and "I" of an unnamed user turn as the scope's user."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from graphmem import Memory
from graphmem.extraction import ExtractionContext, RuleExtractor
from graphmem.extraction.rules.lexicon import definition_examples
from graphmem.ontology import Ontology

REF = datetime(2026, 5, 4, 10, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def extractor(ontology: Ontology) -> RuleExtractor:
    return RuleExtractor(ontology)


def facts(ex: RuleExtractor, text: str, speakers: tuple[str, ...] = ("Kari",),
          user: str | None = None) -> set[tuple[str, str, str]]:
    ctx = ExtractionContext(ex.ontology, REF, list(speakers), user=user)
    return {(t.source, t.relation, t.target) for t in ex.extract(text, ctx).triples}


def test_coordinated_objects_and_a_shared_subject(extractor: RuleExtractor) -> None:
    got = facts(extractor, "Kari: I live in Tromsø and work at Statnett.")
    assert {("Kari", "livesIn", "Tromsø"), ("Kari", "worksFor", "Statnett")} <= got
    got = facts(extractor, "Kari: These days I mostly speak Finnish and Swedish with my family.")
    assert {("Kari", "speaks", "Finnish"), ("Kari", "speaks", "Swedish")} <= got


def test_negated_and_hedged_clauses_state_nothing(extractor: RuleExtractor) -> None:
    assert not facts(extractor, "Kari: I don't live in Bergen.")
    assert not facts(extractor, "Kari: Maybe I will live in Bergen, who knows.")


def test_a_plain_noun_after_a_light_verb_needs_a_class(extractor: RuleExtractor) -> None:
    assert ("Kari", "takesMedication", "metformin") in facts(extractor, "Kari: I take metformin every morning.")
    assert not any(r == "takesMedication" for _s, r, _t in facts(extractor, "Kari: I take the bus every morning."))


def test_the_assistant_states_no_facts(extractor: RuleExtractor) -> None:
    assert not facts(extractor, "assistant: Raj is on the payments project with you, I think.",
                     speakers=("assistant",))


def test_an_unnamed_user_is_the_scope_user(extractor: RuleExtractor) -> None:
    assert facts(extractor, "user: I live in Tromsø.", ("user",), user="u-17") == {("u-17", "livesIn", "Tromsø")}
    # an introduction names the speaker; the scope's id stays another name of the same person
    ctx = ExtractionContext(extractor.ontology, REF, ["user"], user="u-17")
    out = extractor.extract("user: hi, Mateus here. I live in Perth.", ctx)
    assert {(t.source, t.relation, t.target) for t in out.triples} == {("Mateus", "livesIn", "Perth")}
    mateus = next(e for e in out.entities if e.name == "Mateus")
    assert "u-17" in mateus.aliases
    assert facts(extractor, "user: I live in Tromsø.", ("user",)) == set()  # no scope user: no subject


def test_definition_examples() -> None:
    assert definition_examples("A medicine a person takes: insulin, metformin, an inhaler, vitamin D.") == \
        ["insulin", "metformin", "inhaler", "vitamin d"]
    assert definition_examples("No examples here.") == []


def test_an_ended_relation_closes_the_stored_fact(tmp_path: Path) -> None:
    """"I quit Acme in May" closes the stored worksFor Acme in May (reported under ``ended``); a relation
    said to have ended with nothing stored is written closed: history, not a current fact."""
    with Memory.from_config({"store": {"path": str(tmp_path / "m.db")}, "embedder": {"provider": "hashing"}}) as m:
        m.add([{"role": "user", "content": "I work at Acme as a welder.", "name": "Kari"}], user_id="kari",
              timestamp="2026-01-10T09:00:00Z")
        out = m.add([{"role": "user", "content": "I quit Acme in May.", "name": "Kari"}], user_id="kari",
                    timestamp="2026-06-02T09:00:00Z")
        assert [(e["relation"], e["target"], e["valid_to"][:10]) for e in out["relations"]["ended"]] == \
            [("worksFor", "Acme", "2026-05-01")]
        assert not [f for f in m.facts(user_id="kari")["results"] if f["relation_name"] == "gm:worksFor"]
        closed = [f for f in m.facts(user_id="kari", include_closed=True)["results"]
                  if f["relation_name"] == "gm:worksFor"]
        assert [(f["valid_from"][:10], f["valid_to"][:10]) for f in closed] == [("2026-01-10", "2026-05-01")]
        m.add([{"role": "user", "content": "I used to work at Norrbrook.", "name": "Kari"}], user_id="kari",
              timestamp="2026-06-03T09:00:00Z")
        past = [f for f in m.facts(user_id="kari", include_closed=True)["results"]
                if f["relation_name"] == "gm:worksFor" and f["target"]["name"] == "Norrbrook"]
        assert len(past) == 1 and past[0]["valid_to"] is not None


@pytest.mark.parametrize("first", ["I live in Oslo.", "hi, Kari here. I live in Oslo."])
def test_the_scope_user_is_one_node_whatever_it_is_called_first(tmp_path: Path, first: str) -> None:
    """"I" before and after the user says their name is one person: the scope's id and the name are
    both names of one entity, in either order."""
    with Memory.from_config({"store": {"path": str(tmp_path / "m.db")}, "embedder": {"provider": "hashing"}}) as m:
        m.add(first, user_id="u-17")
        m.add("I'm Kari btw. I work at Statnett." if "Kari" not in first else "I work at Statnett.", user_id="u-17")
        people = [e for e in m.entities(user_id="u-17")["results"] if "gm:Person" in e["types"]]
        assert len(people) == 1 and {people[0]["name"], *people[0]["aliases"]} == {"u-17", "Kari"}
        sources = {f["source"]["id"] for f in m.facts(user_id="u-17")["results"]}
        assert sources == {people[0]["id"]}


def test_listed_languages_take_their_modifiers(extractor: RuleExtractor) -> None:
    """A language after "and" is named with an adverb after it or an adjective before it, and a
    language is not the start of a longer name ("Japanese on Duolingo")."""
    assert {("Kari", "speaks", "Hausa"), ("Kari", "speaks", "English")} <= facts(
        extractor, "Kari: I speak Hausa and English fluently.")
    assert ("Kari", "speaks", "English") in facts(extractor, "Kari: I speak Spanish and decent English.")
    assert ("Kari", "speaks", "Japanese") in facts(extractor, "Kari: I'm learning Japanese on Duolingo.")


def test_an_is_contraction_before_an_article_is_not_having(extractor: RuleExtractor) -> None:
    got = facts(extractor, "Kari: Kwame's a sound engineer, so he loved the stage.")
    assert ("Kwame", "jobTitle", "sound engineer") in got and not any(r == "owns" for _s, r, _t in got)


def test_people_work_at_hospitals_and_are_based_in_cities(extractor: RuleExtractor) -> None:
    assert ("Kari", "worksFor", "St. Vincent's Hospital") in facts(
        extractor, "Kari: I'm a nurse at St. Vincent's Hospital.")
    assert ("Kari", "livesIn", "Poznań") in facts(extractor, "Kari: I'm based in Poznań these days.")


def test_a_counted_measure_names_what_is_taken(extractor: RuleExtractor) -> None:
    got = facts(extractor, "Kari: I take 20 mg of metformin every morning.")
    assert ("Kari", "takesMedication", "metformin") in got


def test_a_description_after_a_name_states_the_job(extractor: RuleExtractor) -> None:
    got = facts(extractor, "Kari: I'm Sofia Ricci, creative director at Hatch & Field.")
    assert {("Sofia Ricci", "worksFor", "Hatch & Field"), ("Sofia Ricci", "jobTitle", "creative director")} <= got
    got = facts(extractor, "Kari: I met Tomas, a designer at Figma, yesterday.")
    assert ("Tomas", "worksFor", "Figma") in got
    got = facts(extractor, "user: Declan here - quality technician at Medtronic.", ("user",), user="u-1")
    assert {("Declan", "worksFor", "Medtronic"), ("Declan", "jobTitle", "quality technician")} <= got
    got = facts(extractor, "Kari: I'm Daniela, a PhD student in Prof. Ito's lab at Kyoto University.")
    assert ("Daniela", "studiedAt", "Kyoto University") in got and not any(r == "worksFor" for _s, r, _t in got)


def test_our_is_the_speaker_and_a_bare_light_verb_label_needs_evidence(extractor: RuleExtractor) -> None:
    """"our son Mateo" is the speaker's; "takes" (an altLabel of "takes medication") does not make a
    person a medication."""
    got = facts(extractor, "Kari: We're taking our son Mateo to Chile next March.")
    assert ("Mateo", "childOf", "Kari") in got and not any(r == "takesMedication" for _s, r, _t in got)
    assert ("Kari", "hasPet", "Tofu") in facts(extractor, "Kari: Our cat Tofu turned 12 last week.")


def test_a_number_inside_a_noun_phrase(extractor: RuleExtractor) -> None:
    got = facts(extractor, "Kari: I was diagnosed with type 2 diabetes.")
    assert ("Kari", "hasCondition", "type 2 diabetes") in got


def test_a_named_school_chooses_the_relation_of_an_unspelled_predicate(extractor: RuleExtractor) -> None:
    """"did my MSc at <a university>": no label says it; the relation spelled with "at" whose range is
    nearest the object's class (a school) does, and a broad range (a company, a place) never would."""
    got = facts(extractor, "Kari: I did my MSc in civil engineering at the University of Leeds.")
    assert ("Kari", "studiedAt", "University of Leeds") in got
    assert not any(r == "studiedAt" for _s, r, _t in facts(
        extractor, "Kari: I'm a research technician at the University of Glasgow."))
    assert not any(r in ("studiedAt", "worksFor") for _s, r, _t in facts(extractor, "Kari: I was at Google on Monday."))


def test_a_question_still_says_who_is_whose(extractor: RuleExtractor) -> None:
    """A question states nothing but the roles it names ("my older brother Jonas"), so "he" after it
    is Jonas."""
    got = facts(extractor, "Kari: Any ideas for my older brother Jonas? He's an engineer at Siemens.")
    assert {("Jonas", "siblingOf", "Kari"), ("Jonas", "worksFor", "Siemens")} <= got
    assert not facts(extractor, "Kari: Does Jonas live in Bonn?")


def test_an_example_of_a_class_after_be_and_a_name_after_the_own_label(extractor: RuleExtractor) -> None:
    """"I'm vegetarian": the diet's definition lists the word, and one relation has that range. "I use
    Figma": "uses" is the relation's own label, so a name needs no class; a plain noun still does."""
    assert ("Kari", "followsDiet", "vegetarian") in facts(extractor, "Kari: I'm vegetarian.")
    assert not facts(extractor, "Kari: I'm not vegan.")
    got = facts(extractor, "Kari: I mostly use React and Figma.")
    assert {("Kari", "uses", "React"), ("Kari", "uses", "Figma")} <= got
    assert not any(r == "uses" for _s, r, _t in facts(extractor, "Kari: I use the stairs."))


def test_a_title_after_as_without_an_article(extractor: RuleExtractor) -> None:
    got = facts(extractor, "Kari: I started as head of data at Lendwise in February.")
    assert {("Kari", "jobTitle", "head of data"), ("Kari", "worksFor", "Lendwise")} <= got
    assert not any(r == "jobTitle" for _s, r, _t in facts(extractor, "Kari: As I said, I live in Oslo."))


def test_a_goal_is_what_the_person_wants_to_do(extractor: RuleExtractor) -> None:
    got = facts(extractor, "Kari: I want to save up for a flat deposit, so no expensive gear.")
    assert ("Kari", "hasGoal", "save up for a flat deposit") in got
    got = facts(extractor, "Kari: My goal is to pass the JLPT N4 next December.")
    assert ("Kari", "hasGoal", "pass the JLPT N4") in got


def test_an_object_of_the_verb_before_is_not_the_subject(extractor: RuleExtractor) -> None:
    got = facts(extractor, "Kari: Also just sold my old Hilux and bought a Ford Ranger this month.")
    assert ("Kari", "owns", "Ford Ranger") in got and not any(s == "Hilux" for s, _r, _t in got)


def test_an_owned_example_of_a_class(extractor: RuleExtractor) -> None:
    """"my ADHD": an example the health-condition class lists, owned, is a condition; a modifier is not."""
    assert ("Kari", "hasCondition", "ADHD") in facts(extractor, "Kari: I take Elvanse for my ADHD.")
    assert ("Kari", "hasCondition", "asthma") in facts(extractor, "Kari: My GP wants to get my asthma reviewed.")
    assert not any(r == "hasCondition" for _s, r, _t in facts(extractor, "Kari: My diabetes nurse is lovely."))


CLINIC = Path(__file__).resolve().parents[1] / "examples" / "ontologies" / "clinic"


@pytest.fixture(scope="module")
def clinic() -> RuleExtractor:
    return RuleExtractor(Ontology.load(CLINIC / "clinic.ttl", CLINIC / "clinic.shapes.ttl"))


def test_another_ontology_by_its_labels_alone(clinic: RuleExtractor) -> None:
    """Generic readings on the clinic ontology: "takes drug" is said with "take" and a word English does
    not know; "is on the drug" with "on"; "has diagnosis" with "have" and a listed condition; a
    participle form with an object inside ("referred me to") holds of that object, and so does a passive
    label said actively ("was put on": "put me on")."""
    assert ("Kari", "takesDrug", "lisinopril") in facts(clinic, "Kari: I take 20 mg of lisinopril every morning.")
    assert ("Kari", "takesDrug", "sertraline") in facts(clinic, "Kari: For now I'm on sertraline 50 mg.")
    assert ("Kari", "hasDiagnosis", "eczema") in facts(clinic, "Kari: I have eczema.")
    got = facts(clinic, "Kari: My GP referred me to the Maple Street Psychology Centre.")
    assert got == {("Kari", "referredTo", "Maple Street Psychology Centre")}
    assert not facts(clinic, "Kari: I take the bus.")
    assert facts(clinic, "Kari: My GP is Dr. Whitfield.") == {("Kari", "hasPrimaryPhysician", "Dr. Whitfield")}
    # the copula's subject in the parse, not the name just before "is"
    got = facts(clinic, "Kari: Dr. Aydin at Parkside Health Centre is my GP.")
    assert ("Kari", "hasPrimaryPhysician", "Dr. Aydin") in got
    # "with Dr. Fischer" is the check-up's (a class the ontology names), not a doctor the speaker has
    assert not any(r == "hasPrimaryPhysician" for _s, r, _t in
                   facts(clinic, "Kari: I have a check-up with Dr. Fischer on March 9."))
    assert ("Kari", "caregiverOf", "Farida Haddad") in facts(clinic, "Kari: I look after my mum, Farida Haddad.")
    # no Person class: the class above those its definitions call a person (care participant) stands in
    assert ("Mrs Patel", "treatedBy", "Dr. Adeyemi") in facts(clinic, "Kari: Mrs Patel sees Dr. Adeyemi monthly.")
    # the workplace relation is the one spelled "works at ...", and a doctor's class word ends a title
    got = facts(clinic, "Kari: Both see Dr. Fischer, the paediatrician at Sonnenhof Children's Practice.")
    assert ("Dr. Fischer", "worksAtClinic", "Sonnenhof Children's Practice") in got
    assert ("Kari", "takesDrug", "amlodipine") in facts(clinic, "Kari: Dr. Ramírez put me on amlodipine in April.")


def test_a_relative_clause_and_a_particle(extractor: RuleExtractor) -> None:
    """"who" is the noun the clause hangs from; "lives up in" says what "lives in" does."""
    got = facts(extractor, "Kari: My grandmother Astrid, who still lives up in Kiruna, taught me to knit.")
    assert ("Astrid", "livesIn", "Kiruna") in got


def test_an_age_set_after_a_name(extractor: RuleExtractor) -> None:
    assert ("Lukas", "age", "38") in facts(extractor, "Kari: New year, new plan. I'm Lukas, 38, and I run.")
    assert ("Ana", "age", "45") in facts(extractor, "Kari: Ana, 45, lives in Lisbon.")
    got = facts(extractor, "user: hi im Fatima, 27, moroccan but I live in Montreal.", ("user",), user="u-1")
    assert {("Fatima", "age", "27"), ("Fatima", "citizenOf", "Morocco")} <= got


def test_a_role_takes_no_time_of_the_verb_and_a_described_friend_is_a_subject(extractor: RuleExtractor) -> None:
    ctx = ExtractionContext(extractor.ontology, REF, ["Kari"])
    out = extractor.extract("Kari: My cat Tofu turned 12 last week.", ctx).triples
    pet = next(t for t in out if t.relation == "hasPet")
    assert pet.valid_from is None  # the week is when Tofu turned 12, not since when Tofu is Kari's
    got = facts(extractor, "Kari: My best friend Kwame and I went to Afropunk in Brooklyn last month.")
    assert {("Kari", "attended", "Afropunk"), ("Kwame", "attended", "Afropunk")} <= got


def test_a_promotion_and_a_title_said_without_the_i(extractor: RuleExtractor) -> None:
    """Chat drops the "I" ("Got promoted to ...", "Now working as ..."); "now" before a title; a title
    with "of" ("head of quality")."""
    got = facts(extractor, "user: Got promoted to platform engineering manager at Monzo!", ("user",), user="u-1")
    assert {("u-1", "jobTitle", "platform engineering manager"), ("u-1", "worksFor", "Monzo")} <= got
    got = facts(extractor, "user: Promotion came through: I'm now support team lead.", ("user",), user="u-1")
    assert ("u-1", "jobTitle", "support team lead") in got
    got = facts(extractor, "user: My new title is head of quality.", ("user",), user="u-1")
    assert ("u-1", "jobTitle", "head of quality") in got


def test_the_ontology_decides_when_one_relation_fits_the_two_classes(clinic: RuleExtractor) -> None:
    """Two typed things linked in one clause, no predicate naming the relation: the clinic ontology admits
    one relation from a clinician to a clinic, and from a drug to its prescriber."""
    got = facts(clinic, "Kari: Dr. Okafor, the cardiologist at Royal Berkshire Hospital, put me on apixaban.")
    assert ("Dr. Okafor", "worksAtClinic", "Royal Berkshire Hospital") in got
    assert ("apixaban", "prescribedBy", "Dr. Okafor") in got
    # "her" is the person named before it: her cardiologist treats her
    got = facts(clinic, "Kari: My mum Farida has asthma. Dr. Okafor, her cardiologist, is great.")
    assert ("Dr. Okafor", "treats", "Farida") in got
    # a verb of its own says what it says; two people together may be anything; a negation says nothing
    assert not any(r == "worksAtClinic" for _s, r, _t in
                   facts(clinic, "Kari: Dr. Okafor visited Royal Berkshire Hospital."))
    assert not facts(clinic, "Kari: Dr. Chen and Dr. Adeyemi are on the ward.")
    assert not any(r == "prescribedBy" for _s, r, _t in
                   facts(clinic, "Kari: Dr. Okafor didn't put me on apixaban."))


def test_a_fact_never_ends_before_it_starts(extractor: RuleExtractor) -> None:
    """"until 1992" and "next year" in one sentence: the stated end stays, the later start (another
    verb's) goes, rather than a triple the write would drop as invalid."""
    ctx = ExtractionContext(extractor.ontology, REF, ["Kari"])
    out = extractor.extract("Kari: Next year I will have worked at Acme, as I did until 1992.", ctx)
    got = [(t.relation, t.target, t.valid_from, t.valid_to) for t in out.triples]
    assert got == [("worksFor", "Acme", None, "1992-01-01")]
