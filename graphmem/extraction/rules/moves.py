"""Changes of employer and of home, said the way chat says them: "Left Dublin for Cork", "I left Google
for Meta", "Quit Allegro last Friday", "I joined Revolut", "Started at Rakuten on Monday", "Accepted an
offer from Allegro".

No relation label is in these, yet they are how people tell that a job or a home changed, and a graph
that misses them keeps the old employer or city as the current one. The object's type decides: a place
is where the speaker now lives (``livesIn`` is functional, so the old home is closed by the planner);
an organization is where they now work, and the one left behind ends (``worksFor`` is not functional,
so its end is stated).
"""

from __future__ import annotations

from typing import Final

from ...ontology.model import RelationInfo
from ..contract import ExtractedTriple
from .arguments import (
    LEAD_INS,
    SentenceView,
    clause_start,
    make,
    parsed_subject,
    restated,
    speaker_before,
    speaker_is_person,
    workplace,
)
from .resources import Resources
from .state import Mention
from .words import LEAVE_FORMS

_LEAVE: Final = frozenset({"leave", "quit", "trade", "swap"})
"""Verbs of "left A (for B)"; "traded Brussels for Namur" is one too."""
_START: Final = frozenset({"join", "start"})
_OFFER: Final = frozenset({"offer", "job", "position", "role"})
"""Nouns of "accepted an offer from <Org>", "took a job with <Org>"."""
_TAKE: Final = frozenset({"accept", "take", "get"})
_VERBS: Final = _LEAVE | _START | _TAKE | {"move"}


def change_triples(res: Resources, ctx: SentenceView, used: set[int]) -> list[ExtractedTriple]:
    """Triples of "leave/quit <A> (for <B>)", "join <Org>", "start at <Org>", "an offer from <Org>"
    outside ``used``, in a person's turn, about the sentence's subject (the speaker in a verb-first
    sentence)."""
    if not speaker_is_person(ctx):
        return []  # chat's idioms; a document's "joined the Navy" is no job
    works, lives = workplace(res), res.ontology.relation_info("livesIn")
    msg, e = ctx.sent.msg, ctx.sent.end
    out: list[ExtractedTriple] = []
    for k in range(ctx.sent.start, e - 1):
        lemma = LEAVE_FORMS.get(msg.lowers[k], msg.lemmas[k])
        first_day = _first_day(ctx, k)
        if first_day:
            lemma = "start"  # "First day at Paystack today", "my first week at Grundfos"
        if k in used or lemma not in _VERBS:
            continue
        if lemma in _LEAVE:
            left = ctx.ment_start.get(k + 1)
            if left is None:
                continue
            after = _after(ctx, left.end, ("for",))
            new = [(after, False)] if after is not None else []
            found = _pick(res, ctx, [(left, True), *new], lives, works, quit=lemma == "quit")
            # "Left Berlin for Munich and Zalando for Siemens": the verb's second pair
            then = ctx.ment_start.get(after.end + 1) if after is not None and after.end < e - 1 \
                and msg.lowers[after.end] == "and" else None
            if then is not None and (later := _after(ctx, then.end, ("for",))) is not None:
                found += _pick(res, ctx, [(then, True), (later, False)], lives, works, quit=False)
        elif lemma == "start":
            at = _after(ctx, k + 1, ("at", "with"))
            found = _pick(res, ctx, [(at, False)] if at is not None else [], None, works, quit=False)
        elif lemma == "move":  # "I've moved over to CEVA Logistics": a job, when the name is an organization's
            to = _after(ctx, k + 2 if msg.lowers[k + 1] == "over" else k + 1, ("to",))
            ent = ctx.state.entities.get(to.key) if to is not None else None
            company = works is not None and ent is not None and ent.type is not None \
                and res.lexicon.compatible(ent.type, works.range) \
                and not (lives is not None and res.lexicon.compatible(ent.type, lives.range))
            found = [(works, to.key, False)] if company and works is not None and to is not None else []
        elif lemma == "join":
            joined = ctx.ment_start.get(k + 1) or _after(ctx, k + 1, ("the",))
            found = _pick(res, ctx, [(joined, False)] if joined is not None else [], None, works, quit=False)
        else:  # "accepted an offer from <Org>", "took a job with <Org>", "got a position at <Org>"
            j = k + 2 if msg.lowers[k + 1] in ("a", "an", "the") else k + 1
            if j >= e - 1 or msg.lemmas[j] not in _OFFER:
                continue
            org = _after(ctx, j + 1, ("from", "with", "at"))
            found = _pick(res, ctx, [(org, False)] if org is not None else [], None, works, quit=False)
        if not found:
            continue
        who = ctx.speaker if first_day else parsed_subject(ctx, k) or _verb_first(ctx, k) or speaker_before(ctx, k)
        if who is None:
            continue
        for rel, key, ended in found:
            triple = make(res, ctx, who, rel, key, ended=ended)
            if triple is not None:
                out.append(triple)
    return out


