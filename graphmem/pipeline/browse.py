"""The graph read API: what the engine knows about entities, as pages of entities and of facts.

A fact is read as the ontology says it may be stated: asking for ``worksFor`` also finds facts stored
with a sub-property of it, and ``employs`` facts (its inverse) read the other way round; a symmetric
relation reads from either end. Such a view says how it was derived (``derived``), so a caller can
tell a stored statement from a reading of one. Transitive closure is left to search, whose walk is
bounded; a page here is always a set of stored facts, each at most once, so cursors stay exact.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError, NotFoundError, short
from ..models import Entity, Relation, Scope, norm_name
from ..stores.base import EntityQuery, FactQuery, Records, Store
from .steps import Call, Steps

if TYPE_CHECKING:
    from ..ontology import Ontology


def encode_cursor(created_at: datetime, item_id: str) -> str:
    raw = json.dumps([created_at.isoformat(), item_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> tuple[datetime, str] | None:
    """The (created_at, id) a cursor of :func:`encode_cursor` holds; a bad one is an input error."""
    if cursor is None:
        return None
    if not isinstance(cursor, str) or len(cursor) > 512:
        raise InvalidInputError("cursor must be a string returned as next_cursor")
    try:
        at, item_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        when = datetime.fromisoformat(at)
        if not isinstance(item_id, str) or when.tzinfo is None:
            raise ValueError(cursor)
    except (ValueError, TypeError, binascii.Error, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"cursor {short(cursor)} is not one this API returned as next_cursor") from exc
    return when, item_id


def _page(items: Sequence[Entity] | Sequence[Relation], limit: int) -> str | None:
    """The next cursor when a page asked for ``limit + 1`` got more than ``limit``."""
    if len(items) <= limit:
        return None
    last = items[limit - 1]
    return encode_cursor(last.created_at, last.id)


def entities(ontology: Ontology, scope: Scope, *, name: str | None, type_: str | None,
             limit: int, cursor: str | None) -> Steps[dict[str, Any]]:
    classes: tuple[str, ...] = ()
    if type_ is not None:
        iri = ontology.resolve_class(type_)
        if iri is None:
            raise InvalidInputError(f"type {short(type_)} is not a class of the ontology")
        classes = (iri, *ontology.subclasses(iri))
    fragment = norm_name(name) if name is not None else None
    if fragment == "":
        raise InvalidInputError("name must contain a letter or digit")
    found: list[Entity] = yield Call.of(Store.list_entities, scope, EntityQuery(
        contains=fragment, classes=classes, after=decode_cursor(cursor), limit=limit + 1))
    shown = found[: limit]
    degree = yield Call.of(Store.entity_memories, scope, [e.id for e in shown], 0, 0)
    return {"results": [_entity(e, ontology, degree.get(e.id, (0, []))[0]) for e in shown],
            "next_cursor": _page(found, limit)}


def _entity(e: Entity, ontology: Ontology, mentions: int) -> dict[str, Any]:
    return {**e.public(), "types": [ontology.short(c) for c in e.classes], "mentions": mentions}


def find_entity(scope: Scope, entity: str) -> Steps[Entity]:
    """An entity by id, else by its name or an alias (the oldest having it)."""
    by_id: dict[str, Entity] = yield Call.of(Store.entities, scope, [entity])
    if entity in by_id:
        return by_id[entity]
    key = norm_name(entity)
    by_name: dict[str, Entity] = (yield Call.of(Store.find_entities, scope, [key], exact=False)) if key else {}
    if key in by_name:
        return by_name[key]
    raise NotFoundError(f"no entity {short(entity)} (by id, name or alias) in scope {dict(scope.items())}")


def facts(ontology: Ontology, scope: Scope, *, entity: str | None, relation: str | None,
          as_of: datetime | None, include_closed: bool, limit: int, cursor: str | None) -> Steps[dict[str, Any]]:
    about = (yield from find_entity(scope, entity)) if entity is not None else None
    asked: str | None = None
    direct: set[str] = set()
    inverse: set[str] = set()
    symmetric = False
    if relation is not None:
        asked = ontology.resolve_relation(relation)
        if asked is None:
            raise InvalidInputError(f"relation {short(relation)} is not a property of the ontology")
        direct = {asked, *ontology.sub_properties(asked)}
        info = ontology.relations[asked]
        symmetric = info.symmetric
        if info.inverse is not None:
            inverse = {info.inverse, *ontology.sub_properties(info.inverse)} - direct
    query = FactQuery(entity_ids=(about.id,) if about else (), relations=tuple(sorted(direct | inverse)),
                      as_of=as_of, include_closed=include_closed, after=decode_cursor(cursor),
                      limit=limit + 1)
    found: list[Relation] = yield Call.of(Store.list_facts, scope, query)
    shown = found[: limit]
    ends = {i for r in shown for i in (r.source_id, r.target_id) if i is not None}
    names = yield Call.of(Store.entities, scope, sorted(ends))
    records, _ = yield Call.of(Store.records, scope, sorted({m for r in shown for m in r.memory_ids}), None, None)
    results = []
    for r in shown:
        view = _fact(r, ontology, names, records)
        flip = None
        if r.relation in inverse:
            flip = "inverse"
        elif symmetric and about is not None and r.target_id == about.id and r.source_id != about.id:
            flip = "symmetric"
        if flip is not None and asked is not None:
            view.update(source=view["target"], target=view["source"], relation=asked,
                        relation_name=ontology.short(asked), derived={"from": flip, "stored_relation": r.relation})
        results.append(view)
    return {"results": results, "next_cursor": _page(found, limit)}


def _fact(r: Relation, ontology: Ontology, names: dict[str, Entity], records: Records) -> dict[str, Any]:
    def end(eid: str | None) -> dict[str, Any] | None:
        if eid is None:
            return None
        e = names.get(eid)
        return {"id": eid, "name": e.name if e else None}

    times = r.model_dump(mode="json", include={"valid_from", "valid_to", "created_at"})  # as every record's
    out: dict[str, Any] = {
        "id": r.id, "source": end(r.source_id), "relation": r.relation, "relation_name": ontology.short(r.relation),
        "target": end(r.target_id), **times,
        "memories": [{"id": m, "memory": records[m].memory} for m in r.memory_ids if m in records],
        "derived": None,
    }
    if r.value is not None:
        out.update(value=r.value, datatype=r.datatype)
    return out
