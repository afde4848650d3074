"""Typed records shared by every stage: scopes, memories, entities, relations and history events."""

from __future__ import annotations

import hashlib
import math
import numbers
import re
import threading
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum, StrEnum
from typing import Any, Final, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticUndefined

from .errors import InvalidInputError, ScopeError, short

MAX_ID_CHARS: Final = 256
"""Scope ids and memory ids: identifiers, not text (graphmem's own ids are UUIDs)."""
_ID_BAD = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
"""What an id may not hold: C0 and C1 controls, and lone surrogates (not encodable as UTF-8)."""
# C0/C1 controls other than tab, newline and carriage return.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_MAX_ISO_CHARS: Final = 64


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return str(uuid.uuid4())


def to_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC, so stored times compare across machines and backends."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def iso(value: datetime) -> str:
    """Fixed-width UTC ISO-8601, so string order is time order in every backend."""
    return to_utc(value).isoformat(timespec="microseconds")


def json_time(value: datetime) -> str:
    """A UTC time as every answer of the API writes it (pydantic's JSON form: ``...Z``)."""
    return to_utc(value).isoformat().replace("+00:00", "Z")


def check_id(value: object, what: str) -> str:
    """An identifier as given (never normalized, so it matches what is stored): a non-empty str
    without control characters or lone surrogates, at most :data:`MAX_ID_CHARS` long."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    if not value:
        raise InvalidInputError(f"{what} is empty")
    if len(value) > MAX_ID_CHARS:
        raise InvalidInputError(f"{what} has {len(value):,} characters; ids have at most {MAX_ID_CHARS} "
                                f"({short(value)})")
    refuse_controls(value, what)
    return value


def refuse_controls(value: str, what: str) -> None:
    """Refuse a one-line name (an id, a speaker) holding a C0/C1 control or a lone surrogate,
    naming the character and where it is."""
    bad = _ID_BAD.search(value)
    if bad:
        kind = "a lone surrogate" if "\ud800" <= bad.group() <= "\udfff" else "a control character"
        raise InvalidInputError(f"{what} holds {kind} (U+{ord(bad.group()):04X}) at offset {bad.start()}: "
                                f"{short(value)}")


def clean_text(text: object, *, what: str = "text", max_chars: int | None = None,
               setting: str = "limits.max_memory_chars") -> str:
    """Validate one piece of user text: a non-empty str, valid Unicode, no control characters.
    ``setting`` names the limit ``max_chars`` comes from, for the message."""
    if not isinstance(text, str):
        raise InvalidInputError(f"{what} must be a string, got {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"{what} is not valid Unicode (lone surrogate at {exc.start})") from None
    bad = _CONTROL.search(text)
    if bad:
        raise InvalidInputError(
            f"{what} contains control character U+{ord(bad.group()):04X} at offset {bad.start()}; "
            "remove it or escape it before storing"
        )
    text = unicodedata.normalize("NFC", text).strip()
    if not text:
        raise InvalidInputError(f"{what} is empty")
    if max_chars is not None and len(text) > max_chars:
        raise InvalidInputError(
            f"{what} has {len(text):,} characters, more than the limit of {max_chars:,} "
            f"({setting}); split it or raise the limit"
        )
    return text


def text_hash(text: str) -> str:
    """Hash of the normalized text (case and white space folded): the exact-duplicate key."""
    folded = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return hashlib.sha256(folded.encode("utf-8")).hexdigest()


@dataclass
class Usage:
    """What the extraction model was asked for one ``add``: the tokens its server reported in
    ``usage`` and the requests made, so a caller can see what an add cost."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    """Chat-completion requests sent (refused ones included: they cost a round trip)."""
    repairs: int = 0
    """Re-asks with the guard's SHACL messages."""
    fallbacks: int = 0
    """Switches to a simpler structured-output mode or request parameter after a refusal."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, n in counts.items():
                setattr(self, name, getattr(self, name) + n)

    def as_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "calls": self.calls, "repairs": self.repairs, "fallbacks": self.fallbacks}


class MemoryType(StrEnum):
    SEMANTIC = "semantic"
    EPISODIC = "episodic"
    PROCEDURAL = "procedural"


class Keep(Enum):
    """A keyword's default meaning "leave it as it is", where ``None`` means "clear it"."""

    KEEP = 0


