"""The text the LLM extractor sends: instructions, the ontology vocabulary, the per-chunk context.

The system prompt starts with a prefix that is byte-identical for every chunk of one ontology and
output mode (instructions, the answer's shape in JSON mode, the always-on core vocabulary), so servers
with prompt caching reuse it. After it comes what varies: the rest of the vocabulary pruned to what the
chunk can use (:mod:`.vocabulary`), then the reference time, speakers, and the numbered existing
memories and entities. Existing items are shown only by small numbers: the model can point at them but
cannot produce a stored id. No few-shot example is sent: each would cost more than the whole pruned
vocabulary of a typical chunk.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from ..chunking.tokens import ESTIMATE
from ..ontology import Ontology
from ..ontology.model import ClassInfo, RelationInfo
from ..ontology.naming import normalize_surface
from .contract import ExtractionContext, Rejection
from .vocabulary import select

MAX_DEFINITION_CHARS: Final = 120
"""A definition longer than this is cut at a sentence end: the vocabulary must stay compact."""
MAX_KNOWN_CHARS: Final = 400
"""An existing memory longer than this is shown shortened (the model only needs to recognise it)."""

_PREFIXED_TERM: Final = re.compile(r"\b[A-Za-z][\w.-]*:[A-Za-z_][\w-]*\b")
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+")

INSTRUCTIONS: Final = """\
Turn one part of a conversation into long-term memory for an AI agent. Lines start with the speaker \
("Name: text"). Answer with only a JSON object with the keys "memories", "entities" and "triples".

memories: facts worth remembering (preferences, plans, relationships, biography, events, how the user \
wants things done); skip small talk, questions and facts an existing memory states unchanged.
- text: one self-contained third-person statement naming who it is about ("Maya Lopez moved to Lisbon \
in March 2024", never "I moved there").
- memory_type: "semantic" (lasting fact), "episodic" (happens at a time), "procedural" (how the agent \
should act).
- event_time: episodic only, resolved against the reference time: YYYY-MM-DD (ISO 8601 with a stated \
time of day); else null.
- attributed_to: the speaker who stated it; null when unclear.
- replaces: number of the existing memory it corrects or updates; else null.

entities: every entity a triple mentions.
- name: full name as written; for a known entity below, its name exactly and existing = its number \
(else null).
- type: the most specific fitting class from the lists; null if none fits.
- aliases: other names the text uses for it; else [].

triples: facts between entities.
- relation: the most specific listed relation, in its direction (subject -> object). Never invent a \
relation or class: a fact no relation captures stays a memory only.
- source, target: entity names from your entities; for an xsd literal target, its lexical form (date \
YYYY-MM-DD, dateTime ISO 8601, integer digits, decimal 12.5, boolean true/false, anyURI absolute URL).
- valid_from: YYYY-MM-DD from which it holds, if stated (the date of a move); else null.
- valid_to: YYYY-MM-DD on which it ended, if the text says it ended ("I left Acme in May"); else null.
- memory: 0-based index of the memory that states it.

Numbers in [brackets] refer to the existing memories and known entities at the end; use no others."""

LEGEND: Final = """\
Marks: functional = one current value, a newer one replaces it; symmetric = holds both ways, state it \
once; transitive = chains; inverse of X = the same fact from the other side, use either."""
CORE_HEADING: Final = "VOCABULARY (class < parent: definition; relation: subject -> object [marks]: definition)"
CHUNK_HEADING: Final = "MORE VOCABULARY FOR THIS TEXT (\"text:\" = the words that name it here)"
MAX_CHUNK_VOCABULARY_TOKENS: Final = 1000
"""The per-chunk vocabulary (by the conservative offline token estimate) above which it is shortened:
definitions of classes, then of relations, then the "text:" notes are left out. A long, varied chunk
still gets a prompt of bounded size and every term it can use."""


def _one_line(text: str | None, limit: int = MAX_DEFINITION_CHARS) -> str:
    flat = " ".join((text or "").split())
    if len(flat) <= limit:
        return flat
    out = ""
    for sentence in _SENTENCE_END.split(flat):
        if out and len(out) + 1 + len(sentence) > limit:
            break
        out = f"{out} {sentence}".strip()
    return out if len(out) <= limit else out[: limit - 1].rstrip() + "…"


class _Names:
    """IRI -> the local name the model writes; ``prefix:local`` mentions in definitions rewritten."""

    def __init__(self, ontology: Ontology) -> None:
        self._by_iri = {iri: c.name for iri, c in ontology.classes.items()}
        self._by_iri.update({iri: r.name for iri, r in ontology.relations.items()})
        self._short = {ontology.short(iri): name for iri, name in self._by_iri.items()}
        self._ontology = ontology

    def name(self, iri: str) -> str:
        return self._by_iri.get(iri) or self._ontology.short(iri)

    def names(self, iris: Iterable[str], empty: str) -> str:
        out = [self.name(i) for i in iris]
        return "|".join(out) if out else empty

    def text(self, definition: str | None) -> str:
        return _PREFIXED_TERM.sub(lambda m: self._short.get(m.group(0), m.group(0)), _one_line(definition))


def _definition(text: str | None, names: _Names, marks: Sequence[str]) -> str:
    """The first sentences of a definition, without those that only restate a mark ("Functional: …")."""
    flat = " ".join((text or "").split())
    kept = [x for x in _SENTENCE_END.split(flat)
            if not any(x.casefold().startswith(m.split()[0].casefold()) for m in marks)]
    return names.text(" ".join(kept))


def _said(item: ClassInfo | RelationInfo, matched: Sequence[str]) -> str:
    """The chunk's words for a term, minus those that only restate its name."""
    own = normalize_surface(item.name)
    shown = [m for m in dict.fromkeys(matched) if normalize_surface(m) != own]
    return f" (text: {', '.join(shown)})" if shown else ""


