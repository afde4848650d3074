"""Triples from role nouns and owned things: "Maya's manager Tomás", "my sister Inês", "my boss is Carla",
"Luis is my husband", "my dog Rex", and an email address next to its owner.

A role noun comes from a relation's label ("manager of" -> manages, read "Y is the manager of X"); a class
word after a possessive ("my dog") types the named thing and links it through the "has <class>" relation.
"""

from __future__ import annotations

from typing import Final

from ...ontology.model import RelationInfo
from ..contract import ExtractedTriple
from . import values
from .arguments import (
    SentenceView,
    by_example,
    employer,
    is_job_word,
    listed,
    make,
    noun_phrase,
    subject,
    subjects,
    to_do,
)
from .lexicon import Direction
from .resources import Resources
from .text import Message
from .words import FIRST_PERSON, JOB_ACRONYMS

_BE: Final = frozenset({"be", "'s", "’s", "'re", "'m"})


def role_triples(res: Resources, ctx: SentenceView, used: set[int]) -> list[ExtractedTriple]:
    """Triples of each "<possessor> <role or class word>" in the sentence, outside tokens ``used`` already:
    "my sister Inês", "my twins Rui and Sara", "we have two kids, Leo and Mia", "two dogs, Churro and Luna"."""
    msg, s, e = ctx.sent.msg, ctx.sent.start, ctx.sent.end
    lex = res.lexicon
    out: list[ExtractedTriple] = []
    concept = {k for m in ctx.sent.mentions if m.kind == "concept" for k in range(m.start, m.end)}
    for a in range(s + 1, e):
        if a in used:
            continue
        if ctx.inside[a - s] and a not in concept:  # a role noun may be read as a compound too ("my first language")
            if (named := _possessors(ctx, a - 1)[0]) and (kept := _possessed_example(res, ctx, a, named)):
                out += kept  # "my ADHD"
            continue
        possessors, pos_tok = _possessors(ctx, a - 1)
        if not possessors and a - 2 >= s and _describes(msg, a - 1):
            possessors, pos_tok = _possessors(ctx, a - 2)  # "my older brother Jonas", "my best friend"
        if not possessors:
            continue
        if (service := _service(res, ctx, a, possessors[0], pos_tok)) and len(possessors) == 1:
            out += service
            continue
        if (kept := _possessed_example(res, ctx, a, possessors)) is not None:
            out += kept
            continue
        for n in range(min(max(lex.max_role_len, lex.max_class_len), e - a), 0, -1):
            words = tuple(msg.lemmas[a:a + n])
            roles = lex.roles.get(words)
            cls = lex.class_words.get(words)
            if roles is None and cls is None:
                continue
            targets, literal_at = _role_targets(ctx, a + n, pos_tok)
            if roles is not None and msg.lowers[a + n - 1] == "twins" and len(possessors) == 1:
                roles = lex.roles.get(("child",), roles)  # "my twins": my children; "my twin": my sibling
            found: list[ExtractedTriple] = []
            for possessor in possessors:
                if roles is not None:
                    candidates: list[str | None] = [*targets] or [None]  # None: a literal or noun phrase
                    for target in candidates:
                        got = _apply_roles(res, ctx, roles, possessor, target, literal_at, a)
                        if got is not None:
                            found.append(got)
                elif cls is not None:
                    for target in targets:
                        if target in ctx.state.entities and (owned := _owned(res, ctx, cls, possessor, target)):
                            found.append(owned)
                    has = lex.has_relations.get(cls)  # "my dream is to sail around the world"
                    if not targets and has is not None and (doing := to_do(ctx, literal_at)) is not None \
                            and (t := make(res, ctx, possessor, has, doing)) is not None:
                        found.append(t)

            if found and roles is not None and len(targets) > 1:
                found += _siblings(res, ctx, targets, found)
            out += found
            if found or cls is not None:
                break
    # "my cat Tofu turned 12 last week": the sentence's time is of its verb, not of whose the cat is
    return [t.model_copy(update={"valid_from": None}) if t.valid_from else t for t in out]