class EventType(StrEnum):
    ADD = "ADD"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    SUPERSEDE = "SUPERSEDE"
    REJECT = "REJECT"
    NONE = "NONE"


class Scope(BaseModel):
    """Tenant scope. Given fields must match exactly; absent fields match anything (on reads only)."""

    model_config = ConfigDict(frozen=True)

    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None

    @field_validator("user_id", "agent_id", "run_id")
    @classmethod
    def _check_id(cls, value: str | None) -> str | None:
        return None if value is None else check_id(value, "scope id")

    @model_validator(mode="after")
    def _non_empty(self) -> Scope:
        if self.user_id is None and self.agent_id is None and self.run_id is None:
            raise ValueError("a scope needs at least one of user_id, agent_id, run_id")
        return self

    @classmethod
    def of(cls, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None) -> Scope:
        """Build a scope from call arguments, raising :class:`ScopeError` with a usable message."""
        if user_id is None and agent_id is None and run_id is None:
            raise ScopeError("every read and write needs a scope: pass user_id, agent_id and/or run_id")
        for name, value in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)):
            if value is not None:
                try:
                    check_id(value, name)
                except InvalidInputError as exc:
                    raise ScopeError(f"invalid scope: {exc}") from None
        return cls(user_id=user_id, agent_id=agent_id, run_id=run_id)

    def items(self) -> list[tuple[str, str]]:
        """The fields that are set, as (name, value) pairs in a fixed order."""
        return [(k, v) for k in ("user_id", "agent_id", "run_id") if (v := getattr(self, k)) is not None]

    def contains(self, user_id: str | None, agent_id: str | None, run_id: str | None) -> bool:
        stored = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        return all(stored[k] == v for k, v in self.items())


class MemoryRecord(BaseModel):
    """One stored memory, as returned to callers (embedding excluded)."""

    id: str
    memory: str
    hash: str
    memory_type: MemoryType = MemoryType.SEMANTIC
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    role: str | None = None
    actor_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime | None = None
    event_time: datetime | None = None
    expires_at: datetime | None = None
    access_count: int = 0
    """How often search has returned it (recorded when decay uses access, see ``search.decay.access``)."""
    last_accessed_at: datetime | None = None
    follows: str | None = None
    """The memory stored just before this one in its exact scope (the turn it answers, in a
    conversation), decided by the store inside the write; ``None`` for a scope's first."""

    @property
    def scope(self) -> Scope:
        return Scope(user_id=self.user_id, agent_id=self.agent_id, run_id=self.run_id)

    def public(self) -> dict[str, Any]:
        """The mem0-shaped dict the API returns (times as ISO strings); ``updated_at`` is always there,
        ``None`` until an update, as mem0 returns it."""
        out = self.model_dump(mode="json", exclude_none=True)
        out.setdefault("metadata", {})
        out.setdefault("updated_at", None)
        return out


