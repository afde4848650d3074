"""Neo4j backend of the storage contract (Neo4j 5.26+, Bolt, official ``neo4j`` driver).

Graph model (documented for analysts; these names are stable):

``(:Memory {id, memory, hash, memory_type, user_id, agent_id, run_id, role, actor_id, metadata,
created_at, updated_at, event_time, expires_at, follows, closed_facts, embedding})``
    ``metadata`` is the whole metadata as a JSON string. Each top-level key whose value is a scalar
    (string, integer, float, boolean) or a list of scalars of one type is mirrored as the property
    ``md.<key>`` so Cypher can filter on it; any other non-null value (an object, a mixed list) is
    recorded as ``mdx.<key>``, a list of type-tagged strings of its scalar elements, so filters can
    tell that the key is present and test list membership. Where ``str.casefold`` differs from
    lower-casing (ß, ligatures, final sigma), ``mdfold.<key>`` and, for the caller-supplied record
    fields, ``fold.<field>`` hold the folded form for ``icontains``. Integers beyond 64 bits are
    mirrored as floats. ``embedding`` is a float32 array (``db.create.setNodeVectorProperty``).
    ``closed_facts`` is ``true`` once a fact the memory supports was closed (set in that
    transaction): search reads the fact states of those memories only.
``(:HistoryEvent {id, memory_id, event, old_memory, new_memory, user_id, agent_id, run_id, actor_id,
role, created_at, details, seq})``
    ``details`` is a JSON string. History is not linked to the memory, so it outlives it.
``(:GraphmemMeta {key: 'schema', embedder, dims, schema_version})``
    Written by :meth:`Neo4jStore.open`, which refuses another embedder or size.
``(:GraphmemThread {key, last, user_id, agent_id, run_id})``
    One per exact scope: ``last`` is the memory written there last, which the next new memory
    ``follows`` (the id of the memory written just before it). A write locks it, so one scope's
    writers form one chain.
``(:Entity:<ClassLabel>… {id, name, key, alias_keys, aliases, aliases_text, classes, user_id,
agent_id, run_id, created_at, updated_at, seq, embedding})``
    ``key`` is ``norm_name(name)``, ``alias_keys`` the normalized aliases, ``aliases_text`` the
    aliases joined by newlines (full-text index ``entity_link``), ``classes`` the ontology class
    IRIs. Each class whose local name maps (:func:`~graphmem.ontology.naming.to_label`) to a safe,
    unreserved label also becomes a label of the node; an IRI that would not is kept in ``classes``
    only.
``(:Entity)-[:<REL_TYPE> {id, relation, memory_ids, valid_from, valid_to, created_at, user_id,
agent_id, run_id, seq}]->(:Entity)``
    A fact. ``REL_TYPE`` is :func:`~graphmem.ontology.naming.to_rel_type` of the property's local
    name, ``relation`` the property IRI, ``memory_ids`` the supporting memories (provenance),
    ``valid_to`` is set when a newer fact superseded it.
``(:Entity)-[:<REL_TYPE> {…}]->(:Value {id, value, datatype, user_id, agent_id, run_id})``
    A fact with a literal object: one ``Value`` node per fact (its ``id`` is the fact's).
``(:Memory)-[:MENTIONS]->(:Entity)``
    Also written for every memory that supports a fact, to the fact's subject: deleting a memory
    finds the facts it supports through its mentions (index seeks, never a scan of the facts).
``(:Quarantine {id, triple, reasons, memory_ids, ontology, status, user_id, agent_id, run_id,
created_at, released_at, seq})``
    ``triple`` and ``reasons`` are JSON strings.

Times are native ``DATETIME`` in UTC. Absent optional fields are absent properties. ``seq``
records write order (nanoseconds since the epoch at write time plus the position in the write) and
breaks ties between equal ``created_at`` values, so "oldest first" is the order things were written
in, as in the SQLite store.

A fact lives in the scope of its subject entity (the planner resolves entities in the exact write
scope), so scoped reads of facts start from an index seek on the entities' scope fields. Every
query carries the caller's scope as equality predicates on indexed properties; labels and
relationship types are inlined back-quoted only after :func:`~graphmem.ontology.naming.is_safe`,
and user-supplied keys and values only ever travel as parameters.

The modules: :mod:`.store` (the class), :mod:`.cypher` (all Cypher text), :mod:`.naming` (IRIs as
labels and types), :mod:`.session` (driver, retries, errors), :mod:`.schema` (open, optimize),
:mod:`.filters` (metadata mirroring, the filter compiler), :mod:`.records` (rows and models),
:mod:`.writes`, :mod:`.reads`, :mod:`.graph` (graph reads), :mod:`.search` and :mod:`.analyst`
(analysts' read-only Cypher).
"""

from .filters import compile_filter, mirror_properties
from .schema import SCHEMA_VERSION
from .store import Neo4jStore

__all__ = ["SCHEMA_VERSION", "Neo4jStore", "compile_filter", "mirror_properties"]
