"""Triples that the ontology's domains and ranges decide: two typed things linked in one clause, and one
relation between their classes.

"Dr. Aydin at Parkside Health Centre", "Dr. Okafor, her cardiologist at Royal Berkshire Hospital, put her
on apixaban": no predicate names the relation, yet a modeller's ontology that admits exactly one relation
from a clinician to a clinic says what the words mean. A pair counts when the parse links its two
mentions through no verb but the clause's own, and the relation is chosen only when it is the one left
after the ontology prunes: both ends typed within its domain and range (an untyped end typed by meaning
with a semantic embedder, strictly), the domain and range narrower than a root class (a broad relation
such as "likes a thing" needs words to say it), a sub-property folded into its parent (the parent is what
the types alone say), an inverse read once. Negated and hedged clauses state nothing; the guard still
judges every triple.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ...ontology.model import RelationInfo
from ..contract import ExtractedTriple
from .arguments import SentenceView, make
from .clauses import clause_state, verb_of
from .resources import Resources
from .state import NOT_THE_USER, ChunkState, Sentence, norm, role_of
from .words import FIRST_PERSON

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

    from ...ontology import Ontology

_MAX_PATH: Final = 4
"""Dependency edges between the two mentions' heads: a clause's subject, object and their modifiers."""
_EMPTY: Final = frozenset({"be", "have", "get", "put", "take", "keep", "give"})
"""Verbs that say almost nothing of their own, so the two things they join say what the relation is."""
_COMMON: Final = frozenset({"concept", "np"})
"""Mentions of lowercase noun phrases ("high blood pressure"): never the subject or the head of a pair."""
_NEAR: Final = 0.6
"""Least cosine between an untyped name and its nearest class for the types to decide (all-MiniLM-L6-v2)."""


def chunk_pairs(res: Resources, state: ChunkState,
                stated: list[tuple[Sentence, ExtractedTriple]]) -> list[tuple[Sentence, ExtractedTriple]]:
    """The pairs' triples of every user statement of the chunk (once its pronouns are named) that the
    chunk does not state already."""
    person = res.lexicon.person_class
    narrow = tuple(r for r in _narrow_relations(res.ontology)
                   if person is None or not _between_people(res, r, person))
    out: list[tuple[Sentence, ExtractedTriple]] = []
    if not narrow:
        return out
    known = {(t.source, t.relation, t.target) for _, t in stated}
    for sent in state.sentences:
        if role_of(sent.msg.speaker, state.context.roles) in NOT_THE_USER or sent.question:
            continue
        found = [t for s, t in stated if s is sent]
        for t in _pair_triples(res, SentenceView.of(state, sent), narrow, found):
            if (t.source, t.relation, t.target) not in known:
                known.add((t.source, t.relation, t.target))
                out.append((sent, t))
    return out


def _pair_triples(res: Resources, ctx: SentenceView, narrow: tuple[RelationInfo, ...],
                  found: list[ExtractedTriple]) -> list[ExtractedTriple]:
    """The triples of the sentence's linked typed pairs that nothing else in it relates."""
    doc = ctx.sent.msg.doc
    if doc is None:
        return []
    index = ctx.state.index
    values = {index.get(norm(t.target)) for t in found if _is_value(res, t)}
    ends = [end for end in _ends(ctx, doc) if end[0] not in values]
    named = {k for k, _, name in ends if name}
    related = {frozenset((index.get(norm(t.source)), index.get(norm(t.target)))) for t in found}
    out: list[ExtractedTriple] = []
    for i, (a, ta, _) in enumerate(ends):
        for b, tb, _ in ends[i + 1:]:
            pair = frozenset((a, b))
            if a == b or pair in related or (link := _link(res, ta, tb)) is None or _unsaid(link):
                continue
            if link.pos_ in ("VERB", "AUX"):
                subject = _subject_of(link, (a, ta), (b, tb))
                if link.lemma_.lower() not in _EMPTY or subject not in named:
                    continue  # a verb of its own says what it says ("we build the returns service")
                ways = [(a, b), (b, a)]
            elif (way := _noun_phrase_way(link, (a, ta), (b, tb))) is None or way[0] not in named:
                continue  # "the cooking school in the corporate office": a common noun's relations are vague
            else:
                ways = [way]
            choice = _one_relation(res, ctx, narrow, ways)
            if choice is None:
                continue
            src, rel, dst = choice
            t = make(res, ctx, src, rel, dst)
            if t is not None:
                out.append(t)
                related.add(pair)
    return out


def _is_value(res: Resources, t: ExtractedTriple) -> bool:
    """A datatype triple's target is a value ("electrical engineer" as a job title), not a thing."""
    iri = res.ontology.resolve_relation(t.relation)
    return iri is not None and res.ontology.relations[iri].kind == "datatype"


def _narrow_relations(ontology: Ontology) -> tuple[RelationInfo, ...]:
    """Object relations whose domain and range classes all have a class above them."""
    classes = ontology.classes
    return tuple(r for r in ontology.relations.values() if r.kind == "object" and r.domain and r.range
                 and all(c in classes and classes[c].parents for c in (*r.domain, *r.range)))


def _between_people(res: Resources, rel: RelationInfo, person: str) -> bool:
    """A relation from people to people: two people named together may be family, colleagues, a doctor
    and a patient, anything the ontology does not model, so their classes never decide."""
    onto = res.ontology
    return all(onto.is_subclass(c, person) or onto.is_subclass(person, c) for c in (*rel.domain, *rel.range))


