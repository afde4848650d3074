"""What one ``extract`` call finds, shared by the rule parts: the entity registry, sentences, mentions.

Built fresh per chunk, so the extractor itself keeps no state between calls. Entities are keyed by
``norm(name)``; ``ChunkState.index`` maps every normalized surface (names and aliases) to that key, which is
how "Snow", "the Rank Organisation" and "RANK ORGANISATION" land on one entity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from ..contract import ExtractionContext
    from .dates import TimeExpr
    from .text import Message

Granularity = Literal["statement", "sentence", "message"]
"""A memory per clause in the third person ("Maya lives in Lisbon."), per sentence verbatim, or per
speaker turn (paragraph of plain text)."""


ROLES: Final = frozenset({"user", "assistant", "system", "tool"})
NOT_THE_USER: Final = frozenset({"assistant", "system", "tool"})
"""Roles whose turns state nothing about the user: not remembered, not parsed, no facts."""


def role_of(label: str | None, roles: dict[str, str]) -> str | None:
    """The role a speaker label speaks in; a bare role label ("assistant") is its own role."""
    if label is None:
        return None
    return roles.get(label) or (label.casefold() if label.casefold() in ROLES else None)


def norm(name: str) -> str:
    """Case- and spacing-insensitive key; a leading "the" does not count."""
    key = " ".join(name.casefold().replace("’", "'").split())
    return key[4:] if key.startswith("the ") and len(key) > 4 else key


@dataclass
class Entity:
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
        """Keep the surest type: a lower rank wins, an equal one does not replace."""
        if name and rank < self.rank:
            self.type, self.rank = name, rank


@dataclass
class Mention:
    start: int
    end: int
    """Token range in the message, end exclusive."""
    key: str
    kind: str
    """How it was found: known, cap, person, quote, id, demonym, short, concept or np."""


@dataclass
class Sentence:
    msg: Message
    start: int
    end: int
    text: str
    char_start: int
    char_end: int
    mentions: list[Mention] = field(default_factory=list)
    times: list[TimeExpr] = field(default_factory=list)
    memory: int = -1
    """Index of the (first) extracted memory holding this sentence."""
    pronouns: dict[int, str] = field(default_factory=dict)
    """Token of a "she"/"he"/"her"/"his" -> the name of the person it stands for."""
    statements: list[tuple[int, str]] = field(default_factory=list)
    """Each memory made of it (one per clause with ``granularity="statement"``): index and text."""

    @classmethod
    def split(cls, messages: list[Message]) -> list[Sentence]:
        """Every sentence of the tokenized messages, in order."""
        out: list[Sentence] = []
        for msg in messages:
            for s, e in msg.sentences:
                cs, ce = msg.starts[s], msg.end_char(e - 1)
                out.append(cls(msg, s, e, msg.text[cs:ce], cs, ce))
        return out

    @property
    def question(self) -> bool:
        return self.text.rstrip(" \"'”’)]").endswith("?")


@dataclass(frozen=True)
class KnownNames:
    """Known names, speakers and the heading as lowercase token tuples, for case-insensitive matching."""

    table: dict[tuple[str, ...], str]
    """Tokens -> entity key."""
    firsts: set[str]
    longest: int


@dataclass
class ChunkState:
    """Per-call state: the entity registry and what was found, sentence by sentence."""

    context: ExtractionContext
    entities: dict[str, Entity] = field(default_factory=dict)
    index: dict[str, str] = field(default_factory=dict)
    """Normalized surface -> entity key (names and aliases)."""
    sentences: list[Sentence] = field(default_factory=list)
    topic: str | None = None
    """The heading entity of a plain-text chunk: what "It" and "He" at a sentence start refer to."""
    counter: int = 0
    known: KnownNames | None = None
    weak: list[tuple[Sentence, int, int]] = field(default_factory=list)
    """Sentence-initial common words ("Snow", "Hall") that are names only as short forms of a longer one."""
    nested: set[str] = field(default_factory=set)
    """Names inside longer names ("Tulsa" in "Philbrook Museum of Tulsa"): entities, not mentions."""
    speakers: dict[str, str] = field(default_factory=dict)
    """Role speaker label ("user") -> the entity key of the person who introduced themselves."""
    recent_person: str | None = None
    """The last person named before the current sentence, other than its speaker: who "she" is."""
    endpoints: set[str] = field(default_factory=set)
    """Entity keys used by a triple (the speaker behind "I" is an entity only then)."""

    def entity(self, name: str, *, words: tuple[str, ...] = (), own: bool = False) -> Entity:
        """The entity ``name`` normalizes to, registered on first sight; ``own``: the entity of that
        very name, even where the name is also another's alias ("German" the language, not Germany)."""
        key = norm(name)
        found = key if own and key in self.entities else None if own else self.index.get(key)
        if found is not None:
            return self.entities[found]
        ent = Entity(key=key, name=name, order=self.counter, words=words or tuple(key.split()))
        self.counter += 1
        self.entities[key] = ent
        self.index[key] = key
        return ent
