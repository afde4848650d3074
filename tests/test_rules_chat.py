"""The rule extractor on the way people write to an assistant (issue 18): corrections, subjects chat
leaves out, lists of names, job statements, languages named by nationality words. Sentences here are
not the gold set's: they check each rule on its own."""

from __future__ import annotations

import pytest

from graphmem.extraction import Extraction, ExtractionContext, RuleExtractor
from graphmem.ontology import Ontology

from .rules_support import REF


@pytest.fixture(scope="module")
def extractor() -> RuleExtractor:
    return RuleExtractor(Ontology.load())


def run(extractor: RuleExtractor, text: str, speakers: list[str]) -> Extraction:
    return extractor.extract(text, ExtractionContext(extractor.ontology, REF, speakers))


def triples(extractor: RuleExtractor, text: str, speakers: list[str]) -> set[tuple[str, str, str]]:
    return {(t.source, t.relation, t.target) for t in run(extractor, text, speakers).triples}


# -- corrections ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "kept", "gone"), [
    ("Ines: I live in Madrid.\nassistant: Madrid, noted.\nInes: Sorry, actually it's Seville, not Madrid.",
     ("Ines", "livesIn", "Seville"), ("Ines", "livesIn", "Madrid")),
    ("Ines: I work at Globex.\nassistant: Noted.\nInes: Wait, I mean Initech.",
     ("Ines", "worksFor", "Initech"), ("Ines", "worksFor", "Globex")),
    ("Ines: I live in Madrid.\nInes: no wait, sorry, I moved to Toledo in May.",
     ("Ines", "livesIn", "Toledo"), ("Ines", "livesIn", "Madrid")),
    ("Ines: I'm a junior designer at Globex.\nInes: Sorry, senior not junior.",
     ("Ines", "jobTitle", "senior designer"), ("Ines", "jobTitle", "junior designer")),
])
def test_a_correction_replaces_what_was_said(extractor: RuleExtractor, text: str, kept: tuple[str, str, str],
                                             gone: tuple[str, str, str]) -> None:
    found = triples(extractor, text, ["Ines", "assistant"])
    assert kept in found and gone not in found


def test_a_later_statement_without_a_cue_is_no_correction(extractor: RuleExtractor) -> None:
    found = triples(extractor, "Ines: I work at Globex.\nInes: I also work at Initech on weekends.", ["Ines"])
    assert {("Ines", "worksFor", "Globex"), ("Ines", "worksFor", "Initech")} <= found


def test_a_correction_only_touches_its_speakers_facts(extractor: RuleExtractor) -> None:
    text = "Ines: I live in Madrid.\nTom: I live in Lyon.\nInes: Oops, I meant Seville."
    found = triples(extractor, text, ["Ines", "Tom"])
    assert ("Tom", "livesIn", "Lyon") in found and ("Ines", "livesIn", "Seville") in found
    assert ("Ines", "livesIn", "Madrid") not in found


# -- who the subject is --------------------------------------------------------------------------------


def test_we_and_a_verb_first_line_are_the_speaker(extractor: RuleExtractor) -> None:
    assert ("Ines", "livesIn", "Bilbao") in triples(extractor, "Ines: We just moved to Bilbao.", ["Ines"])
    assert ("Ines", "livesIn", "Bilbao") in triples(extractor, "Ines: Living in Bilbao now.", ["Ines"])
    assert ("Ines", "livesIn", "Bilbao") in triples(extractor, "Ines: Relocated to Bilbao last year.", ["Ines"])
    assert triples(extractor, "user: Living in Bilbao now.", ["user"]) == set()  # nobody to say it of


def test_compound_subjects_each_get_the_fact(extractor: RuleExtractor) -> None:
    found = triples(extractor, "Ines: Pau and I both report to Marta.", ["Ines"])
    assert {("Ines", "reportsTo", "Marta"), ("Pau", "reportsTo", "Marta")} <= found
    found = triples(extractor, "Ines: My manager is Marta and I work with Pau.", ["Ines"])
    assert ("Marta", "colleagueOf", "Pau") not in found  # Marta ends the first clause, she is no subject


