"""mem0 drop-in: mem0-style configurations and mem0 2.x calling conventions, mapped onto graphmem's.

Porting from mem0 should take a changed import. A mem0-style configuration (``{"llm": {"provider",
"config"}, "embedder": ..., "vector_store": ..., "graph_store": ..., "history_db_path": ...}``) is
translated to a :class:`~graphmem.config.MemoryConfig`; what has no equivalent is named in one
:class:`Mem0ConfigWarning` (with what graphmem does instead) rather than failing on the first unknown
key. The call helpers below let :class:`~graphmem.Memory` take mem0's arguments next to its own: the
scope inside ``filters``, ``limit`` for ``top_k``, ``text`` for ``data``, mem0's memory type names.

Public: :func:`is_mem0_config`, :func:`translate_config`, :func:`load_config` and the two warnings.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Final, get_args

from .config import EmbedderConfig, LLMConfig, MemoryConfig
from .errors import ConfigError, InvalidInputError, ScopeError, clip, short
from .models import Scope

__all__ = ["Mem0CompatWarning", "Mem0ConfigWarning", "is_mem0_config", "load_config", "translate_config"]


class Mem0CompatWarning(UserWarning):
    """A mem0 convention graphmem follows only in part; filter this to silence them all."""


class Mem0ConfigWarning(Mem0CompatWarning):
    """Settings of a mem0-style configuration that have no graphmem equivalent, and what was done instead."""


MEM0_DEFAULTS: Final[dict[str, dict[str, Any]]] = {
    "search": {"top_k": 20, "threshold": 0.1},
    "limits": {"get_all_limit": 20},
}
"""mem0 2.x's defaults (``search(top_k=20, threshold=0.1)``, ``get_all(top_k=20)``): code written for
mem0 counts on them, so a translated configuration starts from them; graphmem's own are 10, none, 100."""

SCOPE_KEYS: Final = ("user_id", "agent_id", "run_id")
_MEM0_ONLY_KEYS: Final = frozenset({
    "vector_store", "graph_store", "history_db_path", "reranker", "custom_instructions",
    "custom_fact_extraction_prompt", "custom_update_memory_prompt", "enable_graph",
})
_NATIVE_KEYS: Final = frozenset(MemoryConfig.model_fields)
_NATIVE_LLM: Final = frozenset(get_args(LLMConfig.model_fields["provider"].annotation))
_NATIVE_EMBEDDER: Final = frozenset(get_args(EmbedderConfig.model_fields["provider"].annotation))
_MEM0_LLMS: Final = frozenset({
    "openai", "ollama", "anthropic", "groq", "together", "aws_bedrock", "litellm", "azure_openai",
    "openai_structured", "azure_openai_structured", "gemini", "deepseek", "minimax", "xai", "sarvam",
    "lmstudio", "vllm", "langchain",
})
_MEM0_EMBEDDERS: Final = frozenset({
    "openai", "ollama", "huggingface", "azure_openai", "gemini", "vertexai", "together", "lmstudio",
    "langchain", "aws_bedrock", "fastembed",
})
_MEMORY_TYPES: Final = {"semantic_memory": "semantic", "episodic_memory": "episodic",
                        "procedural_memory": "procedural"}
_EXTRACTION_PROMPT: Final = ("graphmem builds its extraction prompt from the ontology (labels, synonyms, "
                             "shapes); steer extraction by extending the ontology. Not used")


@dataclass(frozen=True)
class _Endpoint:
    """How one mem0 provider reaches an OpenAI-compatible server."""

    url_key: str
    """The provider's base-URL key in mem0's ``config`` (``base_url`` is accepted for every provider)."""
    default_url: str | None = None
    """``None``: the openai client's own default (``OPENAI_BASE_URL``, else api.openai.com)."""
    url_env: str | None = None
    key_env: str | None = None
    """Where mem0 reads this provider's API key when the config has none."""
    placeholder_key: str | None = None
    """Local servers ignore the key, but the openai client wants one (and must not send OpenAI's)."""
    suffix: str = ""
    """Appended to a URL that lacks it: Ollama serves its OpenAI-compatible API under ``/v1``."""
    default_model: str | None = None
    """mem0's default model for this provider; ``None``: graphmem's."""

    def url(self, cfg: Mapping[str, Any]) -> str | None:
        url = cfg.get(self.url_key) or cfg.get("base_url") or (os.environ.get(self.url_env) if self.url_env else None)
        url = url or self.default_url
        if url and self.suffix and not str(url).rstrip("/").endswith(self.suffix):
            url = str(url).rstrip("/") + self.suffix
        return str(url) if url else None

    def key(self, cfg: Mapping[str, Any]) -> str | None:
        return cfg.get("api_key") or (os.environ.get(self.key_env) if self.key_env else None) or self.placeholder_key


