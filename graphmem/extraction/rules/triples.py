"""Triples of one sentence: "X <relation label or synonym> Y", then role nouns and email owners.

Relation surface forms from the lexicon are matched by lemma ("worked for" matches "works for"), also
with words in between for "verb preposition" forms ("work as a data engineer at"); the longest, exact,
tense-agreeing matches win and claim their tokens. A negation just before a match drops it; a passive
"by" swaps the roles ("published by").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ...ontology.model import RelationInfo
from ..contract import ExtractedTriple
from . import clauses, copula, jobs, moves, roles, values
from .arguments import SentenceView, make, objects, place_after, subject, subjects, to_do
from .clause_lexicon import LIGHT
from .lexicon import RelationPattern
from .resources import Resources
from .state import ChunkState, Sentence
from .text import Message
from .words import CONJUNCTIONS, DETERMINERS, EVALUATIVE, FIRST_PERSON, NEGATIONS, POSSESSIVE_MARKS

_ADVERBS: Final = frozenset({"really", "also", "totally", "just", "absolutely", "still", "do", "does", "did",
                             "truly", "so", "definitely", "now", "currently", "already", "always", "usually",
                             "actually", "even", "both", "all"})


@dataclass
class Match:
    pattern: RelationPattern
    toks: list[int]
    tokens: set[int]
    """Tokens this match claims; a gapped match shares its verb ("work as ... at")."""
    sort_key: tuple[int, bool, int, int, str, int]


def sentence_triples(res: Resources, state: ChunkState, sent: Sentence) -> list[ExtractedTriple]:
    """Every triple the sentence states, in order: relation patterns, role nouns, email owners."""
    out: list[ExtractedTriple] = []
    ctx = SentenceView.of(state, sent)
    used: set[int] = set()
    for match in relation_matches(res, ctx):
        toks = match.tokens
        if used & toks:
            continue
        produced = _triples_for_match(res, ctx, match)
        if produced:
            used |= toks
            if _held_between(ctx, match.pattern, match.toks) is not None:
                used.add(match.toks[0])  # the verb too: its own subject is not the one referred
            out += produced
    out += moves.change_triples(res, ctx, used)
    out += moves.home_triples(res, ctx, used)
    out += moves.still_triples(res, ctx, used)
    out += moves.trip_triples(res, ctx, used)
    out += jobs.job_triples(res, ctx, used)
    out += copula.copula_triples(res, ctx, used)
    out += roles.role_triples(res, ctx, used)
    out += clauses.clause_triples(res, ctx, used)
    out += roles.email_triples(res, ctx)
    return out


def relation_matches(res: Resources, ctx: SentenceView) -> list[Match]:
    """All pattern matches outside mentions, best first."""
    msg, s, e = ctx.sent.msg, ctx.sent.start, ctx.sent.end
    lex = res.lexicon
    lemmas, lowers = msg.lemmas, msg.lowers
    found: list[Match] = []
    for i in range(s, e):
        if ctx.inside[i - s]:
            continue
        pats = lex.patterns.get(lemmas[i], [])
        extra = lex.exact_first.get(lowers[i])
        if extra:
            pats = pats + [p for p in extra if p not in pats]
        for p in pats:
            if _shortcut(p):
                continue  # "takes" for "takes medication": the clause reader asks the object for its class
            toks = _spelled(ctx, p, i)
            if toks is not None:
                if _contiguous_ok(ctx, p, i):
                    found.append(_score(ctx, p, toks))
            elif p.gappable and lemmas[i] == p.lemmas[0]:
                j = _gapped_end(ctx, p, i)
                if j is not None:
                    found.append(_score(ctx, p, [i, j]))
    found.sort(key=lambda m: m.sort_key)
    return found


def _shortcut(p: RelationPattern) -> bool:
    """A light verb alone standing for a longer label ("takes" for "takes medication")."""
    return len(p.lemmas) == 1 and p.lemmas[0] in LIGHT and p.relation.kind == "object" \
        and len(p.relation.label.split()) > 1


def _spelled(ctx: SentenceView, p: RelationPattern, i: int) -> list[int] | None:
    """The tokens of ``p`` written from ``i`` on, an adverb allowed between its words ("I'm really into")."""
    msg, s, e = ctx.sent.msg, ctx.sent.start, ctx.sent.end
    toks: list[int] = []
    j = i
    for k in range(len(p.lemmas)):
        if k and j < e and msg.lowers[j] in _ADVERBS and msg.lowers[j] not in p.lowers:
            j += 1
        if j >= e or ctx.inside[j - s] or not (msg.lemmas[j] == p.lemmas[k] or msg.lowers[j] == p.lowers[k]):
            return None
        toks.append(j)
        j += 1
    return toks


def _contiguous_ok(ctx: SentenceView, p: RelationPattern, i: int) -> bool:
    """Whether a one-word match at ``i`` is the verb, not a preposition or adjective."""
    msg, s = ctx.sent.msg, ctx.sent.start
    lowers, lemmas = msg.lowers, msg.lemmas
    if len(p.lemmas) != 1:
        return True
    if lowers[i] != p.lowers[0] and lowers[i] == lemmas[i] and not _subject_right_before(ctx, i):
        return False  # base form "like" is usually the preposition unless "I like"
    # "its publishing arm": an adjective, not the verb
    return not (i > s and (lowers[i - 1] in DETERMINERS or lowers[i - 1] in POSSESSIVE_MARKS))


def _gapped_end(ctx: SentenceView, p: RelationPattern, i: int) -> int | None:
    """Where the preposition of a gapped form ("work as a data engineer at") stands, within five words."""
    msg, s, e = ctx.sent.msg, ctx.sent.start, ctx.sent.end
    for j in range(i + 2, min(i + 7, e)):
        lo = msg.lowers[j]
        if not msg.alnum[j] or lo in CONJUNCTIONS:
            return None
        if lo == p.lowers[1] and not ctx.inside[j - s]:
            return j
    return None


def _subject_right_before(ctx: SentenceView, i: int) -> bool:
    msg = ctx.sent.msg
    k = i - 1
    if k >= ctx.sent.start and msg.lowers[k] in _ADVERBS | {"n't", "not"}:
        k -= 1
    if k < ctx.sent.start:
        return False
    return msg.lowers[k] in FIRST_PERSON or msg.lowers[k] in ("we", "they", "he", "she", "you") \
        or (k + 1) in ctx.ment_end


def _score(ctx: SentenceView, p: RelationPattern, toks: list[int]) -> Match:
    """Longer first, contiguous before gapped, more exact words, tense agreeing, then by IRI and position."""
    msg = ctx.sent.msg
    exact = sum(1 for k, t in enumerate(toks) if msg.lowers[t] == p.lowers[k])
    past = any(msg.lowers[t] in ("was", "were", "had", "used") or
               (msg.lowers[t] != msg.lemmas[t] and msg.lowers[t].endswith(("ed", "ew")))
               for t in toks)
    if toks[0] > ctx.sent.start and msg.lowers[toks[0] - 1] in ("was", "were", "had", "used"):
        past = True
    gap = len(toks) == 2 and toks[1] != toks[0] + 1
    key = (-len(toks), gap, -exact, 0 if past == p.past else 1, p.relation.iri, toks[0])
    return Match(p, toks, {toks[1]} if gap else set(toks), key)


def _triples_for_match(res: Resources, ctx: SentenceView, match: Match) -> list[ExtractedTriple]:
    msg, p = ctx.sent.msg, match.pattern
    first, last = match.toks[0], match.toks[-1]
    if _negated(msg, first, ctx.sent.start):
        return []
    rel = p.relation
    by_tok = _passive_by(ctx, p, first, last)
    if by_tok is not None:
        agent = objects(res, ctx, by_tok + 1, allow_np=False)
        theme = subject(ctx, first)
        if agent and theme is not None:
            return [t for a in agent[:1] if (t := make(res, ctx, a, rel, theme)) is not None]
        return []
    held = _held_between(ctx, p, match.toks)  # "my GP referred me to X": I am the one referred
    subjs = [held] if held is not None else subjects(ctx, first)  # "Mo and I both report to Dana": each of them
    if not subjs and p.lemmas[0] in _NOUN_LED and (holder := _holder(ctx, first)) is not None:
        subjs = [holder]
    out: list[ExtractedTriple] = []
    if rel.kind == "datatype":
        value = values.literal(ctx, rel, last + 1, before=first)
        if value is not None:
            out += [t for subj in subjs if (t := make(res, ctx, subj, rel, value, literal=True)) is not None]
        return out
    light = len(p.lemmas) == 1 and p.lemmas[0] in LIGHT  # "take" + a plain noun: the clause reader
    ended = clauses.ended_before(msg.lowers, first, ctx.sent.start, ctx.sent.end)  # "I used to work at"
    for subj in subjs:
        out += _object_triples(res, ctx, rel, subj, last + 1, swap=p.passive_swap, plain=not light, ended=ended)
    return out


def _held_between(ctx: SentenceView, p: RelationPattern, toks: list[int]) -> str | None:
    """The one the relation holds of when a participle form ("referred to", "sent to") is written with an
    object inside it: "referred me to", "sent her to" (the object, not the referrer)."""
    if len(toks) != 2 or toks[1] - toks[0] < 2 or not p.lowers[0].endswith("ed"):
        return None
    msg, gap = ctx.sent.msg, range(toks[0] + 1, toks[1])
    if len(gap) == 1 and msg.lowers[gap[0]] in ("me", "us"):
        return ctx.speaker
    if len(gap) == 1 and msg.lowers[gap[0]] in ("him", "her"):
        return ctx.state.recent_person
    m = ctx.ment_start.get(gap[0])
    return m.key if m is not None and m.end == toks[1] else None


_NOUN_LED: Final = frozenset({"job", "home"})
"""Forms that start with a noun ("job at", "home is in"): their subject holds that noun."""


def _holder(ctx: SentenceView, first: int) -> str | None:
    """Who has the noun of "my new job at", "started a new job at": "my" is the speaker, and after an
    article the subject of the verb before it."""
    msg, k = ctx.sent.msg, first - 1
    while k >= ctx.sent.start and (msg.lowers[k] in EVALUATIVE or msg.lowers[k] in ("part-time", "full-time")):
        k -= 1
    if k < ctx.sent.start:
        return None
    if msg.lowers[k] == "my":
        return ctx.speaker
    if msg.lowers[k] in ("a", "an", "the") and k - 1 >= ctx.sent.start and msg.lowers[k - 1].isalpha():
        return subject(ctx, k - 1)
    return None


def _object_triples(res: Resources, ctx: SentenceView, rel: RelationInfo, subj: str, k: int, *,
                    swap: bool, plain: bool = True, ended: bool = False) -> list[ExtractedTriple]:
    """One triple per object from ``k`` (only the first for a functional relation); ``plain``: a
    lowercase noun phrase may be the object where the relation allows one; ``ended``: said to hold no more."""
    out: list[ExtractedTriple] = []
    doing = to_do(ctx, k) if plain and res.np_ok[rel.iri] else None  # "wants to save for a flat"
    found = [doing] if doing is not None else objects(res, ctx, k, allow_np=plain and res.np_ok[rel.iri])
    if found and (allergy := _allergy(res, ctx, rel, found[0])) is not None:
        rel, found = allergy
    if rel.name == "locatedIn" and res.lexicon.is_person(getattr(ctx.state.entities.get(subj), "type", None)):
        home = res.ontology.relation_info("livesIn")
        if home is None or not _settled(ctx):
            return []  # "I'm in Prague this week": a visit, and a person is not "located in" a place
        rel = home
    for obj in found[:1] if rel.functional else found:
        if not swap and moves.unlikely_place(res, ctx, rel, obj):
            continue  # "we went to Lisbon": a place, not an event attended (moves.trip_triples)
        src, dst = (obj, subj) if swap else (subj, obj)
        t = make(res, ctx, src, rel, dst, ended=ended)
        if t is not None:
            out.append(t)
            if not swap and (placed := place_after(res, ctx, rel, obj, k)) is not None:
                out.append(placed)
    return out


_SETTLED: Final = ("now", "currently", "these days", "nowadays", "based", "living", "permanently")


def _settled(ctx: SentenceView) -> bool:
    """Whether "I'm in Marseille" is said as where the speaker lives ("these days", "now")."""
    text = " ".join(ctx.sent.msg.lowers[ctx.sent.start:ctx.sent.end])
    return any(f" {w} " in f" {text} " for w in _SETTLED)


def _allergy(res: Resources, ctx: SentenceView, rel: RelationInfo, obj: str) -> tuple[RelationInfo, list[str]] | None:
    """"has a shellfish allergy": allergic to shellfish, not the owner of an allergy."""
    allergic = res.ontology.relation_info("allergicTo")
    ent = ctx.state.entities.get(obj)
    if allergic is None or rel.name == allergic.name or ent is None:
        return None
    words = ent.name.split()
    if len(words) < 2 or words[-1].casefold() not in ("allergy", "intolerance"):
        return None
    what = ctx.state.entity(" ".join(words[:-1]))
    what.mentioned = True
    return allergic, [what.key]


def _passive_by(ctx: SentenceView, p: RelationPattern, first: int, last: int) -> int | None:
    """The "by" of a passive one-word inflected form ("Nature Physics is published by ..."), if any."""
    msg = ctx.sent.msg
    if not (len(p.lowers) == 1 and msg.lowers[first] != msg.lemmas[first] and p.relation.kind == "object"):
        return None
    for k in range(last + 1, min(last + 4, ctx.sent.end)):
        if msg.lowers[k] == "by":
            return k
        if not msg.alnum[k]:
            return None
    return None


def _negated(msg: Message, first: int, start: int) -> bool:
    """A negation or a hedge just before the relation ("don't live in", "maybe will live in")."""
    return any(msg.lowers[k] in NEGATIONS or msg.lowers[k] in clauses.HEDGES
               for k in range(max(start, first - 3), first))
