"""Rule-based extractor: what graphmem uses when no LLM is configured.

Offline and deterministic: spaCy's English tokenizer (``spacy.blank("en")``, no model download), the
lookup lemmas of ``spacy-lookups-data``, the ontology's labels and synonyms, and ``dateparser`` for
time phrases. It has lower recall than an LLM but the same output shape:

* memories: the chunk's sentences, verbatim (very short ones are merged with a neighbour), typed
  episodic when a time phrase resolves against the reference time, procedural for rule or how-to
  sentences, semantic otherwise, and attributed to the speaker of "Speaker: text" lines;
* entities: capitalized names, quoted titles, identifiers, known entities and speakers, typed only on
  evidence ("the city of Lyon", "Tennessee is a state", "Avery County", "Acme Inc."); also names inside
  names ("Tulsa" in "Philbrook Museum of Tulsa"), the country behind a nationality ("Mexican" -> Mexico)
  and, unless ``concepts=False``, lowercase noun compounds ("support group", "mental health");
* triples: "X <relation label or synonym> Y" inside a sentence, role nouns ("Maya's manager Tomás",
  "my sister Inês"), and datatype values (dates, ages, emails, job titles).

Search relies on entities shared between memories, so names are normalized the same way everywhere
and short forms ("Snow" after "Hank Snow", "Mel" for the speaker "Melanie") become aliases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final, Literal

import spacy
from spacy.lang.en.stop_words import STOP_WORDS

from ..models import MemoryType
from ..ontology import Ontology
from ..ontology.model import RelationInfo
from .rules_lexicon import (
    CONJUNCTIONS,
    COUNTRY_OF_DEMONYM,
    DEMONYMS,
    DETERMINERS,
    DIRECTION_WORDS,
    EVALUATIVE,
    FIRST_PERSON,
    GENERIC_HEADS,
    INTERJECTIONS,
    LEGAL_SUFFIXES,
    MONTHS,
    NAME_CONNECTORS,
    NAME_SUFFIXES,
    NEGATIONS,
    OTHER_PRONOUNS,
    PERSON_TITLES,
    POSSESSIVE_DETS,
    PREPOSITIONS,
    WEEKDAYS,
    Direction,
    English,
    OntologyLexicon,
    RelationPattern,
    english,
)
from .rules_text import Message, fill_tokens, split_messages
from .rules_time import TimeExpr, find_times
from .schema import (
    ExtractedEntity,
    ExtractedMemory,
    ExtractedTriple,
    Extraction,
    ExtractionContext,
    Extractor,
    KnownEntity,
)

Granularity = Literal["sentence", "message"]

_SPEAKER = "\x00speaker"
"""Placeholder entity key for "I/me" before the speaker's own key is known."""
_BE: Final = frozenset({"be", "'s", "’s", "'re", "'m"})
_POSSESSIVE: Final = frozenset({"'s", "’s", "'", "’"})
_SKIP_BEFORE_OBJECT: Final = frozenset(DETERMINERS | {"new", "old", "local", "nearby", "famous", "beautiful",
                                                      "small", "big", "little", "great", "current", "former"})
_NUMBER_WORDS: Final = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                        "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20, "thirty": 30}
_SCALE: Final = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_NUMBER: Final = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$|^\d+(?:\.\d+)?$")
_EMAIL: Final = re.compile(r"^[\w.+-]+@[\w-]+(?:\.[\w-]+)+$")
_PHONE: Final = re.compile(r"\+?\d[\d\s().-]{6,18}\d")
_VERSION: Final = re.compile(r"^(?:v\d+(?:\.\d+)*|\d+\.\d+\.\d+(?:\.\d+)?)$", re.IGNORECASE)
_TICKET: Final = re.compile(r"^[A-Z][A-Z0-9]{1,9}-\d+$")
_QUOTES: Final = re.compile(r"“([^”\n]{1,120})”|\"([^\"\n]{1,120})\"|``\s*([^`'\n]{1,120}?)\s*''|"
                            r"(?:(?<=\s)|^)'([A-Z0-9][^'\n]{0,100}?)'(?=[\s.,;:!?)]|$)|‘([^’\n]{1,120})’")
_PROCEDURAL: Final = re.compile(
    r"^\W*(?:please\s+)?(?:"
    r"(?:always|never)\s+(?P<v1>[a-z]+)"
    r"|(?:make sure|be sure|remember|don't forget|do not forget)\b"
    r"|do not\s+(?P<v2>[a-z]+)"
    r"|to\s+(?P<v3>[a-z]+)\b[^,.;!?]{1,80},\s*\S"
    r"|first,?\s+(?P<v4>[a-z]+)\b.{0,200}\bthen\b"
    r"|step\s+\d+\b"
    r"|\d+[.)]\s+(?P<v5>[a-z]+)\b"
    r"|(?:when|if|before|after)\b[^,]{1,80},\s*(?:always|never|make sure|remember to)\b)",
    re.IGNORECASE)
_ADVERBS: Final = frozenset({"really", "also", "totally", "just", "absolutely", "still", "do", "does", "did",
                             "truly", "so", "definitely", "now", "currently", "already", "always", "usually",
                             "actually", "even", "both", "all"})
_COMMON_VERBS: Final = frozenset({"go", "be", "do", "get", "make", "take", "see", "come", "know", "think",
                                  "want", "try", "say", "tell", "give", "find", "keep", "let", "put", "seem",
                                  "feel", "have", "start", "help", "talk", "turn", "use", "work", "play"})
_STOP_VERBS: Final = frozenset({"back", "call", "do", "give", "go", "keep", "make", "move", "put", "see", "show",
                                "take", "get", "say", "empty", "fill", "name", "mention", "use"})
_DATE_PREPS: Final = frozenset({"in", "on", "since", "until", "by", "of", "last", "next", "early", "late", "mid",
                                "this", "during", "from", "through", "till", "before", "after", "every"})
_SUBJECT_STOPS: Final = frozenset({"but", "while", "whereas", "although", "though", "because", "if", "when", "so",
                                   "yet", "nor", "unless", "whether", "since"})
_TIME_NOUNS: Final = frozenset({"yesterday", "today", "tomorrow", "tonight", "morning", "evening", "night",
                                "weekend", "afternoon", "ago", "now", "lately", "recently", "soon"})
_ROLE_SPEAKERS: Final = frozenset({"assistant", "system", "bot", "ai", "tool", "model", "agent"})


@dataclass
class _Entity:
    key: str
    name: str
    order: int
    type: str | None = None
    rank: int = 99
    """How sure the type is: 0 known entity, 1 explicit pattern, 2 name heuristic."""
    aliases: dict[str, None] = field(default_factory=dict)
    existing: int | None = None
    words: tuple[str, ...] = ()
    multi_cap: bool = False
    """Came from a capitalized multi-word span (may own short forms like "Snow")."""
    single: bool = False
    speaker: bool = False
    mentioned: bool = False
    heading: bool = False

    def set_type(self, name: str | None, rank: int) -> None:
        if name and rank < self.rank:
            self.type, self.rank = name, rank


@dataclass
class _Mention:
    start: int
    end: int
    key: str
    kind: str


