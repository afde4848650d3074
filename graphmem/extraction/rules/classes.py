"""Which ontology class an entity is, on evidence only: its own words or the words around a mention.

Names are typed by their head or prefix ("Avery County" -> Region, "Lake Tahoe" -> Place, "Acme Inc." ->
Company) and by patterns around a mention ("Tennessee is a state", "the city of Lyon", "my dog Rex" is
``roles``' job). An entity with no evidence stays untyped, for the write path to fill from domain and range.
"""

from __future__ import annotations

from spacy.lang.en.stop_words import STOP_WORDS

from ...ontology import Ontology
from ..contract import KnownEntity
from .lexicon import OntologyLexicon
from .resources import Resources
from .state import ChunkState, Entity, Sentence
from .text import Message
from .words import CONJUNCTIONS, DETERMINERS, LEGAL_SUFFIXES, POSSESSIVE_MARKS, PREPOSITIONS


def known_type(ontology: Ontology, known: KnownEntity) -> str | None:
    """The first of a known entity's types that this ontology has."""
    for t in known.types:
        iri = ontology.resolve_class(t)
        if iri is not None:
            return ontology.classes[iri].name
    return None


def type_from_words(res: Resources, ent: Entity, words: list[str]) -> None:
    """Type a capitalized multi-word name by a legal suffix, its head word or a prefix ("Lake", "University of")."""
    lex = res.lexicon
    if words[-1] in LEGAL_SUFFIXES and lex.legal_class:
        ent.set_type(lex.legal_class, 2)
        return
    if len(words[0]) == 2 and words[0][1] == "." and words[0][0].isalpha():
        return  # "G. Stanley Hall": an initial, so a person, whatever the last word says
    head = res.english.lemma(words[-1])
    cls = lex.head_words.get(head) or lex.head_words.get(words[-1])
    if cls is None and len(words) >= 2 and words[1] in ("of", "de", "du", "del"):
        cls = lex.prefix_words.get(words[0])
    if cls is None and len(words) >= 2:
        cls = lex.prefix_words.get(words[0]) if words[0] in ("lake", "mount", "mt.", "river", "cape") else None
    ent.set_type(cls, 2)


def type_from_context(res: Resources, state: ChunkState, sent: Sentence) -> None:
    """"<M> is a <class>", "<M>, a <class>", "the <class> <M>", "the city of <M>"."""
    if not sent.mentions:
        return
    msg, lemmas, lowers = sent.msg, sent.msg.lemmas, sent.msg.lowers
    lex = res.lexicon
    starts = {m.start for m in sent.mentions}
    for m in sent.mentions:
        ent = state.entities.get(m.key)
        if ent is None or ent.rank <= 1:
            continue
        k = m.end
        if k + 1 < sent.end and (lemmas[k] == "be" or lowers[k] == ",") and lowers[k + 1] in ("a", "an", "the", "one"):
            cls = class_after(lex, msg, k + 2, sent.end, starts)
            if cls is not None:
                ent.set_type(cls, 1)
                continue
        j = m.start - 1
        of = j >= sent.start and lowers[j] == "of"
        cls = class_before(lex, msg, j - 1 if of else j, sent.start)
        if cls is not None and (not of or _is_place(res.ontology, cls)):
            ent.set_type(cls, 1)


def people_by_kin(res: Resources, state: ChunkState, sent: Sentence) -> None:
    """A name set beside someone's noun that means no more than "a person" ("my father, Harold Finch",
    "her husband Tom") is a person, so "he" can stand for it. Asked of the store's semantic embedder
    only for names nothing else typed; a noun nearer a narrower class ("my GP") is left to the rules
    that read class words."""
    person = res.lexicon.person_class
    doc = sent.msg.doc
    iri = res.ontology.resolve_class(person) if person is not None else None
    if iri is None or res.semantic is None or doc is None:
        return
    for m in sent.mentions:
        ent = state.entities.get(m.key)
        if m.kind != "cap" or ent is None or ent.type is not None:
            continue
        root = doc[m.start:m.end].root
        nouns = [root.head] if root.dep_ in ("appos", "compound") else []
        nouns += [c for c in root.children if c.dep_ in ("appos", "compound") and c.i < m.start]
        for noun in nouns:
            if noun.pos_ != "NOUN" or not any(c.dep_ == "poss" for c in noun.children):
                continue
            if res.semantic.class_within(noun.lower_, [iri], strict=True) == person:
                ent.set_type(person, 2)
                break


def _is_place(ontology: Ontology, cls: str) -> bool:
    return ontology.resolve_class("Place") is not None and ontology.is_subclass(cls, "Place")


def class_after(lex: OntologyLexicon, msg: Message, k: int, end: int, starts: set[int]) -> str | None:
    """The class word heading the noun phrase at ``k`` ("a state located in", not "a state university")."""
    for pos in range(k, min(k + 5, end)):
        lo = msg.lowers[pos]
        if pos in starts or lo in PREPOSITIONS or lo in CONJUNCTIONS or (not msg.alnum[pos] and lo != "-"):
            return None
        for n in range(min(lex.max_class_len, end - pos), 0, -1):
            cls = lex.class_words.get(tuple(msg.lemmas[pos:pos + n]))
            if cls is None:
                continue
            nxt = pos + n
            if nxt < end and msg.lowers[nxt] == "of":
                return None  # "a division of", "a member of": a relation, not a type
            if nxt >= end or not msg.alnum[nxt] or msg.lowers[nxt] in PREPOSITIONS \
                    or msg.lowers[nxt] in CONJUNCTIONS or msg.lowers[nxt] in STOP_WORDS \
                    or msg.lowers[nxt].endswith("ed"):
                return cls
            break
    return None


def class_before(lex: OntologyLexicon, msg: Message, j: int, start: int) -> str | None:
    """The class word ending at ``j`` after a determiner or possessive ("the city", "Ana's dog")."""
    for n in range(min(lex.max_class_len, j - start + 1), 0, -1):
        cls = lex.class_words.get(tuple(msg.lemmas[j - n + 1:j + 1]))
        if cls is None:
            continue
        before = j - n
        if before < start or msg.lowers[before] in DETERMINERS or msg.lowers[before] in POSSESSIVE_MARKS:
            return cls
    return None
