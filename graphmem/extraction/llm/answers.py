"""What a chat model's answer must look like, and what is done with it: the strict JSON schemas sent,
the parsing that tolerates fences and chatter, and the halving and merging of chunks whose answer
did not fit. No I/O here: the extractor (``extractor.py``) sends and receives.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...ontology.naming import normalize_surface
from .. import prompt
from ..contract import ExtractedEntity, ExtractedMemory, ExtractedTriple, Extraction

M = TypeVar("M", bound=BaseModel)

_FENCE: Final = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)\s*```", re.S)
_THINK: Final = re.compile(r"<think>.*?</think>", re.S)


class RepairAnswer(BaseModel):
    """The answer to the re-ask after the guard rejected triples. Extra keys are ignored so that a
    model in JSON mode that repeats a whole extraction still yields its triples."""

    model_config = ConfigDict(extra="ignore")
    triples: list[ExtractedTriple] = Field(default_factory=list)


def strict_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema in the subset OpenAI's strict structured outputs accept.

    Every object gets ``additionalProperties: false`` and lists *all* its properties as required
    (optional fields are already nullable, ``anyOf [T, null]``, so the model writes ``null``); ``$ref``
    is inlined (a ``$ref`` with sibling keys such as ``description`` is not allowed, and inlining also
    suits servers with partial ``$ref`` support); ``default`` and ``title`` go (not part of the subset,
    and only cost tokens). Pydantic still validates the answer, so defaults apply when parsing.
    """
    raw = model.model_json_schema()
    defs: dict[str, Any] = raw.pop("$defs", {})

    def walk(node: dict[str, Any], chain: tuple[str, ...]) -> dict[str, Any]:
        node = dict(node)
        ref = node.pop("$ref", None)
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            if name in chain:
                raise ValueError(f"recursive schema through {name} cannot be inlined")
            return walk({**defs[name], **node}, (*chain, name))
        node.pop("title", None)
        node.pop("default", None)
        all_of = node.pop("allOf", None)
        if isinstance(all_of, list) and len(all_of) == 1:
            node = {**walk(all_of[0], chain), **node}
        elif all_of is not None:
            node["allOf"] = [walk(v, chain) for v in all_of]
        if node.get("type") == "object" or "properties" in node:
            props: dict[str, Any] = node.get("properties", {})
            node["properties"] = {k: walk(v, chain) for k, v in props.items()}
            node["required"] = list(props)
            node["additionalProperties"] = False
        if isinstance(node.get("items"), dict):
            node["items"] = walk(node["items"], chain)
        if isinstance(node.get("anyOf"), list):
            node["anyOf"] = [walk(v, chain) for v in node["anyOf"]]
        return node

    return walk(raw, ())


@dataclass(frozen=True)
class Spec(Generic[M]):
    """One kind of answer: its pydantic model, the strict schema sent, and the shape shown in JSON mode."""

    name: str
    model: type[M]
    schema: dict[str, Any]
    shape: str

    @classmethod
    def of(cls, name: str, model: type[M]) -> Spec[M]:
        schema = strict_json_schema(model)
        return cls(name, model, schema, prompt.json_shape(schema))


def bounded(schema: dict[str, Any], chunk: str) -> dict[str, Any]:
    """``schema`` with each list capped at what a chunk of that many lines can state.

    Why: a small model under grammar-constrained decoding (llama.cpp) can repeat one array item until
    the output limit, and the cut answer is lost; with ``maxItems`` the grammar itself closes the
    list. The caps are generous (two memories and four facts a line), so a real answer never meets
    them. Not sent to api.openai.com, whose strict subset is kept as documented."""
    lines = max(1, chunk.count("\n") + 1)
    caps = {"memories": 2 * lines + 2, "entities": 4 * lines + 4, "triples": 4 * lines + 4, "aliases": 4}

    def walk(node: Any, name: str | None) -> Any:
        """``name``: the property this node is the schema of (kept through ``items`` and ``anyOf``)."""
        if isinstance(node, list):
            return [walk(v, name) for v in node]
        if not isinstance(node, dict):
            return node
        out = dict(node)
        for key in ("items", "anyOf"):
            if key in out:
                out[key] = walk(out[key], name)
        if isinstance(out.get("properties"), dict):
            out["properties"] = {p: walk(v, p) for p, v in out["properties"].items()}
        if out.get("type") == "array" and name in caps:
            out["maxItems"] = caps[name]
        return out

    bounded_schema: dict[str, Any] = walk(schema, None)
    return bounded_schema


