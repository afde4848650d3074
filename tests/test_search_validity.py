"""Search knows validity (issue 37): a memory whose facts newer values replaced ranks below the memory
that states the newer value, unless the question is about the past; every such hit says so."""

from __future__ import annotations

from datetime import timedelta

import pytest

from graphmem import Memory
from graphmem.models import utcnow
from graphmem.search.validity import asks_about_past
from graphmem.stores.base import Store


def lives(mem: Memory, uid: str, text: str, city: str) -> str:
    out = mem.add(text, user_id=uid, infer=False, triples=[{
        "source": "Maya", "relation": "livesIn", "target": city, "source_type": "Person", "target_type": "City"}])
    mid: str = out["results"][0]["id"]
    return mid


def test_the_current_value_ranks_first_and_the_old_one_says_why(mem: Memory, uid: str) -> None:
    lisbon = lives(mem, uid, "Maya lives in Lisbon and loves it there", "Lisbon")
    porto = lives(mem, uid, "Maya moved to Porto", "Porto")
    # the old memory matches the question's words better: without validity it would rank first
    out = mem.search("where does Maya live and love it", user_id=uid, explain=True)
    hits = {h["id"]: h for h in out["results"]}
    assert [h["id"] for h in out["results"]][:2] == [porto, lisbon]
    old = hits[lisbon]
    assert old["superseded_by"]["memory_id"] == porto and old["superseded_by"]["relation"] == "livesIn"
    assert old["valid_to"] is not None and "superseded" in old["score_details"]
    assert old["score"] < hits[porto]["score"]
    assert "superseded_by" not in hits[porto]


def test_a_question_about_the_past_is_not_adjusted(mem: Memory, uid: str) -> None:
    lisbon = lives(mem, uid, "Maya lives in Lisbon and loves it there", "Lisbon")
    lives(mem, uid, "Maya moved to Porto", "Porto")
    for query, kwargs in (("where did Maya live and love it", {}),
                          ("where does Maya live and love it", {"as_of": utcnow() + timedelta(seconds=1)})):
        out = mem.search(query, user_id=uid, explain=True, **kwargs)
        first = out["results"][0]
        assert first["id"] == lisbon and "superseded" not in first["score_details"]
        assert first["superseded_by"]["relation"] == "livesIn"  # still said


def test_an_ended_fact_is_not_superseded(mem: Memory, uid: str) -> None:
    out = mem.add("Maya left Initech in May", user_id=uid, infer=False, triples=[{
        "source": "Maya", "relation": "worksFor", "target": "Initech", "source_type": "Person",
        "target_type": "Organization", "valid_to": "2024-05-01"}])
    left = out["results"][0]["id"]
    hit = mem.search("where did Maya work", user_id=uid)["results"][0]
    assert hit["id"] == left and "superseded_by" not in hit


def test_the_store_answers_as_the_generic_reading_does(mem: Memory, uid: str) -> None:
    """The built-in stores read fact states in one statement; the base class's fact-by-fact reading
    is the oracle."""
    ids = [lives(mem, uid, f"Maya lives in {c}", c) for c in ("Lisbon", "Porto", "Braga")]
    scope = {"user_id": uid, "agent_id": None, "run_id": None}
    from graphmem.models import Scope

    s = Scope(**scope)
    own = mem.store.fact_states(s, ids)
    generic = Store.fact_states(mem.store, s, ids)
    assert own == generic
    assert [len(own[i].open) for i in ids] == [0, 0, 1]
    assert [[(old.relation, new.id) for old, new in own[i].superseded] for i in ids[:2]] == \
        [[(own[ids[0]].superseded[0][0].relation, own[ids[0]].superseded[0][1].id)]] * 2


