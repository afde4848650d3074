"""The text the LLM extractor sends: instructions, the ontology vocabulary, the per-chunk context.

The system prompt is split into a static prefix (instructions and vocabulary, the same for every chunk
of one ontology, so servers with prefix caching reuse it) and a per-chunk context (reference time,
speakers, numbered existing memories and entities). Existing items are shown only by small numbers:
the model can point at them but cannot produce a stored id.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Final

from ..ontology import Ontology
from ..ontology.model import ClassInfo, RelationInfo
from ..ontology.naming import normalize_surface
from .schema import ExtractionContext, Rejection

MAX_DEFINITION_CHARS: Final = 220
"""A definition longer than this is cut at a sentence end: the vocabulary must stay compact."""
MAX_KNOWN_CHARS: Final = 400
"""An existing memory longer than this is shown shortened (the model only needs to recognise it)."""

_PREFIXED_TERM: Final = re.compile(r"\b[A-Za-z][\w.-]*:[A-Za-z_][\w-]*\b")
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+")

INSTRUCTIONS: Final = """\
You turn one part of a conversation into long-term memory for an AI agent: memories, entities and \
knowledge-graph triples. Lines of the conversation start with the speaker ("Name: text"). Answer with \
one JSON object with the keys "memories", "entities" and "triples" and nothing else.

memories: facts worth remembering later (preferences, plans, relationships, biography, decisions, \
events, how the user wants things done). Skip greetings, small talk, questions that state no fact, and \
facts that an existing memory already says unchanged.
- text: one self-contained statement in the third person that names who it is about, never "I", "you" \
or "he" ("Maya Lopez moved to Lisbon in March 2024", not "I moved there").
- memory_type: "semantic" for lasting facts and preferences, "episodic" for something that happened or \
will happen at a time, "procedural" for instructions on how the agent should do something.
- event_time: for episodic memories, when it happened, resolved against the reference time below \
("yesterday", "last week", "next Tuesday"); YYYY-MM-DD, or an ISO-8601 date-time when the time of day \
is stated; null when unknown.
- attributed_to: the speaker who stated the fact or holds the preference; null when unclear.
- replaces: the number of an existing memory that this one corrects or updates; else null.

entities: every entity a triple mentions.
- name: its full proper name as written ("Maya Lopez", "Acme Corp"). When it is a known entity listed \
below, use that entity's name exactly and set existing to its number; else existing is null.
- type: the most specific class from the class list that fits; null if none does.
- aliases: other names the text uses for it (nicknames, short forms); else [].

triples: facts between entities, one per relation instance.
- relation: a relation name from the relation list, in its direction (subject class -> object class). \
Use the most specific relation that fits. Never invent a relation or a class: a fact that no listed \
relation captures stays a memory only.
- source and target: entity names from your entities list. For a relation whose object is a literal \
(xsd:...), target is the value in its lexical form: xsd:date YYYY-MM-DD, xsd:dateTime ISO 8601, \
xsd:integer digits only, xsd:decimal like 12.5, xsd:boolean true/false, xsd:anyURI an absolute URL, \
strings as stated.
- valid_from: YYYY-MM-DD from which the fact holds, when the text says so (e.g. the date of a move); \
else null.
- memory: the 0-based position, in your memories list, of the memory that states the triple.

Numbers in square brackets refer to the existing memories and known entities listed at the end. \
Use only those numbers; never make up ids."""

LEGEND: Final = """\
Marks: functional = one current value, a newer value replaces the old; symmetric = holds both ways, \
state it once; transitive = chains (A in B, B in C); inverse of X = the same fact seen from the other \
side, use either."""


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


def _synonyms(name: str, label: str, alt_labels: Sequence[str]) -> list[str]:
    """Label and altLabels, minus those that only restate the local name (``person`` for ``Person``)."""
    seen = {normalize_surface(name)}
    out = []
    for s in (label, *alt_labels):
        key = normalize_surface(s)
        if key and key not in seen:
            seen.add(key)
            out.append(s)
    return out


def _class_line(c: ClassInfo, names: _Names) -> str:
    head = c.name
    if c.parents:
        head += f" < {names.names(c.parents, '')}"
    syn = _synonyms(c.name, c.label, c.alt_labels)
    if syn:
        head += f" (also: {', '.join(syn)})"
    definition = names.text(c.definition)
    return f"- {head}: {definition}" if definition else f"- {head}"


def _relation_line(r: RelationInfo, names: _Names) -> str:
    rng = "|".join(names.name(x) for x in r.range) or ("Thing" if r.kind == "object" else "literal")
    head = f"{r.name}: {names.names(r.domain, 'Thing')} -> {rng}"
    marks = [m for m, on in (("functional", r.functional), ("symmetric", r.symmetric),
                             ("transitive", r.transitive)) if on]
    if r.inverse:
        marks.append(f"inverse of {names.name(r.inverse)}")
    if marks:
        head += f" [{', '.join(marks)}]"
    syn = _synonyms(r.name, r.label, r.alt_labels)
    if syn:
        head += f" (also: {', '.join(syn)})"
    definition = names.text(r.definition)
    for restated in marks:  # "Symmetric." in a definition only repeats the mark
        definition = re.sub(rf"(?:^|\s){re.escape(restated)}\.(?=\s|$)", "", definition, flags=re.I).strip()
    return f"- {head}: {definition}" if definition else f"- {head}"


def vocabulary(ontology: Ontology) -> str:
    """The ontology as the model needs it: one line per class and per relation."""
    names = _Names(ontology)
    classes = sorted(ontology.classes.values(), key=lambda c: c.name.casefold())
    relations = sorted(ontology.relations.values(), key=lambda r: r.name.casefold())
    lines = ["CLASSES (name < parent (also: synonyms): definition)"]
    lines += [_class_line(c, names) for c in classes]
    lines += ["", "RELATIONS (name: subject class -> object class or xsd literal [marks] (also: synonyms): definition)"]
    lines += [_relation_line(r, names) for r in relations]
    lines += [LEGEND]
    return "\n".join(lines)


def json_shape(schema: dict[str, Any]) -> str:
    """A compact picture of a strict JSON schema, for servers that only offer JSON mode."""

    def shape(node: dict[str, Any]) -> str:
        if "anyOf" in node:
            return "|".join(shape(v) for v in node["anyOf"])
        if "enum" in node:
            return '"' + "|".join(str(v) for v in node["enum"]) + '"'
        kind = node.get("type")
        if kind == "object":
            return "{" + ", ".join(f'"{k}": {shape(v)}' for k, v in node.get("properties", {}).items()) + "}"
        if kind == "array":
            return f"[{shape(node.get('items', {}))}, ...]"
        return {"string": "string", "integer": "int", "number": "number", "boolean": "bool",
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
            text += f"\n\nThe JSON object has exactly this shape:\n{shape}"
        text += "\n\n" + vocabulary(ontology)
        with self._lock:
            self._items[key] = text
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return text


_CACHE: Final = _Cache()


def static_prompt(ontology: Ontology, shape: str | None = None) -> str:
    """Instructions plus vocabulary; ``shape`` (JSON mode only) spells out the answer's structure."""
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
    return "\n\n".join(parts)


def system_prompt(context: ExtractionContext, shape: str | None = None) -> str:
    return static_prompt(context.ontology, shape) + "\n\n" + context_block(context)


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