_OLLAMA = "http://localhost:11434"
_LLM_ENDPOINTS: Final = {
    "openai": _Endpoint("openai_base_url"),
    "openai_structured": _Endpoint("openai_base_url"),
    "ollama": _Endpoint("ollama_base_url", _OLLAMA, placeholder_key="ollama", suffix="/v1",
                        default_model="llama3.1:70b"),
    "lmstudio": _Endpoint("lmstudio_base_url", "http://localhost:1234/v1", placeholder_key="lm-studio"),
    "vllm": _Endpoint("vllm_base_url", "http://localhost:8000/v1", "VLLM_BASE_URL", "VLLM_API_KEY", "vllm"),
    "deepseek": _Endpoint("deepseek_base_url", "https://api.deepseek.com", "DEEPSEEK_API_BASE", "DEEPSEEK_API_KEY"),
    "xai": _Endpoint("xai_base_url", "https://api.x.ai/v1", "XAI_API_BASE", "XAI_API_KEY"),
}
_EMBEDDER_ENDPOINTS: Final = {
    "openai": _Endpoint("openai_base_url"),
    "ollama": _Endpoint("ollama_base_url", _OLLAMA, placeholder_key="ollama", suffix="/v1",
                        default_model="nomic-embed-text"),
    "lmstudio": _Endpoint("lmstudio_base_url", "http://localhost:1234/v1", placeholder_key="lm-studio"),
    "huggingface": _Endpoint("huggingface_base_url", key_env="HUGGINGFACE_API_KEY", placeholder_key="hf"),
}
_RERANKERS: Final = {"sentence_transformer": "cross-encoder/ms-marco-MiniLM-L-6-v2",
                     "huggingface": "BAAI/bge-reranker-base"}
"""mem0's local cross-encoder rerankers and their default models; graphmem loads both kinds as a
sentence-transformers CrossEncoder."""


# -- configuration ---------------------------------------------------------------------------------
def is_mem0_config(data: object) -> bool:
    """Whether ``data`` is laid out the mem0 way: a key only mem0 has, or an ``llm``/``embedder``
    section of mem0's shape (``{"provider", "config": {...}}``, or a provider only mem0 names).
    A graphmem-native dict never is, so it loads (and fails on unknown keys) exactly as before."""
    if not isinstance(data, Mapping):
        return False
    if any(key in _MEM0_ONLY_KEYS for key in data):
        return True
    return _mem0_section(data.get("llm"), _NATIVE_LLM, _MEM0_LLMS) or \
        _mem0_section(data.get("embedder"), _NATIVE_EMBEDDER, _MEM0_EMBEDDERS)


def _mem0_section(section: object, native: frozenset[str], mem0: frozenset[str]) -> bool:
    if not isinstance(section, Mapping):
        return False
    provider = section.get("provider")
    return "config" in section or (provider not in native and provider in mem0)


def translate_config(data: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A mem0-style configuration as a graphmem-native dict (for :meth:`MemoryConfig.load`), and one
    line per setting that has no graphmem equivalent, saying what is done instead. Nothing is
    validated or warned here; secrets are never named in the lines, only their keys.

    graphmem's own sections (``store``, ``search``, ``limits``…, and ``llm``/``embedder`` in graphmem's
    shape) may sit next to mem0's and win over what is translated."""
    translation = _Translation(data)
    return translation.run(), translation.notes


def load_config(data: MemoryConfig | Mapping[str, Any] | None) -> MemoryConfig:
    """What ``Memory`` loads: a native configuration as before; a mem0-style one translated and
    validated, then one :class:`Mem0ConfigWarning` naming every setting without an equivalent."""
    if not is_mem0_config(data):
        return MemoryConfig.load(data if data is None or isinstance(data, MemoryConfig) else dict(data))
    assert isinstance(data, Mapping)
    native, notes = translate_config(data)
    try:
        config = MemoryConfig.load(native)
    except ConfigError as exc:
        raise ConfigError(f"a mem0-style configuration, translated to graphmem's, is invalid: {exc}") from None
    if notes:
        listed = "\n".join(f"  - {line}" for line in notes)
        warnings.warn(f"graphmem read a mem0-style configuration; {len(notes)} setting(s) have no graphmem "
                      f"equivalent:\n{listed}", Mem0ConfigWarning, stacklevel=_caller_level())
    return config