def _possessed_example(res: Resources, ctx: SentenceView, a: int, possessors: list[str]
                       ) -> list[ExtractedTriple] | None:
    """"my asthma", "her ADHD": a word a class's definition gives as an example, owned by someone, is
    theirs through the one relation whose range is that class (has condition). Not a modifier ("my
    diabetes nurse")."""
    msg, doc = ctx.sent.msg, ctx.sent.msg.doc
    cls = res.clauses.examples.get(msg.lowers[a])
    if cls is None or doc is None or doc[a].dep_ == "compound":
        return None
    rels = by_example(res, msg.lowers[a])
    if not rels:
        return None
    ent = ctx.state.entity(msg.texts[a] if msg.caps[a] else msg.lowers[a])
    ent.set_type(cls, 1)
    ent.mentioned = True
    return [t for p in possessors if (t := make(res, ctx, p, rels[0], ent.key)) is not None]


def _service(res: Resources, ctx: SentenceView, a: int, possessor: str, pos_tok: int) -> list[ExtractedTriple]:
    """"my dentist Dr. Farouk (at Smile Dental)", "Dr Hale is my GP": the person's job, their employer,
    and that the possessor knows them. Only for a job word no relation names ("my manager" is manages)."""
    msg, lex = ctx.sent.msg, res.lexicon
    if not is_job_word(msg.lowers[a]) or (msg.lemmas[a],) in lex.roles or (msg.lemmas[a],) in lex.class_words:
        return []
    targets, _ = _role_targets(ctx, a + 1, pos_tok)
    if len(targets) != 1:
        return []
    person = targets[0]
    ent = ctx.state.entities.get(person)
    if ent is None or not lex.is_person(ent.type) or person == possessor:
        return []
    out = []
    knows, title, works = (res.ontology.relation_info(n) for n in ("knows", "jobTitle", "worksFor"))
    word = msg.texts[a] if msg.lowers[a] in JOB_ACRONYMS else msg.lowers[a]
    if knows is not None and (t := make(res, ctx, possessor, knows, person)) is not None:
        out.append(t)
    if title is not None and (t := make(res, ctx, person, title, word, literal=True)) is not None:
        out.append(t)
    mention = next((m for m in ctx.sent.mentions if m.key == person and m.start > a), None)
    org = employer(ctx, (mention.end if mention is not None else a + 1), gap=0)
    if works is not None and org is not None and (t := make(res, ctx, person, works, org)) is not None:
        out.append(t)
    return out


def _possessors(ctx: SentenceView, k: int) -> tuple[list[str], int]:
    """:func:`possessor_at`, or the subjects of "have <number>" before a plural ("we have two kids")."""
    possessor, pos_tok = possessor_at(ctx, k)
    if possessor is not None:
        return [possessor], pos_tok
    msg = ctx.sent.msg
    if k - 1 >= ctx.sent.start and msg.lowers[k] in values.NUMBER_WORDS and msg.lemmas[k - 1] in ("have", "get"):
        return subjects(ctx, k - 1), k
    return [], k


def _siblings(res: Resources, ctx: SentenceView, children: list[str],
              found: list[ExtractedTriple]) -> list[ExtractedTriple]:
    """Children listed together as someone's ("two kids, Leo and Mia") are each other's siblings."""
    sibling = res.ontology.relation_info("siblingOf")
    child_rels = {"childOf", "parentOf"}
    if sibling is None or not any(t.relation in child_rels for t in found):
        return []
    out = []
    for i, x in enumerate(children):
        for y in children[i + 1:]:
            if (t := make(res, ctx, x, sibling, y)) is not None:
                out.append(t)
    return out


def _owned(res: Resources, ctx: SentenceView, cls: str, possessor: str, target: str) -> ExtractedTriple | None:
    """"my dog Rex": Rex is a Pet, and the possessor has it if the ontology says how (owns)."""
    lex = res.lexicon
    ctx.state.entities[target].set_type(cls, 1)
    owns = lex.has_relations.get(cls) or next(
        (r for c, r in lex.has_relations.items() if res.ontology.is_subclass(cls, c)), None)
    return make(res, ctx, possessor, owns, target) if owns is not None else None


def possessor_at(ctx: SentenceView, k: int) -> tuple[str | None, int]:
    """Who owns what follows token ``k`` ("my", "Maya's", a sentence-initial "Her" for the topic), and the
    first token of the possessive."""
    msg = ctx.sent.msg
    if k < ctx.sent.start:
        return None, k
    lo = msg.lowers[k]
    if lo in ("my", "our"):  # "our son Mateo": the speaker is one of the parents
        return ctx.speaker, k
    if lo in ("his", "her", "its", "their") and ctx.state.topic is not None and msg.initial[k]:
        return ctx.state.topic, k
    if lo in ("his", "her") and ctx.state.recent_person is not None:
        return ctx.state.recent_person, k  # "My wife Layla ... Her brother Karim"
    if lo in ("'s", "’s", "'", "’"):
        m = ctx.ment_end.get(k)
        if m is not None:
            return m.key, m.start
    return None, k