def test_neo4j_reads_fact_states_with_the_records(mem: Memory, uid: str, backend: str) -> None:
    """On Neo4j the search statement carries the states of every memory with a closed fact: one
    round trip, the same states the separate read gives, and a store written before the flag that
    marks those memories is flagged when it opens."""
    if backend != "neo4j":
        pytest.skip("Neo4j's single round trip")
    from graphmem.models import Scope
    from graphmem.search.graph import graph_query

    ids = [lives(mem, uid, f"Maya lives in {c}", c) for c in ("Lisbon", "Porto", "Braga")]
    scope = Scope(user_id=uid)
    vector = mem.embedder.embed(["where does Maya live"])[0]

    def read() -> dict[str, object]:
        cands, sub = mem.store.search(scope, None, vector, "where does Maya live", 10,
                                      graph_query("where does Maya live", mem.config.search.graph, None, vector))
        assert cands.fact_states is not None and sub.fact_states is not None
        return {**sub.fact_states, **cands.fact_states}

    assert read() == mem.store.fact_states(scope, ids[:2])  # the open one's memory has no closed fact
    out = mem.search("where does Maya live", user_id=uid, explain=True)
    assert out["round_trips"] == 1 and out["results"][0]["id"] == ids[2]
    driver = mem.store._driver  # type: ignore[attr-defined]
    driver.execute_query("MATCH (m:Memory {user_id: $u}) REMOVE m.closed_facts", u=uid)
    driver.execute_query("MATCH (g:GraphmemMeta {key: 'schema'}) REMOVE g.closed_facts")
    assert read() == {}
    with Memory(mem.config, embedder=mem.embedder) as again:
        assert again.search("where does Maya live", user_id=uid)["results"][0]["id"] == ids[2]
    assert read() == mem.store.fact_states(scope, ids[:2])


@pytest.mark.parametrize(("question", "past"), [
    ("where does Maya live?", False), ("what is her job title now?", False), ("how old is Maya?", False),
    ("where did Maya live before Porto?", True), ("what was her job in 2023?", True),
    ("where did she work previously?", True), ("her old address?", True),
])
def test_questions_about_the_past(question: str, past: bool) -> None:
    assert asks_about_past(question) is past


def test_a_memory_is_judged_on_the_relation_the_question_names(mem: Memory, uid: str) -> None:
    """"I live in Lisbon and work at Acme" tells an old home once Maya moved, while Acme still holds:
    asked where she lives, only its livesIn fact counts."""
    both = mem.add("Maya lives in Lisbon and works at Acme", user_id=uid, infer=False, triples=[
        {"source": "Maya", "relation": "livesIn", "target": "Lisbon", "source_type": "Person", "target_type": "City"},
        {"source": "Maya", "relation": "worksFor", "target": "Acme", "source_type": "Person",
         "target_type": "Organization"}])["results"][0]["id"]
    porto = lives(mem, uid, "Maya moved to Porto", "Porto")
    hits = {h["id"]: h for h in mem.search("where does Maya live", user_id=uid, explain=True)["results"]}
    assert hits[both]["superseded_by"]["memory_id"] == porto and hits[both]["score"] < hits[porto]["score"]
    # a question about work names worksFor: the memory tells the truth there
    work = {h["id"]: h for h in mem.search("who does Maya work for", user_id=uid)["results"]}
    assert "superseded_by" not in work[both]


def test_the_relations_a_question_names() -> None:
    from graphmem.ontology import Ontology
    from graphmem.search.validity import asked_relations

    onto = Ontology.load()

    def names(question: str) -> set[str]:
        return {iri.rsplit("#", 1)[-1] for iri in asked_relations(question, onto)}

    assert names("where does Maya live now?") == {"livesIn"}  # not livedIn ("lived in"), nor hasCondition
    # "works for", not colleagueOf's "works with" nor jobTitle's "works as"; with its inverse
    assert names("who does she work for?") == {"worksFor", "employs"} == names("who employs Chloé?")
    assert names("what company employs Priya?") == {"worksFor", "employs"}  # the answer is no person
    assert "worksFor" in names("where did Priya work in 2021?")  # no relation of a place: all that fit
    assert names("what's Hannah's role?") == {"jobTitle"} == names("what does Kwame do for a living?")
    assert "worksFor" not in names("What places has Joanna submitted her work to?")  # a noun, not "works for"
    assert "startDate" not in names("What inspired Nate to start making videos?")  # it asks for no time
    assert names("what is Maya allergic to?") == {"allergicTo"}


def test_a_question_that_names_no_relation_asks_the_one_its_answer_is() -> None:
    """"What company is Yuki with now?" names no relation; a company that follows another is a job.
    "Who ..." may ask about anyone, and a time or a number is no such value."""
    from graphmem.ontology import Ontology
    from graphmem.search.validity import timed_relations

    onto = Ontology.load()

    def names(question: str) -> set[str]:
        return {iri.rsplit("#", 1)[-1] for iri in timed_relations(question, onto)}

    # with the inverse, as a named relation has it: "Tabby hired me" states who employs her
    assert names("What company is Yuki with now?") == {"worksFor", "employs"}
    assert "livesIn" in names("Which city is Ana in these days?")
    assert names("Who is Maya with now?") == set()


