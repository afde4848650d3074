"""Triples from the dependency parse: each clause's predicate, read as the ontology names it.

The surface-form matcher (``triples``) finds "X <label or synonym> Y" written in order; this module reads
the parse instead, so the subject may be far from the verb, objects may be coordinated ("I speak Finnish
and Swedish"), the preposition may hang off another word ("work as a nurse at St Olav's") and the verb
may come after a relative clause. A clause gives predicate keys, most specific first: the verb's lemma
with its particle and preposition ("move to", "grow up in"), an adjective with its preposition
("allergic to"), a copula with its preposition ("be from"). Every surface form of every relation in the
ontology is reduced to the same kind of key (:mod:`.clause_lexicon`), so a modeller's altLabel is all it
takes for a new phrasing. Domain and range decide between relations that share a key; the guard judges
what comes out. Negated and hedged clauses ("not anymore", "maybe") state nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

from ...ontology.model import RelationInfo
from ..contract import ExtractedTriple
from .arguments import SentenceView, by_example, is_job_word, make, noun_phrase
from .clause_lexicon import LIGHT
from .resources import Resources
from .words import FIRST_PERSON

if TYPE_CHECKING:
    from spacy.tokens import Token

HEDGES: Final = frozenset({"maybe", "perhaps", "possibly", "probably", "might", "may", "could", "would",
                            "should", "if", "whether", "hopefully", "supposedly"})
_ENDED_MARKS: Final = frozenset({"anymore", "formerly", "previously", "longer"})
"""Adverbs that say a relation held and no longer does ("not anymore", "no longer", "formerly")."""
END_VERBS: Final = frozenset({"leave", "quit", "stop", "resign", "retire", "finish", "drop", "cancel", "end"})
"""Verbs that end what their object names: "I quit Acme", "I stopped taking metformin"."""
_SUBJ: Final = ("nsubj", "nsubjpass")
_OBJ: Final = ("dobj", "attr", "oprd")


def clause_triples(res: Resources, ctx: SentenceView, used: set[int]) -> list[ExtractedTriple]:
    """Triples of every clause of the sentence whose predicate the surface-form matcher left unclaimed."""
    doc = ctx.sent.msg.doc
    if doc is None:
        return []
    lex = res.clauses
    out: list[ExtractedTriple] = []
    s, e = ctx.sent.start, ctx.sent.end
    for tok in doc[s:e]:
        if tok.i in used or tok.pos_ not in ("VERB", "AUX", "ADJ"):
            continue
        state = clause_state(tok)
        if state == "unsaid":
            continue
        subjects = _subjects(ctx, tok)
        if not subjects:
            continue
        ending = tok.lemma_.lower() in END_VERBS  # "I quit Acme"
        pred = _ended_verb(tok) or tok  # "I stopped taking metformin": the inner predicate, ended
        ended = state == "ended" or ending
        past = pred.tag_ in ("VBD", "VBN") or any(c.tag_ == "VBD" and c.dep_ == "aux" for c in pred.children)
        particles = [c.lemma_.lower() for c in pred.children if c.dep_ == "prt"]
        for key, obj_tok, generic in _frames(pred):
            rels, who = lex.lookup(key, past), subjects
            if not rels and particles and len(key) > 1 + len(particles):  # "lives up in Kiruna": lives in
                key = tuple(w for w in key if w not in particles)
                rels = lex.lookup(key, past)
            if not rels and len(key) > 1 and key[0] in LIGHT and not _holds_a_job(pred) \
                    and not _of_a_class_noun(res, pred, obj_tok):
                rels = _by_range(res, ctx, key[-1], obj_tok)  # then the subject must show its class too
                if rels:
                    who = [k for k in subjects if _typed_within(res, ctx, k, rels[0].domain)]
            if not rels and key == ("be",):
                rels = by_example(res, obj_tok.lower_)
            if not rels and res.semantic is not None and not lex.is_generic(key):
                rels = res.semantic.relations(key)  # a phrasing the ontology does not spell
            if not rels and pred is tok and ending:
                rels = _ended_relations(res, ctx, subjects, obj_tok)
            if not rels:
                continue
            if (acted := _acted_on(ctx, pred, obj_tok)) is not None \
                    and all((key, r.iri) in lex.passive for r in rels):
                who = [acted]  # "Dr Ramírez put me on amlodipine": I am the one put on it
            for subj in who:
                for obj in _conjuncts(obj_tok):
                    t = _first_fit(res, ctx, rels, subj, obj, generic or lex.is_generic(key), ended=ended,
                                   own={r.iri for r in rels if (key, r.iri) in lex.own})
                    if t is not None:
                        out.append(t)
                        used.add(tok.i)
    return out


def _by_range(res: Resources, ctx: SentenceView, prep: str, obj: Token) -> list[RelationInfo]:
    """"I did my MSc at the University of Leeds": a predicate the ontology does not spell, before a
    named object of a known class, is the relation spelled with the same preposition whose range is
    nearest that class (studied at: a school), when one is nearer than any other. A broad range (an
    organization, a place) is never near enough: "I was at Google" says no job."""
    key = _mention_key(ctx, obj)
    ent = ctx.state.entities.get(key) if key is not None else None
    iri = res.lexicon.class_iri(ent.type) if ent is not None else None
    if iri is None:
        return []
    onto = res.ontology
    best: list[tuple[int, RelationInfo]] = []
    for rel in res.clauses.by_preposition.get(prep, ()):
        for r in rel.range:
            if onto.is_subclass(iri, r) and r in onto.classes:
                best.append((len(onto.classes[r].ancestors), rel))
    best.sort(key=lambda b: -b[0])
    if not best or best[0][0] < _NARROW or (len(best) > 1 and best[1][0] == best[0][0]):
        return []
    return [best[0][1]]


def _narrowly_within(res: Resources, kind: str | None, allowed: tuple[str, ...]) -> bool:
    """Whether class ``kind`` is inside one of ``allowed`` that is not a root class."""
    onto = res.ontology
    return kind is not None and any(r in onto.classes and onto.classes[r].parents and onto.is_subclass(kind, r)
                                    for r in allowed)


def _typed_within(res: Resources, ctx: SentenceView, key: str, allowed: tuple[str, ...]) -> bool:
    ent = ctx.state.entities.get(key)
    return ent is not None and ent.type is not None and res.lexicon.compatible(ent.type, allowed)


def _acted_on(ctx: SentenceView, pred: Token, obj: Token) -> str | None:
    """The direct object of an active verb (not ``obj`` itself): "put me on", "started her on"."""
    if any(c.dep_ in ("auxpass", "nsubjpass") for c in pred.children):
        return None
    direct = next((c for c in pred.children if c.dep_ == "dobj" and c is not obj), None)
    return _entity_at(ctx, direct) if direct is not None else None


def _of_a_class_noun(res: Resources, pred: Token, obj: Token) -> bool:
    """"I have a check-up with Dr. Fischer": the preposition hangs from a noun the ontology names as a
    class (an appointment), so what follows is that thing's, not the subject's."""
    holder = obj.head.head if obj.head.dep_ == "prep" else obj.head
    if holder.i == pred.i:
        return False
    left = min([holder.i, *(c.i for c in holder.lefts if c.dep_ in ("compound", "punct"))])
    words = tuple(t.lemma_.lower() for t in holder.doc[left:holder.i + 1])
    return any(words[k:] in res.lexicon.class_words for k in range(len(words)))


def _holds_a_job(pred: Token) -> bool:
    """"I'm a research technician at the University": the place is a workplace, not a school."""
    return any(c.dep_ in _OBJ and is_job_word(c.lower_) for c in pred.children)


_NARROW: Final = 3
"""Superclasses a range needs to be chosen by it (School: Organization, Agent, Thing)."""


def ended_before(words: list[str], first: int, start: int, end: int) -> bool:
    """Whether a relation written at ``first`` is said to have ended: "used to" or "no longer" just
    before it, or "anymore", "formerly", "previously" in the sentence (lowercase words)."""
    before = words[max(start, first - 3):first]
    return ("used" in before and "to" in before) or "longer" in before or \
        bool(_ENDED_MARKS & set(words[start:end]) - {"longer"})


def _ended_verb(pred: Token) -> Token | None:
    """The verb an ending verb governs ("stopped taking", "quit working at"), if any."""
    if pred.lemma_.lower() not in END_VERBS:
        return None
    return next((c for c in pred.children if c.dep_ in ("xcomp", "dobj") and c.pos_ == "VERB"), None)


def _ended_relations(res: Resources, ctx: SentenceView, subjects: list[str], obj: Token) -> list[RelationInfo]:
    """What "I left Norrbrook" ends: the one most specific relation the subject's and the object's
    classes admit (a person and a company: works for); none when the classes leave a choice."""
    key = _entity_at(ctx, obj)
    ent = ctx.state.entities.get(key) if key is not None else None
    src = ctx.state.entities.get(subjects[0])
    if ent is None or ent.type is None or src is None or src.type is None:
        return []
    lex = res.lexicon
    fits = [r for r in res.ontology.relations.values() if r.kind == "object"
            and lex.compatible(src.type, r.domain) and lex.compatible(ent.type, r.range)
            and all(d in res.ontology.classes for d in (*r.domain, *r.range))]
    if not fits:
        return []
    depth = max(len(r.super_properties) for r in fits)
    deepest = [r for r in fits if len(r.super_properties) == depth]
    return deepest if len(deepest) == 1 and depth > 0 else []


def _frames(pred: Token) -> Iterator[tuple[tuple[str, ...], Token, bool]]:
    """(key, object token, whether the key is a bare light verb) for each argument of the predicate."""
    lemma = pred.lemma_.lower()
    prt = [c.lemma_.lower() for c in pred.children if c.dep_ == "prt"]
    base = (lemma, *prt)
    copula = lemma == "be"
    for c in pred.children:
        if c.dep_ in _OBJ and not copula:
            yield base, _measured(c), False
            yield from _nested(base, c)
        elif c.dep_ == "prep":
            pobj = _pobj(c)
            if pobj is None:
                continue
            prep = c.lemma_.lower()
            yield (*base, prep) if not copula else ("be", prep), pobj, False
            if copula:
                yield (prep,), pobj, True
        elif c.dep_ in ("acomp", "attr") and copula:
            yield ("be",), c, True  # "I'm vegetarian": the word alone may name a class's example
            adj = c.lemma_.lower()
            for p in c.children:
                if p.dep_ == "prep" and (pobj := _pobj(p)) is not None:
                    yield (adj, p.lemma_.lower()), pobj, False
        elif c.dep_ == "agent" and (pobj := _pobj(c)) is not None:
            yield (*base, "by"), pobj, False


def _nested(base: tuple[str, ...], obj: Token) -> Iterator[tuple[tuple[str, ...], Token, bool]]:
    """"work as a nurse at X": a preposition attached to the object noun still belongs to the verb."""
    for p in obj.children:
        if p.dep_ == "prep" and (pobj := _pobj(p)) is not None:
            yield (*base, p.lemma_.lower()), pobj, False


def _measured(obj: Token) -> Token:
    """"20 mg of lisinopril", "two puffs of Ventolin": a counted measure's "of" names what is taken."""
    if any(c.dep_ == "nummod" for c in obj.children):
        of = next((c for c in obj.children if c.dep_ == "prep" and c.lower_ == "of"), None)
        if of is not None and (pobj := _pobj(of)) is not None:
            return pobj
    return obj


