"""The arguments of a relation inside one sentence: its subject, its objects, and the checked triple.

``SentenceView`` indexes a sentence's mentions by start and end token once, so the relation finders
(``triples`` and ``roles``) can ask "which entity ends just before token k" in constant time.
``make`` is the one place a triple is built: it checks the ontology's domain and range against the
entities' types and records which entities a triple used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from spacy.lang.en.stop_words import STOP_WORDS

from ...ontology.model import RelationInfo
from ..contract import ExtractedTriple
from .resources import Resources
from .state import ChunkState, Entity, Mention, Sentence, norm
from .text import Message
from .words import (
    CONJUNCTIONS,
    DETERMINERS,
    EVALUATIVE,
    FIRST_PERSON,
    GENERIC_HEADS,
    INTERJECTIONS,
    JOB_ACRONYMS,
    JOB_HEADS,
    JOB_SUFFIXES,
    MONTHS,
    OTHER_PRONOUNS,
    POSSESSIVE_DETS,
    PREPOSITIONS,
    WEEKDAYS,
)

if TYPE_CHECKING:
    from spacy.tokens import Doc

    from .dates import TimeExpr

_SKIP_BEFORE_OBJECT: Final = frozenset(DETERMINERS | {"new", "old", "local", "nearby", "famous", "beautiful",
                                                      "small", "big", "little", "great", "current", "former"})
_COMMON_VERBS: Final = frozenset({"go", "be", "do", "get", "make", "take", "see", "come", "know", "think",
                                  "want", "try", "say", "tell", "give", "find", "keep", "let", "put", "seem",
                                  "feel", "have", "start", "help", "talk", "turn", "use", "work", "play"})
_SUBJECT_STOPS: Final = frozenset({"but", "while", "whereas", "although", "though", "because", "if", "when", "so",
                                   "yet", "nor", "unless", "whether", "since"})


@dataclass
class SentenceView:
    sent: Sentence
    speaker: str | None
    """Entity key of the message's speaker, what "I" and "me" stand for."""
    ment_start: dict[int, Mention]
    ment_end: dict[int, Mention]
    inside: list[bool]
    """Per token of the sentence: part of a mention."""
    state: ChunkState
    literal_times: set[int] = field(default_factory=set)
    """Time expressions (by start) used as a date value, so not also as the triple's ``valid_from``."""

    @classmethod
    def of(cls, state: ChunkState, sent: Sentence) -> SentenceView:
        label = sent.msg.speaker
        speaker = None if label is None else state.speakers.get(label) or state.index.get(norm(label))
        inside = [False] * (sent.end - sent.start)
        for m in sent.mentions:
            for k in range(m.start, m.end):
                inside[k - sent.start] = True
        return cls(sent, speaker, {m.start: m for m in sent.mentions}, {m.end: m for m in sent.mentions},
                   inside, state)

    @property
    def endpoints(self) -> set[str]:
        return self.state.endpoints


def subject(ctx: SentenceView, first: int) -> str | None:
    """Nearest entity or first-person pronoun left of the relation, skipping prepositional objects; of a
    verb conjoined to another, the other's subject ("Took a job with Fiji Power and moved to Suva": the
    speaker, whom chat drops)."""
    msg, start = ctx.sent.msg, ctx.sent.start
    tok = msg.doc[first] if msg.doc is not None else None
    if tok is not None and tok.dep_ == "conj" and tok.pos_ == "VERB" and tok.head.pos_ == "VERB" \
            and start <= tok.head.i < first:
        if any(c.dep_ in ("nsubj", "nsubjpass") for v in (tok, tok.head) for c in v.children):
            return parsed_subject(ctx, first)  # "My brother quit Google and moved to Oslo": none named
        if _subjectless(ctx, tok.head.i):
            return ctx.speaker
    k = first - 1
    # Apposition: "Dow Jones & Company, a division of News Corp".
    d = k - 1 if k >= start and msg.lowers[k] in ("a", "an", "the") else k
    if d >= start and msg.lowers[d] == "," and (m := ctx.ment_end.get(d)) is not None \
            and not (m.start > start and msg.lowers[m.start - 1] in PREPOSITIONS):
        return m.key  # not "a developer at Alibaba, living in Hangzhou": Alibaba is the object of "at"
    while k >= start:
        m = ctx.ment_end.get(k + 1)
        if m is not None:
            before = m.start - 1
            if before >= ctx.sent.start and msg.lowers[before] in PREPOSITIONS:
                k = m.start - 1
                continue
            if m.end < first and msg.doc is not None and msg.doc[m.end].tag_ == "POS":
                return None  # "Ana's company hired me": the company, which has no name here
            if _an_object(msg, m.end - 1):  # "(I) sold my old Hilux and bought a Ranger": not the Hilux
                parsed = parsed_subject(ctx, first)
                return parsed if parsed is not None else ctx.speaker if speaker_is_person(ctx) else None
            return m.key
        lo = msg.lowers[k]
        if lo in FIRST_PERSON or (lo == "we" and speaker_is_person(ctx)):
            return ctx.speaker  # "we moved to Valencia": true of the speaker too
        if lo in ("a", "an", "the", "this", "that") and not (k > start and msg.lemmas[k - 1] == "be"):
            return None  # "the westernmost location is in X": a nearer, nameless subject
        if lo in _SUBJECT_STOPS:
            return None
        if lo in POSSESSIVE_DETS or lo in OTHER_PRONOUNS or lo == ";":
            if lo in ("it", "he", "she", "they", "its", "his", "her") and ctx.state.topic is not None \
                    and msg.initial[k]:
                return ctx.state.topic
            if lo in ("he", "she") and ctx.state.recent_person is not None:
                return ctx.state.recent_person  # "My sister Inês ... She lives in Porto."
            return None
        k -= 1
    return ctx.speaker if _subjectless(ctx, first) else None