class HistoryEvent(BaseModel):
    """One change to a memory. History outlives the memory: a deleted memory keeps its trail."""

    id: str = Field(default_factory=new_id)
    memory_id: str
    event: EventType
    old_memory: str | None = None
    new_memory: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    actor_id: str | None = None
    role: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    details: dict[str, Any] = Field(default_factory=dict)

    def public(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


def norm_name(name: str) -> str:
    """The key entity names are matched on: compatibility-folded, case-folded, single-spaced."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


class Entity(BaseModel):
    """A node of the knowledge graph: one per real-world thing within a scope."""

    id: str = Field(default_factory=new_id)
    name: str
    classes: list[str] = Field(default_factory=list)
    """Ontology class IRIs (most specific known)."""
    aliases: list[str] = Field(default_factory=list)
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime | None = None

    @property
    def key(self) -> str:
        return norm_name(self.name)

    def public(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class Relation(BaseModel):
    """A typed fact about an entity: an edge to another entity or a literal value, with provenance
    (the memories that support it) and validity (``valid_to`` is set when a newer fact supersedes it)."""

    id: str = Field(default_factory=new_id)
    source_id: str
    relation: str
    """Ontology property IRI."""
    target_id: str | None = None
    value: str | None = None
    """Lexical form of a literal object (datatype properties)."""
    datatype: str | None = None
    memory_ids: list[str] = Field(default_factory=list)
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None

    @model_validator(mode="after")
    def _one_object(self) -> Relation:
        if (self.target_id is None) == (self.value is None):
            raise ValueError("a relation has either a target entity or a literal value")
        return self

    def public(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class QuarantineEntry(BaseModel):
    """A triple the guard refused, kept with its reasons so nothing rejected is lost."""

    id: str = Field(default_factory=new_id)
    triple: dict[str, Any]
    """The triple as given (source, relation, target, types, valid_from), plus resolved IRIs."""
    reasons: list[dict[str, Any]]
    """SHACL results (focus node, path, value, constraint, severity, message) or graphmem's own."""
    memory_ids: list[str] = Field(default_factory=list)
    ontology: str = ""
    """Fingerprint of the ontology and shapes that rejected it."""
    status: str = "quarantined"
    """``quarantined`` or ``released`` (a later recheck passed and wrote it)."""
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    released_at: datetime | None = None

    def public(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class Message(BaseModel):
    """One chat message as accepted by ``add``."""

    model_config = ConfigDict(extra="forbid")

    role: str
    content: str
    name: str | None = None

    @field_validator("role")
    @classmethod
    def _known_role(cls, value: str) -> str:
        if value not in {"user", "assistant", "system", "tool"}:
            raise ValueError(f"unknown role {short(value)}; use user, assistant, system or tool")
        return value


def parse_datetime(value: datetime | str | int | float, *, what: str) -> datetime:
    """Accept datetimes, ISO strings and Unix seconds; always return aware UTC, within the years
    1 to 9999 once in UTC (what both backends store), or raise :class:`InvalidInputError`."""
    expected = "a datetime, ISO-8601 string or Unix seconds"
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, bool) or not isinstance(value, numbers.Real | str):
        raise InvalidInputError(f"{what} must be {expected}, got {type(value).__name__}")
    elif isinstance(value, numbers.Real):
        seconds = float(value) if abs(value) < 1e300 else math.inf
        if not math.isfinite(seconds):
            raise InvalidInputError(f"{what}={short(value)} is not a finite number of Unix seconds")
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            hint = " (milliseconds? divide by 1000)" if 0 < seconds < 1e17 else ""
            raise InvalidInputError(f"{what}={short(value)} Unix seconds is outside the years 1 to 9999{hint}"
                                    ) from None
    else:
        try:
            if len(value) > _MAX_ISO_CHARS:
                raise ValueError
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInputError(f"{what}={short(value)} is not {expected}") from None
    try:
        return to_utc(when)
    except OverflowError:
        raise InvalidInputError(f"{what}={short(value)} is outside the years 1 to 9999 in UTC") from None


M = TypeVar("M", bound=BaseModel)
_IMMUTABLE: Final = (type(None), type(PydanticUndefined), str, int, float, bool, Enum, tuple, frozenset)


def row_builder(cls: type[M]) -> Callable[[dict[str, Any]], M]:
    """``cls.model_construct(**values)`` without its per-call overhead, for stored rows (validated on the
    way in). Every store builds its read results with these.

    A search builds a few hundred models from rows (records, entities, facts): ``model_construct``
    spends most of its time resolving defaults field by field; this sets what it sets (the fields in
    order, defaults for the missing ones, the fields given as set) in a fraction of that. Models with private
    attributes, extra fields or a default factory that takes data keep ``model_construct``.
    """
    fields = cls.model_fields
    if cls.__private_attributes__ or cls.model_config.get("extra") == "allow" or any(
            getattr(f, "default_factory_takes_validated_data", False)
            or not isinstance(f.default, _IMMUTABLE) for f in fields.values()):  # shared, not copied
        return lambda values: cls.model_construct(**values)
    defaults: list[tuple[str, Callable[[], Any] | None, Any]] = [
        (name, cast("Callable[[], Any] | None", f.default_factory), f.default) for name, f in fields.items()]
    new, put = object.__new__, object.__setattr__

    def build(values: dict[str, Any]) -> M:
        obj = new(cls)
        put(obj, "__dict__", {name: values[name] if name in values else factory() if factory else default
                              for name, factory, default in defaults})
        put(obj, "__pydantic_fields_set__", set(values))
        put(obj, "__pydantic_extra__", None)
        put(obj, "__pydantic_private__", None)
        return obj

    return build


build_record: Callable[[dict[str, Any]], MemoryRecord] = row_builder(MemoryRecord)
build_entity: Callable[[dict[str, Any]], Entity] = row_builder(Entity)
build_relation: Callable[[dict[str, Any]], Relation] = row_builder(Relation)
