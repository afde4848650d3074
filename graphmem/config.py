"""One validated configuration object holding every tunable, with its default and why.

Load it from a dict (``MemoryConfig.model_validate``/``Memory.from_config``), a YAML or TOML file
(``MemoryConfig.from_file``) or ``GRAPHMEM_*`` environment variables, nested with ``__``
(``GRAPHMEM_STORE__PROVIDER=neo4j``). Explicit values win over the environment.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from .errors import ConfigError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


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
    """Where memories, entities and facts are kept: the embedded SQLite file or a Neo4j server."""

    provider: str = Field("sqlite", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
    """``sqlite``: one local file, no server (default). ``neo4j``: a Neo4j 5.26+ server over Bolt.
    Another name: a backend registered with :func:`graphmem.stores.register_store` or installed as a
    ``graphmem.stores`` entry point. Only the name's form is checked on load (the backends are a later
    stage); a name no backend answers fails when the store is built, naming the known ones."""
    path: Path | None = None
    """SQLite file; default ``<home>/graphmem.db``."""
    busy_timeout_ms: int = Field(30_000, ge=0)
    """How long a SQLite writer waits for another process's write lock before failing."""
    entity_cache_mb: float = Field(64.0, gt=0)
    """SQLite: memory held for entity-name vectors between writes (each write looks up its entities'
    nearest names), per scope; past it the scopes used longest ago are dropped and reloaded from the
    file when next written, as are scopes not written for 10 minutes (ended conversations). The
    memories' own vectors are held whole (docs: Operators, "Memory of a server process")."""
    uri: str = "bolt://127.0.0.1:7687"
    """Bolt address. Credentials written into it (``bolt://user:pass@host``, percent-encoded) are
    taken out into ``user`` and ``password`` when the config loads, so the URI kept and shown never
    holds them (the Neo4j driver refuses userinfo in a URI anyway)."""
    user: str = "neo4j"
    """Neo4j user name. Also from ``GRAPHMEM_STORE__USER``."""
    password: SecretStr | None = None
    """Never printed (``repr``, ``model_dump_json`` show ``**********``); read it with
    ``.get_secret_value()``. Also from ``GRAPHMEM_STORE__PASSWORD``."""
    database: str | None = None
    """Neo4j database name; ``None`` uses the server default (``neo4j`` on Community)."""
    connect_timeout_s: float = Field(10.0, gt=0)
    """Opening the store: an unreachable server, or one that accepts the connection and never answers,
    fails after this instead of waiting forever. It never bounds a query once it runs (an analyst
    query has ``cypher_timeout_s``; graphmem's own reads and writes run to completion)."""
    acquire_timeout_s: float = Field(60.0, gt=0)
    """Neo4j: longest wait, after the store opened, for a connection: a free one of the pool or a new
    one's handshake. A server busy for seconds (a long garbage collection, a checkpoint) slows new
    connections down; this is that wait's bound (the driver's own default), so such a pause delays
    a call instead of failing it."""
    max_transaction_retry_s: float = Field(15.0, ge=0)
    """Time within which a Neo4j transaction that failed transiently (a deadlock, a leader switch)
    is run again, after pauses of a few milliseconds, doubling."""
    conflict_retries: int = Field(16, ge=0, le=1000)
    """Times a write is planned again when a concurrent writer changed what its plan read (docs:
    "Concurrency"). Each of n writers racing for one entity commits after at most n plans."""
    write_batch_size: int = Field(1000, ge=1)
    """Rows per ``UNWIND`` batch for bulk writes."""
    fulltext_analyzer: str = Field("english", pattern=r"^[a-z][a-z0-9_-]{0,63}$")
    """Neo4j: the Lucene analyzer of the memory full-text index (``CALL
    db.index.fulltext.listAvailableAnalyzers()``: ``english``, ``standard-folding``, ``german``,
    ``cjk``…); a store whose index has another one keeps it, with a warning, until ``optimize()``
    rebuilds it. ``english`` stems and drops stop words but keeps accents, so a query that writes a
    name without its accents misses it (``standard-folding`` folds them; see the docs' Benchmarks).
    SQLite's FTS5 index always stems (Porter) and folds accents."""
    vector_exact_max: int = Field(2_000, ge=0)
    """Neo4j: a scope of at most this many memories is scored exactly (cosine over the scope, found
    through the scope index); larger scopes use the approximate vector index (unquantized, so its
    scores are exact cosines; a quantized index of an older store is re-scored), over-fetched in
    proportion to the scope's share, with an exact pass when filters leave too few hits. Exact
    scoring costs time in proportion to the scope, the index does not."""
    cypher_timeout_s: float = Field(10.0, gt=0)
    """Neo4j: longest an analyst query (``Memory.cypher``) may run; it is the query's own transaction
    timeout, so the server stops it and ``QueryTimeoutError`` is raised. Not a server-wide limit:
    graphmem's own writes are not bound by it."""
    cypher_max_rows: int = Field(10_000, ge=1)
    """Neo4j: most rows an analyst query may return; graphmem stops reading at the next one and raises
    ``RowLimitError`` (add a ``LIMIT``) rather than hand back a silently cut result."""

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
    """The model that turns memories and queries into vectors; a store keeps the one it was made with."""

    provider: Literal["auto", "onnx", "openai", "sentence-transformers", "hashing"] = "auto"
    """``auto``: OpenAI when ``OPENAI_API_KEY`` is set, else ``onnx`` (all-MiniLM-L6-v2 with ONNX
    Runtime, no PyTorch); a store keeps the embedder it was created with. ``hashing`` (vectors of
    shared words, for tests) only when named."""
    model: str | None = None
    """Model name; defaults per provider: ``text-embedding-3-small``, ``all-MiniLM-L6-v2``. For ``onnx``
    also a folder holding a BERT sentence-transformers model (``model.safetensors``, ``tokenizer.json``)."""
    dims: int | None = Field(None, ge=8, le=8192)
    """Vector size; hashing defaults to 384, the others report their own."""
    api_key: SecretStr | None = None
    """Never printed; ``None`` lets the openai client read ``OPENAI_API_KEY``."""
    base_url: str | None = None
    """An OpenAI-compatible embeddings endpoint (``openai`` provider); ``None``: api.openai.com or
    ``OPENAI_BASE_URL``."""
    batch_size: int = Field(128, ge=1)
    """Texts per embedding request or forward pass."""
    precision: Literal["auto", "float32"] = "auto"
    """sentence-transformers: ``auto`` computes the model's matrix products in bfloat16 (autocast; the
    weights stay float32) where the CPU multiplies bfloat16 natively (AVX512-BF16 or AMX), after
    checking that its vectors keep a cosine of at least 0.9999 to float32's on a probe; ``float32``
    keeps ``encode``'s numbers (within 1e-5) everywhere, for vectors that must be the same on every
    machine."""
    timeout_s: float = Field(60.0, gt=0)
    """Seconds one embedding request may take (``openai`` provider)."""
    max_retries: int = Field(3, ge=0)
    """Retries of a failed embedding request (429, 5xx, timeouts), with backoff."""