def _an_object(msg: Message, k: int) -> bool:
    """Whether the parse makes the word at ``k`` the object of a verb (not anything's subject)."""
    return msg.doc is not None and msg.doc[k].dep_ in ("dobj", "dative", "oprd")


def parsed_subject(ctx: SentenceView, first: int) -> str | None:
    """The parse's subject of the verb at ``first`` (or of the verb it is conjoined to): "I" is the
    speaker, "he"/"she" the last person named, a name its mention."""
    doc = ctx.sent.msg.doc
    if doc is None:
        return None
    tok = doc[first]
    for _ in range(3):
        subj = next((c for c in tok.children if c.dep_ in ("nsubj", "nsubjpass")), None)
        if subj is not None:
            low = subj.lower_
            if low in FIRST_PERSON or (low == "we" and speaker_is_person(ctx)):
                return ctx.speaker
            if low in ("he", "she"):
                return ctx.state.recent_person
            m = next((m for m in ctx.sent.mentions if m.start <= subj.i < m.end), None)
            return m.key if m is not None else None
        if tok.dep_ not in ("conj", "xcomp") or tok.head is tok:
            return None
        tok = tok.head
    return None


def subjects(ctx: SentenceView, first: int) -> list[str]:
    """:func:`subject`, with the others of "Rui and Sara turned 5" and "My husband David and I have"."""
    who = subject(ctx, first)
    if who is None:
        return []
    msg, start = ctx.sent.msg, ctx.sent.start
    k = first - 1
    while k >= start and msg.lowers[k] in LEAD_INS:
        k -= 1
    if k >= start and msg.lowers[k] in FIRST_PERSON:
        k -= 1
    elif (m := ctx.ment_end.get(k + 1)) is not None and m.key == who:
        k = m.start - 1
    else:
        return [who]
    out = [who]
    while k - 1 >= start and msg.lowers[k] in ("and", ",") and (m := ctx.ment_end.get(k)) is not None \
            and _opens_clause(ctx, m.start - 1):
        if m.key not in out:
            out.append(m.key)
        k = m.start - 1
    return out


def _opens_clause(ctx: SentenceView, k: int) -> bool:
    """Whether a name after token ``k`` can start a subject: the sentence start, punctuation, or a role
    noun after "my" ("My husband David and I"); not "My manager is Carla Diaz and I ..."."""
    msg, start = ctx.sent.msg, ctx.sent.start
    owner = k - 2 if k - 2 >= start and _adjective(msg, k - 1) else k - 1  # "My best friend Kwame and I"
    return k < start or not msg.alnum[k] or (owner >= start and msg.lowers[owner] in POSSESSIVE_DETS
                                             and msg.lemmas[k] != "be")


LEAD_INS: Final = frozenset({"just", "recently", "finally", "also", "still", "now", "been", "currently", "and", "both",
                              "so", "then", "actually", "only", "already", "officially"})