class _Translation:
    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data
        self.notes: list[str] = []

    def run(self) -> dict[str, Any]:
        out: dict[str, Any] = {key: dict(value) for key, value in MEM0_DEFAULTS.items()}
        native: dict[str, Any] = {}
        for key, value in self.data.items():
            if key == "llm" and _mem0_section(value, _NATIVE_LLM, _MEM0_LLMS):
                out["llm"] = self._llm(value)
            elif key == "embedder" and _mem0_section(value, _NATIVE_EMBEDDER, _MEM0_EMBEDDERS):
                if (embedder := self._embedder(value)) is not None:
                    out["embedder"] = embedder
            elif key == "reranker":
                if (model := self._reranker(value)) is not None:
                    out["search"]["rerank"] = {"model": model}
            elif key == "version":
                if value not in (None, "v1.1"):
                    self.note(f"version {short(value, 20)}: graphmem always answers in mem0's v1.1 shape "
                              "({'results': [...]})")
            elif key == "enable_graph":
                if value is False:
                    self.note("enable_graph False: graphmem always keeps the graph (search.weights.graph 0 "
                              "leaves it out of ranking)")
            elif key == "history_db_path":
                self.note("history_db_path: graphmem keeps every memory's history in its own store; the file is "
                          "not used")
            elif key in ("custom_instructions", "custom_fact_extraction_prompt", "custom_update_memory_prompt"):
                if value:
                    self.note(f"{key}: {_EXTRACTION_PROMPT}")
            elif key in ("vector_store", "graph_store"):
                continue  # together, below
            elif key in _NATIVE_KEYS:
                native[key] = value
            else:
                self.note(f"{short(key, 40)}: not a mem0 or graphmem setting; ignored")
        store = self._store(self.data.get("vector_store"), self.data.get("graph_store"))
        if store is not None:
            if "store" in native:
                self.note("vector_store/graph_store: replaced by the graphmem store section given with them")
            else:
                out["store"] = store
        for key, value in native.items():
            merge = key in MEM0_DEFAULTS and isinstance(value, Mapping)
            out[key] = {**out[key], **value} if merge else value
        return out

    def note(self, line: str) -> None:
        self.notes.append(line)

    def unused(self, where: str, cfg: Mapping[str, Any], used: Iterable[str], why: str = "ignored") -> None:
        rest = sorted(str(k) for k, v in cfg.items() if k not in set(used) and v is not None)
        if rest:
            self.note(f"{where}: {clip(', '.join(rest), 200)}: no graphmem equivalent; {why}")

    def _section(self, section: Any, name: str, default: str) -> tuple[str, dict[str, Any]]:
        if not isinstance(section, Mapping):
            raise ConfigError(f"mem0-style configuration: {name} must be a mapping with provider and config")
        cfg = section.get("config") or {}
        if not isinstance(cfg, Mapping):
            raise ConfigError(f"mem0-style configuration: {name}.config must be a mapping")
        self.unused(name, {k: v for k, v in section.items() if k not in ("provider", "config")}, ())
        return str(section.get("provider") or default), dict(cfg)

    def _llm(self, section: Any) -> dict[str, Any]:
        provider, cfg = self._section(section, "llm", "openai")
        endpoint = _LLM_ENDPOINTS.get(provider)
        if endpoint is None:
            self.note(f"llm.provider {short(provider, 40)}: graphmem talks to OpenAI-compatible endpoints only; "
                      "extraction uses the rule-based extractor (llm.provider none)")
            return {"provider": "none"}
        out: dict[str, Any] = {"provider": "openai"}
        model = cfg.get("model") or endpoint.default_model
        if isinstance(model, str):
            out["model"] = model
        elif model is not None:
            self.note("llm.config.model: only a model name has an equivalent; graphmem's default model is used")
        if isinstance(cfg.get("temperature"), int | float):
            out["temperature"] = cfg["temperature"]
        tokens = cfg.get("max_tokens")
        if isinstance(tokens, int) and not isinstance(tokens, bool):
            out["max_output_tokens"] = max(tokens, 256)
            if tokens < 256:
                self.note(f"llm.config.max_tokens {tokens}: raised to 256, graphmem's least")
        self._endpoint(out, endpoint, cfg, provider, "llm")
        self.unused("llm.config", cfg, {"model", "temperature", "max_tokens", "api_key", "base_url",
                                        endpoint.url_key})
        return out

    def _endpoint(self, out: dict[str, Any], endpoint: _Endpoint, cfg: Mapping[str, Any], provider: str,
                  name: str) -> None:
        url, key = endpoint.url(cfg), endpoint.key(cfg)
        if url:
            out["base_url"] = url
        if key:
            out["api_key"] = key
        elif endpoint.key_env:  # without one, the openai client would send OPENAI_API_KEY to another server
            raise ConfigError(f"mem0-style configuration: {name}.provider {provider!r} needs an API key: "
                              f"{name}.config.api_key or {endpoint.key_env}")

    def _embedder(self, section: Any) -> dict[str, Any] | None:
        provider, cfg = self._section(section, "embedder", "openai")
        local = provider == "fastembed" or (provider == "huggingface" and not cfg.get("huggingface_base_url"))
        if local:
            if provider == "fastembed":
                self.note("embedder.provider 'fastembed': the model is loaded with sentence-transformers instead")
            out: dict[str, Any] = {"provider": "sentence-transformers"}
            if isinstance(cfg.get("model"), str):
                out["model"] = cfg["model"]
            self.unused("embedder.config", cfg, {"model"}, "ignored (a sentence-transformers model reports its own "
                        "size)" if cfg.get("embedding_dims") is not None else "ignored")
            return out
        endpoint = _EMBEDDER_ENDPOINTS.get(provider)
        if endpoint is None:
            self.note(f"embedder.provider {short(provider, 40)}: no graphmem equivalent; graphmem chooses "
                      "(embedder.provider auto: OpenAI with OPENAI_API_KEY, else sentence-transformers, else hashing)")
            return None
        out = {"provider": "openai"}
        model = cfg.get("model") or endpoint.default_model
        if isinstance(model, str):
            out["model"] = model
        dims = cfg.get("embedding_dims")
        if isinstance(dims, int) and not isinstance(dims, bool):
            out["dims"] = dims
        self._endpoint(out, endpoint, cfg, provider, "embedder")
        self.unused("embedder.config", cfg, {"model", "embedding_dims", "api_key", "base_url", endpoint.url_key})
        return out

    def _reranker(self, section: Any) -> str | None:
        provider, cfg = self._section(section, "reranker", "cohere")
        default = _RERANKERS.get(provider)
        if default is None:
            self.note(f"reranker.provider {short(provider, 40)}: no graphmem equivalent (graphmem reranks with a "
                      "local sentence-transformers CrossEncoder, search.rerank.model); search is not reranked")
            return None
        self.unused("reranker.config", cfg, {"model"}, "search reranks the best search.rerank.top_n")
        model = cfg.get("model")
        return model if isinstance(model, str) else default

    def _store(self, vector: Any, graph: Any) -> dict[str, Any] | None:
        store: dict[str, Any] | None = None
        if graph is not None:
            provider, cfg = self._section(graph, "graph_store", "neo4j")
            if provider == "neo4j":
                store = self._neo4j(cfg, "graph_store.config")
            else:
                self.note(f"graph_store.provider {short(provider, 40)}: no graphmem equivalent; graphmem keeps "
                          "the graph in its own store, with the memories")
        if vector is None:
            return store
        provider, cfg = self._section(vector, "vector_store", "qdrant")
        if store is not None:
            self.note(f"vector_store.provider {short(provider, 40)}: graphmem keeps memories and vectors in the "
                      "Neo4j store of graph_store")
            return store
        if provider == "neo4j":
            return self._neo4j(cfg, "vector_store.config")
        store = {"provider": "sqlite"}
        path = cfg.get("path")
        if isinstance(path, str | os.PathLike):
            store["path"] = str(Path(path).expanduser() / "graphmem.db")
        where = store.get("path", "graphmem.db in the graphmem home")
        self.note(f"vector_store.provider {short(provider, 40)}: graphmem keeps memories, vectors and history in "
                  f"its embedded SQLite store ({where}); nothing already in {short(provider, 40)} is read")
        self.unused("vector_store.config", cfg, {"path"})
        return store

    def _neo4j(self, cfg: Mapping[str, Any], where: str) -> dict[str, Any]:
        store: dict[str, Any] = {"provider": "neo4j"}
        for theirs, ours in (("url", "uri"), ("username", "user"), ("password", "password"), ("database", "database")):
            if cfg.get(theirs) is not None:
                store[ours] = cfg[theirs]
        self.unused(where, cfg, {"url", "username", "password", "database"})
        return store