EXTRACTION: Final = Spec.of("graphmem_extraction", Extraction)
REPAIR: Final = Spec.of("graphmem_repair", RepairAnswer)


def looks_looping(content: str | None) -> bool:
    """Whether a cut-off answer ends in repetition (its last 2,000 characters compress tenfold)."""
    tail = (content or "")[-2000:]
    return len(tail) >= 1000 and len(zlib.compress(tail.encode("utf-8"))) * 10 < len(tail)


class BadOutput(Exception):
    """The answer is not valid JSON or does not fit the schema (message: what is wrong, briefly)."""


def _json_text(content: str) -> str:
    """The JSON inside an answer: without a ``<think>`` block, a Markdown fence or chatter around it."""
    text = _THINK.sub("", content).strip()
    fenced = _FENCE.search(text)
    if fenced:
        return fenced.group(1).strip()
    if not text.startswith("{"):
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            return text[start : end + 1]
    return text


def _describe(exc: ValidationError, limit: int = 3) -> str:
    problems = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err["loc"])
        problems.append(f"{where}: {err['msg']}" if where else str(err["msg"]))
    more = exc.error_count() - limit
    return "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")


def parse_answer(content: str | None, model: type[M]) -> M:
    """Validate an answer against ``model``, tolerating a fenced block; :class:`BadOutput` if unusable."""
    if content is None or not content.strip():
        raise BadOutput("the answer was empty")
    try:
        return model.model_validate_json(_json_text(content))
    except ValidationError as exc:
        raise BadOutput(_describe(exc)) from None


_SENTENCE_BREAK: Final = re.compile(r"[.!?…][\"'”’)\]]*\s+|[。！？]")


def split_in_two(text: str) -> tuple[str, str] | None:
    """Two halves of ``text`` cut near the middle, preferring a line break, then a sentence end, then a
    space within the middle half; a hard cut at the middle for text without any (``None`` if < 2 chars)."""
    text = text.strip()
    if len(text) < 2:
        return None
    mid, lo, hi = len(text) / 2, len(text) // 4, 3 * len(text) // 4
    lines = [m.end() for m in re.finditer(r"\n\s*", text)]
    sentences = [m.end() for m in _SENTENCE_BREAK.finditer(text)]
    spaces = [m.end() for m in re.finditer(r"\s+", text)]
    tiers = [[p for p in group if lo <= p <= hi] for group in (lines, sentences, spaces)]
    for positions in [*tiers, lines, sentences, spaces, [len(text) // 2]]:
        for cut in sorted(positions, key=lambda p: abs(p - mid)):
            first, second = text[:cut].strip(), text[cut:].strip()
            if first and second:
                return first, second
    return None


def merge(parts: Sequence[Extraction]) -> Extraction:
    """One extraction from the extractions of consecutive pieces of a chunk.

    Memories are concatenated, so each triple's ``memory`` index is shifted by the memories before its
    piece; entities named alike (case, spaces and dashes ignored) become one, keeping every alias and the
    first type and existing number given; a triple stated in several pieces is kept once.
    """
    memories: list[ExtractedMemory] = []
    entities: list[ExtractedEntity] = []
    triples: list[ExtractedTriple] = []
    by_name: dict[str, int] = {}
    seen: set[tuple[str, str, str, str | None]] = set()
    for part in parts:
        offset = len(memories)
        memories += part.memories
        for e in part.entities:
            key = normalize_surface(e.name)
            if key not in by_name:
                by_name[key] = len(entities)
                entities.append(e)
                continue
            i = by_name[key]
            old = entities[i]
            entities[i] = old.model_copy(update={
                "type": old.type or e.type,
                "existing": old.existing if old.existing is not None else e.existing,
                "aliases": list(dict.fromkeys([*old.aliases, *e.aliases])),
            })
        for t in part.triples:
            tkey = (normalize_surface(t.source), normalize_surface(t.relation), t.target.strip(), t.valid_from)
            if tkey in seen:
                continue
            seen.add(tkey)
            triples.append(t if t.memory is None else t.model_copy(update={"memory": t.memory + offset}))
    return Extraction(memories=memories, entities=entities, triples=triples)