def clause_start(ctx: SentenceView, k: int) -> int:
    """Where the clause of token ``k`` starts: after the last colon or semicolon before it ("Big move:
    left Melbourne for Auckland", "Moved in May; started at Xero in June"), else at the sentence's start."""
    msg = ctx.sent.msg
    return next((j + 1 for j in range(k - 1, ctx.sent.start - 1, -1) if msg.lowers[j] in (":", ";")),
                ctx.sent.start)


def _subjectless(ctx: SentenceView, first: int) -> bool:
    """A named speaker's statement that starts with its verb ("Moved back to Sweden last year", "Living in
    Gothenburg now", "been living in Helsinki"): chat drops the "I"."""
    msg = ctx.sent.msg
    if not speaker_is_person(ctx) or first >= ctx.sent.end or not msg.lowers[first].isalpha():
        return False
    return all(msg.lowers[k] in LEAD_INS or not msg.alnum[k] for k in range(clause_start(ctx, first), first))


def speaker_is_person(ctx: SentenceView) -> bool:
    if ctx.speaker is None:
        return False
    ent = ctx.state.entities.get(ctx.speaker)
    return ent is not None and (ent.speaker or ctx.speaker in ctx.state.speakers.values())


def objects(res: Resources, ctx: SentenceView, k: int, *, allow_np: bool) -> list[str]:
    """The entities right of the relation ("in Lisbon", "Ana, Luis and Inês"), or a noun phrase if allowed."""
    msg, end = ctx.sent.msg, ctx.sent.end
    skipped = 0
    while k < end and skipped < 4:
        lo = msg.lowers[k]
        if k in ctx.ment_start:
            break
        if lo in ("me", "myself") and ctx.speaker is not None:
            return [ctx.speaker]
        content = lo.isalpha() and lo not in PREPOSITIONS and lo not in CONJUNCTIONS and lo not in STOP_WORDS \
            and not msg.caps[k]
        if lo == "of" and skipped and k + 1 in ctx.ment_start and not allow_np:  # "the city of Porto"
            k += 1
            continue
        if lo in _SKIP_BEFORE_OBJECT or (not allow_np and (lo in ("called", "named") or (content and skipped < 2))):
            k += 1
            skipped += 1
            continue
        break
    if k < end and k in ctx.ment_start:
        return listed(ctx, k)
    if k < end and (named := _apposed(ctx, k)) is not None:
        return listed(ctx, named)  # "I look after my mum, Farida Haddad": Farida Haddad
    if allow_np:
        np = noun_phrase(res, ctx, k)
        if np is not None:
            return [np]
    return []


def _apposed(ctx: SentenceView, k: int) -> int | None:
    """Where the name set beside the common noun at ``k`` starts, when the parse makes it its apposition."""
    doc = ctx.sent.msg.doc
    if doc is None or ctx.sent.msg.caps[k]:
        return None
    app = next((c for c in doc[k].children if c.dep_ == "appos"), None)
    m = next((m for m in ctx.sent.mentions if app is not None and m.start <= app.i < m.end), None)
    return m.start if m is not None else None


def listed(ctx: SentenceView, k: int) -> list[str]:
    """The mention at ``k`` and up to three more joined by "and", "," or "&"."""
    msg, end = ctx.sent.msg, ctx.sent.end
    keys = [ctx.ment_start[k].key]
    j = ctx.ment_start[k].end
    while j + 1 < end and msg.lowers[j] in ("and", ",", "&") and len(keys) < 4:
        nxt = j + 1
        if msg.lowers[nxt] == "and":
            nxt += 1
        if nxt + 1 < end and nxt not in ctx.ment_start and _adjective(msg, nxt):
            nxt += 1  # "Spanish and decent English"
        m = ctx.ment_start.get(nxt)
        if m is None:
            break
        keys.append(m.key)
        j = m.end
    return keys