def test_a_speakers_full_name_from_their_intro(extractor: RuleExtractor) -> None:
    result = run(extractor, "Ines: My name's Ines Ortega. I live in Bilbao.", ["Ines"])
    ines = next(e for e in result.entities if e.name == "Ines")
    assert "Ines Ortega" in ines.aliases


# -- lists, family, ages -------------------------------------------------------------------------------


def test_children_listed_after_a_count_are_children_and_siblings(extractor: RuleExtractor) -> None:
    found = triples(extractor, "Ines: My husband Pau and I have three kids, Ana, Leo and Noa.", ["Ines"])
    for child in ("Ana", "Leo", "Noa"):
        assert (child, "childOf", "Ines") in found and (child, "childOf", "Pau") in found
    assert {("Ana", "siblingOf", "Leo"), ("Ana", "siblingOf", "Noa"), ("Leo", "siblingOf", "Noa")} <= found


def test_my_twins_are_children_her_brother_is_hers(extractor: RuleExtractor) -> None:
    found = triples(extractor, "Ines: My twins Ana and Leo just turned 7.", ["Ines"])
    assert {("Ana", "childOf", "Ines"), ("Leo", "childOf", "Ines"), ("Ana", "siblingOf", "Leo"),
            ("Ana", "age", "7"), ("Leo", "age", "7")} <= found
    found = triples(extractor, "Ines: My wife Marta lives in Vigo. Her brother Pau is a pilot.", ["Ines"])
    assert ("Pau", "siblingOf", "Marta") in found and ("Pau", "siblingOf", "Ines") not in found


def test_age_said_with_now(extractor: RuleExtractor) -> None:
    assert ("Rex", "age", "4") in triples(extractor, "Ines: My dog Rex is 4 now.", ["Ines"])


# -- jobs ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("Ines: I'm product manager at Globex now.", {("Ines", "jobTitle", "product manager"),
                                                  ("Ines", "worksFor", "Globex")}),
    ("Ines: I'm a pharmacist, mostly nights, at Central Pharmacy.", {("Ines", "jobTitle", "pharmacist"),
                                                                     ("Ines", "worksFor", "Central Pharmacy")}),
    ("Ines: I joined Globex as a senior PM.", {("Ines", "jobTitle", "senior PM")}),
    ("Ines: I started a new job at Globex last week.", {("Ines", "worksFor", "Globex")}),
])
def test_job_statements(extractor: RuleExtractor, text: str, expected: set[tuple[str, str, str]]) -> None:
    assert expected <= triples(extractor, text, ["Ines"])


def test_a_former_job_is_no_title(extractor: RuleExtractor) -> None:
    found = triples(extractor, "Ines: I'm team lead at Globex, after two years as a junior developer.", ["Ines"])
    assert ("Ines", "jobTitle", "team lead") in found and ("Ines", "jobTitle", "junior developer") not in found


def test_a_possessive_is_no_job_statement(extractor: RuleExtractor) -> None:
    assert triples(extractor, "Ines: Ines's manager Pau called.", ["Ines"]) == {("Pau", "manages", "Ines")}


def test_my_dentist_is_their_job_and_someone_i_know(extractor: RuleExtractor) -> None:
    found = triples(extractor, "Ines: I saw my dentist Dr. Rey at Bright Smiles today.", ["Ines"])
    assert {("Ines", "knows", "Dr. Rey"), ("Dr. Rey", "jobTitle", "dentist"),
            ("Dr. Rey", "worksFor", "Bright Smiles")} <= found


# -- words and names -----------------------------------------------------------------------------------