def test_the_time_a_question_asks_about() -> None:
    from datetime import UTC, datetime

    from graphmem.search.validity import question_time

    assert question_time("Where did Ben work in 2021?") == datetime(2021, 7, 1, tzinfo=UTC)
    assert question_time("Who was Tomasz working for in early 2021?") == datetime(2021, 3, 1, tzinfo=UTC)
    assert question_time("Where did Mei work at the end of 2020?") == datetime(2020, 12, 28, tzinfo=UTC)
    assert question_time("Where did Mateo work in mid-2022?") == datetime(2022, 7, 1, tzinfo=UTC)
    assert question_time("Where did she live in May 2022?") == datetime(2022, 5, 15, tzinfo=UTC)
    assert question_time("Where did she live before Porto?") is None



def test_as_of_counts_a_memory_known_from_its_message_time(mem: Memory, uid: str) -> None:
    """An imported chat is stored now, but was said then: ``as_of`` reads the message's time."""
    old = mem.add("I live in Lisbon", user_id=uid, infer=False, timestamp="2024-01-10T09:00:00Z")["results"][0]["id"]
    mem.add("We moved to Porto last week", user_id=uid, infer=False, timestamp="2024-06-02T09:00:00Z")
    then = mem.search("where do I live", user_id=uid, as_of="2024-03-01T00:00:00Z")["results"]
    assert [h["id"] for h in then] == [old]


def test_without_facts_the_later_statement_comes_first_in_a_present_question(mem: Memory, uid: str) -> None:
    """``infer=False`` memories carry no facts: of the ranked memories that state the asked functional
    relation (its label words), the one said later goes first when the question is about the present."""
    old = mem.add("I live in Lisbon, near the river, and I love living in Lisbon", user_id=uid, infer=False,
                  timestamp="2024-01-10T09:00:00Z")["results"][0]["id"]
    new = mem.add("We moved to Porto last week", user_id=uid, infer=False,
                  timestamp="2024-06-02T09:00:00Z")["results"][0]["id"]
    now = mem.search("where do I live", user_id=uid, explain=True)["results"]
    assert [h["id"] for h in now][:2] == [new, old] and "newest_first" in now[0]["score_details"]
    assert mem.search("where did I live", user_id=uid)["results"][0]["id"] == old


def test_statements_said_together_or_by_another_person_keep_their_order(mem: Memory, uid: str) -> None:
    """A document loaded in one go states nothing later; nor does another person's later move."""
    first = mem.add("I live in Lisbon, near the river, and I love living in Lisbon", user_id=uid,
                    infer=False)["results"][0]["id"]
    mem.add("We moved to Porto last week", user_id=uid, infer=False)
    assert mem.search("where do I live", user_id=uid)["results"][0]["id"] == first
    other = f"{uid}-2"
    mine = mem.add([{"role": "user", "name": "Ruth", "content": "I live in Lisbon and I love living in Lisbon"}],
                   user_id=other, infer=False, timestamp="2024-01-10T09:00:00Z")["results"][0]["id"]
    mem.add([{"role": "user", "name": "Tom", "content": "I moved to Porto"}], user_id=other, infer=False,
            timestamp="2024-06-02T09:00:00Z")
    assert mem.search("where does Ruth live", user_id=other)["results"][0]["id"] == mine


def chat(mem: Memory, uid: str, *lines: tuple[str, str], infer: bool = True) -> list[str]:
    """Maya's messages (time, text), one ``add`` each; the id of each message's first memory."""
    return [mem.add(text, user_id=uid, infer=infer, timestamp=when, speaker="Maya")["results"][0]["id"]
            for when, text in lines]


def test_the_latest_statement_of_the_asked_relation_goes_first(mem: Memory, uid: str) -> None:
    """The introduction says where Maya works and lives without a label word of ``livesIn`` and
    matches the question best; the later move is what it asks. The move says so in its fact
    (rules) or its words ("relocated to")."""
    intro, move = chat(mem, uid, ("2021-03-02T09:00:00Z", "Hi, I'm Maya, a UX designer at Otto Group in Hamburg."),
                       ("2023-06-01T09:00:00Z", "We relocated to Vienna last week, boxes everywhere."))
    out = mem.search("What city does Maya live in now?", user_id=uid, explain=True)["results"]
    assert [h["id"] for h in out][:2] == [move, intro] and "newest_first" in out[0]["score_details"]


