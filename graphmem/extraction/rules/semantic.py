"""Predicates the ontology does not spell, mapped by meaning: the store's embedder compares a clause's
predicate ("allergic to", "work at") with every relation's label and synonyms.

The clause reader (:mod:`.clauses`) first looks a predicate up by its lemmas among the ontology's
surface forms; only when none has those lemmas does it ask this map. The map keeps the relations
whose nearest surface form is at least :data:`RELATION_MIN` similar and within :data:`MARGIN` of the
best one, most similar first; domain, range and the object's class then decide as for a spelled
predicate, and the guard judges the triple. So a modeller's ontology with labels and synonyms reaches
phrasings it does not list, with no code for it. Built only with a semantic embedder (never the
hashing one, whose vectors match words, not meaning), on first use.
"""

from __future__ import annotations

import hashlib
import io
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from ... import cachedir

if TYPE_CHECKING:
    from ...embedding import Embedder
    from ...ontology import Ontology
    from ...ontology.model import RelationInfo

RELATION_MIN: Final = 0.6
"""Least cosine between a predicate and a relation's nearest surface form (all-MiniLM-L6-v2)."""
MARGIN: Final = 0.05
"""Relations within this of the best one stay candidates, for domain and range to choose among."""
CLASS_MIN: Final = 0.35
"""Least cosine between a plain noun ("penicillin") and the nearest name of a class a relation admits."""
CLASS_MARGIN: Final = 0.08
"""How far that class may trail the noun's nearest class of any kind ("asthma" is nearer "inhaler")."""
STRICT_CLASS_MIN: Final = 0.45
"""After a light verb, which says little ("I take metformin"): the noun's nearest class, this near."""
_CACHE_LIMIT: Final = 4_096
"""Nouns whose vectors and classes are kept (~2 KB each); past it the cache starts again."""
_NAMES: dict[str, npt.NDArray[np.float32]] = {}
"""Vectors of an ontology's names per embedder, shared by the extractors of a process."""
_NAMES_LOCK = threading.Lock()