def to_do(ctx: SentenceView, k: int) -> str | None:
    """What "wants to <verb> ..." / "goal is to <verb> ..." names: the verb's phrase up to a comma or a new
    clause, without its time words ("pass the JLPT N4", not "... next December")."""
    msg, doc = ctx.sent.msg, ctx.sent.msg.doc
    if doc is None or k >= ctx.sent.end:
        return None
    if msg.lowers[k] == "to" and k > ctx.sent.start and msg.lowers[k - 1] != "to":
        k += 1
    if k >= ctx.sent.end or msg.lowers[k - 1] != "to" or doc[k].pos_ != "VERB":
        return None
    verb = doc[k]
    cut = {t.i for c in verb.children if c.dep_ in ("npadvmod", "tmod", "advcl", "conj", "cc", "punct", "mark")
           for t in c.subtree}
    words = [t.i for t in verb.subtree if t.i >= k and t.i not in cut and t.i < ctx.sent.end]
    end = next((j for j, w in enumerate(words) if (j and w != words[j - 1] + 1) or msg.texts[w] in (",", "(", ";")),
               len(words))
    words = words[:end][:10]
    if len(words) < 2:
        return None
    ent = ctx.state.entity(" ".join(msg.span_text(words[0], words[-1] + 1).split()))
    ent.mentioned = True
    return ent.key


def _parsed_head(msg: Message, k: int, end: int) -> int | None:
    """The noun three words at most from ``k`` that the parse hangs the words from ``k`` on."""
    doc = msg.doc
    if doc is None or k >= end:
        return None
    j = k
    while j < end - 1 and j - k < 2 and doc[j].dep_ in ("compound", "amod", "nmod", "nummod") \
            and k < doc[j].head.i <= k + 2:
        j = doc[j].head.i
    return j if j > k and doc[j].pos_ in ("NOUN", "PROPN") else None


def field_acronym(msg: Message, k: int, end: int) -> bool:
    """A short all-capitals word naming a field before a lowercase word of a title ("ML team lead",
    "HR manager"), not a name."""
    return msg.texts[k].isupper() and len(msg.texts[k]) <= 4 and k + 1 < end and msg.lowers[k + 1].isalpha() \
        and not msg.caps[k + 1]


def _adjective(msg: Message, k: int) -> bool:
    """Whether the parse tags the lowercase word at ``k`` an adjective ("decent English")."""
    return msg.doc is not None and not msg.caps[k] and msg.doc[k].pos_ == "ADJ"


def noun_phrase(res: Resources, ctx: SentenceView, k: int, last: int | None = None) -> str | None:
    """A short lowercase noun phrase as an object ("I love painting", "I have a dog"), registered as an entity;
    ``last``: the parse's head noun, where the phrase ends ("metformin", not "metformin twice")."""
    msg = ctx.sent.msg
    while k < ctx.sent.end and (msg.lowers[k] in DETERMINERS or msg.lowers[k] in EVALUATIVE) \
            and not (k + 1 < ctx.sent.end and f"{msg.lowers[k]} {msg.lowers[k + 1]}" in res.clauses.examples):
        k += 1  # "a bad knee" keeps "bad": a class's definition lists it whole
    if last is None:
        last = _parsed_head(msg, k, ctx.sent.end)  # "generalised anxiety disorder": its modifiers lead to it
    end = ctx.sent.end if last is None else min(ctx.sent.end, last + 1)
    words: list[int] = []
    while k < end and sum(msg.lowers[w].isalpha() for w in words) < (2 if last is None else 3):
        lo = msg.lowers[k]  # two words, three up to the parse's head; an inner number is free
        inner_number = lo.isdigit() and words and k + 1 < end and msg.lowers[k + 1].isalpha()  # "type 2 diabetes"
        if not (lo.isalpha() or ("-" in lo and lo.replace("-", "").isalpha()) or inner_number) or msg.caps[k] \
                or lo in STOP_WORDS or lo in PREPOSITIONS or lo in CONJUNCTIONS or lo in INTERJECTIONS:
            break
        words.append(k)
        k += 1
    while words and msg.lowers[words[-1]].isdigit():
        words.pop()
    if not words:
        return None
    head = msg.lowers[words[-1]]
    doc = msg.doc
    if msg.lemmas[words[-1]] not in res.english.nouns and head not in res.english.nouns \
            and not (doc is not None and doc[words[-1]].pos_ == "NOUN"):  # the parse's noun ("metformin")
        return None
    if head in GENERIC_HEADS or msg.lemmas[words[0]] in _COMMON_VERBS or head in MONTHS or head in WEEKDAYS \
            or head in ("today", "yesterday", "tomorrow", "tonight", "ago"):
        return None
    lemma = msg.lemmas[words[-1]]
    if head.endswith("s") and lemma in (head[:-1], head[:-2]) and not head.endswith("ss"):
        head = lemma
    name = " ".join([*(msg.lowers[w] for w in words[:-1]), head])
    ent = ctx.state.entity(name)
    ent.mentioned = True
    written = " ".join(msg.span_text(words[0], words[-1] + 1).split())
    if norm(written) != ent.key:  # "peanuts" stays findable as written, beside the singular name
        ent.aliases.setdefault(written, None)
        ctx.state.index.setdefault(norm(written), ent.key)
    lex = res.lexicon
    cls = lex.class_words.get(tuple(msg.lemmas[w] for w in words)) or lex.class_words.get((msg.lemmas[words[-1]],))
    ent.set_type(cls, 1)
    ctx.sent.mentions.append(Mention(words[0], words[-1] + 1, ent.key, "np"))
    return ent.key


