"""One validated configuration object holding every tunable, with its default and why.

Load it from a dict (``MemoryConfig.model_validate``/``Memory.from_config``), a YAML or TOML file
(``MemoryConfig.from_file``) or ``GRAPHMEM_*`` environment variables, nested with ``__``
(``GRAPHMEM_STORE__PROVIDER=neo4j``). Explicit values win over the environment.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from .errors import ConfigError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


def default_home() -> Path:
    return Path(os.environ.get("GRAPHMEM_HOME") or Path.home() / ".graphmem")


def display_uri(uri: str) -> str:
    """``uri`` without its userinfo (``bolt://user:pass@host`` → ``bolt://host``): the form every
    message, repr and log line shows, so that credentials written into a URI never leak."""
    scheme, sep, rest = uri.partition("://")
    if not sep:
        scheme, rest = "", uri
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority = rest[:end].rpartition("@")[2]
    return f"{scheme}{sep}{authority}{rest[end:]}"


_SECRET_FIELDS = frozenset({"password", "api_key"})
_OPAQUE_ERRORS = frozenset({"extra_forbidden", "model_type", "model_attributes_type", "dict_type"})
"""Errors whose value is a typo'd key's or a whole section's, which may hold a secret."""


def _describe(exc: ValidationError) -> str:
    """pydantic's errors without echoing secrets: its own text repeats every rejected value
    (``input_value=...``), so a password of the wrong type, a typo'd key holding one, or a whole
    section given to a model validator would appear in the message. Only short scalar values of
    fields that are not secrets are shown; URIs without their credentials."""
    lines = []
    for err in exc.errors(include_url=False):
        loc = [str(part) for part in err.get("loc", ())]
        where = ".".join(loc) or "configuration"
        line = f"  {where}: {err.get('msg', 'invalid value')}"
        value = err.get("input")
        secret = bool(_SECRET_FIELDS.intersection(loc)) or err.get("type") in _OPAQUE_ERRORS
        if not secret and isinstance(value, str | int | float | bool):
            shown = display_uri(value) if isinstance(value, str) and loc[-1:] == ["uri"] else value
            text = repr(shown)
            line += f" (got {text[:100]}{'…' if len(text) > 100 else ''})"
        lines.append(line)
    return "\n".join(lines)


class StoreConfig(_Section):
    provider: str = Field("sqlite", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
    """``sqlite``: one local file, no server (default). ``neo4j``: a Neo4j 5.26+ server over Bolt.
    Another name: a backend registered with :func:`graphmem.stores.register_store` or installed as a
    ``graphmem.stores`` entry point."""
    path: Path | None = None
    """SQLite file; default ``<home>/graphmem.db``."""
    busy_timeout_ms: int = Field(30_000, ge=0)
    """How long a SQLite writer waits for another process's write lock before failing."""
    uri: str = "bolt://127.0.0.1:7687"
    """Bolt address. Credentials written into it (``bolt://user:pass@host``, percent-encoded) are
    taken out into ``user`` and ``password`` when the config loads, so the URI kept and shown never
    holds them (the Neo4j driver refuses userinfo in a URI anyway)."""
    user: str = "neo4j"
    password: SecretStr | None = None
    """Never printed (``repr``, ``model_dump_json`` show ``**********``); read it with
    ``.get_secret_value()``. Also from ``GRAPHMEM_STORE__PASSWORD``."""
    database: str | None = None
    """Neo4j database name; ``None`` uses the server default (``neo4j`` on Community)."""
    connect_timeout_s: float = Field(10.0, gt=0)
    """Bolt connection timeout; an unreachable server fails after this instead of retrying forever."""
    max_transaction_retry_s: float = Field(15.0, ge=0)
    """Time within which a Neo4j transaction that failed transiently (a deadlock, a leader switch)
    is run again, after pauses of a few milliseconds, doubling."""
    conflict_retries: int = Field(16, ge=0, le=1000)
    """Times a write is planned again when a concurrent writer changed what its plan read (see the
    README's "Concurrency"). Each of n writers racing for one entity commits after at most n plans."""
    write_batch_size: int = Field(1000, ge=1)
    """Rows per ``UNWIND`` batch for bulk writes."""
    fulltext_analyzer: str = Field("english", pattern=r"^[a-z][a-z0-9_-]{0,63}$")
    """Neo4j: the Lucene analyzer of the memory full-text index (``CALL
    db.index.fulltext.listAvailableAnalyzers()``: ``english``, ``standard-folding``, ``german``,
    ``cjk``…); a store whose index has another one keeps it, with a warning, until ``optimize()``
    rebuilds it. ``english`` stems and drops stop words but keeps accents; on MuSiQue, whose
    questions write names without theirs, ``standard-folding`` gave full text recall@5 0.508 against
    0.488 (hybrid 0.718 against 0.699). SQLite's FTS5 index always stems (Porter) and folds accents."""
    cypher_timeout_s: float = Field(10.0, gt=0)
    """Neo4j: longest an analyst query (``Memory.cypher``) may run; it is the query's own transaction
    timeout, so the server stops it and ``QueryTimeoutError`` is raised. Not a server-wide limit:
    graphmem's own writes are not bound by it."""
    cypher_max_rows: int = Field(10_000, ge=1)
    """Neo4j: most rows an analyst query may return; graphmem stops reading at the next one and raises
    ``RowLimitError`` (add a ``LIMIT``) rather than hand back a silently cut result."""

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, name: str) -> str:
        from .stores.registry import providers

        known = providers()
        if name not in known:
            raise ValueError(f"no store provider {name!r}; available: {', '.join(known)}")
        return name

    @model_validator(mode="after")
    def _credentials_from_uri(self) -> StoreConfig:
        """Move ``user:pass@`` out of ``uri`` (see ``uri``); the messages never repeat them."""
        try:
            parts = urlsplit(self.uri)
            user, password = parts.username, parts.password
        except ValueError:  # the driver refuses such a URI at open, naming it without credentials
            return self
        if user is None and password is None:
            return self
        if user is not None and "user" in self.model_fields_set and unquote(user) != self.user:
            raise ValueError("store.uri and store.user name different users; give the user once")
        if password is not None:
            given = self.password.get_secret_value() if self.password is not None else None
            if given is not None and given != unquote(password):
                raise ValueError("store.uri carries a password and store.password is a different one; "
                                 "give the password once")
            self.password = SecretStr(unquote(password))
        if user is not None:
            self.user = unquote(user)
        self.uri = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        return self


class EmbedderConfig(_Section):
    provider: Literal["auto", "openai", "sentence-transformers", "hashing"] = "auto"
    """``auto``: OpenAI when ``OPENAI_API_KEY`` is set, else sentence-transformers when installed,
    else the deterministic hashing embedder."""
    model: str | None = None
    """Model name; defaults per provider: ``text-embedding-3-small``, ``all-MiniLM-L6-v2``."""
    dims: int | None = Field(None, ge=8, le=8192)
    """Vector size; hashing defaults to 384, the others report their own."""
    api_key: SecretStr | None = None
    """Never printed; ``None`` lets the openai client read ``OPENAI_API_KEY``."""
    base_url: str | None = None
    batch_size: int = Field(128, ge=1)
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(3, ge=0)


class LLMConfig(_Section):
    provider: Literal["none", "openai"] = "none"
    """``openai``: any OpenAI-compatible chat endpoint (``base_url`` for Ollama, vLLM, LM Studio, Azure).
    ``none``: the rule-based extractor (spaCy rules from the ontology's labels and synonyms)."""
    model: str = "gpt-4o-mini"
    api_key: SecretStr | None = None
    """Never printed; ``None`` falls back to ``OPENAI_API_KEY``."""
    base_url: str | None = None
    temperature: float = 0.0
    max_output_tokens: int = Field(4096, ge=256)
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(3, ge=0)
    """Transport retries (429, 5xx, timeouts) done by the openai client, with backoff."""
    output_retries: int = Field(2, ge=0)
    """Extra attempts when the output is malformed JSON or fails the schema."""
    max_splits: int = Field(3, ge=0)
    """How many times a chunk whose output was cut off (``finish_reason == "length"``) is halved."""
    structured_output: Literal["auto", "json_schema", "json_object"] = "auto"
    """``auto`` tries a JSON schema and falls back to JSON mode (plus validation) if the server refuses."""
    repair: bool = True
    """Send rejected triples back once with the SHACL messages before quarantining what still fails."""
    rules_granularity: Literal["sentence", "message"] = "sentence"
    """With ``provider: none``: one memory per sentence, or one per speaker turn (or paragraph). Whole
    turns keep the context a sentence loses ("I did!" after a question) and index fewer rows."""


class DedupConfig(_Section):
    memory_similarity: float = Field(0.95, ge=0, le=1)
    """An extracted memory whose embedding has at least this cosine similarity with one already in
    the scope is not stored again (event ``NONE``). 1.0 turns it off; verbatim adds use exact hashes."""
    entity_similarity: float = Field(0.9, ge=0, le=1)
    """A new entity name whose embedding has at least this cosine similarity with a stored entity of
    the same scope (and a compatible type) is that entity; its name becomes an alias. Names are first
    matched exactly (normalized name, aliases); 1.0 turns the vector step off."""


class ChunkingConfig(_Section):
    strategy: Literal["fixed", "sentence", "recursive", "semantic"] = "recursive"
    max_tokens: int = Field(2000, ge=16)
    """Token budget per chunk sent to the extractor. Longer input is split, never truncated."""
    overlap_tokens: int = Field(0, ge=0)
    tokenizer: str | None = None
    """tiktoken encoding name; ``None`` picks the LLM model's encoding when available, else an offline
    estimate (the chunk result says which counter was used)."""
    semantic_threshold: float = Field(0.5, ge=-1, le=1)
    """``semantic``: start a new chunk where adjacent sentences' cosine similarity drops below this."""

    @model_validator(mode="after")
    def _check_overlap(self) -> ChunkingConfig:
        if self.overlap_tokens >= self.max_tokens:
            raise ValueError("chunking.overlap_tokens must be below chunking.max_tokens")
        return self


class OntologyConfig(_Section):
    ontology: list[Path] | None = None
    """Turtle files or folders of the ontology; ``None``: graphmem's default upper ontology."""
    shapes: list[Path] | None = None
    """SHACL shape files or folders; ``None`` with the default ontology: its default shapes."""
    type_untyped_entities: bool = True
    """A new entity given without a type takes the class its relation requires (the property's
    ``rdfs:domain`` for a subject, ``rdfs:range`` for an object) when that is a single class. Declared
    and stored types are still checked against the shapes; only the missing ones are filled in."""


class SearchConfig(_Section):
    top_k: int = Field(10, ge=1, le=1000)
    overfetch: int = Field(4, ge=1, le=50)
    """Each signal returns ``top_k * overfetch`` candidates before fusion (at least
    ``min_candidates``), so a result strong in one signal and weak in the other still reaches the
    fused list."""
    min_candidates: int = Field(60, ge=1, le=10_000)
    """Candidates per signal however small ``top_k`` is: the fusion and the graph's seeds need a pool
    wider than the answer. MuSiQue recall@5 with 40, 60, 100 and 120 candidates: 0.689, 0.704,
    0.713, 0.718; Neo4j hybrid p50 at 100k memories grows from 41 ms (40) to 52 ms (100)."""
    fusion: Literal["weighted", "rrf"] = "weighted"
    """``weighted``: weighted sum of per-signal normalized scores; ``rrf``: reciprocal-rank fusion."""
    weights: dict[str, float] = Field(default_factory=lambda: {"vector": 0.6, "fulltext": 0.4, "graph": 0.8})
    """Per-signal fusion weights. ``graph`` (bridge and traversal scores, see
    :mod:`graphmem.search.graph`) only runs when its weight is positive; set it to 0 to skip it.
    Measured with ``bench/retrieval.py`` (all-MiniLM-L6-v2, rule extraction, a memory per turn),
    recall@5 of the default: MuSiQue 0.713 (vector alone 0.622, full text 0.518, graph 0.494, mem0
    mode 0.592), LoCoMo 0.576 (0.367, 0.551, 0.499, 0.466). Weights .5/.5/.8 give 0.668 and 0.575;
    with PageRank alone as the graph score (bridge weight 0, traversal weight 1) 0.600 and 0.581:
    the bridge is what lifts MuSiQue, at a small cost on LoCoMo."""
    normalize: Literal["scale", "minmax", "zscore"] = "scale"
    """Weighted fusion: ``scale`` keeps cosine as it is and maps BM25 per ``fulltext_norm``;
    ``minmax`` stretches each signal over the query's candidates to [0, 1]; ``zscore`` maps each
    score's standard score among the query's candidates through a logistic curve, so a signal whose
    best hits stand out counts for more than one whose scores are all alike."""
    rrf_k: int = Field(60, ge=1)
    fulltext_norm: Literal["max", "sigmoid"] = "max"
    """How BM25 scores (unbounded) are mapped to [0, 1]: divided by the best score of the query, or a
    logistic curve centred at ``fulltext_sigmoid_mid``."""
    fulltext_sigmoid_mid: float = 5.0
    vector_exact_max: int = Field(2_000, ge=0)
    """Neo4j: a scope of at most this many memories is scored exactly (cosine over the scope, found
    through the scope index); larger scopes use the approximate vector index (unquantized, so its
    scores are exact cosines; a quantized index of an older store is re-scored), over-fetched in
    proportion to the scope's share, with an exact pass when filters leave too few hits. Measured:
    exact scoring of 10k memories is ~3x slower than the index path."""
    threshold: float | None = None
    """Default minimum fused score; ``None`` keeps everything up to ``top_k``."""
    graph_scoring: Literal["ppr", "walk"] = "ppr"
    """Graph signal, traversal part: Personalized PageRank over mentions and facts, or the best
    typed-fact path from the linked entities (:mod:`graphmem.search.graph`)."""
    graph_traversal_weight: float = Field(0.25, ge=0.0)
    """Graph signal: weight of the traversal score (``graph_scoring``) in the graph score."""
    graph_bridge_weight: float = Field(1.0, ge=0.0)
    """Graph signal: weight of the bridge score, which passes the best text hits' scores to the
    memories sharing a specific entity with them (the second hop of a multi-hop question). The graph
    score is ``graph_traversal_weight * traversal + graph_bridge_weight * bridge``, clipped to 1."""
    graph_bridge_seeds: int = Field(5, ge=0, le=1000)
    """Graph signal (bridge): how many of the best text hits pass their score on."""
    graph_bridge_max_degree: int = Field(16, ge=2, le=10_000)
    """Graph signal (bridge): an entity more memories than this mention does not bridge."""
    graph_seed_memories: int = Field(8, ge=0, le=1000)
    """Graph signal (``ppr`` and bridge): the best this-many vector and full-text hits seed the walk
    too, and the entities they mention are fetched (the bridge uses the best ``graph_bridge_seeds``)."""
    graph_seed_weight: float = Field(1.0, ge=0.0)
    """Graph signal (``ppr``): restart weight of the seed memories relative to a linked entity."""
    graph_specificity: float = Field(0.5, ge=0.0, le=2.0)
    """Graph signal (``ppr``): an entity mentioned by ``d`` memories restarts the walk, and is walked
    to from a memory, with weight ``(1 + d) ** -graph_specificity``: common names count for less."""
    graph_restart: float = Field(0.5, gt=0.0, lt=1.0)
    """Graph signal (``ppr``): restart probability of the walk (HippoRAG uses 0.5)."""
    graph_max_mentions: int = Field(4, ge=1, le=10_000)
    """Graph signal: memories fetched per reached entity, and per fact (its first supporting
    memories by id), so a hub or a fact many memories repeat cannot flood the walk. 4, not 8: with
    ``graph_max_frontier`` 8 it took a Neo4j hybrid search at 100k from 18.1 to 15.1 ms p50 for the
    same recall@5 (MuSiQue 0.708 vs 0.713, LoCoMo 0.576, LongMemEval 0.971)."""
    graph_hub_degree: int = Field(64, ge=1)
    """Graph signal: an entity more memories than this mention is a hub, whose memories and facts
    are not fetched (only its degree): at 100k memories on Neo4j reading hubs' mentions took ~4 ms
    of a search, while recall@5 without them was the same (MuSiQue 0.713 vs 0.718 at 64, LoCoMo
    0.576 vs 0.575). A hub's first facts by id are as arbitrary a sample: without them recall@5 is
    the same (LoCoMo hybrid 0.576 vs 0.575, MuSiQue 0.713 either way) and a hub costs a degree
    lookup, however many facts it has."""
    graph_depth: int = Field(2, ge=1, le=6)
    """Graph signal: fact hops from the seeds."""
    graph_decay: float = Field(0.5, gt=0.0, le=1.0)
    """Graph signal: score factor per hop (an entity ``d`` hops away scores ``decay**d`` times the
    relation weights); a chain of one transitive relation continues without extra decay."""
    graph_max_seeds: int = Field(16, ge=1, le=1000)
    """Graph signal: at most this many query entities are linked by exact name or alias (longest
    names first)."""
    graph_link_fulltext: int = Field(0, ge=0, le=1000)
    """Graph signal: at most this many more entities are linked by partial name through the entity
    full-text index ("Obama" links Barack Obama), best cover first; 0 (default) turns it off. Exact
    links miss the names a question shortens, but on the benchmarks partial links did not add recall
    (recall@5 with 4, capitalized words only: MuSiQue hybrid 0.706 vs 0.713 without, graph mode
    0.496 vs 0.494; LongMemEval unchanged; with 1: MuSiQue 0.709): rule extraction stores many noun
    phrases as entities, and a partial link takes a place in the walk's first frontier."""
    graph_link_min_cover: float = Field(0.5, gt=0.0, le=1.0)
    """Graph signal: a partial-name link needs at least this share of the entity name's content
    words in the query (0.5: "Obama" covers "Barack Obama", "York" does not cover "New York City"),
    so that one common word does not link every name that contains it."""
    graph_link_names_only: bool = True
    """Graph signal: only query words written with a capital look for partial names. Lower-case words
    are mostly common nouns, and rule extraction stores noun phrases as entities too ("state
    capital"): linking those on "state" cost recall."""
    graph_link_vector: int = Field(0, ge=0, le=1000)
    """Graph signal: at most this many more entities are linked by name embedding. The rule
    extractor finds the query's entity names (as it finds them in memories); each one that linked
    neither exactly nor by partial name links the scope's entity whose name embedding is closest,
    if the cosine is at least ``graph_link_min_similarity`` (SQLite, and Neo4j over a scope of at
    most 2,000 entities: exact; a bigger Neo4j scope: the entity vector index). It catches other
    spellings ("Aschenbrodel" for "Aschenbrödel"), but on the benchmarks it did not add recall
    (MuSiQue hybrid 0.709 with 2 vs 0.713, LoCoMo 0.576 either way): 0 (default) turns it off."""
    graph_link_min_similarity: float = Field(0.85, gt=0.0, le=1.0)
    """Graph signal: least cosine between a query mention and an entity name for a vector link."""
    graph_link_pool: int = Field(256, ge=1, le=100_000)
    """Graph signal: entity full-text hits read per lookup, before the exact checks. Both backends
    link the same entities while a scope has fewer candidates than this for a query."""
    graph_max_frontier: int = Field(8, ge=1, le=10_000)
    """Graph signal: entities reached and expanded per hop at most (linked ones first, then the least
    mentioned); see ``graph_max_mentions`` for why 8."""
    graph_max_facts: int = Field(16, ge=1, le=10_000)
    """Graph signal: facts read per expanded entity per hop, so a hub costs no more than a leaf."""
    decay_half_life_days: dict[str, float] = Field(default_factory=dict)
    """Per memory type (``semantic``, ``episodic``, ``procedural``): the age in days at which a
    memory's fused score is halved (age from ``event_time``, else ``created_at``). Absent types do not
    decay; the factor never falls below ``decay_floor``."""
    decay_floor: float = Field(0.3, ge=0.0, le=1.0)
    decay_access: bool = True
    """With decay on (``decay_half_life_days``), memories that search returns often fade slower: the
    half-life is multiplied by ``1 + decay_access_boost * log2(1 + uses)``, ``uses`` being how often a
    search returned the memory (``access_count``; 1 use doubles it, 3 triple it). Searches record what
    they return, buffered in the process and written every ``access_flush_every`` memories or
    ``access_flush_seconds`` and on ``close()``; buffered uses count at once for searches of the same
    ``Memory``. A crash loses at most the buffer, which holds only access counts. ``as_of`` searches
    neither count uses nor record any (what was known then). Off, or with decay off, nothing is recorded."""
    decay_access_boost: float = Field(1.0, ge=0.0)
    access_flush_every: int = Field(64, ge=1, le=1_000_000)
    access_flush_seconds: float = Field(10.0, ge=0.0)
    reranker: str | None = None
    """A sentence-transformers CrossEncoder (model name or local path; needs the ``local`` extra)
    that re-orders the best ``rerank_top_n`` fused results; ``None``: no reranking."""
    rerank_top_n: int = Field(20, ge=1, le=1000)
    graph_relation_weights: dict[str, float] = Field(default_factory=dict)
    """Graph signal: weight per relation (IRI, ``prefix:local``, local name or label), default 1; a
    relation without its own weight takes the first weighted super-property's."""
    graph_relation_boost: float = Field(1.5, ge=1.0)
    """Graph signal: factor on the score of a fact whose relation is named in the query ("who does
    Acme *employ*"), or is the inverse or a sub-property of one; graph scores are clipped to 1."""

    @model_validator(mode="after")
    def _check_weights(self) -> SearchConfig:
        unknown = set(self.weights) - {"vector", "fulltext", "graph"}
        if unknown:
            raise ValueError(f"unknown fusion signals {sorted(unknown)}; known: vector, fulltext, graph")
        if any(w < 0 for w in self.weights.values()):
            raise ValueError("fusion weights must be >= 0")
        if any(w < 0 for w in self.graph_relation_weights.values()):
            raise ValueError("graph relation weights must be >= 0")
        bad = set(self.decay_half_life_days) - {"semantic", "episodic", "procedural"}
        if bad or any(d <= 0 for d in self.decay_half_life_days.values()):
            raise ValueError("decay_half_life_days maps semantic/episodic/procedural to positive day counts")
        return self


class LimitsConfig(_Section):
    max_memory_chars: int = Field(100_000, ge=1)
    """A single stored memory's size limit; longer input is refused with a clear error, never cut."""
    max_batch: int = Field(10_000, ge=1)
    """Messages accepted by one ``add`` call."""
    get_all_limit: int = Field(100, ge=1)
    """Rows ``get_all`` returns when the call gives no ``limit``."""
    max_list_limit: int = Field(10_000, ge=1)
    """The largest ``limit`` a ``get_all`` call may ask for; larger values are refused, not cut."""
    max_top_k: int = Field(1_000, ge=1)
    """The largest ``top_k`` a search may ask for (every signal over-fetches a multiple of it)."""
    max_metadata_bytes: int = Field(65_536, ge=2)
    """A memory's metadata as UTF-8 JSON; metadata is stored on every memory and filtered on, so it
    is for labels and small values, not documents (store those as memories)."""
    max_metadata_depth: int = Field(32, ge=1)
    """Nesting of dicts and lists inside metadata (``{"a": 1}`` is depth 1)."""
    max_filter_depth: int = Field(32, ge=1)
    """Nesting of ``AND``/``OR``/``NOT`` in a filter."""
    max_filter_terms: int = Field(500, ge=1)
    """Conditions in one filter, each value of an ``in``/``nin`` list counting as one: every term is
    one comparison in the compiled query, and SQLite bounds an expression's size."""
    max_name_chars: int = Field(200, ge=1)
    """A message's ``name`` (the speaker, stored as the memory's ``actor_id``)."""
    max_entity_chars: int = Field(1_000, ge=1)
    """An entity name, relation or class name in a triple (``source``, ``target``, types)."""



class MemoryConfig(BaseSettings):
    """Root configuration. Every field has a default, so ``MemoryConfig()`` is a working setup."""

    model_config = SettingsConfigDict(
        env_prefix="GRAPHMEM_", env_nested_delimiter="__", extra="forbid", case_sensitive=False
    )

    home: Path = Field(default_factory=default_home)
    """Where the embedded store lives: ``$GRAPHMEM_HOME``, else ``~/.graphmem``."""
    store: StoreConfig = Field(default_factory=StoreConfig)
    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    ontology: OntologyConfig = Field(default_factory=OntologyConfig)
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    dedup: DedupConfig = Field(default_factory=DedupConfig)
    search: SearchConfig = Field(default_factory=SearchConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    version: str = "v1"

    def sqlite_path(self) -> Path:
        return self.store.path if self.store.path is not None else self.home / "graphmem.db"

    @classmethod
    def load(cls, data: dict[str, Any] | MemoryConfig | None = None) -> MemoryConfig:
        """Validate a dict (environment variables fill what it leaves out), raising ConfigError."""
        if isinstance(data, MemoryConfig):
            return data
        try:
            return cls(**(data or {}))
        except ValidationError as exc:
            raise ConfigError(f"invalid graphmem configuration:\n{_describe(exc)}") from None
        except SettingsError as exc:  # a GRAPHMEM_* variable that does not parse; names it, not its value
            raise ConfigError(f"invalid graphmem configuration from the environment: {exc}") from None

    @classmethod
    def from_file(cls, path: str | Path) -> MemoryConfig:
        """Read YAML (``.yaml``/``.yml``) or TOML (``.toml``)."""
        p = Path(path)
        try:
            raw = p.read_bytes()
        except OSError as exc:
            raise ConfigError(f"cannot read config file {p}: {exc.strerror}") from None
        try:
            if p.suffix.lower() == ".toml":
                data = tomllib.loads(raw.decode("utf-8"))
            elif p.suffix.lower() in {".yaml", ".yml"}:
                data = yaml.safe_load(raw) or {}
            else:
                raise ConfigError(f"config file {p} must end in .yaml, .yml or .toml")
        except (tomllib.TOMLDecodeError, yaml.YAMLError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot parse config file {p}: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"config file {p} must hold a mapping at the top level")
        return cls.load(data)