_HOMES: Final = frozenset({"flat", "apartment", "house", "home", "place", "cottage", "townhouse", "condo", "villa",
                           "bungalow", "life"})
"""Nouns of "our flat in Kadikoy", "three weeks into life in Trieste": where the speaker lives."""


_OTHERS: Final = frozenset({"'s", "’s", "his", "her", "their", "your"})
"""Owners before a home noun that make it someone else's ("my sister's flat", "their house")."""


def home_triples(res: Resources, ctx: SentenceView, used: set[int]) -> list[ExtractedTriple]:
    """``livesIn`` of "my/our (new) flat in <Place>", "life in <Place>", "we bought a house in <Place>"
    and "we've been in <Place> for three weeks" in a person's turn ("my sister's flat in Rome" is hers;
    "a house in Espoo" may be anyone's, unless the speaker bought or rented it)."""
    lives = res.ontology.relation_info("livesIn")
    if lives is None or not speaker_is_person(ctx) or ctx.speaker is None:
        return []
    msg, s, e = ctx.sent.msg, ctx.sent.start, ctx.sent.end
    out: list[ExtractedTriple] = []
    for k in range(s, e - 2):
        if k in used or msg.lowers[k] not in _HOMES or msg.lowers[k + 1] != "in":
            continue
        before = k - 2 if k - 2 >= s and msg.lowers[k - 1] == "new" else k - 1
        own = before >= s and msg.lowers[before] in ("my", "our")
        life = msg.lowers[k] == "life" and (before < s or msg.lowers[before] not in _OTHERS)
        if not (own or life or _bought(ctx, k)):
            continue
        place = ctx.ment_start.get(k + 2)
        if place is None or not _a_place(res, ctx, place, lives):
            continue
        triple = make(res, ctx, ctx.speaker, lives, place.key)
        if triple is not None:
            out.append(triple)
    for k in range(s, e - 1):
        place = ctx.ment_start.get(k + 1) if msg.lowers[k] == "in" and k not in used else None
        if place is not None and _a_stay(ctx, k, place) and _a_place(res, ctx, place, lives):
            triple = make(res, ctx, ctx.speaker, lives, place.key)
            if triple is not None:
                out.append(triple)
                used.update((k - 1, k))  # "been in": no copula's "is located in" besides
    return out


_SPANS: Final = frozenset({"week", "month", "year"})


def _a_stay(ctx: SentenceView, k: int, place: Mention) -> bool:
    """Whether "in <Place>" at ``k`` says how long the speaker has been living there: "We've been in
    Panama City for three weeks", "Six weeks in Riyadh and ...". Days are a trip's."""
    msg, doc, s = ctx.sent.msg, ctx.sent.msg.doc, ctx.sent.start
    if doc is None:
        return False
    if k == s + 2 and doc[s].like_num and msg.lemmas[s + 1] in _SPANS:
        return True
    if k - 2 < s or msg.lowers[k - 1] != "been" or msg.lemmas[k - 2] != "have" or place.end + 2 >= ctx.sent.end:
        return False
    span = msg.lowers[place.end] == "since" or (msg.lowers[place.end] == "for" and any(
        msg.lemmas[j] in _SPANS for j in range(place.end + 1, min(place.end + 4, ctx.sent.end))))
    return span and parsed_subject(ctx, k - 1) == ctx.speaker


_BUY: Final = frozenset({"buy", "rent"})


