"""``RuleExtractor``: the facade that runs the rule parts over a chunk, in order."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Final

from ..contract import ExtractedTriple, Extraction, ExtractionContext, Extractor
from .resources import Resources, load, parsing
from .state import NOT_THE_USER, ROLES, ChunkState, Granularity, Sentence, norm, role_of

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Token

    from ...embedding import Embedder
    from ...ontology import Ontology
    from .lexicon import OntologyLexicon
    from .words import English


class RuleExtractor(Extractor):
    """Offline extractor from spaCy rules plus the ontology's labels and synonyms; see the package doc.

    Build it once per ontology: the tokenizer and all pattern tables are compiled on first use (spaCy is
    imported then, not before), so ``extract`` only tokenizes and looks words up. ``granularity="message"``
    keeps each speaker turn (or paragraph) as one memory instead of one per sentence; sentences under
    ``min_words`` words are merged into a neighbour ("Wow!"); ``concepts`` adds lowercase noun compounds as
    untyped entities; ``small_talk`` keeps turns made only of pleasantries ("Thanks! How can I help?") as
    memories, which are otherwise dropped. ``embedder`` (a semantic one, not hashing) maps predicates and
    nouns the ontology does not spell by meaning (:mod:`.semantic`). Stateless between calls, so one
    instance can serve several threads.
    """

    name = "rules"
    uses_known_memories = False

    def __init__(self, ontology: Ontology, *, granularity: Granularity = "sentence", min_words: int = 4,
                 concepts: bool = True, small_talk: bool = False, embedder: Embedder | None = None) -> None:
        self.ontology = ontology
        self._embedder = embedder
        self.granularity: Granularity = granularity
        self.concepts = concepts
        self.small_talk = small_talk
        self.min_words = min_words
        self._resources: Resources | None = None
        self._lock = threading.Lock()

    @property
    def resources(self) -> Resources:
        """Tokenizer, English tables and the ontology lexicon, built once, on first use."""
        if self._resources is None:
            with self._lock:
                if self._resources is None:
                    self._resources = load(self.ontology, self._embedder)
        return self._resources

    @property
    def nlp(self) -> Language:
        return self.resources.nlp

    @property
    def english(self) -> English:
        return self.resources.english

    @property
    def lexicon(self) -> OntologyLexicon:
        return self.resources.lexicon

    def warm(self) -> None:
        """One extraction of a probe: spaCy's pipeline, the lexicon and the date parser load on first use."""
        from datetime import UTC, datetime

        self.extract("user: Hi, Ana here. I moved to Lisbon last year, on 3 May, and two weeks ago I started at "
                     "Initech.",
                     ExtractionContext(self.ontology, datetime.now(UTC), ["user"], roles={"user": "user"}))

    def extract(self, chunk: str, context: ExtractionContext) -> Extraction:
        res = self.resources  # first: it imports spaCy
        with parsing():  # spaCy's documents live in here: see resources.parsing
            return self._extract(res, chunk, context)

    def _extract(self, res: Resources, chunk: str, context: ExtractionContext) -> Extraction:
        from . import classes, concepts, entities, memories  # spaCy's word lists load with these
        from .dates import find_times
        from .pairs import chunk_pairs
        from .text import tokenize

        state = ChunkState(context)
        messages = tokenize(chunk, context.speakers, res.nlp, res.english,
                            unparsed=lambda speaker: role_of(speaker, context.roles) in NOT_THE_USER)
        entities.register_known(res, state, messages)
        state.known = entities.known_table(res, state)
        state.sentences = Sentence.split(messages)
        for sent in state.sentences:
            entities.add_mentions(res, state, sent)
        entities.merge_short_forms(res, state)
        entities.introductions(res, state)
        if self.concepts:
            for sent in state.sentences:
                concepts.add_compounds(res.english, state, sent)
        for sent in state.sentences:
            classes.type_from_context(res, state, sent)
            classes.people_by_kin(res, state, sent)
            sent.times = find_times(sent.text, context.reference_time)
        # speakers' names, also those learnt from an introduction: "Hello, I'm Kenji." says nothing more
        spoken = [*context.speakers, *(state.entities[k].name for k in state.speakers.values())]
        names = frozenset(w for s in spoken for w in s.casefold().split())
        stated = _triples(res, state)  # first: reading the facts types the people "she" may stand for
        _name_pronouns(res, state)
        stated += chunk_pairs(res, state, stated)  # after the pronouns: "her GP" is somebody's
        found, skipped = memories.memories(res.english, state.sentences, self.granularity, self.min_words,
                                           small_talk=self.small_talk, names=names, roles=context.roles,
                                           speakers=_speaker_names(state))
        triples = [t.model_copy(update={"memory": _stated_in(sent, t.target, t.source)}) for sent, t in stated]
        return Extraction(memories=found, entities=entities.output(state), triples=triples, skipped=skipped)