def test_nationality_words_as_languages(extractor: RuleExtractor) -> None:
    result = run(extractor, "Ines: I speak Italian and Dutch. Spanish is my first language.", ["Ines"])
    found = {(t.source, t.relation, t.target) for t in result.triples}
    assert {("Ines", "speaks", "Italian"), ("Ines", "speaks", "Dutch"), ("Ines", "speaks", "Spanish")} <= found
    assert {e.name: e.type for e in result.entities}["Italian"] == "Language"


def test_a_project_named_by_its_work(extractor: RuleExtractor) -> None:
    result = run(extractor, "Ines: I lead the Orion redesign at Globex.", ["Ines"])
    assert ("Ines", "leads", "Orion redesign") in {(t.source, t.relation, t.target) for t in result.triples}
    assert {e.name: e.type for e in result.entities}["Orion redesign"] == "Project"


def test_an_opening_adjective_is_no_part_of_a_name(extractor: RuleExtractor) -> None:
    names = {e.name for e in run(extractor, "Ines: Poor Rex. My dog Rex is ill.", ["Ines"]).entities}
    assert "Rex" in names and "Poor Rex" not in names


def test_adverb_inside_a_relation_and_negated_verb_forms(extractor: RuleExtractor) -> None:
    found = triples(extractor, "Ines: I'm really into chess and I don't eat mushrooms.", ["Ines"])
    assert {("Ines", "interestedIn", "chess"), ("Ines", "dislikes", "mushroom")} <= found


def test_allergies_said_as_nouns_and_adjectives(extractor: RuleExtractor) -> None:
    found = triples(extractor, "Ines: My son Leo has a peanut allergy and I'm gluten intolerant.", ["Ines"])
    assert {("Leo", "allergicTo", "peanut"), ("Ines", "allergicTo", "gluten")} <= found
    assert not any(r == "owns" for _s, r, _t in found)


def test_being_in_a_city_is_living_there_only_when_said_so(extractor: RuleExtractor) -> None:
    assert ("Ines", "livesIn", "Vigo") in triples(extractor, "Ines: These days I'm in Vigo.", ["Ines"])
    for said in ("We're in Vigo now!", "We’re in Vigo now!", "I’m in Vigo now."):  # "'re", curly quotes: "be"
        assert ("Ines", "livesIn", "Vigo") in triples(extractor, f"Ines: {said}", ["Ines"])
    visit = triples(extractor, "Ines: I'm in Vigo for a conference.", ["Ines"])
    assert not any(t == "Vigo" for _s, _r, t in visit)