def _bought(ctx: SentenceView, k: int) -> bool:
    """Whether the home noun at ``k`` is what the speaker bought or rented ("We bought a little house
    in La Spezia", "Bought a cottage in Stellenbosch"): the verb at most three words before it, its
    subject the speaker (or none: chat drops the "I")."""
    msg = ctx.sent.msg
    verb = next((j for j in range(k - 1, max(ctx.sent.start, k - 4) - 1, -1) if msg.lemmas[j] in _BUY), None)
    if verb is None or any(msg.lowers[j] in _OTHERS for j in range(verb + 1, k)):
        return False
    return (parsed_subject(ctx, verb) or _verb_first(ctx, verb)) == ctx.speaker


def still_triples(res: Resources, ctx: SentenceView, used: set[int]) -> list[ExtractedTriple]:
    """The home or employer a person's turn says is unchanged, with no verb: "Still in Leeds", "Still at
    Tabby, still leading mobile", "Still Helsinki, still Wolt". A place is the home, an organization the
    employer (the recognizer decides for a name nothing typed)."""
    lives, works = res.ontology.relation_info("livesIn"), workplace(res)
    if not speaker_is_person(ctx) or ctx.speaker is None:
        return []
    msg, e = ctx.sent.msg, ctx.sent.end
    out: list[ExtractedTriple] = []
    for k in range(ctx.sent.start, e - 1):
        if k in used or not restated(ctx, k):
            continue
        prep = msg.lowers[k + 1] if msg.lowers[k + 1] in ("in", "at", "with") else None
        m = _after(ctx, k + 1, (prep,)) if prep else ctx.ment_start.get(k + 1)
        if m is None:
            continue
        rel = lives if lives is not None and prep in (None, "in") and _a_place(res, ctx, m, lives) else \
            works if works is not None and prep != "in" and _an_employer(res, ctx, m, works) else None
        triple = make(res, ctx, ctx.speaker, rel, m.key) if rel is not None else None
        if triple is not None:
            out.append(triple)
    return out


def _an_employer(res: Resources, ctx: SentenceView, m: Mention, works: RelationInfo) -> bool:
    """A mention typed as an organization, or untyped and not read as a place."""
    ent = ctx.state.entities.get(m.key)
    if ent is not None and ent.type is not None:
        return res.lexicon.compatible(ent.type, works.range)
    return m.end - m.start <= 4 and not res.named_place(ctx.sent.msg.doc, m.start, m.end)


_TRAVEL: Final = frozenset({"go", "head", "fly", "travel", "drive"})


def trip_triples(res: Resources, ctx: SentenceView, used: set[int]) -> list[ExtractedTriple]:
    """``visited`` of "we went to <Place>" and ``plansToVisit`` of "we're going to <Place> next spring"
    (a verb of travel, not in the past tense) in a person's turn, about the verb's subject."""
    visited, planned = res.ontology.relation_info("visited"), res.ontology.relation_info("plansToVisit")
    doc = ctx.sent.msg.doc
    if visited is None or planned is None or doc is None or not speaker_is_person(ctx):
        return []
    msg, e = ctx.sent.msg, ctx.sent.end
    out: list[ExtractedTriple] = []
    for k in range(ctx.sent.start, e - 2):
        if k in used or msg.lemmas[k] not in _TRAVEL or msg.lowers[k + 1] != "to" or doc[k].pos_ != "VERB":
            continue
        place = _after(ctx, k + 1, ("to",))
        if place is None or not _a_place(res, ctx, place, visited):
            continue
        who = parsed_subject(ctx, k) or _verb_first(ctx, k) or speaker_before(ctx, k)
        if who is None:
            continue
        triple = make(res, ctx, who, visited if doc[k].tag_ == "VBD" else planned, place.key)
        if triple is not None:
            out.append(triple)
    return out


def unlikely_place(res: Resources, ctx: SentenceView, rel: RelationInfo, key: str) -> bool:
    """Whether ``key``, nothing typed yet and gone to ("went to Lisbon", a verb of travel before "to"),
    is a place that spaCy's recognizer reads as one, for a relation whose range holds neither places nor
    agents: no event attended, but a trip (:func:`trip_triples`). The recognizer reads many companies
    and events as places, so nothing else is asked."""
    ent = ctx.state.entities.get(key)
    if rel.kind != "object" or ent is None or ent.type is not None:
        return False
    m = next((m for m in ctx.sent.mentions if m.key == key), None)
    lemmas = ctx.sent.msg.lemmas
    if m is None or m.start - 2 < ctx.sent.start or lemmas[m.start - 1] != "to" or lemmas[m.start - 2] not in _TRAVEL:
        return False  # checked first: this runs for every object of every relation matched
    kinds = [iri for iri in map(res.lexicon.class_iri, ("Place", "Agent")) if iri is not None]
    onto = res.ontology
    if len(kinds) < 2 or any(onto.is_subclass(r, c) or onto.is_subclass(c, r) for r in rel.range for c in kinds):
        return False
    return res.named_place(ctx.sent.msg.doc, m.start, m.end)