def _pobj(prep: Token) -> Token | None:
    return next((c for c in prep.children if c.dep_ in ("pobj", "pcomp")), None)


def verb_of(tok: Token) -> Token:
    """The verb of the clause a word belongs to."""
    while tok.pos_ not in ("VERB", "AUX") and tok.head.i != tok.i:
        tok = tok.head
    return tok


def clause_state(pred: Token) -> str:
    """``said`` (the clause states its relation), ``ended`` ("no longer", "not anymore", "used to",
    "formerly") or ``unsaid`` (negated or hedged: "don't", "maybe", "might")."""
    kids = list(pred.children)
    head = pred.head
    if head is not pred and pred.dep_ in ("xcomp", "ccomp"):
        kids += list(head.children)  # "I used to work at", "I don't think I live"
    lows = {c.lower_ for c in kids}
    if lows & _ENDED_MARKS or (head.lower_ == "used" and pred.dep_ == "xcomp"):
        return "ended"
    if any(c.dep_ == "neg" for c in kids) or lows & HEDGES:
        return "unsaid"
    return "said"


def _subjects(ctx: SentenceView, pred: Token) -> list[str]:
    """Entity keys of the predicate's subject and its conjuncts; a conjoined or open-complement verb
    without its own subject shares its head's ("I live in Oslo and work at Statnett")."""
    tok = pred
    for _ in range(3):
        subj = [c for c in tok.children if c.dep_ in _SUBJ]
        if tok.dep_ == "relcl" and any(s.lower_ in ("who", "that", "which") for s in subj):
            subj = [tok.head]  # "my grandmother Astrid, who lives in Kiruna": Astrid
        if subj:
            keys = [k for s in subj for t in _conjuncts(s) if (k := _entity_at(ctx, t)) is not None]
            return list(dict.fromkeys(keys))
        if tok.dep_ in ("conj", "xcomp", "advcl") and tok.head is not tok:
            tok = tok.head
            continue
        break
    return []