def _speaker_names(state: ChunkState) -> dict[str, str]:
    """Each speaker label's name as statements say it ("Maya lives in Lisbon."): the label itself, or the
    name an unnamed user introduced ("hi, I'm Tomás"); an unnamed user without one stays "I"."""
    out: dict[str, str] = {}
    user = norm(state.context.user or "")
    for sent in state.sentences:
        label = sent.msg.speaker
        if label is None or label in out or role_of(label, state.context.roles) in NOT_THE_USER:
            continue
        key = state.speakers.get(label) or state.index.get(norm(label))
        ent = state.entities.get(key) if key is not None else None
        if ent is not None and (ent.key != user or label.strip().casefold() not in ROLES):
            out[label] = ent.name
    return out


def _stated_in(sent: Sentence, *names: str) -> int | None:
    """The memory of the sentence that states a fact: of its statements, the first naming the target,
    else the source, else its first."""
    for name in names:
        low = name.casefold()
        for index, text in sent.statements:
            if low in text.casefold():
                return index
    return sent.memory if sent.memory >= 0 else None


def _triples(res: Resources, state: ChunkState) -> list[tuple[Sentence, ExtractedTriple]]:
    """The triples of every statement (an assistant's turns state nothing, a question only its roles),
    first of each (source, relation, target), with the sentence saying it; a correcting sentence replaces
    what its speaker said before instead of adding to it."""
    from . import corrections
    from .arguments import SentenceView
    from .roles import role_triples
    from .triples import sentence_triples

    said: list[corrections.Said] = []
    roles = state.context.roles
    for sent in state.sentences:
        if role_of(sent.msg.speaker, roles) not in NOT_THE_USER:
            if sent.question:  # "a present for my brother Jonas?" asks, and still says who Jonas is
                found = [t for t in role_triples(res, SentenceView.of(state, sent), set())
                         if t.valid_from is None and t.valid_to is None]
            else:
                found = sentence_triples(res, state, sent)
                if corrections.is_correction(sent):
                    found = corrections.apply(res, SentenceView.of(state, sent), found, said)
            said += [corrections.Said(sent.msg.speaker, t, sent) for t in found]
        _remember_person(res, state, sent)
    out: dict[tuple[str, str, str], tuple[Sentence, ExtractedTriple]] = {}
    for s in said:
        key = (s.triple.source, s.triple.relation, s.triple.target)
        where, first = out.setdefault(key, (s.sentence, s.triple))
        if s.triple.valid_to is not None and first.valid_to is None:  # "I work at Acme. I quit in May."
            out[key] = (where, first.model_copy(update={"valid_to": s.triple.valid_to}))
    return list(out.values())


def _name_pronouns(res: Resources, state: ChunkState) -> None:
    """Each "she"/"he"/"her"/"his"/"him" of a parsed sentence -> the last person named before it in the
    chunk (not a speaker, nor the subject of its own clause: "Theo adores him" is not Theo), so a
    statement says who ("Lily wants to learn chess")."""
    from .clauses import verb_of

    named: list[tuple[str, Token | None]] = []  # (entity key, the mention's head token), in order
    for sent in state.sentences:
        label = sent.msg.speaker
        me = None if label is None else state.speakers.get(label) or state.index.get(norm(label))
        doc = sent.msg.doc
        people = {m.start: m for m in sent.mentions if m.key != me and _a_person(res, state, m.key)}
        for k in range(sent.start, sent.end):
            if k in people:
                named.append((people[k].key, doc[people[k].end - 1] if doc is not None else None))
            tok = doc[k] if doc is not None else None
            if tok is None or tok.pos_ != "PRON" or tok.lower_ not in _THIRD_PERSON:
                continue
            verb = verb_of(tok)
            who = next((key for key, head in reversed(named)
                        if head is None or head.doc is not doc or _phrase(head).dep_ not in ("nsubj", "nsubjpass")
                        or verb_of(head).i != verb.i or tok.dep_ in ("nsubj", "nsubjpass")), None)
            if who is not None:
                sent.pronouns[k] = state.entities[who].name


def _phrase(tok: Token) -> Token:
    """The head of the noun phrase a name stands in ("Theo" in "my son Theo" -> "son")."""
    while tok.dep_ in ("appos", "compound", "flat") and tok.head.i != tok.i:
        tok = tok.head
    return tok


_THIRD_PERSON: Final = frozenset({"she", "he", "her", "his", "him"})


def _a_person(res: Resources, state: ChunkState, key: str) -> bool:
    ent = state.entities.get(key)
    return ent is not None and not ent.speaker and res.lexicon.is_person(ent.type)


def _remember_person(res: Resources, state: ChunkState, sent: Sentence) -> None:
    """The last person the sentence names (not its speaker), for a "she" or "he" in the next ones."""
    label = sent.msg.speaker
    me = None if label is None else state.speakers.get(label) or state.index.get(norm(label))
    for m in reversed(sent.mentions):
        if m.key != me and _a_person(res, state, m.key):
            state.recent_person = m.key
            return