def _a_place(res: Resources, ctx: SentenceView, m: Mention, lives: RelationInfo) -> bool:
    """A mention typed as a place, or untyped and read as one by spaCy's recognizer."""
    ent = ctx.state.entities.get(m.key)
    if ent is not None and ent.type is not None:
        return res.lexicon.compatible(ent.type, lives.range)
    return res.named_place(ctx.sent.msg.doc, m.start, m.end)


def _first_day(ctx: SentenceView, k: int) -> bool:
    """Whether ``k`` is "day"/"week" of the speaker's "(my) first day at": the sentence's opening, or "my"."""
    msg, s = ctx.sent.msg, ctx.sent.start
    if msg.lowers[k] not in ("day", "week") or k - 1 < s or msg.lowers[k - 1] != "first":
        return False
    before = k - 2
    return before < s or msg.lowers[before] == "my" or all(msg.lowers[j] in LEAD_INS for j in range(s, before + 1))


def _verb_first(ctx: SentenceView, k: int) -> str | None:
    """The speaker, in a person's turn whose sentence starts with the verb at ``k``, or with another
    such verb and its object ("Quit Roche and joined Novartis": chat drops the "I")."""
    msg = ctx.sent.msg
    first = next((j for j in range(clause_start(ctx, k), k + 1) if msg.lowers[j] not in LEAD_INS), None)
    if first is None or not speaker_is_person(ctx):
        return None
    if first == k:
        return ctx.speaker
    verb = LEAVE_FORMS.get(msg.lowers[first], msg.lemmas[first]) in _LEAVE | _START
    between = all(msg.lowers[j] in ("and", ",") or ctx.inside[j - ctx.sent.start] for j in range(first + 1, k))
    return ctx.speaker if verb and between else None


def _after(ctx: SentenceView, j: int, words: tuple[str, ...]) -> Mention | None:
    """The mention after one of ``words`` at ``j`` ("for Cork", "at the Allegro office": none)."""
    msg = ctx.sent.msg
    if j >= ctx.sent.end - 1 or msg.lowers[j] not in words:
        return None
    return ctx.ment_start.get(j + 2 if msg.lowers[j + 1] == "the" else j + 1)


def _pick(res: Resources, ctx: SentenceView, mentions: list[tuple[Mention, bool]], lives: RelationInfo | None,
          works: RelationInfo | None, *, quit: bool) -> list[tuple[RelationInfo, str, bool]]:
    """(relation, entity key, ended) for each mention (``True``: the one left): beside a place, a home
    (only the new one is stated: the planner closes the old); else a job, when a name is an
    organization, after "quit", or when nothing is left ("joined Revolut"). When nothing typed either
    name of "left A for B", a name spaCy's recognizer reads as a place is one; it is asked nothing else
    (it reads "Left Warsaw" as an organization, and many companies as places)."""
    lex = res.lexicon
    kinds: list[str | None] = []
    for m, _ in mentions:
        ent = ctx.state.entities.get(m.key)
        typed = ent.type if ent is not None else None
        if typed is None:  # a name nothing typed yet: "Dublin" of "left Dublin for Cork" may be either
            kinds.append(None)
            continue
        place = lives is not None and lex.compatible(typed, lives.range)
        org = works is not None and lex.compatible(typed, works.range)
        kinds.append("place" if place and not org else "org" if org and not place else None)
    if len(mentions) > 1 and kinds == [None] * len(mentions):  # "left Bogotá for Medellín": ask the recognizer
        kinds = ["place" if res.named_place(ctx.sent.msg.doc, m.start, m.end) else None for m, _ in mentions]
    if lives is not None and "place" in kinds and "org" not in kinds:  # "left A for B": B is what A is
        return [(lives, m.key, False) for m, was in mentions if not was]
    if works is None or "place" in kinds or not (quit or "org" in kinds or not any(was for _, was in mentions)):
        return []
    return [(works, m.key, was) for m, was in mentions]