def _conjuncts(tok: Token) -> list[Token]:
    out = [tok]
    for c in tok.children:
        if c.dep_ == "conj":
            out += _conjuncts(c)
    return out


def _entity_at(ctx: SentenceView, tok: Token) -> str | None:
    """The entity a subject token stands for: the speaker for "I", an apposition's name ("my brother
    Jonas"), the mention the token is part of."""
    low = tok.lower_
    if low in FIRST_PERSON or (low == "we" and ctx.speaker is not None):
        return ctx.speaker
    if low in ("he", "she"):
        return ctx.state.recent_person
    own = _mention_key(ctx, tok)
    if own is not None and not _plain_noun(ctx, tok):
        return own  # a name before its description ("CEVA Logistics, the sister company")
    for c in tok.children:
        if c.dep_ == "appos" and (key := _mention_key(ctx, c)) is not None:
            return key
    return own


def _plain_noun(ctx: SentenceView, tok: Token) -> bool:
    """Whether the object is a lowercase noun phrase or concept rather than a name."""
    return any(m.start <= tok.i < m.end and m.kind in ("np", "concept") for m in ctx.sent.mentions)


def _mention_key(ctx: SentenceView, tok: Token) -> str | None:
    i = tok.i
    for m in ctx.sent.mentions:
        if m.start <= i < m.end:
            return m.key
    return None