def test_a_job_is_one_at_a_time(mem: Memory, uid: str) -> None:
    """``worksFor`` is not functional, but ``gm:oneAtATime``: "who does she work for?" reads the
    latest job first; ``likes`` is neither, and no statement of it is moved."""
    acme, _, _, globex = chat(
        mem, uid, ("2021-01-10T09:00:00Z", "I work for Acme, Maya does work for Acme"),
        ("2021-05-10T09:00:00Z", "I like hiking, what I like most is hiking in the hills"),
        ("2022-05-10T09:00:00Z", "I like chess"), ("2023-02-01T09:00:00Z", "Globex is my employer now"), infer=False)
    assert [h["id"] for h in mem.search("who does Maya work for?", user_id=uid)["results"]][:2] == [globex, acme]
    liked = mem.search("what does Maya like?", user_id=uid, explain=True)["results"]
    assert len(liked) == 4 and not any("newest_first" in h["score_details"] for h in liked)


def test_a_question_about_the_past_reads_the_value_of_then(mem: Memory, uid: str) -> None:
    """"before Porto": the last home said before Porto was first named; "in 2022": the last said by
    the middle of 2022."""
    lisbon, porto, oslo = chat(mem, uid, ("2021-01-10T09:00:00Z", "I live in Lisbon."),
                               ("2022-03-02T09:00:00Z", "We moved to Porto, we love living here."),
                               ("2023-08-01T09:00:00Z", "We moved to Oslo, Porto was too hot for us."), infer=False)
    out = mem.search("Where did Maya live before Porto?", user_id=uid, explain=True)["results"]
    assert out[0]["id"] == lisbon and "past" in out[0]["score_details"]
    assert mem.search("Where did Maya live in 2022?", user_id=uid)["results"][0]["id"] == porto
    assert mem.search("Where does Maya live?", user_id=uid)["results"][0]["id"] == oslo


def test_a_statement_of_the_asked_relation_joins_the_ranking_however_it_scored(mem: Memory, uid: str) -> None:
    """The graph reaches Maya's ``livesIn`` fact from her name: the memory stating it is ranked even
    though every other memory shares more words with the question."""
    for n in range(8):
        mem.add(f"Does Maya live near the sea, Maya wonders, number {n}", user_id=uid, infer=False,
                timestamp="2024-01-10T09:00:00Z")
    porto = mem.add("Porto it is!", user_id=uid, infer=False, timestamp="2024-06-01T09:00:00Z", triples=[
        {"source": "Maya", "relation": "livesIn", "target": "Porto", "source_type": "Person"}])["results"][0]["id"]
    out = mem.search("where does Maya live now?", user_id=uid, top_k=2, explain=True)["results"]
    assert out[0]["id"] == porto and "newest_first" in out[0]["score_details"]


def test_a_reader_that_has_not_loaded_the_ontology_orders_the_same(mem: Memory, uid: str) -> None:
    """A new ``Memory`` on a store with facts loads the ontology only once the store's answer shows
    it is needed (on Neo4j the facts of the asked relations then take a read of their own)."""
    from graphmem.embedding import HashingEmbedder

    lisbon, porto = chat(mem, uid, ("2021-01-10T09:00:00Z", "I live in Lisbon and I love living in Lisbon."),
                         ("2023-06-01T09:00:00Z", "We relocated to Porto last week."))
    with Memory(mem.config, embedder=HashingEmbedder(384)) as reader:
        assert reader._parts.built("ontology") is None
        out = reader.search("where does Maya live now?", user_id=uid, explain=True)
        assert [h["id"] for h in out["results"]][:2] == [porto, lisbon]
        assert reader._parts.built("ontology") is not None


def test_a_memory_without_facts_is_read_for_what_it_states(mem: Memory, uid: str) -> None:
    """``infer=False``: "Joined Initech as a designer." holds no word of ``worksFor``'s labels; search
    reads the text for what it states (the rule extractor's reading, never stored), so the job change
    goes first."""
    acme, initech = chat(mem, uid, ("2021-01-10T09:00:00Z", "I work at Acme."),
                         ("2022-05-10T09:00:00Z", "Big news: joined Initech as a designer."), infer=False)
    out = mem.search("Who does Maya work for now?", user_id=uid, explain=True)["results"]
    assert [h["id"] for h in out][:2] == [initech, acme] and "newest_first" in out[0]["score_details"]
    assert mem.facts(user_id=uid)["results"] == []  # read, not written