def _infer_type(res: Resources, ent: Entity, allowed: tuple[str, ...]) -> None:
    """An endpoint takes the one class its relation requires when it has none or only a broader one
    ("Ana is a patient of Dr Hale": Ana is a Patient, the Person "Dr Hale" a Doctor)."""
    if len(allowed) != 1 or allowed[0] not in res.ontology.classes:
        return
    cls = res.ontology.classes[allowed[0]]
    if cls.name == ent.type or res.lexicon.legal_class == cls.name:
        return
    if ent.type is None or (cls.iri != res.lexicon.class_iri(ent.type)
                            and res.lexicon.class_iri(ent.type) in cls.ancestors):
        ent.type, ent.rank = cls.name, min(ent.rank, 2)


def _language_of(res: Resources, ctx: SentenceView, country: str, rel: RelationInfo) -> Entity | None:
    """"I speak Japanese": the nationality word names the language where the relation wants one (the
    mention was read as the country, Japan)."""
    language = res.lexicon.first_class(("Language",))
    if language is None or not res.lexicon.compatible(language, rel.range):
        return None
    m = next((m for m in ctx.sent.mentions if m.key == country and m.kind == "demonym"), None)
    if m is None:
        return None
    ent = ctx.state.entity(ctx.sent.msg.texts[m.start], own=True)
    ent.set_type(language, 1)
    ent.mentioned = True
    return ent


def make(res: Resources, ctx: SentenceView, source: str, rel: RelationInfo, target: str, *,
         literal: bool = False, ended: bool = False) -> ExtractedTriple | None:
    """The triple, if its endpoints' types fit the relation's domain and range; ``target`` is an entity key,
    or the value itself when ``literal``. Dated by the sentence's first time phrase not used as a value:
    its start, or, when ``ended`` ("I left Acme in May"), its end (the reference time without one)."""
    state = ctx.state
    src = state.entities.get(source)
    if src is None or source == target:
        return None
    if not res.lexicon.compatible(src.type, rel.domain):
        return None
    if source == ctx.speaker and src.type is None and not _may_be_a_person(res, rel.domain):
        return None  # "I take metformin for my diabetes" does not make the speaker a drug
    if literal:
        target_name = target
    else:
        dst = state.entities.get(target)
        if dst is not None and not res.lexicon.compatible(dst.type, rel.range):
            dst = _language_of(res, ctx, target, rel)
        if dst is None:
            return None
        target = dst.key
        target_name = dst.name
        ctx.endpoints.add(target)
        _infer_type(res, dst, rel.range)
    ctx.endpoints.add(source)
    _infer_type(res, src, rel.domain)
    times = _times_of(ctx, target if not literal else source)
    ends = [t for t in times if _UNTIL.match(t.text) or _UNTIL_BEFORE.search(ctx.sent.text[:t.start])]
    starts = [t for t in times if t not in ends]
    valid = starts[0].iso if starts else None
    until = ends[0].iso if ends else None
    if ended and until is None:  # "I left Acme in May": the time is the end; none said: by now
        valid, until = None, valid or state.context.reference_time.date().isoformat()
    if valid is not None and until is not None and until < valid:
        valid = None  # "until 1992" is sure; a later start ("next year") belongs to another verb
    return ExtractedTriple(source=src.name, relation=rel.name, target=target_name, valid_from=valid,
                           valid_to=until)