def _first_fit(res: Resources, ctx: SentenceView, rels: list[RelationInfo], subj: str, obj: Token,
               generic: bool, *, ended: bool = False, own: set[str] | None = None) -> ExtractedTriple | None:
    """The first relation (most specific first) whose domain and range the endpoints fit. A plain noun
    needs a class of its own unless any thing fits the range; after a light verb ("I have two kids,
    Leo and Mia") every object needs one, and a person never fits; a name needs none after the light
    verb that is the relation's own label (``own``: "I use Figma")."""
    key = ctx.speaker if obj.lower_ in FIRST_PERSON else _entity_at(ctx, obj)
    plain = key is None or _plain_noun(ctx, obj)
    for rel in rels:
        if rel.kind == "datatype":
            continue
        target = key
        if target is None:
            if not res.np_ok[rel.iri] or (obj.pos_ not in ("NOUN", "PROPN") and obj.lower_ not in res.clauses.examples):
                continue  # a class's example may be an adjective ("vegetarian")
            target = noun_phrase(res, ctx, _np_start(obj), obj.i)
            if target is None:
                continue
        if generic:
            named = not plain and rel.iri in (own or ())
            kind = ctx.state.entities[target].type
            if not (named or _typed_for(res, ctx, target, rel, strict=True)) \
                    or (res.lexicon.is_person(kind) and not _narrowly_within(res, kind, rel.range)):
                continue  # a person only inside a range narrower than any thing ("sees Dr Adeyemi")
        elif plain and not (_root_range(res, rel) or _typed_for(res, ctx, target, rel)):
            continue
        t = make(res, ctx, subj, rel, target, ended=ended)
        if t is not None:
            return t
    return None


def _typed_for(res: Resources, ctx: SentenceView, key: str, rel: RelationInfo, *, strict: bool = False) -> bool:
    """Whether a noun phrase has a class of its own within the range: a class word of the ontology
    ("a project"), an example the class's definition gives ("diabetes" for a health condition), or,
    with a semantic embedder, a class of the range whose names are near it ("penicillin": a drug),
    which the entity then takes as its class."""
    ent = ctx.state.entities.get(key)
    if ent is None:
        return False
    if ent.type is None or ent.rank > 1:
        example = res.clauses.examples.get(ent.key) or res.clauses.examples.get(ent.words[-1] if ent.words else "")
        if example is None and res.semantic is not None:  # the nearest class by meaning, within the range
            example = res.semantic.class_within(ent.name, rel.range, strict=strict)
        if example is None and len(rel.range) == 1 and ent.name.islower() and _unknown_word(res, ent.words):
            example = res.ontology.classes[rel.range[0]].name if rel.range[0] in res.ontology.classes else None
        if example is None:
            return False
        ent.set_type(example, 1)
    return ent.type is not None and res.lexicon.compatible(ent.type, rel.range)


def _unknown_word(res: Resources, words: tuple[str, ...]) -> bool:
    """One word English does not know ("lisinopril", "apixaban"): a term of the relation's own range,
    where "the bus" or "a break" is not."""
    return len(words) == 1 and words[0].isalpha() and len(words[0]) > 3 and not res.english.is_common(words[0])


def _root_range(res: Resources, rel: RelationInfo) -> bool:
    """A range with no class above it ("likes" a thing): any noun phrase may be the object."""
    onto = res.ontology
    return all(not onto.classes[r].parents for r in rel.range if r in onto.classes)


def _np_start(tok: Token) -> int:
    """Where the object's noun phrase starts (its left modifiers), for the shared noun-phrase reader."""
    left = [c.i for c in tok.lefts if c.dep_ in ("compound", "amod", "det", "nummod", "poss")]
    return min([tok.i, *left])