@dataclass
class _Sentence:
    msg: Message
    start: int
    end: int
    text: str
    char_start: int
    char_end: int
    mentions: list[_Mention] = field(default_factory=list)
    times: list[TimeExpr] = field(default_factory=list)
    memory: int = -1

    @property
    def question(self) -> bool:
        return self.text.rstrip(" \"'”’)]").endswith("?")


@dataclass
class _Chunk:
    """Per-call state: the entity registry and what was found, sentence by sentence."""

    context: ExtractionContext
    entities: dict[str, _Entity] = field(default_factory=dict)
    index: dict[str, str] = field(default_factory=dict)
    """Normalized surface -> entity key (names and aliases)."""
    sentences: list[_Sentence] = field(default_factory=list)
    topic: str | None = None
    """The heading entity of a plain-text chunk: what "It" and "He" at a sentence start refer to."""
    counter: int = 0
    known: tuple[dict[tuple[str, ...], str], set[str], int] | None = None
    """Known names, speakers and the heading as token tuples, for case-insensitive matching."""
    weak: list[tuple[_Sentence, int, int]] = field(default_factory=list)
    """Sentence-initial common words ("Snow", "Hall") that are names only as short forms of a longer one."""
    nested: set[str] = field(default_factory=set)
    """Names inside longer names ("Tulsa" in "Philbrook Museum of Tulsa"): entities, not mentions."""
    endpoints: set[str] = field(default_factory=set)
    """Entity keys used by a triple (the speaker behind "I" is an entity only then)."""

    def entity(self, name: str, *, words: tuple[str, ...] = ()) -> _Entity:
        key = norm(name)
        found = self.index.get(key)
        if found is not None:
            return self.entities[found]
        ent = _Entity(key=key, name=name, order=self.counter, words=words or tuple(key.split()))
        self.counter += 1
        self.entities[key] = ent
        self.index[key] = key
        return ent


def norm(name: str) -> str:
    """Case- and spacing-insensitive key; a leading "the" does not count."""
    key = " ".join(name.casefold().replace("’", "'").split())
    return key[4:] if key.startswith("the ") and len(key) > 4 else key