def _caller_level() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside graphmem (the user's
    ``Memory.from_config(...)`` line), however deep inside graphmem it is raised."""
    package = str(Path(__file__).resolve().parent) + os.sep
    frame = sys._getframe(1)  # the function that calls warnings.warn
    level = 1
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(package):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    return level


# -- calls -----------------------------------------------------------------------------------------
def split_scope(filters: object, user_id: str | None, agent_id: str | None,
                run_id: str | None) -> tuple[Scope, Any]:
    """The scope of a ``search``/``get_all``: from the arguments and/or, mem0 2.x's way, from the scope
    ids at the top of ``filters`` (its own keys and its top-level ``AND``'s items, equality only),
    which are taken out of the filter. Given both ways, they must agree. ``"*"`` leaves that id
    open (every run of the user)."""
    given: dict[str, Any] = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
    rest = filters
    if isinstance(filters, dict) and any(k in filters for k in (*SCOPE_KEYS, "AND")):
        found: dict[str, Any] = {}
        rest = _take_scope(filters, found) or None
        for key, value in found.items():
            if given[key] is not None and given[key] != value:
                raise ScopeError(f"{key}={short(given[key], 60)} and filters[{key!r}]={short(value, 60)} name "
                                 "different scopes; give the scope once")
            given[key] = value
    given = {k: None if v == "*" else v for k, v in given.items()}  # mem0's wildcard: any run, any agent
    if all(v is None for v in given.values()):
        raise ScopeError("every read and write needs a scope: pass user_id, agent_id and/or run_id, as arguments "
                         "or mem0-style at the top of filters (filters={'user_id': ...})")
    return Scope.of(**given), rest


def _take_scope(spec: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
    rest: dict[str, Any] = {}
    for key, value in spec.items():
        if key in SCOPE_KEYS and (not isinstance(value, dict) or list(value) == ["eq"]):
            wanted = value["eq"] if isinstance(value, dict) else value
            if key in found and found[key] != wanted:
                raise ScopeError(f"filters name two {key}s ({short(found[key], 60)} and {short(wanted, 60)}); "
                                 "a scope has one of each")
            found[key] = wanted
        elif key == "AND" and isinstance(value, list) and value:
            items = [(_take_scope(v, found), True) if isinstance(v, dict) and v else (v, False) for v in value]
            kept = [item for item, was_dict in items if not (was_dict and item == {})]
            if kept:
                rest[key] = kept
        else:
            rest[key] = value
    return rest


def pick_count(top_k: object, limit: object) -> object:
    """mem0 names the result count ``top_k`` (2.x) or ``limit`` (1.x): either one, or both if equal."""
    if top_k is None:
        return limit
    if limit is not None and (limit != top_k or type(limit) is not type(top_k)):
        raise InvalidInputError(f"top_k={short(top_k, 40)} and limit={short(limit, 40)} differ; they are one "
                                "setting (mem0 2.x calls it top_k, 1.x limit): give one")
    return top_k


def pick_text(data: str | None, text: str | None) -> str | None:
    """mem0 2.x's ``update(text=...)`` is graphmem's (and mem0 1.x's) ``data``."""
    if text is None:
        return data
    if data is not None and data != text:
        raise InvalidInputError("update got both data and text, and they differ; they are one argument: give one")
    return text


def memory_type(value: object) -> object:
    """mem0's memory type names (``procedural_memory``, as ``MemoryType.PROCEDURAL.value`` or its enum)
    as graphmem's (``procedural``); anything else as given, for the usual check."""
    raw = value.value if isinstance(value, Enum) else value
    return _MEMORY_TYPES.get(raw, value) if isinstance(raw, str) else value


def history_row(event: dict[str, Any]) -> dict[str, Any]:
    """A history event with the keys mem0 code reads on every row (``old_memory`` is None on an ADD,
    ``is_deleted`` marks the DELETE), graphmem's own keys kept."""
    row = dict(event)
    for key in ("old_memory", "new_memory", "actor_id", "role"):
        row.setdefault(key, None)
    row["is_deleted"] = event.get("event") == "DELETE"
    return row


def warn_prompt_without_llm() -> None:
    warnings.warn("add(prompt=...) instructs an LLM extractor; this one (the rule-based extractor unless "
                  "llm.provider is openai or extraction.provider names another) cannot follow it", Mem0CompatWarning,
                  stacklevel=_caller_level())


def warn_no_reranker() -> None:
    warnings.warn("search(rerank=True), but no reranker is configured (search.rerank.model, or a mem0 "
                  "reranker section): the results keep their fused order", Mem0CompatWarning,
                  stacklevel=_caller_level())