def _times_of(ctx: SentenceView, key: str) -> list[TimeExpr]:
    """The sentence's time phrases (not used as values) that date a fact of entity ``key``: with a
    parse, all but those of another verb that names something of its own ("I moved to Lisbon last year
    and work for Northwind": the year dates the move, not the job), or else the one said before its
    "since then"; without a parse, or with no mention of it, all."""
    times = [t for t in ctx.sent.times if t.start not in ctx.literal_times]
    msg, doc = ctx.sent.msg, ctx.sent.msg.doc
    mention = next((m for m in ctx.sent.mentions if m.key == key), None)
    if not times or doc is None or mention is None or (verb := _governing_verb(doc, mention.start)) is None:
        return times
    named = {_governing_verb(doc, m.start) for m in ctx.sent.mentions if m.key != key and not _subject(doc, m.start)}
    out, before = [], []
    for t in times:
        at = ctx.sent.char_start + t.start
        k = next((j for j in range(ctx.sent.start, ctx.sent.end) if msg.starts[j] >= at), None)
        other = _governing_verb(doc, k) if k is not None else None
        # another verb's time, when that verb names something of its own ("... and work for Northwind");
        # not "my GP prescribed it in July", which says when "I'm on sertraline" began
        if other in (verb, None) or other not in named:
            out.append(t)
        elif k is not None and k < mention.start:
            before.append(t)
    # "diagnosed in June 2021 and on metformin since then": "then" is the time said before
    then = any(msg.lowers[j] == "then" and msg.lowers[j - 1] in ("since", "from", "until")
               and _governing_verb(doc, j) == verb for j in range(ctx.sent.start + 1, ctx.sent.end))
    return out or (before[-1:] if then else [])


def _subject(doc: Doc, k: int) -> bool:
    """Whether token ``k`` is in its clause's subject (the path to its verb passes a subject edge)."""
    tok = doc[k]
    for _ in range(len(doc)):
        if tok.pos_ in ("VERB", "AUX") or tok.head.i == tok.i:
            return False
        if tok.dep_ in ("nsubj", "nsubjpass", "expl"):
            return True
        tok = tok.head
    return False


def _governing_verb(doc: Doc, k: int) -> int | None:
    """The index of the verb whose clause token ``k`` is in: itself or its nearest verb ancestor."""
    tok = doc[k]
    for _ in range(len(doc)):
        if tok.pos_ in ("VERB", "AUX") and tok.dep_ not in ("aux", "auxpass"):
            return int(tok.i)
        if tok.head.i == tok.i:
            return None
        tok = tok.head
    return None


def _may_be_a_person(res: Resources, allowed: tuple[str, ...]) -> bool:
    """Whether an untyped speaker may take a class of ``allowed``: always with a person class in the
    ontology (its types are checked as for anyone); else, with a semantic embedder, when one of those
    classes is the nearest to "a person" (a patient, not a drug); without one, as before."""
    if res.lexicon.person_class is not None or res.semantic is None or not allowed:
        return True
    return res.semantic.class_within("a person", allowed) is not None


_UNTIL: Final = re.compile(r"(?:until|till|til|through|up to)\b", re.IGNORECASE)
_UNTIL_BEFORE: Final = re.compile(r"\b(?:until|till|til|through|up to)\s+(?:the\s+)?$", re.IGNORECASE)
"""Opening a time phrase or right before it: when the fact ended ("worked there until March")."""


def is_job_word(lower: str, res: Resources | None = None) -> bool:
    """A word that ends a job title: a common one ("designer", "PM"), or a name of a class of people in the
    ontology ("cardiologist" for a clinic's physicians)."""
    if lower in JOB_HEADS or lower in JOB_ACRONYMS or lower.endswith(JOB_SUFFIXES):
        return True
    cls = res.lexicon.class_words.get((res.english.lemma(lower),)) if res is not None else None
    return cls is not None and res is not None and res.lexicon.is_person(cls) and cls != res.lexicon.person_class


def appositive_of(res: Resources, ctx: SentenceView, k: int) -> str | None:
    """The person a comma at ``k`` sets a description after ("Dr Lund, a cardiologist at ..."), if any."""
    msg = ctx.sent.msg
    if msg.lowers[k] != "," and not (msg.lowers[k] in ("-", "–", "—") and msg.space_before[k]):
        return None
    m = ctx.ment_end.get(k)
    if m is None and k - 1 >= ctx.sent.start and msg.lowers[k - 1] == "here":
        m = ctx.ment_end.get(k - 1)  # "Hannah here, UX designer at Otto Group"
    if m is None:
        return None
    ent = ctx.state.entities.get(m.key)
    return m.key if ent is not None and (ent.type is None or res.lexicon.is_person(ent.type)) else None