class RuleExtractor(Extractor):
    """Offline extractor from spaCy rules plus the ontology's labels and synonyms; see the module doc.

    Build it once per ontology: the tokenizer and all pattern tables are compiled here, so ``extract``
    only tokenizes and looks words up. ``granularity="message"`` keeps each speaker turn (or paragraph)
    as one memory instead of one per sentence; sentences under ``min_words`` words are merged into a
    neighbour ("Wow!"); ``concepts`` adds lowercase noun compounds as untyped entities.
    Stateless between calls, so one instance can serve several threads.
    """

    name = "rules"
    uses_known_memories = False

    def __init__(self, ontology: Ontology, *, granularity: Granularity = "sentence", min_words: int = 4,
                 concepts: bool = True) -> None:
        self.ontology = ontology
        self.granularity: Granularity = granularity
        self.concepts = concepts
        self.min_words = min_words
        self.nlp = spacy.blank("en")
        self.english: English = english()
        self.lexicon = OntologyLexicon.build(ontology, self.nlp)
        self._np_ok: dict[str, bool] = {r.iri: self._broad_range(r) for r in ontology.relations.values()}
        self._name_cache: dict[str, tuple[str, ...]] = {}

    # ------------------------------------------------------------------ entry point

    def extract(self, chunk: str, context: ExtractionContext) -> Extraction:
        state = _Chunk(context)
        messages = split_messages(chunk, context.speakers)
        for msg in messages:
            fill_tokens(msg, self.nlp.make_doc(msg.text), self.english)
        self._register_known(state, messages)
        state.known = self._known_table(state)
        for msg in messages:
            for s, e in msg.sentences:
                cs, ce = msg.starts[s], msg.end_char(e - 1)
                state.sentences.append(_Sentence(msg, s, e, msg.text[cs:ce], cs, ce))
        for sent in state.sentences:
            self._mentions(state, sent)
        self._merge_short_forms(state)
        if self.concepts:
            for sent in state.sentences:
                self._compounds(state, sent)
        for sent in state.sentences:
            self._type_patterns(state, sent)
            sent.times = find_times(sent.text, context.reference_time)
        memories = self._memories(state)
        triples: dict[tuple[str, str, str], ExtractedTriple] = {}
        for sent in state.sentences:
            if not sent.question:
                for t in self._triples(state, sent):
                    triples.setdefault((t.source, t.relation, t.target), t)
        return Extraction(memories=memories, entities=self._entities_out(state),
                          triples=list(triples.values()))

    # ------------------------------------------------------------------ known names

    def _words(self, name: str) -> tuple[str, ...]:
        got = self._name_cache.get(name)
        if got is None:
            got = tuple(t.lower_ for t in self.nlp.make_doc(name) if not t.is_space)
            if len(self._name_cache) > 50_000:
                self._name_cache.clear()
            self._name_cache[name] = got
        return got

    def _register_known(self, state: _Chunk, messages: list[Message]) -> None:
        ctx = state.context
        for known in ctx.entities:
            ent = state.entity(known.name, words=self._words(known.name))
            ent.existing = known.number
            ent.set_type(self._known_type(known), 0)
            for alias in known.aliases:
                state.index.setdefault(norm(alias), ent.key)
                ent.aliases.setdefault(alias, None)
        speakers = dict.fromkeys([*ctx.speakers, *(m.speaker for m in messages if m.speaker)])
        for name in speakers:
            if not name or not name.strip():
                continue
            ent = state.entity(name.strip(), words=self._words(name.strip()))
            ent.speaker = True
            if name.strip().casefold() not in _ROLE_SPEAKERS:
                ent.set_type(self.lexicon.person_class, 1)
        # A plain-text chunk whose first line is a short heading ("Hank Snow", "Hello Love (song)").
        if messages and messages[0].speaker is None:
            first = messages[0]
            line_end = first.text.find("\n")
            heading = first.text[:line_end].strip().lstrip("#").strip() if line_end > 0 else ""
            if heading and len(heading) <= 80 and heading[-1] not in ".!?:;," and len(heading.split()) <= 10 \
                    and first.text[line_end:].strip():
                base = re.sub(r"\s*\([^)]*\)\s*$", "", heading).strip() or heading
                if base.startswith("The ") and len(base) > 4:
                    base = base[4:]
                ent = state.entity(base, words=self._words(base))
                ent.heading = ent.mentioned = True
                ent.multi_cap = len(ent.words) > 1
                if ent.multi_cap and "," not in ent.words:
                    self._type_from_words(ent, list(ent.words))
                if base != heading:
                    ent.aliases.setdefault(heading, None)
                    state.index.setdefault(norm(heading), ent.key)
                if "," in base:
                    short = base.split(",")[0].strip()
                    ent.aliases.setdefault(short, None)
                    state.index.setdefault(norm(short), ent.key)
                state.topic = ent.key

    def _known_type(self, known: KnownEntity) -> str | None:
        for t in known.types:
            iri = self.ontology.resolve_class(t)
            if iri is not None:
                return self.ontology.classes[iri].name
        return None

    # ------------------------------------------------------------------ mentions

    def _mentions(self, state: _Chunk, sent: _Sentence) -> None:
        msg, s, e = sent.msg, sent.start, sent.end
        cands: list[tuple[int, int, int, str, str | None]] = []  # start, end, priority, kind, name
        cands += self._quoted(msg, s, e)
        cands += self._identifiers(msg, s, e)
        cands += self._known(state, msg, s, e)
        cands += self._capitalized(msg, s, e)
        cands.sort(key=lambda c: (-(c[1] - c[0]), c[2], c[0]))
        taken = [False] * (e - s)
        chosen: list[tuple[int, int, int, str, str | None]] = []
        for c in cands:
            if any(taken[k - s] for k in range(c[0], c[1])):
                continue
            for k in range(c[0], c[1]):
                taken[k - s] = True
            chosen.append(c)
        chosen.sort()
        for start, end, _prio, kind, name in chosen:
            if kind == "weak":
                state.weak.append((sent, start, end))
                continue
            ent = self._entity_for(state, msg, start, end, kind, name)
            if ent is None:
                continue
            ent.mentioned = True
            sent.mentions.append(_Mention(start, end, ent.key, kind))

    def _entity_for(self, state: _Chunk, msg: Message, start: int, end: int, kind: str,
                    name: str | None) -> _Entity | None:
        if kind == "known" and name is not None:
            ent = state.entities[name]
            surface = " ".join(msg.span_text(start, end).split())
            if norm(surface) not in state.index:
                ent.aliases.setdefault(surface, None)
            return ent
        text = name if name is not None else " ".join(msg.span_text(start, end).split())
        text = text.strip(" ,;:")
        if re.search(r"(?:^|\s)[A-Z]\.$", text):
            text = text[:-1]  # "Albert I." at the end of a sentence
        if not text or not any(ch.isalnum() for ch in text):
            return None
        if kind == "demonym":
            ent = state.entity(text)
            ent.aliases.setdefault(msg.texts[start], None)
            state.index.setdefault(norm(msg.texts[start]), ent.key)
            ent.set_type(self.lexicon.country_class, 2)
            return ent
        full = text
        if text.startswith("The ") and len(text) > 4 and kind in ("cap", "quote"):
            text = text[4:]  # "The Rank Organisation" and "Rank Organisation" are one name
        ent = state.entity(text, words=tuple(msg.lowers[start:end]))
        if full != text:
            ent.aliases.setdefault(full, None)
        if kind == "cap" and end - start > 2:
            self._nested(state, msg, start, end)
        if kind == "person":
            ent.set_type(self.lexicon.person_class, 1)
            ent.single = end - start == 1
        elif kind == "cap":
            if end - start > 1:
                ent.multi_cap = True
                self._head_type(ent, msg, start, end)
            else:
                ent.single = True
        return ent

    def _compounds(self, state: _Chunk, sent: _Sentence) -> None:
        """Lowercase noun compounds ("support group", "mental health", "home country") as untyped entities:
        in chat they are what two messages about the same thing share, where proper names are rare."""
        msg, s, e = sent.msg, sent.start, sent.end
        taken = {k for m in sent.mentions for k in range(m.start, m.end)}
        k = s
        while k + 1 < e:
            if k in taken or k + 1 in taken or not self._compound_start(msg, k, s, taken):
                k += 1
                continue
            if not self._modifier(msg, k) or not self._compound_word(msg, k + 1):
                k += 1
                continue
            end = k + 2
            if end < e and end not in taken and self._noun_head(msg, end) and self._modifier(msg, k + 1):
                end += 1  # "mental health awareness"
            last = end - 1
            if not self._noun_head(msg, last):
                k += 1
                continue
            words = [*msg.lowers[k:last], msg.lemmas[last]]
            ent = state.entity(" ".join(words))
            ent.mentioned = True
            sent.mentions.append(_Mention(k, end, ent.key, "concept"))
            taken.update(range(k, end))
            k = end
        sent.mentions.sort(key=lambda m: m.start)

    def _modifier(self, msg: Message, k: int) -> bool:
        """The first word of a compound: an uninflected noun or a classifying adjective ("mental")."""
        lo, eng = msg.lowers[k], self.english
        return self._compound_word(msg, k) and lo not in EVALUATIVE and not lo.endswith(("ly", "ed")) \
            and (lo in eng.nouns or lo in eng.adjectives)

    def _noun_head(self, msg: Message, k: int) -> bool:
        lo, lemma = msg.lowers[k], msg.lemmas[k]
        return self._compound_word(msg, k) and lemma in self.english.nouns and not lo.endswith("ed") \
            and lo not in GENERIC_HEADS and lemma not in GENERIC_HEADS and lo not in EVALUATIVE \
            and lo not in _TIME_NOUNS and (lo == lemma or lo.endswith("s") or lo in self.english.nouns)

    def _compound_word(self, msg: Message, k: int) -> bool:
        lo = msg.lowers[k]
        return (lo.isalpha() or (lo.count("-") == 1 and lo.replace("-", "").isalpha())) and not msg.caps[k] \
            and lo not in STOP_WORDS and lo not in INTERJECTIONS and lo not in PREPOSITIONS and len(lo) > 2 \
            and lo not in MONTHS and lo not in WEEKDAYS

    def _compound_start(self, msg: Message, k: int, s: int, taken: set[int]) -> bool:
        """After a determiner, preposition, conjunction or name: "a pottery class", "in mental health"."""
        if k == s or msg.initial[k]:
            return True
        prev = msg.lowers[k - 1]
        return prev in DETERMINERS or prev in PREPOSITIONS or prev in ("and", "or", ",", "'s", "’s") \
            or (k - 1) in taken

    def _nested(self, state: _Chunk, msg: Message, start: int, end: int) -> None:
        """"Philbrook Museum of Tulsa" also mentions Tulsa; "Treaty on European Union", the European Union."""
        for k in range(end - 2, start, -1):
            if msg.lowers[k] in ("of", "on") and msg.caps[k + 1]:
                tail = " ".join(msg.span_text(k + 1, end).split())
                if tail.startswith("The "):
                    tail = tail[4:]
                inner = state.entity(tail, words=tuple(msg.lowers[k + 1:end]))
                inner.mentioned = True
                state.nested.add(inner.key)
                return

    def _quoted(self, msg: Message, s: int, e: int) -> list[tuple[int, int, int, str, str | None]]:
        lo, hi = msg.starts[s], msg.end_char(e - 1)
        text = msg.text
        out: list[tuple[int, int, int, str, str | None]] = []
        if not any(q in text[lo:hi] for q in ("\"", "“", "'", "‘", "``")):
            return out
        for m in _QUOTES.finditer(text, lo, hi):
            gi = next(i for i in range(1, 6) if m.group(i) is not None)
            inner = m.group(gi).strip()
            words = inner.split()
            if not 1 <= len(words) <= 12 or not any(ch.isalpha() for ch in inner) or inner.endswith("?"):
                continue
            first = words[0].lower().strip("'\".,!")
            titled = len(words) > 1 and all(w[:1].isupper() or w.lower() in NAME_CONNECTORS for w in words)
            if (first in STOP_WORDS and first not in ("the", "a", "an")) or (first in INTERJECTIONS and not titled):
                continue
            if not (inner[0].isupper() or inner[0].isdigit()):
                continue
            if len(words) >= 4 and sum(1 for w in words if w[:1].isupper()) * 2 < len(words):
                continue
            a, b = m.start(gi), m.start(gi) + len(m.group(gi))
            toks = [k for k in range(s, e) if msg.starts[k] >= a and msg.end_char(k) <= b]
            if toks:
                out.append((toks[0], toks[-1] + 1, 0, "quote", inner.rstrip(".,;:!")))
        return out

    def _identifiers(self, msg: Message, s: int, e: int) -> list[tuple[int, int, int, str, str | None]]:
        out: list[tuple[int, int, int, str, str | None]] = []
        for k in range(s, e):
            t = msg.texts[k]
            if len(t) < 2:
                if t == "#" and k + 1 < e and msg.texts[k + 1].isdigit() and not msg.space_before[k + 1]:
                    out.append((k, k + 2, 0, "id", "#" + msg.texts[k + 1]))
                continue
            if "@" in t and _EMAIL.match(t):
                out.append((k, k + 1, 0, "id", t))
            elif ("://" in t or t.lower().startswith("www.")) and len(t) > 6:
                out.append((k, k + 1, 0, "id", t.rstrip(".,;:!?)")))
            elif _VERSION.match(t) or _TICKET.match(t):
                out.append((k, k + 1, 0, "id", t))
        return out

    def _known(self, state: _Chunk, msg: Message, s: int, e: int) -> list[tuple[int, int, int, str, str | None]]:
        out: list[tuple[int, int, int, str, str | None]] = []
        table = state.known
        if table is None or not table[0]:
            return out
        firsts, longest = table[1], table[2]
        lowers, caps = msg.lowers, msg.caps
        for k in range(s, e):
            if lowers[k] not in firsts:
                continue
            for n in range(min(longest, e - k), 0, -1):
                key = table[0].get(tuple(lowers[k:k + n]))
                if key is None:
                    continue
                if n == 1 and not caps[k] and (self.english.is_common(lowers[k]) or len(lowers[k]) < 3):
                    continue  # "snow" is not the known "Snow"
                out.append((k, k + n, 1, "known", key))
                break
        return out

    def _known_table(self, state: _Chunk) -> tuple[dict[tuple[str, ...], str], set[str], int]:
        table: dict[tuple[str, ...], str] = {}
        for surface, key in state.index.items():
            words = self._words(surface)
            if words and not all(w in STOP_WORDS for w in words):
                table.setdefault(words, key)
        return table, {w[0] for w in table}, max((len(w) for w in table), default=0)

    def _capitalized(self, msg: Message, s: int, e: int) -> list[tuple[int, int, int, str, str | None]]:
        out: list[tuple[int, int, int, str, str | None]] = []
        caps, lowers, texts = msg.caps, msg.lowers, msg.texts
        k = s
        while k < e:
            if not caps[k] or self._date_word(msg, k, s, e):
                k += 1
                continue
            last = k
            j = k + 1
            while j < e:
                lo = lowers[j]
                if (texts[j] == "I" and j + 1 < e and not msg.lowers[j + 1].isalpha()) or (
                        texts[j] == "I" and j + 1 < e and msg.lowers[j + 1] == "of"):
                    last = j  # "World War I", "Albert I of Belgium"
                    j += 1
                elif caps[j] and not self._date_word(msg, j, s, e) and not (
                        texts[j - 1].endswith(".") and lo in STOP_WORDS):
                    last = j
                    j += 1
                elif self._joins(msg, j, e):
                    j += 1
                elif lo in ("of", "for") and j + 2 < e and lowers[j + 1] == "the" and caps[j + 2]:
                    j += 2
                elif lo in ("'s", "’s") and j + 1 < e and caps[j + 1] and self._possessive_name(msg, k, j):
                    j += 1
                elif texts[j].isdigit() and len(texts[j]) <= 3 and j == last + 1:
                    last = j
                    j += 1
                else:
                    break
            end = last + 1
            if end + 1 < e and texts[end] == "," and (lowers[end + 1] in LEGAL_SUFFIXES
                                                     or lowers[end + 1] in NAME_SUFFIXES):
                end += 2
            if end - k == 1 and lowers[k] in COUNTRY_OF_DEMONYM:
                out.append((k, end, 2, "demonym", COUNTRY_OF_DEMONYM[lowers[k]]))
                k = end
                continue
            if end - k == 1 and lowers[k] in DEMONYMS and end < e and (texts[end] == "-" or (
                    lowers[end].isalpha() and not caps[end] and lowers[end] not in STOP_WORDS)):
                k = end  # "the Catholic church": an adjective, not a name
                continue
            start = k
            person = False
            if end - k == 1 and msg.initial[k] and lowers[k].endswith("ly"):
                k = end  # "Lately, ...", "Actually, ..."
                continue
            if end - k == 1 and msg.initial[k] and lowers[k] not in STOP_WORDS and lowers[k] not in INTERJECTIONS \
                    and self.english.is_common(lowers[k]):
                out.append((k, end, 3, "weak", None))  # "Snow moved ...": kept only as a short form
                k = end
                continue
            while start < end:
                lo = lowers[start]
                if lo in PERSON_TITLES and end - start > 1:
                    person = True
                elif self._strip_first(msg, start, end):
                    pass
                else:
                    break
                start += 1
            if start < end and not (end - start == 1 and lowers[start] in ("'s", "’s")) \
                    and any(ch.isalpha() for t in texts[start:end] for ch in t):
                out.append((start, end, 2, "person" if person else "cap", None))
            k = last + 1
        return out

    def _strip_first(self, msg: Message, start: int, end: int) -> bool:
        """A leading word that is not part of the name: "The", "Hey" at a sentence start, "Painting" alone."""
        lo = msg.lowers[start]
        if lo in STOP_WORDS and not (lo in INTERJECTIONS and not msg.initial[start]):
            return True
        return msg.initial[start] and (lo in INTERJECTIONS or (end - start == 1 and self.english.is_common(lo)))

    @staticmethod
    def _date_word(msg: Message, k: int, s: int, e: int) -> bool:
        """A month or weekday used as a date ("in May", "May 3", "Monday"), not a name ("Jan Solovej")."""
        lo = msg.lowers[k]
        if lo not in MONTHS and lo not in WEEKDAYS:
            return False
        if lo in WEEKDAYS:
            return True
        nxt = msg.texts[k + 1] if k + 1 < e else ""
        prev = msg.lowers[k - 1] if k > s else ""
        return nxt[:1].isdigit() or prev[:1].isdigit() or prev in _DATE_PREPS or not (k + 1 < e and msg.caps[k + 1])

    def _possessive_name(self, msg: Message, k: int, j: int) -> bool:
        """"Freedom's Journal", "Men's Studies Press": a common word owning a capitalized name."""
        return j - k == 1 and self.english.is_common(msg.lowers[k]) and not msg.initial[k]

    @staticmethod
    def _joins(msg: Message, j: int, e: int) -> bool:
        """A connector inside a name: "Bank of America", "Procter & Gamble", "Wiley-Blackwell"."""
        if j + 1 >= e or not msg.caps[j + 1] or msg.lowers[j + 1] in MONTHS:
            return False
        lo = msg.lowers[j]
        if (lo in NAME_CONNECTORS and msg.texts[j] == lo) or lo == "&":
            return True
        return msg.texts[j] in ("-", "'", "’", ".") and not msg.space_before[j] and not msg.space_before[j + 1]

    def _head_type(self, ent: _Entity, msg: Message, start: int, end: int) -> None:
        self._type_from_words(ent, msg.lowers[start:end])

    def _type_from_words(self, ent: _Entity, words: list[str]) -> None:
        lex = self.lexicon
        if words[-1] in LEGAL_SUFFIXES and lex.legal_class:
            ent.set_type(lex.legal_class, 2)
            return
        if len(words[0]) == 2 and words[0][1] == "." and words[0][0].isalpha():
            return  # "G. Stanley Hall": an initial, so a person, whatever the last word says
        head = self.english.lemma(words[-1])
        cls = lex.head_words.get(head) or lex.head_words.get(words[-1])
        if cls is None and len(words) >= 2 and words[1] in ("of", "de", "du", "del"):
            cls = lex.prefix_words.get(words[0])
        if cls is None and len(words) >= 2:
            cls = lex.prefix_words.get(words[0]) if words[0] in ("lake", "mount", "mt.", "river", "cape") else None
        ent.set_type(cls, 2)

    # ------------------------------------------------------------------ short forms

    def _merge_short_forms(self, state: _Chunk) -> None:
        """"Snow" after "Hank Snow", "Publix" after "Publix Super Markets, Inc.", "Mel" for "Melanie"."""
        ents = list(state.entities.values())
        longs = [x for x in ents if x.multi_cap or (x.existing is not None and len(x.words) > 1)
                 or (x.heading and len(x.words) > 1)]
        for sent, start, end in state.weak:
            word = sent.msg.lowers[start]
            owners = [x for x in longs if self._owns(x, word)]
            if len(owners) == 1:
                owners[0].aliases.setdefault(sent.msg.texts[start], None)
                sent.mentions.append(_Mention(start, end, owners[0].key, "short"))
                sent.mentions.sort(key=lambda m: m.start)
        people = [x for x in ents if x.speaker or (self.lexicon.is_person(x.type) and len(x.words) == 1)]
        remap: dict[str, str] = {}
        for short in ents:
            if not short.single or short.existing is not None or short.speaker or short.heading:
                continue
            word = short.key
            owners = [x for x in longs if x is not short and self._owns(x, word)]
            if len(owners) != 1:
                owners = [x for x in people if x is not short and len(word) >= 3 and x.key.startswith(word)
                          and x.key != word and " " not in x.key]
            if len(owners) == 1:
                remap[short.key] = owners[0].key
        if not remap:
            return
        for old, new in remap.items():
            target = state.entities[new]
            gone = state.entities.pop(old)
            target.aliases.setdefault(gone.name, None)
            target.order = min(target.order, gone.order)
            if target.type is None:
                target.set_type(gone.type, max(gone.rank, 2))
            for surface, key in list(state.index.items()):
                if key == old:
                    state.index[surface] = new
        for sent in state.sentences:
            for m in sent.mentions:
                m.key = remap.get(m.key, m.key)
        state.nested = {remap.get(k, k) for k in state.nested}

    def _owns(self, long: _Entity, word: str) -> bool:
        words = [w for w in long.words if w != "."]
        if len(words) < 2 or ("," in words and words[-1] not in LEGAL_SUFFIXES):
            return False
        legal = words[-1] in LEGAL_SUFFIXES
        if legal:
            return words[0] == word
        if long.type is not None and not self.lexicon.is_person(long.type):
            return False
        if not 2 <= len(words) <= 4 or words[0] in DIRECTION_WORDS or any(w in NAME_CONNECTORS for w in words):
            return False
        if not all(w[:1].isalpha() for w in words):
            return False
        return words[-1] == word or (words[0] == word and len(words[0]) > 2
                                     and (long.heading or self.lexicon.is_person(long.type)))

    # ------------------------------------------------------------------ types from patterns

    def _type_patterns(self, state: _Chunk, sent: _Sentence) -> None:
        """"<M> is a <class>", "<M>, a <class>", "the <class> <M>", "my dog <M>", "the city of <M>"."""
        if not sent.mentions:
            return
        msg, lemmas, lowers = sent.msg, sent.msg.lemmas, sent.msg.lowers
        starts = {m.start for m in sent.mentions}
        for m in sent.mentions:
            ent = state.entities.get(m.key)
            if ent is None or ent.rank <= 1:
                continue
            k = m.end
            if k + 1 < sent.end and (lemmas[k] == "be" or lowers[k] == ",") \
                    and lowers[k + 1] in ("a", "an", "the", "one"):
                cls = self._class_after(msg, k + 2, sent.end, starts)
                if cls is not None:
                    ent.set_type(cls, 1)
                    continue
            j = m.start - 1
            of = j >= sent.start and lowers[j] == "of"
            cls = self._class_before(msg, j - 1 if of else j, sent.start)
            if cls is not None and (not of or self._is_place(cls)):
                ent.set_type(cls, 1)

    def _is_place(self, cls: str) -> bool:
        return self.ontology.resolve_class("Place") is not None and self.ontology.is_subclass(cls, "Place")

    def _class_after(self, msg: Message, k: int, end: int, starts: set[int]) -> str | None:
        """The class word heading the noun phrase at ``k`` ("a state located in", not "a state university")."""
        lex = self.lexicon
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

    def _class_before(self, msg: Message, j: int, start: int) -> str | None:
        lex = self.lexicon
        for n in range(min(lex.max_class_len, j - start + 1), 0, -1):
            cls = lex.class_words.get(tuple(msg.lemmas[j - n + 1:j + 1]))
            if cls is None:
                continue
            before = j - n
            if before < start or msg.lowers[before] in DETERMINERS or msg.lowers[before] in _POSSESSIVE:
                return cls
        return None

    # ------------------------------------------------------------------ memories

    def _memories(self, state: _Chunk) -> list[ExtractedMemory]:
        groups: list[list[_Sentence]] = []
        by_msg: dict[int, list[_Sentence]] = {}
        for sent in state.sentences:
            by_msg.setdefault(id(sent.msg), []).append(sent)
        for sents in by_msg.values():
            if self.granularity == "message":
                groups.append(sents)
                continue
            pending: list[_Sentence] = []
            mine: list[list[_Sentence]] = []
            for sent in sents:
                pending.append(sent)
                words = sum(1 for p in pending for k in range(p.start, p.end) if p.msg.alnum[k])
                if words >= self.min_words:
                    mine.append(pending)
                    pending = []
            if pending:
                if mine:
                    mine[-1].extend(pending)
                else:
                    mine.append(pending)
            groups.extend(mine)
        out: list[ExtractedMemory] = []
        for group in groups:
            msg = group[0].msg
            text = msg.text[group[0].char_start:group[-1].char_end].strip()
            times = [t for s in group for t in s.times]
            mtype = MemoryType.SEMANTIC
            if any(self._procedural(s) for s in group):
                mtype = MemoryType.PROCEDURAL
            elif times:
                mtype = MemoryType.EPISODIC
            for s in group:
                s.memory = len(out)
            out.append(ExtractedMemory(text=text, memory_type=mtype,
                                       event_time=times[0].iso if times and mtype == MemoryType.EPISODIC else None,
                                       attributed_to=msg.speaker))
        return out

    def _procedural(self, sent: _Sentence) -> bool:
        m = _PROCEDURAL.match(sent.text)
        if m is None or sent.question:
            return False
        for name in ("v1", "v2", "v3", "v4", "v5"):
            verb = m.group(name)
            if verb is not None:
                low = verb.lower()
                return self.english.lemma(low) == low and low in self.english.vocabulary \
                    and (low not in STOP_WORDS or low in _STOP_VERBS)
        return True

    # ------------------------------------------------------------------ triples

    def _triples(self, state: _Chunk, sent: _Sentence) -> list[ExtractedTriple]:
        out: list[ExtractedTriple] = []
        msg = sent.msg
        speaker = self._speaker_key(state, msg)
        ment_start = {m.start: m for m in sent.mentions}
        ment_end = {m.end: m for m in sent.mentions}
        inside = [False] * (sent.end - sent.start)
        for m in sent.mentions:
            for k in range(m.start, m.end):
                inside[k - sent.start] = True
        ctx = _SentCtx(sent, speaker, ment_start, ment_end, inside, state)
        used: set[int] = set()
        for match in self._relation_matches(ctx):
            toks = match.tokens
            if used & toks:
                continue
            produced = self._triples_for_match(ctx, match)
            if produced:
                used |= toks
                out += produced
        out += self._role_triples(ctx, used)
        out += self._email_triples(ctx)
        return out

    def _speaker_key(self, state: _Chunk, msg: Message) -> str | None:
        if msg.speaker is None:
            return None
        return state.index.get(norm(msg.speaker))

    def _relation_matches(self, ctx: _SentCtx) -> list[_Match]:
        msg, s, e = ctx.sent.msg, ctx.sent.start, ctx.sent.end
        lex = self.lexicon
        lemmas, lowers = msg.lemmas, msg.lowers
        found: list[_Match] = []
        for i in range(s, e):
            if ctx.inside[i - s]:
                continue
            pats = lex.patterns.get(lemmas[i], [])
            extra = lex.exact_first.get(lowers[i])
            if extra:
                pats = pats + [p for p in extra if p not in pats]
            for p in pats:
                n = len(p.lemmas)
                if i + n <= e and all(
                        not ctx.inside[i + k - s] and (lemmas[i + k] == p.lemmas[k] or lowers[i + k] == p.lowers[k])
                        for k in range(n)):
                    if n == 1 and lowers[i] != p.lowers[0] and lowers[i] == lemmas[i] \
                            and not self._subject_right_before(ctx, i):
                        continue  # base form "like" is usually the preposition unless "I like"
                    if n == 1 and i > s and (lowers[i - 1] in DETERMINERS or lowers[i - 1] in _POSSESSIVE):
                        continue  # "its publishing arm": an adjective, not the verb
                    found.append(self._score(ctx, p, list(range(i, i + n))))
                elif p.gappable and lemmas[i] == p.lemmas[0]:
                    for j in range(i + 2, min(i + 7, e)):
                        lo = lowers[j]
                        if not msg.alnum[j] or lo in CONJUNCTIONS:
                            break
                        if lo == p.lowers[1] and not ctx.inside[j - s]:
                            found.append(self._score(ctx, p, [i, j]))
                            break
        found.sort(key=lambda m: m.sort_key)
        return found

    def _subject_right_before(self, ctx: _SentCtx, i: int) -> bool:
        msg = ctx.sent.msg
        k = i - 1
        if k >= ctx.sent.start and msg.lowers[k] in _ADVERBS | {"n't", "not"}:
            k -= 1
        if k < ctx.sent.start:
            return False
        return msg.lowers[k] in FIRST_PERSON or msg.lowers[k] in ("we", "they", "he", "she", "you") \
            or (k + 1) in ctx.ment_end

    def _score(self, ctx: _SentCtx, p: RelationPattern, toks: list[int]) -> _Match:
        msg = ctx.sent.msg
        exact = sum(1 for k, t in enumerate(toks) if msg.lowers[t] == p.lowers[k])
        past = any(msg.lowers[t] in ("was", "were", "had", "used") or
                   (msg.lowers[t] != msg.lemmas[t] and msg.lowers[t].endswith(("ed", "ew")))
                   for t in toks)
        if toks[0] > ctx.sent.start and msg.lowers[toks[0] - 1] in ("was", "were", "had", "used"):
            past = True
        gap = len(toks) == 2 and toks[1] != toks[0] + 1
        key = (-len(toks), gap, -exact, 0 if past == p.past else 1, p.relation.iri, toks[0])
        return _Match(p, toks, {toks[1]} if gap else set(toks), key)

    def _triples_for_match(self, ctx: _SentCtx, match: _Match) -> list[ExtractedTriple]:
        msg, p = ctx.sent.msg, match.pattern
        first, last = match.toks[0], match.toks[-1]
        if self._negated(msg, first, ctx.sent.start):
            return []
        rel = p.relation
        passive = p.passive_swap
        by_tok: int | None = None
        if len(p.lowers) == 1 and msg.lowers[first] != msg.lemmas[first] and rel.kind == "object":
            for k in range(last + 1, min(last + 4, ctx.sent.end)):
                if msg.lowers[k] == "by":
                    by_tok = k
                    break
                if not msg.alnum[k]:
                    break
        if by_tok is not None:
            agent = self._objects(ctx, by_tok + 1, rel, allow_np=False)
            theme = self._subject(ctx, first)
            if agent and theme is not None:
                return [t for a in agent[:1] if (t := self._make(ctx, a, rel, theme, first)) is not None]
            return []
        subject = self._subject(ctx, first)
        if subject is None:
            return []
        if rel.kind == "datatype":
            value = self._literal(ctx, rel, last + 1, before=first)
            if value is None:
                return []
            t = self._make(ctx, subject, rel, value, first, literal=True)
            return [t] if t is not None else []
        out: list[ExtractedTriple] = []
        objects = self._objects(ctx, last + 1, rel, allow_np=self._np_ok[rel.iri])
        for obj in objects[:1] if rel.functional else objects:
            src, dst = (obj, subject) if passive else (subject, obj)
            t = self._make(ctx, src, rel, dst, first)
            if t is not None:
                out.append(t)
        return out

    def _negated(self, msg: Message, first: int, start: int) -> bool:
        return any(msg.lowers[k] in NEGATIONS for k in range(max(start, first - 3), first))

    def _subject(self, ctx: _SentCtx, first: int) -> str | None:
        """Nearest entity or first-person pronoun left of the relation, skipping prepositional objects."""
        msg, start = ctx.sent.msg, ctx.sent.start
        k = first - 1
        # Apposition: "Dow Jones & Company, a division of News Corp".
        d = k - 1 if k >= start and msg.lowers[k] in ("a", "an", "the") else k
        if d >= start and msg.lowers[d] == "," and (m := ctx.ment_end.get(d)) is not None:
            return m.key
        while k >= start:
            m = ctx.ment_end.get(k + 1)
            if m is not None:
                before = m.start - 1
                if before >= ctx.sent.start and msg.lowers[before] in PREPOSITIONS:
                    k = m.start - 1
                    continue
                return m.key
            lo = msg.lowers[k]
            if lo in FIRST_PERSON:
                return ctx.speaker
            if lo in ("a", "an", "the", "this", "that") and not (k > start and msg.lemmas[k - 1] == "be"):
                return None  # "the westernmost location is in X": a nearer, nameless subject
            if lo in _SUBJECT_STOPS:
                return None
            if lo in POSSESSIVE_DETS or lo in OTHER_PRONOUNS or lo == ";":
                if lo in ("it", "he", "she", "they", "its", "his", "her") and ctx.state.topic is not None \
                        and msg.initial[k]:
                    return ctx.state.topic
                return None
            k -= 1
        return None

    def _objects(self, ctx: _SentCtx, k: int, rel: RelationInfo, *, allow_np: bool) -> list[str]:
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
            keys = [ctx.ment_start[k].key]
            j = ctx.ment_start[k].end
            while j + 1 < end and msg.lowers[j] in ("and", ",", "&") and len(keys) < 4:
                nxt = j + 1
                if msg.lowers[nxt] == "and":
                    nxt += 1
                m = ctx.ment_start.get(nxt)
                if m is None:
                    break
                keys.append(m.key)
                j = m.end
            return keys
        if allow_np:
            np = self._noun_phrase(ctx, k)
            if np is not None:
                return [np]
        return []

    def _noun_phrase(self, ctx: _SentCtx, k: int) -> str | None:
        """A short lowercase noun phrase as an object ("I love painting", "I have a dog")."""
        msg, end = ctx.sent.msg, ctx.sent.end
        while k < end and (msg.lowers[k] in DETERMINERS or msg.lowers[k] in EVALUATIVE):
            k += 1
        words: list[int] = []
        while k < end and len(words) < 2:
            lo = msg.lowers[k]
            if not (lo.isalpha() or ("-" in lo and lo.replace("-", "").isalpha())) or msg.caps[k] \
                    or lo in STOP_WORDS or lo in PREPOSITIONS or lo in CONJUNCTIONS or lo in INTERJECTIONS:
                break
            words.append(k)
            k += 1
        if not words:
            return None
        head = msg.lowers[words[-1]]
        if msg.lemmas[words[-1]] not in self.english.nouns and head not in self.english.nouns:
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
        cls = self.lexicon.class_words.get(tuple(msg.lemmas[w] for w in words)) \
            or self.lexicon.class_words.get((msg.lemmas[words[-1]],))
        ent.set_type(cls, 1)
        ctx.sent.mentions.append(_Mention(words[0], words[-1] + 1, ent.key, "np"))
        return ent.key

    def _literal(self, ctx: _SentCtx, rel: RelationInfo, k: int, *, before: int) -> str | None:
        msg, end = ctx.sent.msg, ctx.sent.end
        rng = rel.range[0] if rel.range else ""
        local = rng.rsplit("#", 1)[-1]
        if local in ("date", "dateTime"):
            char = msg.starts[k] if k < end else ctx.sent.char_end
            for t in ctx.sent.times:
                abs_start = ctx.sent.char_start + t.start
                gap = msg.text[char:abs_start]
                if abs_start >= char and len(gap.split()) <= 2 and t.precision == "day":
                    ctx.literal_times.add(t.start)
                    return t.iso
            return None
        if local in ("integer", "int", "nonNegativeInteger", "positiveInteger", "decimal", "float", "double",
                     "long"):
            value = self._number_at(msg, k, end)
            if value is None and before - 1 >= ctx.sent.start:
                value = self._number_at(msg, before - 1, before)
            if value is None:
                return None
            return str(int(value)) if local not in ("decimal", "float", "double") else str(value)
        if local == "anyURI":
            for j in range(k, min(k + 4, end)):
                if "://" in msg.texts[j] or msg.lowers[j].startswith("www."):
                    return msg.texts[j].rstrip(".,;:!?)")
            return None
        words = " ".join((rel.name, rel.label, *rel.alt_labels)).lower()
        if "mail" in words:
            for j in range(k, min(k + 5, end)):
                if _EMAIL.match(msg.texts[j]):
                    return msg.texts[j]
            return None
        if "phone" in words or "telephone" in words:
            tail = msg.text[msg.starts[k]:ctx.sent.char_end] if k < end else ""
            m = _PHONE.search(tail[:40])
            return m.group(0).strip() if m else None
        while k < end and msg.lowers[k] in ("is", "was", "a", "an", "the", ":", "of", "as"):
            k += 1
        words_out: list[str] = []
        while k < end and len(words_out) < 5:
            lo = msg.lowers[k]
            if not msg.alnum[k] or lo in PREPOSITIONS or lo in CONJUNCTIONS or (
                    k in ctx.ment_start and ctx.ment_start[k].kind != "concept"):
                break
            words_out.append(msg.texts[k])
            k += 1
        return " ".join(words_out) if words_out else None

    def _number_at(self, msg: Message, k: int, end: int) -> float | None:
        while k < end and msg.lowers[k] in ("of", "is", "was", "about", "around", "approximately", "over",
                                            "nearly", "almost", "roughly", "at", "to", "just", "only"):
            k += 1
        if k >= end:
            return None
        t = msg.lowers[k]
        value: float | None
        if _NUMBER.match(t):
            value = float(t.replace(",", ""))
        else:
            value = _NUMBER_WORDS.get(t)
            if value is None:
                m = re.match(r"^(\d+)-years?-old$", t)
                value = float(m.group(1)) if m else None
        if value is None:
            return None
        if k + 1 < end and msg.lowers[k + 1] in _SCALE:
            value *= _SCALE[msg.lowers[k + 1]]
        return value

    def _make(self, ctx: _SentCtx, source: str, rel: RelationInfo, target: str, anchor: int,
              *, literal: bool = False) -> ExtractedTriple | None:
        state = ctx.state
        src = state.entities.get(source)
        if src is None or source == target:
            return None
        if not self.lexicon.compatible(src.type, rel.domain):
            return None
        if literal:
            target_name = target
        else:
            dst = state.entities.get(target)
            if dst is None or not self.lexicon.compatible(dst.type, rel.range):
                return None
            target_name = dst.name
            ctx.endpoints.add(target)
        ctx.endpoints.add(source)
        valid = next((t.iso for t in ctx.sent.times if t.start not in ctx.literal_times), None)
        return ExtractedTriple(source=src.name, relation=rel.name, target=target_name, valid_from=valid,
                               memory=ctx.sent.memory if ctx.sent.memory >= 0 else None)

    # ------------------------------------------------------------------ role nouns, emails

    def _role_triples(self, ctx: _SentCtx, used: set[int]) -> list[ExtractedTriple]:
        """"Maya's manager Tomás", "my sister Inês", "my boss is Tomás", "Tomás is my manager", "my dog Max"."""
        msg, s, e = ctx.sent.msg, ctx.sent.start, ctx.sent.end
        lex = self.lexicon
        out: list[ExtractedTriple] = []
        for a in range(s + 1, e):
            if ctx.inside[a - s] or a in used:
                continue
            possessor, pos_tok = self._possessor(ctx, a - 1)
            if possessor is None:
                continue
            for n in range(min(max(lex.max_role_len, lex.max_class_len), e - a), 0, -1):
                words = tuple(msg.lemmas[a:a + n])
                roles = lex.roles.get(words)
                cls = lex.class_words.get(words)
                if roles is None and cls is None:
                    continue
                b = a + n
                target, literal_at = self._role_target(ctx, b, pos_tok)
                if roles is not None:
                    got = self._apply_roles(ctx, roles, possessor, target, literal_at, a)
                    if got is not None:
                        out.append(got)
                        break
                if cls is not None and target is not None and target in ctx.state.entities:
                    ent = ctx.state.entities[target]
                    ent.set_type(cls, 1)
                    owns = lex.has_relations.get(cls) or next(
                        (r for c, r in lex.has_relations.items() if self.ontology.is_subclass(cls, c)), None)
                    if owns is not None and (t := self._make(ctx, possessor, owns, target, a)) is not None:
                        out.append(t)
                    break
        return out

    def _possessor(self, ctx: _SentCtx, k: int) -> tuple[str | None, int]:
        msg = ctx.sent.msg
        if k < ctx.sent.start:
            return None, k
        lo = msg.lowers[k]
        if lo == "my":
            return ctx.speaker, k
        if lo in ("his", "her", "its", "their") and ctx.state.topic is not None and msg.initial[k]:
            return ctx.state.topic, k
        if lo in ("'s", "’s", "'", "’"):
            m = ctx.ment_end.get(k)
            if m is not None:
                return m.key, m.start
        return None, k

    def _role_target(self, ctx: _SentCtx, b: int, pos_tok: int) -> tuple[str | None, int]:
        """The entity named by the role: after it ("my manager Tomás", "my boss is Tomás"), else before it
        ("Tomás is my manager"). Also returns where a literal value would start."""
        msg, s, e = ctx.sent.msg, ctx.sent.start, ctx.sent.end
        k = b
        if k < e and msg.lowers[k] in (",", ":", "-", "–"):
            k += 1
        if k < e and (msg.lemmas[k] == "be" or msg.lowers[k] in ("'s", "’s")):
            k += 1
        literal_at = k
        while k < e and msg.lowers[k] in ("the", "a", "an", "called", "named"):
            k += 1
        if k < e and k in ctx.ment_start:
            return ctx.ment_start[k].key, literal_at
        if k < e and msg.lowers[k] in ("me", "i") and ctx.speaker is not None:
            return ctx.speaker, literal_at
        j = pos_tok - 1
        if j >= s and (msg.lemmas[j] == "be" or msg.lowers[j] in _BE):
            j -= 1
            if j >= s and (j + 1) in ctx.ment_end:
                return ctx.ment_end[j + 1].key, literal_at
            if j >= s and msg.lowers[j] in FIRST_PERSON and ctx.speaker is not None:
                return ctx.speaker, literal_at
        return None, literal_at

    def _apply_roles(self, ctx: _SentCtx, roles: list[tuple[RelationInfo, Direction]], possessor: str,
                     target: str | None, literal_at: int, anchor: int) -> ExtractedTriple | None:
        for rel, direction in roles:
            if rel.kind == "datatype":
                if direction != "is":
                    continue
                value = self._literal(ctx, rel, literal_at, before=anchor)
                if value is not None and (t := self._make(ctx, possessor, rel, value, anchor, literal=True)):
                    return t
                continue
            if target is None:
                if direction == "is" and self._np_ok[rel.iri] and literal_at < ctx.sent.end:
                    np = self._noun_phrase(ctx, literal_at)
                    if np is not None and (t := self._make(ctx, possessor, rel, np, anchor)) is not None:
                        return t
                continue
            src, dst = (target, possessor) if direction == "of" else (possessor, target)
            t = self._make(ctx, src, rel, dst, anchor)
            if t is not None:
                return t
        return None

    def _email_triples(self, ctx: _SentCtx) -> list[ExtractedTriple]:
        """An address next to its owner ("reach me at maya@example.com", "Ana (ana@x.org)")."""
        rel = self.ontology.relation_info("email")
        if rel is None or rel.kind != "datatype":
            return []
        msg = ctx.sent.msg
        out: list[ExtractedTriple] = []
        for m in ctx.sent.mentions:
            if m.kind != "id" or "@" not in msg.texts[m.start]:
                continue
            owner = self._subject(ctx, m.start)
            if owner is None:
                continue
            t = self._make(ctx, owner, rel, msg.texts[m.start], m.start, literal=True)
            if t is not None:
                out.append(t)
        return out

    # ------------------------------------------------------------------ output

    def _entities_out(self, state: _Chunk) -> list[ExtractedEntity]:
        used = {m.key for sent in state.sentences for m in sent.mentions if m.kind != "np"}
        keep = [x for x in state.entities.values()
                if x.key in used or x.heading or x.key in state.endpoints or x.key in state.nested]
        keep.sort(key=lambda x: x.order)
        out: list[ExtractedEntity] = []
        for x in keep:
            own = " ".join(x.name.casefold().split())
            folded = {" ".join(a.casefold().split()): a for a in reversed(x.aliases)}
            aliases = [a for f, a in reversed(folded.items()) if f != own]
            out.append(ExtractedEntity(name=x.name, type=x.type, aliases=aliases, existing=x.existing))
        return out

    def _broad_range(self, rel: RelationInfo) -> bool:
        """Whether a lowercase noun phrase may be the object ("I love painting"): not for people, groups,
        places or languages, which have names."""
        if rel.kind != "object" or not rel.range:
            return False
        narrow = [c for c in ("Agent", "Place", "Organism", "Language") if self.ontology.resolve_class(c)]
        return all(not any(self.ontology.is_subclass(r, n) for n in narrow) for r in rel.range)


@dataclass
class _Match:
    pattern: RelationPattern
    toks: list[int]
    tokens: set[int]
    """Tokens this match claims; a gapped match shares its verb ("work as ... at")."""
    sort_key: tuple[int, bool, int, int, str, int]


@dataclass
class _SentCtx:
    sent: _Sentence
    speaker: str | None
    ment_start: dict[int, _Mention]
    ment_end: dict[int, _Mention]
    inside: list[bool]
    state: _Chunk
    literal_times: set[int] = field(default_factory=set)

    @property
    def endpoints(self) -> set[str]:
        return self.state.endpoints


__all__ = ["RuleExtractor"]