class LLMConfig(_Section):
    """The chat model the LLM extractor asks: turning it on here makes it the extractor (see
    ``extraction.provider``)."""

    provider: Literal["none", "openai"] = "none"
    """``openai``: a chat model at any OpenAI-compatible endpoint (``base_url`` for Ollama, vLLM, LM
    Studio, Azure); ``extraction.provider: auto`` (the default) then extracts with it. ``none``: no
    chat model; ``auto`` extracts with the rules."""
    model: str = "gpt-4o-mini"
    """The chat model the ``openai`` provider asks (the name the server knows it by)."""
    api_key: SecretStr | None = None
    """Never printed; ``None`` falls back to ``OPENAI_API_KEY``."""
    base_url: str | None = None
    """An OpenAI-compatible chat endpoint (``http://localhost:11434/v1`` for Ollama); ``None``: api.openai.com
    or ``OPENAI_BASE_URL``."""
    temperature: float = 0.0
    """Sampling temperature of extraction calls; 0 makes the same conversation extract alike."""
    max_output_tokens: int = Field(4096, ge=256)
    """Most tokens an extraction answer may take; sized down to the room the prompt leaves when the window is
    known."""
    timeout_s: float = Field(60.0, gt=0)
    """Seconds one extraction request may take; a timed-out request is not sent again."""
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
    context_tokens: int | None = Field(None, ge=512)
    """The model's context window (prompt plus answer). ``None``: learnt from the server's first
    context-length error. When known, ``max_tokens`` is sized to what the prompt leaves free, and a
    prompt that cannot fit even without the chunk is reported instead of sent."""