def test_a_statement_about_someone_else_is_not_the_asked_persons(mem: Memory, uid: str) -> None:
    """"My partner Ole works at NTNU now" has the words of ``worksFor``, and its reading says whose job
    it is: not Maya's, so her own earlier statement is not passed."""
    acme, _ = chat(mem, uid, ("2021-01-10T09:00:00Z", "Joined Acme as an analyst."),
                   ("2023-02-01T09:00:00Z", "My partner Ole works at NTNU now."), infer=False)
    out = mem.search("Who does Maya work for?", user_id=uid, explain=True)["results"]
    assert out[0]["id"] == acme


def test_a_fact_about_someone_else_is_not_the_asked_persons(mem: Memory, uid: str) -> None:
    """"My cousin moved to Dunedin" supports a ``livesIn`` fact, said by Maya after her own move: it is
    her cousin's home, so it does not pass Maya's own statement."""
    own = mem.add("Settled in Porto at last.", user_id=uid, infer=False, speaker="Maya",
                  timestamp="2021-01-10T09:00:00Z", triples=[
                      {"source": "Maya", "relation": "livesIn", "target": "Porto", "source_type": "Person",
                       "target_type": "City"}])["results"][0]["id"]
    mem.add("My cousin Rui just moved to Dunedin.", user_id=uid, infer=False, speaker="Maya",
            timestamp="2023-02-01T09:00:00Z", triples=[
                {"source": "Rui", "relation": "livesIn", "target": "Dunedin", "source_type": "Person",
                 "target_type": "City"}])
    out = mem.search("Where does Maya live now?", user_id=uid)["results"]
    assert out[0]["id"] == own


def test_a_move_of_someone_the_speaker_names_by_kin_is_not_theirs(mem: Memory, uid: str) -> None:
    """``infer=False``: "My cousin just moved to Dunedin" has the words of ``livesIn`` and names no one
    the reader could type; its subject is the speaker's cousin, so Maya's own move stays first."""
    own, _ = chat(mem, uid, ("2021-01-10T09:00:00Z", "We moved to Porto in the spring."),
                  ("2023-02-01T09:00:00Z", "My cousin just moved to Dunedin for uni."), infer=False)
    out = mem.search("Where does Maya live now?", user_id=uid)["results"]
    assert out[0]["id"] == own


def test_words_read_as_a_sibling_relation_state_nothing_of_the_asked_one(mem: Memory, uid: str) -> None:
    """"Back when I lived in Braga" has the words of ``livesIn`` ("lives in"), but the reader takes
    them for ``livedIn``: said last, it is still not the newest statement of the home."""
    porto, _ = chat(mem, uid, ("2021-01-10T09:00:00Z", "We moved to Porto in the spring."),
                    ("2023-02-01T09:00:00Z", "Back when I lived in Braga I never imagined leaving."), infer=False)
    assert mem.search("Where does Maya live now?", user_id=uid)["results"][0]["id"] == porto


def test_label_words_without_a_name_state_no_home(mem: Memory, uid: str) -> None:
    """"We moved last weekend" has the words of ``livesIn`` but names no place: the home said before
    it is still the newest statement of one."""
    porto, _ = chat(mem, uid, ("2021-01-10T09:00:00Z", "We moved to Porto in the spring."),
                    ("2023-02-01T09:00:00Z", "We moved last weekend, boxes everywhere."), infer=False)
    assert mem.search("Where does Maya live now?", user_id=uid)["results"][0]["id"] == porto


@pytest.mark.parametrize("infer", [True, False])
def test_a_hedged_move_states_no_home(mem: Memory, uid: str, infer: bool) -> None:
    """"We might move to Braga" has the words of a move and a name, said last, but states nothing."""
    porto, _ = chat(mem, uid, ("2021-01-10T09:00:00Z", "We moved to Porto in the spring."),
                    ("2023-02-01T09:00:00Z", "We might move to Braga next year for the schools."), infer=infer)
    assert mem.search("Where does Maya live now?", user_id=uid)["results"][0]["id"] == porto