def _describes(msg: Message, k: int) -> bool:
    """A lowercase adjective the parse sets on the next word ("older", "best", "late")."""
    doc = msg.doc
    return doc is not None and not msg.caps[k] and doc[k].pos_ == "ADJ" and doc[k].head.i == k + 1


def _role_targets(ctx: SentenceView, b: int, pos_tok: int) -> tuple[list[str], int]:
    """The entities named by the role: after it ("my manager Tomás", "my boss is Tomás", "my kids Leo and
    Mia"), else before it ("Tomás is my manager"). Also returns where a literal value would start."""
    msg, s, e = ctx.sent.msg, ctx.sent.start, ctx.sent.end
    k = b
    punct = k < e and msg.lowers[k] in (",", ":", "-", "–")
    if punct:
        k += 1
    if k < e and (msg.lemmas[k] == "be" or msg.lowers[k] in ("'s", "’s")):
        k += 1
        while k < e and msg.lowers[k] in ("still", "now", "also", "actually", "currently"):
            k += 1  # "Her GP is still Dr. Whitfield"
    literal_at = k
    while k < e and msg.lowers[k] in ("the", "a", "an", "called", "named"):
        k += 1
    if k < e and k in ctx.ment_start:
        return listed(ctx, k), literal_at
    if k < e and msg.lowers[k] in ("me", "i") and not punct and ctx.speaker is not None:
        return [ctx.speaker], literal_at  # not "French is my first language, I'm ...": a new clause
    j = pos_tok - 1
    if j >= s and (msg.lemmas[j] == "be" or msg.lowers[j] in _BE):
        if (subj := _parsed_subject(ctx, j)) is not None:
            return [subj], literal_at  # "Dr. Aydin at Parkside Health Centre is my GP": Dr. Aydin
        j -= 1
        if j >= s and (j + 1) in ctx.ment_end:
            return [ctx.ment_end[j + 1].key], literal_at
        if j >= s and msg.lowers[j] in FIRST_PERSON and ctx.speaker is not None:
            return [ctx.speaker], literal_at
    return [], literal_at


def _parsed_subject(ctx: SentenceView, be: int) -> str | None:
    """The mention the parse makes the subject of the copula at ``be``, when one is."""
    doc = ctx.sent.msg.doc
    if doc is None:
        return None
    subj = next((c for c in doc[be].children if c.dep_ == "nsubj"), None)
    if subj is None:
        return None
    return next((m.key for m in ctx.sent.mentions if m.start <= subj.i < m.end), None)


def _apply_roles(res: Resources, ctx: SentenceView, roles: list[tuple[RelationInfo, Direction]], possessor: str,
                 target: str | None, literal_at: int, anchor: int) -> ExtractedTriple | None:
    """The first of the role's relations that yields a valid triple."""
    for rel, direction in roles:
        if rel.kind == "datatype":
            if direction != "is":
                continue
            value = values.literal(ctx, rel, literal_at, before=anchor)
            if value is not None and (t := make(res, ctx, possessor, rel, value, literal=True)):
                return t
            continue
        if target is None:
            if direction == "is" and res.np_ok[rel.iri] and literal_at < ctx.sent.end:
                np = to_do(ctx, literal_at) or noun_phrase(res, ctx, literal_at)  # "my goal is to ..."
                if np is not None and (t := make(res, ctx, possessor, rel, np)) is not None:
                    return t
            continue
        src, dst = (target, possessor) if direction == "of" else (possessor, target)
        t = make(res, ctx, src, rel, dst)
        if t is not None:
            return t
    return None


def email_triples(res: Resources, ctx: SentenceView) -> list[ExtractedTriple]:
    """An address next to its owner ("reach me at maya@example.com", "Ana (ana@x.org)")."""
    rel = res.ontology.relation_info("email")
    if rel is None or rel.kind != "datatype":
        return []
    msg = ctx.sent.msg
    out: list[ExtractedTriple] = []
    for m in ctx.sent.mentions:
        if m.kind != "id" or "@" not in msg.texts[m.start]:
            continue
        owner = subject(ctx, m.start)
        if owner is None:
            continue
        t = make(res, ctx, owner, rel, msg.texts[m.start], literal=True)
        if t is not None:
            out.append(t)
    return out