def _class_line(c: ClassInfo, names: _Names, *, definition: bool, matched: Sequence[str] = ()) -> str:
    head = c.name + (f" < {names.names(c.parents, '')}" if c.parents else "")
    text = _definition(c.definition, names, ()) if definition else ""
    return f"- {head}{': ' + text if text else ''}{_said(c, matched)}"


def _relation_line(r: RelationInfo, names: _Names, shown: Collection[str], *, definition: bool,
                   matched: Sequence[str] = ()) -> str:
    """``shown``: the relations the prompt lists, so that "inverse of X" only names a listed X."""
    rng = "|".join(names.name(x) for x in r.range) or ("Thing" if r.kind == "object" else "literal")
    head = f"{r.name}: {names.names(r.domain, 'Thing')} -> {rng}"
    marks = [m for m, on in (("functional", r.functional), ("symmetric", r.symmetric),
                             ("transitive", r.transitive)) if on]
    if r.inverse and r.inverse in shown:
        marks.append(f"inverse of {names.name(r.inverse)}")
    if marks:
        head += f" [{', '.join(marks)}]"
    text = _definition(r.definition, names, marks) if definition else ""
    return f"- {head}{': ' + text if text else ''}{_said(r, matched)}"


def _lines(ontology: Ontology, classes: Sequence[str], relations: Sequence[str], shown: Collection[str], *,
           class_definitions: bool = True, relation_definitions: bool = True,
           matched: Mapping[str, Sequence[str]] | None = None, bare: Collection[str] = ()) -> list[str]:
    """``bare``: classes shown without their definition (listed only so that others can be read)."""
    names = _Names(ontology)
    found = matched or {}
    out = [_class_line(ontology.classes[c], names, definition=class_definitions and c not in bare,
                       matched=found.get(c, ())) for c in classes]
    out += [_relation_line(ontology.relations[r], names, shown, definition=relation_definitions,
                           matched=found.get(r, ())) for r in relations]
    return out


def vocabulary(ontology: Ontology) -> str:
    """The whole ontology as the model reads it: one line per class and per relation."""
    classes = sorted(ontology.classes, key=lambda i: ontology.classes[i].name.casefold())
    relations = sorted(ontology.relations, key=lambda i: ontology.relations[i].name.casefold())
    return "\n".join([CORE_HEADING, *_lines(ontology, classes, relations, set(ontology.relations)), LEGEND])


def core_vocabulary(ontology: Ontology) -> str:
    """The always-on terms: the same for every chunk, so they belong to the cached prefix."""
    sel = select(ontology, "")
    lines = _lines(ontology, sel.core_classes, sel.core_relations, sel.all_relations, bare=sel.closure_only)
    return "\n".join([CORE_HEADING, *lines, LEGEND])


def chunk_vocabulary(ontology: Ontology, chunk: str) -> str:
    """The terms ``chunk`` can use beyond the core; definitions go first when it would exceed
    :data:`MAX_CHUNK_VOCABULARY_TOKENS`. Empty when the core covers it."""
    sel = select(ontology, chunk)
    if not sel.classes and not sel.relations:
        return ""
    shown = sel.all_relations
    text = ""
    for class_defs, relation_defs, notes in ((True, True, True), (False, True, True), (False, False, True),
                                             (False, False, False)):
        lines = _lines(ontology, sel.classes, sel.relations, shown, class_definitions=class_defs,
                       relation_definitions=relation_defs, matched=sel.matched if notes else None,
                       bare=sel.closure_only)
        text = "\n".join([CHUNK_HEADING if notes else CHUNK_HEADING.split(" (")[0], *lines])
        if ESTIMATE.count(text) <= MAX_CHUNK_VOCABULARY_TOKENS:
            break
    return text


def json_shape(schema: dict[str, Any]) -> str:
    """A compact picture of a strict JSON schema, for servers that only offer JSON mode."""

    def shape(node: dict[str, Any]) -> str:
        if "anyOf" in node:
            return "|".join(shape(v) for v in node["anyOf"])
        if "enum" in node:
            return "|".join(str(v) for v in node["enum"])
        kind = node.get("type")
        if kind == "object":
            return "{" + ", ".join(f'"{k}": {shape(v)}' for k, v in node.get("properties", {}).items()) + "}"
        if kind == "array":
            return f"[{shape(node.get('items', {}))}]"
        return {"string": "str", "integer": "int", "number": "num", "boolean": "bool",
                "null": "null"}.get(str(kind), "value")

    return shape(schema)