class RulesConfig(_Section):
    """The rule-based extractor (``extraction.provider: rules``): offline, from spaCy's parse and the
    ontology's labels and synonyms."""

    granularity: Literal["statement", "sentence", "message"] = "sentence"
    """One memory per sentence (verbatim), per clause (``statement``: short third-person statements,
    "Maya lives in Lisbon."), or per speaker turn (or paragraph). Whole turns keep the context a
    sentence loses ("I did!" after a question) and index fewer rows; statements match what a reader
    would remember and rank worse in retrieval (docs: Extraction)."""
    small_talk: bool = False
    """Keep turns made only of pleasantries ("Thanks! How can I help?") as memories; off, they are
    not stored (they answer no later question)."""


class ExtractionConfig(_Section):
    """Which extractor turns each chunk into memories, entities and triples, and the rule extractor's
    settings (the LLM extractor's are the ``llm`` section)."""

    provider: str = Field("auto", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
    """``auto``: ``llm`` when ``llm.provider`` is ``openai``, else ``rules``. ``rules``: offline rules
    (settings in ``rules``). ``llm``: the chat model of the ``llm`` section, which must then name one.
    Another name: an extractor registered with :func:`graphmem.extraction.register_extractor` or
    installed as a ``graphmem.extractors`` entry point; a name nothing answers fails when the
    ``Memory`` is made, naming the known ones. An extractor given to ``Memory(extractor=...)`` is
    used instead."""
    rules: RulesConfig = Field(default_factory=RulesConfig)


class DedupConfig(_Section):
    """When a new memory or entity is one already stored."""

    memory_similarity: float = Field(0.95, ge=0, le=1)
    """An extracted memory whose embedding has at least this cosine similarity with one already in
    the scope is not stored again (event ``NONE``). 1.0 turns it off; verbatim adds use exact hashes."""
    entity_similarity: float = Field(0.9, ge=0, le=1)
    """A new entity name whose embedding has at least this cosine similarity with a stored entity of
    the same scope (and a compatible type) is that entity; its name becomes an alias. Names are first
    matched exactly (normalized name, aliases); 1.0 turns the vector step off."""


class ChunkingConfig(_Section):
    """How a long conversation is cut into chunks for extraction; nothing is ever cut off."""

    strategy: Literal["fixed", "sentence", "recursive", "semantic"] = "recursive"
    """How a long conversation is cut into chunks: ``fixed`` token windows, ``sentence`` boundaries,
    ``recursive`` (the largest of paragraphs, lines, sentences, words that fits) or ``semantic``
    (where the topic changes, by embedding)."""
    max_tokens: int = Field(2000, ge=16)
    """Token budget per chunk sent to the extractor. Longer input is split, never truncated."""
    overlap_tokens: int = Field(0, ge=0)
    """Tokens a chunk repeats from the end of the previous one; below ``max_tokens``."""
    tokenizer: str | None = None
    """What counts the tokens of ``max_tokens``: a tiktoken encoding (``o200k_base``) or model name
    (``gpt-4o-mini``), or ``estimate`` for the offline estimate. ``None``: ``llm.model``'s encoding
    when the LLM extracts (``extraction.provider``), else the estimate; the estimate also stands in
    when an encoding cannot be loaded (offline), and each chunk says which counter measured it."""
    semantic_threshold: float = Field(0.5, ge=-1, le=1)
    """``semantic``: start a new chunk where adjacent sentences' cosine similarity drops below this."""

    @model_validator(mode="after")
    def _check_overlap(self) -> ChunkingConfig:
        if self.overlap_tokens >= self.max_tokens:
            raise ValueError("chunking.overlap_tokens must be below chunking.max_tokens")
        return self


class OntologyConfig(_Section):
    """The ontology (Turtle) whose terms facts use, and the SHACL shapes every fact is checked by."""

    ontology: list[Path] | None = None
    """Turtle files or folders of the ontology; ``None``: graphmem's default upper ontology."""
    shapes: list[Path] | None = None
    """SHACL shape files or folders; ``None`` with the default ontology: its default shapes."""
    type_untyped_entities: bool = True
    """A new entity given without a type takes the class its relation requires (the property's
    ``rdfs:domain`` for a subject, ``rdfs:range`` for an object) when that is a single class. Declared
    and stored types are still checked against the shapes; only the missing ones are filled in."""


class GraphSearchConfig(_Section):
    """The graph signal (:mod:`graphmem.search.graph`): how far the store walks from the query's
    entities and how the scorer weighs what it reached."""

    scoring: Literal["ppr", "walk"] = "ppr"
    """Traversal part of the graph score: Personalized PageRank over mentions and facts, or the best
    typed-fact path from the linked entities."""
    traversal_weight: float = Field(0.25, ge=0.0)
    """Weight of the traversal score (``scoring``) in the graph score."""
    bridge_weight: float = Field(1.0, ge=0.0)
    """Weight of the bridge score, which passes the best text hits' scores to the memories sharing a
    specific entity with them (the second hop of a multi-hop question). The graph score is
    ``traversal_weight * traversal + bridge_weight * bridge``, clipped to 1."""
    bridge_max_degree: int = Field(16, ge=2, le=10_000)
    """An entity more memories than this mention does not bridge: a common name links unrelated memories."""
    seed_memories: int = Field(8, ge=0, le=1000)
    """The best this-many vector and full-text hits seed the walk too (``ppr`` and the bridge), and
    the entities they mention are fetched; 0: the walk starts from the query's entities alone."""
    specificity: float = Field(0.5, ge=0.0, le=2.0)
    """An entity mentioned by ``d`` memories restarts the walk, is walked to from a memory and
    bridges with weight ``(1 + d) ** -specificity``: common names count for less."""
    depth: int = Field(2, ge=1, le=6)
    """Fact hops from the seeds."""
    decay: float = Field(0.5, gt=0.0, le=1.0)
    """Score factor per hop of a typed-fact path (an entity ``d`` hops away scores ``decay**d`` times
    the relation weights); a chain of one transitive relation continues without extra decay."""
    max_frontier: int = Field(8, ge=1, le=10_000)
    """Entities reached and expanded per hop at most (linked ones first, then the least mentioned):
    the walk's cost grows with it (see ``bench/results/config_knobs.json``)."""
    max_facts: int = Field(16, ge=1, le=10_000)
    """Facts read per expanded entity per hop, so a hub costs no more than a leaf."""
    max_mentions: int = Field(4, ge=1, le=10_000)
    """Memories fetched per reached entity, and per fact (its supporting memories), the newest first,
    so a hub or a fact many memories repeat cannot flood the walk."""
    hub_degree: int = Field(64, ge=1)
    """An entity more memories than this mention is a hub: only its degree is read, not its memories
    or facts (a sample of a name that common says nothing, and reading it cost most of the walk)."""
    relation_weights: dict[str, float] = Field(default_factory=dict)
    """Weight per relation (IRI, ``prefix:local``, local name or label), default 1, 0 to ignore it;
    a relation without its own weight takes the first weighted super-property's."""
    relation_boost: float = Field(1.5, ge=1.0)
    """Factor on the score of a fact whose relation is named in the query ("who does Acme *employ*"),
    or is the inverse or a sub-property of one; graph scores are clipped to 1."""

    @model_validator(mode="after")
    def _check_relation_weights(self) -> GraphSearchConfig:
        if any(w < 0 for w in self.relation_weights.values()):
            raise ValueError("graph relation weights must be >= 0")
        return self


class DecayConfig(_Section):
    """Older memories rank lower; memories search returns often fade slower."""

    half_life_days: dict[str, float] = Field(default_factory=dict)
    """Per memory type (``semantic``, ``episodic``, ``procedural``): the age in days at which a
    memory's fused score is halved (age from ``event_time``, else ``created_at``). Absent types do not
    decay (the default: nothing decays); the factor never falls below ``floor``."""
    floor: float = Field(0.3, ge=0.0, le=1.0)
    """The lowest the decay factor goes: an old memory keeps at least this share of its score."""
    access: bool = True
    """Memories that search returns often fade slower: the half-life is multiplied by
    ``1 + access_boost * log2(1 + uses)``, ``uses`` being how often a search returned the memory
    (``access_count``; 1 use doubles it, 3 triple it). Searches record what they return, buffered in
    the process and written every ``flush_every`` memories or ``flush_seconds`` and on ``close()``;
    buffered uses count at once for searches of the same ``Memory``. A crash loses at most the
    buffer, which holds only access counts. ``as_of`` searches neither count uses nor record any
    (what was known then). Off, or with no half-life, nothing is recorded."""
    access_boost: float = Field(1.0, ge=0.0)
    """How much each doubling of a memory's uses lengthens its half-life (see ``access``)."""
    flush_every: int = Field(64, ge=1, le=1_000_000)
    """Buffered uses are written after this many memories (see ``access``)."""
    flush_seconds: float = Field(10.0, ge=0.0)
    """Buffered uses are written at the latest after this many seconds (see ``access``)."""

    @model_validator(mode="after")
    def _check_half_lives(self) -> DecayConfig:
        bad = set(self.half_life_days) - {"semantic", "episodic", "procedural"}
        if bad or any(d <= 0 for d in self.half_life_days.values()):
            raise ValueError("decay.half_life_days maps semantic/episodic/procedural to positive day counts")
        return self


class RerankConfig(_Section):
    """An optional cross-encoder that re-orders the best fused results."""

    model: str | None = None
    """A sentence-transformers CrossEncoder (model name or local path; needs the ``local`` extra)
    that re-orders the best ``top_n`` fused results; ``None``: no reranking."""
    top_n: int = Field(20, ge=1, le=1000)
    """How many of the best fused results the cross-encoder re-orders."""

    @field_validator("model")
    @classmethod
    def _local_path_exists(cls, value: str | None) -> str | None:
        """A local path that is not there fails here, at once: loading it would first ask the hub."""
        if value is not None and value.startswith(("/", "./", "../", "~")) and not Path(value).expanduser().exists():
            raise ValueError(f"search.rerank.model {value!r} looks like a local path, and there is nothing there")
        return value


SIGNALS: Final = ("vector", "fulltext", "graph")
"""The signals search scores memories by (:mod:`graphmem.search.engine`), each weighed in ``search.weights``."""


class SearchConfig(_Section):
    """Search's defaults: how many results, and how the vector, full-text and graph signals fuse."""

    top_k: int = Field(10, ge=1, le=1000)
    """Results a search returns when the call does not say."""
    threshold: float | None = None
    """Default minimum fused score; ``None`` keeps everything up to ``top_k``."""
    weights: dict[str, float] = Field(default_factory=lambda: {"vector": 0.6, "fulltext": 0.4, "graph": 0.8})
    """Per-signal fusion weights. ``graph`` (bridge and traversal scores, see ``graph``) only runs
    when its weight is positive; set it to 0 to skip it."""
    overfetch: int = Field(4, ge=1, le=50)
    """Each signal returns ``top_k * overfetch`` candidates before fusion (at least
    ``min_candidates``), so a result strong in one signal and weak in the other still reaches the
    fused list."""
    min_candidates: int = Field(60, ge=1, le=10_000)
    """Candidates per signal however small ``top_k`` is: the fusion and the graph's seeds need a pool
    wider than the answer; more costs latency (see the docs' Benchmarks)."""
    fusion: str = Field("weighted", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
    """The rule that maps each signal's scores to [0, 1] before their weighted mean
    (:mod:`graphmem.search.fusion`): ``weighted`` keeps cosine and graph scores as they are and divides
    BM25 (unbounded) by the query's best; ``minmax`` stretches each signal over the query's
    candidates; ``rrf`` uses ranks only (reciprocal rank, ``rrf_k``); or a rule registered with
    ``graphmem.search.fusion.register``. Only the name's form is checked on load (the rules are a
    later stage); a name no rule answers fails at the first search, naming the known ones."""
    rrf_k: int = Field(60, ge=1, le=10_000)
    """``rrf``'s constant ``k``: a hit at rank ``r`` of a signal has share ``(k + 1) / (k + r)``, so a
    larger ``k`` flattens the difference between the first ranks."""
    outside_asked_time: float = Field(0.5, ge=0.0, le=1.0)
    """When the question names a time ("in May 2023", "two weeks ago", resolved against the time it is
    asked), a memory neither dated nor said then keeps this share of its score (:mod:`graphmem.search.when`);
    1 ignores the time named."""
    reply_share: float = Field(0.75, ge=0.0, le=1.0)
    """Each of the best three hits that asks a question passes this share of its score to the memory
    stored right after it in its scope (``follows``: in a conversation, the answer); 0 turns the reply
    link off."""
    graph: GraphSearchConfig = Field(default_factory=GraphSearchConfig)
    decay: DecayConfig = Field(default_factory=DecayConfig)
    rerank: RerankConfig = Field(default_factory=RerankConfig)

    @model_validator(mode="after")
    def _check_weights(self) -> SearchConfig:
        unknown = set(self.weights) - set(SIGNALS)
        if unknown:
            raise ValueError(f"unknown fusion signals {sorted(unknown)}; known: {', '.join(SIGNALS)}")
        if any(w < 0 for w in self.weights.values()):
            raise ValueError("fusion weights must be >= 0")
        return self


class LimitsConfig(_Section):
    """Bounds on inputs, so a bad or hostile call gets a clear error instead of exhausting memory."""

    max_memory_chars: int = Field(100_000, ge=1)
    """A message's (and so a stored memory's) size limit, with or without extraction; a longer text is
    refused with a clear error, never cut or partly kept: split a document into messages, or add it
    with ``add_many``."""
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


class ServerKeyConfig(_Section):
    """One API key of the REST server (``graphmem serve``) and the scope it is bound to."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    """A name for logs and errors (never the key itself)."""
    api_key: SecretStr | None = None
    """The key in clear (environment or a secret store; at least 16 characters; never printed). A
    keys file (``server.keys_file``) holds ``sha256`` instead, never this."""
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    """Hex SHA-256 of the key: what ``graphmem serve --new-key`` prints for a keys file."""
    user_id: str | None = None
    """The user the key is bound to (see ``run_id``)."""
    agent_id: str | None = None
    """The agent the key is bound to (see ``run_id``)."""
    run_id: str | None = None
    """The scope the key is bound to: requests can narrow it (add a field it leaves open), never
    change or widen it. A tenant key binds at least one field."""
    admin: bool = False
    """Administration (analyst Cypher, reset, optimize, dry runs across scopes) and any scope a
    request names; an admin key binds no scope."""

    @model_validator(mode="after")
    def _one_secret_one_role(self) -> ServerKeyConfig:
        if (self.api_key is None) == (self.sha256 is None):
            raise ValueError(f"server key {self.id!r}: give exactly one of api_key and sha256")
        if self.api_key is not None and len(self.api_key.get_secret_value()) < 16:
            raise ValueError(f"server key {self.id!r}: a key has at least 16 characters")
        bound = any(v is not None for v in (self.user_id, self.agent_id, self.run_id))
        if self.admin == bound:
            raise ValueError(f"server key {self.id!r}: bind it to a scope (user_id, agent_id, run_id) "
                             "or make it an admin key, not both and not neither")
        return self


class ServerConfig(_Section):
    """The REST server (``graphmem serve``); the library itself never reads this section."""

    host: str = "127.0.0.1"
    """Address the server listens on; loopback by default (``--host 0.0.0.0`` to serve others)."""
    port: int = Field(8000, ge=0, le=65535)
    """Port the server listens on."""
    keys: list[ServerKeyConfig] = Field(default_factory=list)
    """API keys (``GRAPHMEM_SERVER__KEYS`` takes them as JSON); without any key the server does not
    start, unless ``--insecure-local``."""
    keys_file: Path | None = None
    """A YAML or JSON file ``{keys: [{id, sha256, user_id…}]}`` of hashed keys, read at start."""
    max_body_bytes: int = Field(1_048_576, ge=1)
    """Largest request body; a larger one is refused (413) before it is parsed."""


class MemoryConfig(BaseSettings):
    """Root configuration. Every field has a default, so ``MemoryConfig()`` is a working setup."""

    model_config = SettingsConfigDict(
        env_prefix="GRAPHMEM_", env_nested_delimiter="__", extra="forbid", case_sensitive=False,
        use_attribute_docstrings=True,
    )

    home: Path = Field(default_factory=default_home)
    """Where the embedded store lives: ``$GRAPHMEM_HOME``, else ``~/.graphmem``."""
    store: StoreConfig = Field(default_factory=StoreConfig)
    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    extraction: ExtractionConfig = Field(default_factory=ExtractionConfig)
    ontology: OntologyConfig = Field(default_factory=OntologyConfig)
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    dedup: DedupConfig = Field(default_factory=DedupConfig)
    search: SearchConfig = Field(default_factory=SearchConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)
    version: str = "v1"
    """Version of the configuration format."""

    @model_validator(mode="after")
    def _llm_for_extraction(self) -> MemoryConfig:
        if self.extraction.provider == "llm" and self.llm.provider == "none":
            raise ValueError("extraction.provider is llm but llm.provider is none: set llm.provider: openai "
                             "(with llm.model, and llm.base_url for a local server) for the chat model it asks")
        return self

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