# -- changes of job and home ---------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("Ines: I joined Revolut and my new title is head of quality.",
     {("Ines", "worksFor", "Revolut"), ("Ines", "jobTitle", "head of quality")}),
    ("Ines: Started at Rakuten on Monday.", {("Ines", "worksFor", "Rakuten")}),
    ("Ines: Big news: I accepted an offer from Allegro!", {("Ines", "worksFor", "Allegro")}),
    ("Ines: Quit Roche and joined Novartis.", {("Ines", "worksFor", "Roche"), ("Ines", "worksFor", "Novartis")}),
    # the name "Left Dublin for Cork" is two places; a home is a place: the planner closes the old one
    ("Ines: I moved to Dublin in 2020.\nInes: Left Dublin for Cork - house prices.",
     {("Ines", "livesIn", "Dublin"), ("Ines", "livesIn", "Cork")}),
    ("Ines: I work at Initech.\nInes: I left Initech for Globex last spring.",
     {("Ines", "worksFor", "Initech"), ("Ines", "worksFor", "Globex")}),
    ("Ines: Quit Equinor. Aker BP made me head of analytics.",
     {("Ines", "worksFor", "Equinor"), ("Ines", "worksFor", "Aker BP"), ("Ines", "jobTitle", "head of analytics")}),
    ("Ines: Big news. My new title: staff engineer at Adyen.",
     {("Ines", "worksFor", "Adyen"), ("Ines", "jobTitle", "staff engineer")}),
    ("Ines: My boss made me angry.", set()),
    # a headline before the clause; a short field in capitals inside a title
    ("Ines: Big move: started at Xero as ML team lead.", {("Ines", "worksFor", "Xero"),
                                                         ("Ines", "jobTitle", "ML team lead")}),
    ("Ines: Update: my new title is HR manager.", {("Ines", "jobTitle", "HR manager")}),
    # names nothing types: the recognizer's places only ("Left Nubank for iFood" stays unread)
    ("Ines: Left Bogotá for Medellín, the weather is perfect all year.", {("Ines", "livesIn", "Medellín")}),
    ("Ines: Left Nubank for iFood.", set()),
    ("Ines: I accepted an offer from Allegro! I'll be a test engineer there.",
     {("Ines", "worksFor", "Allegro"), ("Ines", "jobTitle", "test engineer")}),
    ("Ines: Settled in Basel now.", {("Ines", "livesIn", "Basel")}),
    ("Ines: I'm with Deloitte now as a senior consultant.", {("Ines", "worksFor", "Deloitte"),
                                                             ("Ines", "jobTitle", "senior consultant")}),
    ("Ines: I work at Zalando and I live in Berlin.\nInes: Left Berlin for Munich and Zalando for Siemens.",
     {("Ines", "worksFor", "Zalando"), ("Ines", "livesIn", "Berlin"), ("Ines", "livesIn", "Munich"),
      ("Ines", "worksFor", "Siemens")}),
    # the one who made, promoted or hired the speaker is the employer, not a team after the title
    ("Ines: Mobify made me engineering lead for the payments team.",
     {("Ines", "worksFor", "Mobify"), ("Ines", "jobTitle", "engineering lead")}),
    ("Ines: They promoted me to chief financial officer!", {("Ines", "jobTitle", "chief financial officer")}),
    ("Ines: The promotion to category manager is official.", {("Ines", "jobTitle", "category manager")}),
    ("Ines: My sister's promotion to category manager is official.", set()),
    ("Ines: Tellex recruited me as bureau chief for Benin.",
     {("Tellex", "employs", "Ines"), ("Ines", "jobTitle", "bureau chief")}),
    ("Ines: Generali poached me.", {("Generali", "employs", "Ines")}),
    ("Ines: Kaspi hired me as chief information security officer.",
     {("Kaspi", "employs", "Ines"), ("Ines", "jobTitle", "chief information security officer")}),
    ("Ines: I'm the head of security at Kaspi.",
     {("Ines", "worksFor", "Kaspi"), ("Ines", "jobTitle", "head of security")}),
    ("Ines: I'm the best cook in the family.", set()),
    ("Ines: I poached two eggs for breakfast.", set()),
    # where the speaker's home is, said by what is in it
    ("Ines: Our new flat in Kadikoy has a view of the ferries.", {("Ines", "livesIn", "Kadikoy")}),
    ("Ines: Three weeks into life in Trieste and the wind nearly blew me away.", {("Ines", "livesIn", "Trieste")}),
    ("Ines: My sister's flat in Rome is huge.", set()),
    ("Ines: We bought a little house in La Spezia.",
     {("Ines", "livesIn", "La Spezia"), ("Ines", "owns", "house"), ("house", "locatedIn", "La Spezia")}),
    ("Ines: My brother bought a house in Groningen.", set()),
    ("Ines: We've been in Panama City for three weeks. The canal is huge.", {("Ines", "livesIn", "Panama City")}),
    ("Ines: Six weeks in Riyadh and I've already found the best shawarma place.", {("Ines", "livesIn", "Riyadh")}),
    ("Ines: We've been in Rome for three days, the food!", set()),
    ("Ines: We traded Brussels for Namur, the kids needed a garden.", {("Ines", "livesIn", "Namur")}),
    # an offer the message takes is a job; an offer alone is not
    ("Ines: Tellex offered me a growth analyst job in Prague and I said yes.",
     {("Ines", "worksFor", "Tellex"), ("Ines", "jobTitle", "growth analyst")}),
    ("Ines: Tellex offered me the head of geography post. Accepted!",
     {("Ines", "worksFor", "Tellex"), ("Ines", "jobTitle", "head of geography")}),
    ("Ines: Tellex offered me a growth analyst job in Prague.", set()),
    ("Ines: Career move: Tellex made me an offer I couldn't refuse.", {("Ines", "worksFor", "Tellex")}),
    ("Ines: Tellex made me an offer.", set()),
    ("Ines: Tellex offered me a growth analyst job. We're moving in May!",
     {("Ines", "worksFor", "Tellex"), ("Ines", "jobTitle", "growth analyst")}),
    # travel to a place the recognizer knows: a trip, past or planned, not an event attended
    ("Ines: We went to Lisbon last year.", {("Ines", "visited", "Lisbon")}),
    ("Ines: We're going to Lisbon in May.", {("Ines", "plansToVisit", "Lisbon")}),
    # a verb conjoined to a subjectless one is the speaker's too; to another's subject, theirs
    ("Ines: Took a job with Fiji Power and moved to Suva with my wife.",
     {("Ines", "worksFor", "Fiji Power"), ("Ines", "livesIn", "Suva")}),
    ("Ines: My brother quit Google and moved to Oslo.", set()),
    ("Ines: First day at Paystack was remote.", {("Ines", "worksFor", "Paystack")}),
    ("Ines: Her first day at Novo was fine.", set()),
    # a verbless "still ..." restates the home, the employer or the title
    ("Ines: Still at Tabby, still leading mobile, and the heat is unreal.", {("Ines", "worksFor", "Tabby")}),
    ("Ines: Still in Leeds, still obsessed with Kirkgate Market.", {("Ines", "livesIn", "Leeds")}),
    ("Ines: Still a warden, still counting elk.", {("Ines", "jobTitle", "warden")}),
    ("Ines: Still regional business manager, still loving Kerala.",
     {("Ines", "jobTitle", "regional business manager")}),
    ("Ines: Still no news from Tabby.", set()),
    # a move to an organization is a job; a name's description is not its name
    ("Ines: I've moved over to CEVA Logistics, the sister company, same title.",
     {("Ines", "worksFor", "CEVA Logistics")}),
])
def test_a_change_of_job_or_home_said_as_chat_says_it(extractor: RuleExtractor, text: str,
                                                      expected: set[tuple[str, str, str]]) -> None:
    assert triples(extractor, text, ["Ines"]) == expected