def _ends(ctx: SentenceView, doc: Doc) -> list[tuple[str, Token, bool]]:
    """(entity key, head token, whether it is named) of each mention of the sentence, of the speaker's
    "I"/"my" and of a possessive pronoun whose person is known ("her GP"), in order."""
    s, e = ctx.sent.start, ctx.sent.end
    out: list[tuple[str, Token, bool]] = []
    for m in ctx.sent.mentions:
        if m.kind != "demonym":  # "French": a country, a language or a people, which the types cannot tell
            out.append((m.key, doc[m.start:m.end].root, m.kind not in _COMMON))
    if ctx.speaker in ctx.state.entities:
        out += [(ctx.speaker, tok, True) for tok in doc[s:e] if tok.lower_ in FIRST_PERSON or tok.lower_ == "my"]
    for k, name in ctx.sent.pronouns.items():  # "her GP", not "she's on letrozole" (often a wrong guess)
        key = ctx.state.index.get(norm(name))
        if key is not None and doc[k].dep_ == "poss":
            out.append((key, doc[k], True))
    out.sort(key=lambda kt: kt[1].i)
    return out


def _link(res: Resources, a: Token, b: Token) -> Token | None:
    """The lowest common head of two tokens when the path between them is short, passes no verb but that
    head (one clause), no noun but one naming a class ("her cardiologist at": not "a member of", which
    says a relation of its own), and does not merely list them ("Switzerland and the EU")."""
    up_a = [a, *a.ancestors]
    up_b = [b, *b.ancestors]
    at_b = {t.i: n for n, t in enumerate(up_b)}
    n_a = next((n for n, t in enumerate(up_a) if t.i in at_b), None)
    if n_a is None:
        return None
    common = up_a[n_a]
    path = up_a[:n_a] + up_b[:at_b[common.i]]
    if len(path) > _MAX_PATH:
        return None
    inner = [t for t in path if t.i not in (a.i, b.i)]
    if any(t.pos_ in ("VERB", "AUX") for t in inner) or any(t.dep_ == "conj" for t in path):
        return None
    if any(t.pos_ == "NOUN" and (t.lemma_.lower(),) not in res.lexicon.class_words for t in inner):
        return None
    if any(t.dep_ == "poss" for t in inner):
        return None  # "my mum's asthma" is not mine
    return common


def _noun_phrase_way(head: Token, *ends: tuple[str, Token]) -> tuple[str, str] | None:
    """Inside a noun phrase the syntax says the direction: the head noun is the source ("Dr. Aydin at
    Parkside"), except that a possessor owns what it possesses ("my high blood pressure"). ``None`` when
    neither end heads the phrase."""
    (a, ta), (b, tb) = ends
    for (key, tok), (other, otok) in (((a, ta), (b, tb)), ((b, tb), (a, ta))):
        if tok.i == head.i:
            return (other, key) if otok.dep_ == "poss" and otok.head.i == tok.i else (key, other)
    return None


def _subject_of(verb: Token, *ends: tuple[str, Token]) -> str | None:
    """The end that is the verb's subject (or names it: "Dr. Okafor, her cardiologist, put me on")."""
    for key, end in ends:
        tok = end
        while tok.dep_ in ("appos", "compound", "flat", "poss") and tok.head.i != tok.i:
            tok = tok.head
        if tok.dep_ in ("nsubj", "nsubjpass") and tok.head.i == verb.i:
            return key
    return None


def _unsaid(head: Token) -> bool:
    """A negated or hedged clause ("she can't have codeine"; "maybe Dr. Lund")."""
    return clause_state(verb_of(head)) != "said"


def _one_relation(res: Resources, ctx: SentenceView, narrow: tuple[RelationInfo, ...],
                  ways: list[tuple[str, str]]) -> tuple[str, RelationInfo, str] | None:
    """The only relation the two ends' classes admit, read each of ``ways`` (source, target), after
    folding sub-properties into their parents and reading an inverse pair once; ``None`` when none or
    several."""
    fits: list[tuple[str, RelationInfo, str]] = []
    for src, dst in ways:
        for rel in narrow:
            if _typed_in(res, ctx, src, rel.domain) and _typed_in(res, ctx, dst, rel.range):
                fits.append((src, rel, dst))
    names = {rel.iri for _, rel, _ in fits}
    fits = [f for f in fits if not any(p in names for p in f[1].super_properties if p != f[1].iri)]
    seen: set[tuple[str, str, str]] = set()
    kept: list[tuple[str, RelationInfo, str]] = []
    for src, rel, dst in fits:
        key = (src, rel.iri, dst)
        inverse = (dst, rel.inverse, src) if rel.inverse else None
        if key in seen or (inverse is not None and inverse in seen) or (rel.symmetric and (dst, rel.iri, src) in seen):
            continue
        seen.add(key)
        kept.append((src, rel, dst))
    return kept[0] if len(kept) == 1 else None


def _typed_in(res: Resources, ctx: SentenceView, key: str, allowed: tuple[str, ...]) -> bool:
    """Whether the entity's class lies within ``allowed``: its own class, a person's class for an untyped
    speaker, or, untyped, the class its name is nearest by meaning (kept only if the triple is made)."""
    ent = ctx.state.entities.get(key)
    if ent is None:
        return False
    onto = res.ontology
    if ent.type is not None:
        iri = res.lexicon.class_iri(ent.type)
        return iri is not None and any(iri == c or c in onto.classes[iri].ancestors for c in allowed)
    if key == ctx.speaker or ent.speaker:
        person = res.lexicon.person_class
        return person is not None and any(onto.is_subclass(c, person) for c in allowed)
    return res.semantic is not None \
        and res.semantic.class_within(ent.name, allowed, strict=True, least=_NEAR) is not None