class _Cache:
    """Static system-prompt prefixes by ontology fingerprint and output mode (built once, reused)."""

    def __init__(self, size: int = 8) -> None:
        self._items: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def get(self, ontology: Ontology, shape: str | None) -> str:
        key = (ontology.fingerprint, shape or "")
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        text = INSTRUCTIONS
        if shape:
            text += f"\n\nThe JSON object has exactly this shape (all keys present, [x] = list of x):\n{shape}"
        text += "\n\n" + core_vocabulary(ontology)
        with self._lock:
            self._items[key] = text
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return text


_CACHE: Final = _Cache()


def static_prompt(ontology: Ontology, shape: str | None = None) -> str:
    """Instructions, the answer's shape (JSON mode only) and the core vocabulary: byte-identical for
    every chunk of one ontology and mode, so servers with prompt caching reuse it."""
    return _CACHE.get(ontology, shape)


def reference_line(when: datetime) -> str:
    zone = "" if when.tzinfo is not None else " (no time zone given)"
    return (f"Reference time: {when.isoformat(timespec='minutes')}{zone}, a {when.strftime('%A')}. "
            "Resolve relative dates and times against it.")


def _entity_line(number: int, name: str, types: Sequence[str], aliases: Sequence[str], ontology: Ontology) -> str:
    shown = []
    for t in types:
        info = ontology.class_info(t)
        shown.append(info.name if info else t)
    line = f"[{number}] {name}"
    if shown:
        line += f" ({', '.join(dict.fromkeys(shown))})"
    if aliases:
        line += f"; also called {', '.join(aliases)}"
    return line


def context_block(context: ExtractionContext) -> str:
    """What changes per chunk: time, speakers, and the numbered existing memories and entities."""
    parts = [reference_line(context.reference_time)]
    if context.speakers:
        parts.append("Speakers: " + ", ".join(context.speakers))
    if context.memories:
        parts.append("EXISTING MEMORIES (refer to them only by number, in replaces):\n" + "\n".join(
            f"[{m.number}] {_one_line(m.text, MAX_KNOWN_CHARS)}" for m in context.memories))
    else:
        parts.append("EXISTING MEMORIES: none (replaces is always null).")
    if context.entities:
        parts.append("KNOWN ENTITIES (refer to them only by number, in existing):\n" + "\n".join(
            _entity_line(e.number, e.name, e.types, e.aliases, context.ontology) for e in context.entities))
    else:
        parts.append("KNOWN ENTITIES: none (existing is always null).")
    if context.instructions:
        parts.append("THE CALLER'S INSTRUCTIONS FOR THIS TEXT (follow them within the rules above):\n"
                     + context.instructions)
    return "\n\n".join(parts)


def system_prompt(context: ExtractionContext, shape: str | None = None, chunk: str | None = None) -> str:
    """The stable prefix, then what varies: the vocabulary ``chunk`` can use beyond the core (every
    other term when no chunk is given) and the context block."""
    prefix = static_prompt(context.ontology, shape)
    if chunk is None:
        onto = context.ontology
        sel = select(onto, "")
        rest_c = sorted(set(onto.classes) - sel.all_classes, key=lambda i: onto.classes[i].name.casefold())
        rest_r = sorted(set(onto.relations) - sel.all_relations, key=lambda i: onto.relations[i].name.casefold())
        more = "\n".join([CHUNK_HEADING.split(" (")[0], *_lines(onto, rest_c, rest_r, set(onto.relations))])
    else:
        more = chunk_vocabulary(context.ontology, chunk)
    return prefix + "\n\n" + (more + "\n\n" if more else "") + context_block(context)


def corrective(error: str) -> str:
    """The short note sent after output that was not valid JSON or did not fit the schema."""
    return (f"That answer could not be used: {error}. Answer again with only the JSON object, following the "
            "required structure exactly (all keys present, null where unknown).")


def repair_request(rejected: Sequence[Rejection]) -> str:
    """The re-ask after the SHACL guard refused triples: each triple with the guard's messages."""
    lines = ["The ontology guard rejected these triples from your answer:"]
    for i, r in enumerate(rejected):
        t = r.triple
        lines.append(f"{i + 1}. ({t.source}, {t.relation}, {t.target})")
        lines += [f"   - {' '.join(reason.split())}" for reason in r.reasons] or ["   - (no message)"]
    lines.append(
        'Answer with a JSON object {"triples": [...]} holding a corrected version of each rejected triple that the '
        "conversation supports: a listed relation in its direction, entity names from your entities or the known "
        "entities, classes that fit the relation, literals in their lexical form. Leave out a triple that has no "
        "valid version; do not repeat triples that were accepted. An empty list is a valid answer.")
    return "\n".join(lines)