class SemanticMap:
    """Relation surface forms and class names, embedded on first use (then read from graphmem's cache
    folder, so a new process does not embed them again); predicates and nouns embedded once each
    (kept, up to a bound)."""

    def __init__(self, ontology: Ontology, embedder: Embedder) -> None:
        from .lexicon import definition_examples  # spaCy's word lists load with these
        from .words import PREPOSITIONS

        self._prepositions = PREPOSITIONS
        self._embedder = embedder
        self._ontology = ontology
        self._relations: list[RelationInfo] = []
        self._texts: list[str] = []
        for rel in sorted(ontology.relations.values(), key=lambda r: r.iri):
            if rel.kind != "object":
                continue
            for form in dict.fromkeys((rel.label, *rel.alt_labels)):
                if form:
                    self._relations.append(rel)
                    self._texts.append(form)
        self._form_words = [frozenset(t.casefold().split()) for t in self._texts]
        self._class_of: list[str] = []
        for cls in sorted(ontology.classes.values(), key=lambda c: c.iri):
            for form in dict.fromkeys((cls.label, *cls.alt_labels, *definition_examples(cls.definition))):
                if form:
                    self._class_of.append(cls.iri)
                    self._texts.append(form)
        self._names: npt.NDArray[np.float32] | None = None
        self._vectors: dict[str, npt.NDArray[np.float32]] = {}
        self._classes: dict[tuple[str, tuple[str, ...], bool, float], str | None] = {}
        self._lock = threading.Lock()

    @property
    def _forms(self) -> npt.NDArray[np.float32]:
        return self._all_names()[:len(self._relations)]

    @property
    def _class_forms(self) -> npt.NDArray[np.float32]:
        return self._all_names()[len(self._relations):]

    def _all_names(self) -> npt.NDArray[np.float32]:
        if self._names is None:
            key = hashlib.sha256("\0".join([self._embedder.name, *self._texts]).encode()).hexdigest()[:32]
            with _NAMES_LOCK:
                if key not in _NAMES:
                    cached = _read(key, len(self._texts), self._embedder.dims)
                    _NAMES[key] = cached if cached is not None else _write(key, self._embedder.embed(self._texts))
                self._names = _NAMES[key]
        return self._names

    def relations(self, key: tuple[str, ...]) -> list[RelationInfo]:
        """The relations a predicate key (lemmas, a preposition last if any) most likely means, most
        similar first (often none). A key ending in a preposition only reaches surface forms with that
        preposition ("allergic to": "has an allergy to"; "manage at" is not "manages")."""
        return self._rank(" ".join(key), key[-1] if len(key) > 1 and key[-1] in self._prepositions else None)

    def class_within(self, noun: str, allowed: Sequence[str], *, strict: bool = False,
                     least: float = STRICT_CLASS_MIN) -> str | None:
        """The class (name) of ``noun`` among ``allowed`` (IRIs, with their subclasses), when one of
        their names is near it and not much farther than the noun's nearest class; else ``None``.
        ``strict`` (after a light verb, which says little: "I take metformin"): near enough by
        :data:`STRICT_CLASS_MIN` (or ``least``) and the nearest class of all."""
        if not len(self._class_of) or not allowed:
            return None
        key = (noun, tuple(allowed), strict, least)
        if key not in self._classes:  # asked per triple ("a person" for each fact of the speaker)
            with self._lock:
                if len(self._classes) > _CACHE_LIMIT:
                    self._classes.clear()
            self._classes[key] = self._class_within(noun, allowed, strict, least)
        return self._classes[key]

    def _class_within(self, noun: str, allowed: Sequence[str], strict: bool, least: float) -> str | None:
        sims = self._class_forms @ self._vector(noun)
        best: dict[str, float] = {}
        for iri, sim in zip(self._class_of, sims.tolist(), strict=True):
            best[iri] = max(best.get(iri, -1.0), sim)
        classes = self._ontology.classes
        inside = {iri: s for iri, s in best.items()
                  if iri in allowed or any(a in classes[iri].ancestors for a in allowed)}
        if not inside:
            return None
        iri, sim = max(inside.items(), key=lambda kv: kv[1])
        least, margin = (least, 0.0) if strict else (CLASS_MIN, CLASS_MARGIN)
        if sim < least or sim < max(best.values()) - margin:
            return None
        return classes[iri].name

    def _vector(self, text: str) -> npt.NDArray[np.float32]:
        with self._lock:
            got = self._vectors.get(text)
        if got is None:
            got = self._embedder.embed_one(text)
            with self._lock:
                if len(self._vectors) > _CACHE_LIMIT:
                    self._vectors.clear()
                self._vectors[text] = got
        return got

    def _rank(self, predicate: str, preposition: str | None) -> list[RelationInfo]:
        if not len(self._relations):
            return []
        sims = self._forms @ self._vector(predicate)
        best: dict[str, tuple[float, RelationInfo]] = {}
        for i in np.argsort(-sims)[:32]:
            rel = self._relations[int(i)]
            if preposition is not None and preposition not in self._form_words[int(i)]:
                continue
            if rel.iri not in best:
                best[rel.iri] = (float(sims[i]), rel)
        ranked = sorted(best.values(), key=lambda s: -s[0])
        if not ranked or ranked[0][0] < RELATION_MIN:
            return []
        top = ranked[0][0]
        return [rel for sim, rel in ranked if sim >= max(RELATION_MIN, top - MARGIN)]


def _path(key: str) -> Path | None:
    base = cachedir.root()
    return base / "semantic" / f"{key}.npy" if base is not None else None


def _read(key: str, rows: int, dims: int) -> npt.NDArray[np.float32] | None:
    path = _path(key)
    if path is None:
        return None
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None
    if data.dtype != np.float32 or data.shape != (rows, dims):
        return None
    names: npt.NDArray[np.float32] = data
    return names


def _write(key: str, names: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Best effort: a read-only cache folder costs an embedding of the names per process."""
    path = _path(key)
    if path is not None:
        buffer = io.BytesIO()
        np.save(buffer, names, allow_pickle=False)
        cachedir.write(path, buffer.getvalue())
    return names