def test_the_job_left_ends_and_a_club_joined_is_no_job(extractor: RuleExtractor) -> None:
    out = run(extractor, "Ines: Quit Roche and joined Novartis.\nInes: My sister joined a book club.", ["Ines"])
    ended = {(t.target, t.valid_to is not None) for t in out.triples if t.relation == "worksFor"}
    assert ended == {("Roche", True), ("Novartis", False)}
    assert not any(t.target == "book club" and t.relation == "worksFor" for t in out.triples)


def test_a_time_dates_the_facts_of_its_own_verb(extractor: RuleExtractor) -> None:
    """"last year" modifies "moved": it dates the move, not the job of the clause beside it."""
    found = {(t.relation, t.target): t.valid_from for t in run(
        extractor, "Ines: I moved to Lisbon last year and work for Northwind.", ["Ines"]).triples}
    assert found == {("livesIn", "Lisbon"): "2023-01-01", ("worksFor", "Northwind"): None}
    found = {(t.relation, t.target): t.valid_from for t in run(
        extractor, "Ines: I live in Lisbon and I started at Initech in May.", ["Ines"]).triples}
    assert found == {("livesIn", "Lisbon"): None, ("worksFor", "Initech"): "2024-05-01"}
    # a verb naming nothing of its own ("prescribed it") still dates the sentence's fact
    found = {(t.relation, t.target): t.valid_from for t in run(
        extractor, "Ines: For now I'm on sertraline, my GP Dr. Obi prescribed it in May.", ["Ines"]).triples}
    assert found[("takesMedication", "sertraline")] == "2024-05-01"