@pytest.mark.parametrize("infer", [True, False])
def test_names_in_any_alphabet(mem: Memory, uid: str, infer: bool) -> None:
    """"Lucía" is one word (split at "í", "luc a live" read "live" as a noun), and "Évora" is a name."""
    heredia, evora = (mem.add(text, user_id=uid, infer=infer, timestamp=when, speaker="Lucía")["results"][0]["id"]
                      for when, text in (("2021-01-10T09:00:00Z", "I live in Heredia and I love living in Heredia."),
                                         ("2023-02-01T09:00:00Z", "We moved to Évora last week.")))
    assert [h["id"] for h in mem.search("Where does Lucía live now?", user_id=uid)["results"][:2]] == [evora, heredia]


def test_a_plan_said_last_is_the_newest_statement_of_what_it_becomes(mem: Memory, uid: str) -> None:
    """``gm:movingTo gm:becomes gm:livesIn``: about the present, "we're moving to Kigali" said after
    the last home is where she lives now; about the past it is no home."""
    porto, kigali = chat(mem, uid, ("2021-01-10T09:00:00Z", "I live in Porto, near the river."),
                         ("2023-02-01T09:00:00Z", "Big news: we're moving to Kigali next month!"))
    assert mem.search("Where does Maya live now?", user_id=uid)["results"][0]["id"] == kigali
    assert mem.search("Where did Maya live in 2022?", user_id=uid)["results"][0]["id"] == porto


def test_a_name_one_memory_types_is_known_to_the_others(mem: Memory, uid: str) -> None:
    """Alone, "Left Nubank for iFood." names two unknown things; read with "Started at Nubank ...",
    Nubank is an employer, so the later memory states a change of job, as the write path reads it."""
    nubank, ifood = chat(mem, uid, ("2021-08-02T09:00:00Z", "Started at Nubank on Monday as an engineer."),
                         ("2023-06-12T09:00:00Z", "Left Nubank for iFood."), infer=False)
    out = mem.search("Who does Maya work for?", user_id=uid)["results"]
    assert [h["id"] for h in out][:2] == [ifood, nubank]


def test_a_question_about_a_time_walks_the_facts_of_then(mem: Memory, uid: str) -> None:
    """"in 2021": the graph reads the facts valid then, so the memory of the 2021 job joins the ranking
    however it scored, as the current job's does for a question about the present."""
    for n in range(8):
        mem.add(f"Does Maya work too much, Maya wonders, number {n}", user_id=uid, infer=False,
                timestamp="2024-01-10T09:00:00Z")
    acme = mem.add("Big day!", user_id=uid, infer=False, timestamp="2021-02-01T09:00:00Z", triples=[
        {"source": "Maya", "relation": "worksFor", "target": "Acme", "source_type": "Person",
         "target_type": "Organization", "valid_from": "2021-02-01"}])["results"][0]["id"]
    mem.add("New badge.", user_id=uid, infer=False, timestamp="2023-03-01T09:00:00Z", triples=[
        {"source": "Maya", "relation": "worksFor", "target": "Globex", "source_type": "Person",
         "target_type": "Organization", "valid_from": "2023-03-01"}])
    mem.add("Left Acme.", user_id=uid, infer=False, timestamp="2023-02-01T09:00:00Z", triples=[
        {"source": "Maya", "relation": "worksFor", "target": "Acme", "valid_to": "2023-02-01"}])
    out = mem.search("Where did Maya work in 2021?", user_id=uid, top_k=2)["results"]
    assert acme in [h["id"] for h in out]


def test_a_question_about_the_past_walks_every_fact(mem: Memory, uid: str) -> None:
    """"before Porto" names no time: the graph reads closed facts too, so the memory of the home left
    joins the ranking however it scored, and comes first."""
    lisbon = mem.add("Home sweet home in Lisbon.", user_id=uid, infer=False, timestamp="2021-02-01T09:00:00Z", triples=[
        {"source": "Maya", "relation": "livesIn", "target": "Lisbon", "source_type": "Person",
         "target_type": "City"}])["results"][0]["id"]
    for n in range(8):
        mem.add(f"Did Maya live near the sea before, Maya wonders, number {n}", user_id=uid, infer=False,
                timestamp="2024-01-10T09:00:00Z")
    mem.add("We moved to Porto.", user_id=uid, infer=False, timestamp="2023-03-01T09:00:00Z", triples=[
        {"source": "Maya", "relation": "livesIn", "target": "Porto", "source_type": "Person",
         "target_type": "City"}])
    out = mem.search("Where did Maya live before Porto?", user_id=uid, top_k=2)["results"]
    assert out[0]["id"] == lisbon