def by_example(res: Resources, word: str) -> list[RelationInfo]:
    """"I'm vegetarian": a word a class's definition gives as an example (a diet) says the one relation
    whose range is that class (follows diet)."""
    name = res.clauses.examples.get(word)
    rel = res.clauses.only_relation.get(name) if name is not None else None
    return [rel] if rel is not None else []


def workplace(res: Resources) -> RelationInfo | None:
    """The relation of a person to where they work: ``worksFor``, else the one the ontology spells "works at"
    ("works at clinic")."""
    found = res.ontology.relation_info("worksFor")
    if found is None:
        found = next((r for r in res.clauses.lookup(("work", "at"), False) if r.kind == "object"), None)
    return found


def employer(ctx: SentenceView, k: int, *, gap: int) -> str | None:
    """The organization of "at/for/with <Org>" at ``k``, or up to ``gap`` words later (no verb between
    is checked, only that no "and"/"but" clause starts)."""
    msg, e = ctx.sent.msg, ctx.sent.end
    for j in range(k, min(k + gap + 1, e - 1)):
        lo = msg.lowers[j]
        if j > k and lo in ("and", "but", "because", "so"):
            return None
        if lo in ("at", "for", "with"):
            at = j + 2 if msg.lowers[j + 1] == "the" else j + 1
            m = ctx.ment_start.get(at)
            return m.key if m is not None else None
    return None


def place_after(res: Resources, ctx: SentenceView, rel: RelationInfo, obj: str, k: int) -> ExtractedTriple | None:
    """"at Northwind in Lisbon": the object is located in the place named right after it (an event is
    held there: "PyCon US in Pittsburgh"), unless the relation's object is itself a place ("lives in
    Porto in Portugal" is another reading)."""
    located = res.ontology.relation_info("locatedIn")
    place = res.ontology.resolve_class("Place")
    if located is None or place is None or any(res.ontology.is_subclass(r, place) for r in rel.range):
        return None
    ent = ctx.state.entities.get(obj)
    if ent is None or res.lexicon.is_person(ent.type):
        return None
    mention = next((m for m in ctx.sent.mentions if m.key == obj and m.start >= k), None)
    if mention is None:
        return None
    msg, j = ctx.sent.msg, mention.end
    if j + 1 >= ctx.sent.end or msg.lowers[j] not in ("in", "at") or (j + 1) not in ctx.ment_start:
        return None
    where = ctx.ment_start[j + 1]
    target = ctx.state.entities.get(where.key)
    if target is None or target.key == obj or res.lexicon.is_person(target.type):
        return None
    held, event = res.ontology.relation_info("heldAt"), res.ontology.resolve_class("Event")
    if held is not None and event is not None and ent.type and res.ontology.is_subclass(ent.type, event):
        return make(res, ctx, obj, held, where.key)
    return make(res, ctx, obj, located, where.key)


def restated(ctx: SentenceView, k: int) -> bool:
    """Whether "still" at ``k`` opens a verbless clause ("Still in Leeds, still a warden"), not "I'm
    still at Tabby" (the copula says it) nor "still counting elk"."""
    msg, doc = ctx.sent.msg, ctx.sent.msg.doc
    after = doc[k + 1] if doc is not None else None
    if msg.lowers[k] != "still" or after is None or after.pos_ in ("VERB", "AUX") \
            or (after.pos_ == "ADJ" and after.dep_ != "amod"):  # "still obsessed with", not "still regional manager"
        return False
    return all(msg.lowers[j] in LEAD_INS for j in range(ctx.sent.start, k)) or msg.lowers[k - 1] in (",", ";", "and")


def speaker_before(ctx: SentenceView, k: int) -> str | None:
    """Who "as a <title>" describes: the speaker when "I" comes first in the sentence, or when it starts
    with its verb ("Got promoted to ...", "Now working as ...": chat drops the "I")."""
    msg, doc = ctx.sent.msg, ctx.sent.msg.doc
    if any(msg.lowers[j] in FIRST_PERSON for j in range(ctx.sent.start, k)):
        return ctx.speaker
    start = clause_start(ctx, k)
    first = next((j for j in range(start, k) if msg.lowers[j] not in LEAD_INS), None)
    if first is not None and doc is not None and doc[first].pos_ in ("VERB", "AUX") and speaker_is_person(ctx) \
            and not any(doc[j].dep_ in ("nsubj", "nsubjpass") for j in range(start, k)):
        return ctx.speaker  # a person's turn, not a document's ("Served as a senator ...")
    return None
