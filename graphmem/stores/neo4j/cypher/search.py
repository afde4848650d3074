"""Cypher of search: the candidates (vector and full-text hits), ``nearest``, and the neighbourhood
walk appended to the candidates so a search is one statement."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from ....models import Scope, to_utc
from ...base import GraphQuery
from ...text import QUESTION_MARKS, STOPWORDS
from . import MEMORY_ROW, SIM, entity_proj, rel_proj, scope_where
from .graph import NEWEST_FIRST, newest_support

# --------------------------------------------------------------------------------------------------
# Search: candidates (vector and full-text hits)

KNOWN_BIG: Final = "WITH true AS big, $big_kk AS kk, false AS exact"
"""The first clause for a scope recently found big (past ``vector_exact_max``): not probed again."""


def size_scope(hint_clause: str, in_scope: str) -> list[str]:
    """Count the label (count store) and the scope (index seek, stopped at ``$probe``), leaving
    ``big``, ``kk`` (the index over-fetch: ``$base`` scaled by the scope's share, within ``$kk_max``)
    and ``exact`` (score the scope exactly: small, and filtered or smaller than ``kk``)."""
    return [
        "CALL () { MATCH (m:Memory) RETURN count(m) AS total }",
        f"CALL () {{ MATCH (m:Memory) {hint_clause} WHERE {in_scope} WITH m LIMIT $probe RETURN count(m) AS sn }}",
        "WITH sn, sn > $exact_max AS big, CASE WHEN sn = 0 THEN 0 WHEN sn > $exact_max THEN $big_kk "
        "ELSE toInteger(ceil(toFloat($base) * total / sn)) END AS want",
        "WITH sn, big, CASE WHEN want < $base THEN $base WHEN want > $kk_max THEN $kk_max ELSE want END AS kk",
        "WITH big, kk, (NOT big AND ($filtered OR sn <= kk)) AS exact",
    ]


def hit_list(alias: str, sim: bool = False, known: str | None = None) -> str:
    """``sim``: with each hit's exact cosine (full-text hits, when the search has a vector). The
    ids in the list ``known`` (vector hits of the same query) come as id and score alone: their
    record and cosine are already in the reply."""
    hit = f"{{id: m.id, s: s, rec: {MEMORY_ROW}" + (f", sim: {SIM}}}" if sim else "}")
    if known:
        hit = f"CASE WHEN m.id IN {known} THEN {{id: m.id, s: s}} ELSE {hit} END"
    return f"RETURN collect({hit}) AS {alias}"


def exact_vector(hint_clause: str, cond: str) -> str:
    """Exact cosine over the scope (index seek on a scope field): correct whatever the filter."""
    return (
        f"MATCH (m:Memory) {hint_clause} WHERE {cond} "
        "WITH m, vector.similarity.cosine(m.embedding, $vec) AS s WHERE s IS NOT NULL "
        f"ORDER BY s DESC, m.id ASC LIMIT $k {hit_list('vh')}"
    )


def index_vector(cond: str, kk: str, exact_index: bool) -> str:
    """ANN over-fetch of ``kk`` nodes, then scope/filter; a quantized index's survivors are
    re-scored exactly (an unquantized one returns the exact cosine, the same number
    ``vector.similarity.cosine`` gives, without reading the 1.5 kB embedding of each row)."""
    if exact_index:
        return (
            f"CALL db.index.vector.queryNodes('memory_embedding', {kk}, $vec) YIELD node, score "
            "WITH collect([node, score]) AS rows "
            "CALL (rows) { UNWIND rows AS r WITH r[0] AS m, r[1] AS s WHERE "
            f"{cond} WITH m, s ORDER BY s DESC, m.id ASC LIMIT $k {hit_list('vh')} }} "
            "RETURN vh, size(rows) AS vraw"
        )
    return (
        f"CALL db.index.vector.queryNodes('memory_embedding', {kk}, $vec) YIELD node "
        "WITH collect(node) AS ns "
        "CALL (ns) { UNWIND ns AS m WITH m WHERE "
        f"{cond} WITH m, vector.similarity.cosine(m.embedding, $vec) AS s WHERE s IS NOT NULL "
        f"ORDER BY s DESC, m.id ASC LIMIT $k {hit_list('vh')} }} "
        "RETURN vh, size(ns) AS vraw"
    )


def index_fulltext(cond: str, options: str, sim: bool, skip_vh: bool = False) -> str:
    """Lucene hits (user text escaped by ``lucene_query``), then scope/filter; ``skip_vh``: the
    vector hits ``vh`` are in scope, and their cosine is not computed again (``sim`` null)."""
    known = "vids, " if skip_vh else ""
    return (
        f"CALL db.index.fulltext.queryNodes('memory_text', $q, {options}) YIELD node, score "
        "WITH collect([node, score]) AS rows "
        f"CALL (rows{', vh' if skip_vh else ''}) {{ "
        + ("WITH rows, [h IN vh | h.id] AS vids " if skip_vh else "")
        + f"UNWIND rows AS r WITH {known}r[0] AS m, r[1] AS s WHERE "
        f"{cond} WITH {known}m, s ORDER BY s DESC, m.id ASC LIMIT $k "
        f"{hit_list('fh', sim, 'vids' if skip_vh else None)} }} "
        "RETURN fh, size(rows) AS fraw"
    )


def vector_hits(hint_clause: str, cond: str, exact_index: bool) -> str:
    """The first query's vector hits ``vh`` (and ``vraw``): exact or from the index, as ``exact`` says."""
    return (
        "CALL (kk, exact) { WITH kk, exact WHERE exact "
        f"CALL (kk) {{ {exact_vector(hint_clause, cond)} }} RETURN vh, -1 AS vraw "
        "UNION ALL WITH kk, exact WHERE NOT exact "
        f"CALL (kk) {{ {index_vector(cond, 'kk', exact_index)} }} RETURN vh, vraw }}"
    )


def text_hits(cond: str, with_vector: bool, limit: str) -> str:
    """The first query's full-text hits ``fh`` (and ``fraw``), up to ``limit`` index rows (``kk``
    or ``$tk``); with a vector they carry their cosine, except vector hits (their score is it)."""
    imports = "kk, vh" if with_vector else "kk"
    return f"CALL ({imports}) {{ {index_fulltext(cond, f'{{limit: {limit}}}', with_vector, skip_vh=with_vector)} }}"


def scoped_text_query(text_query: str, scope: Scope) -> str:
    """``text_query`` on the memory text, within :func:`lucene_scope` boosted by 0, so the scores
    are the text's BM25 alone. A scope id that analyses to nothing (a stop word) drops its clause:
    the query is then as wide as an unscoped one, and the fallbacks apply."""
    return f"memory:({text_query}) AND {lucene_scope(scope, boost='^0')}"


def wider_vector_hits(cond: str, exact_index: bool) -> str:
    """A fallback: ``$kk2`` index rows for the vector hits ``vh`` (and ``vraw``)."""
    return f"CALL () {{ {index_vector(cond, '$kk2', exact_index)} }}"


def exact_vector_hits(hint_clause: str, cond: str) -> str:
    """A fallback: the vector hits ``vh`` of an exact pass over the scope."""
    return f"CALL () {{ {exact_vector(hint_clause, cond)} }}"


def all_text_hits(cond: str, sim: bool) -> str:
    """A fallback: the full-text hits ``fh`` from every index hit (no limit)."""
    return f"CALL () {{ {index_fulltext(cond, '{}', sim)} }}"


def nearest_index(cond: str, exact_index: bool) -> str:
    """Per ``$vecs[i]`` the best of ``$kk`` index hits in scope (re-scored if the index is quantized)."""
    score = "s" if exact_index else "vector.similarity.cosine(m.embedding, $vecs[i])"
    return (
        "UNWIND range(0, size($vecs) - 1) AS i "
        "CALL (i) { CALL db.index.vector.queryNodes('memory_embedding', $kk, $vecs[i]) YIELD node AS m, "
        f"score AS s WITH m, s WHERE {cond} WITH m, {score} AS s "
        "ORDER BY s DESC, m.id LIMIT 1 RETURN m.id AS id, 2 * s - 1 AS score } RETURN i, id, score"
    )


def nearest_exact(hint_clause: str, cond: str) -> str:
    """Per ``$vecs[i]`` for ``i`` in ``$todo``: the best of an exact pass over the scope."""
    return (
        f"UNWIND $todo AS i CALL (i) {{ MATCH (m:Memory) {hint_clause} WHERE {cond} "
        "WITH m, vector.similarity.cosine(m.embedding, $vecs[i]) AS s WHERE s IS NOT NULL "
        "ORDER BY s DESC, m.id LIMIT 1 RETURN m.id AS id, 2 * s - 1 AS score } RETURN i, id, score"
    )


# --------------------------------------------------------------------------------------------------
# Search: the neighbourhood of a query (the graph half), as clauses appended to the candidates'

SUBGRAPH_COLUMNS: Final = ("g_linked", "g_seed_pairs", "g_ents", "g_rels", "g_recs")
"""Columns :func:`neighbourhood_cypher` leaves for the caller's ``RETURN`` (read by ``graph.read_subgraph``)."""

LINK_POOL: Final = 256
"""Alias links: entity full-text hits read per query before the exact alias test. Only a scope
holding more candidates than this for one query could link differently from SQLite, whose
``entity_keys`` lookup has no such cut."""
MAX_ALIAS_WORDS: Final = 500
"""Words per alias lookup (Lucene refuses queries of more than 1024 clauses): a text with more
distinct content words links only the aliases holding one of its first 500."""

_DEGREE: Final = "COUNT {{ ({v})<-[:MENTIONS]-() }}"
"""Mentions of an entity: a degree lookup (no relationship is read), as only memories mention."""
_LUCENE_SPECIAL: Final = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')


def lucene_scope(scope: Scope, boost: str = "") -> str:
    """Lucene clauses for the scope's given fields (phrases of the analysed ids: a superset of the
    scope, which the Cypher around the index call then fences exactly), each with ``boost``."""
    return " AND ".join(f'{name}:"{_lucene_phrase(value)}"{boost}' for name, value in scope.items())


def _lucene_phrase(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def lucene_words(words: Sequence[str], fields: Sequence[str]) -> str:
    """``(f1:(w1 OR w2) OR f2:(w1 OR w2))`` with every word escaped."""
    terms = " OR ".join(_LUCENE_SPECIAL.sub(r"\\\1", w) for w in words)
    return "(" + " OR ".join(f"{f}:({terms})" for f in fields) + ")"


def _linking_cypher(q: GraphQuery, params: dict[str, Any], in_scope: str, scope_q: str) -> str:
    """Query linking (``sqlite.graph.neighbourhood`` does the same), leaving ``g_linked``:
    ``[key, entity]`` per link, in key order.

    Per key the oldest entity having it as name (index seek on ``Entity.key``) or alias (the
    ``entity_link`` full-text index, asked for the keys' content words in the scope, then an exact
    test of ``alias_keys``), no entity twice. Words, not the keys as phrases: a phrase per n-gram
    made the lookup several times slower than the key seek alone.
    """
    aliases = ""
    alias_words = list(dict.fromkeys(w for k in q.keys for w in k.split(" ") if w not in STOPWORDS and len(w) > 1))
    if alias_words:  # every key has one (query_ngrams drops n-grams of stopwords only)
        params["g_alias_query"] = f"{lucene_words(alias_words[:MAX_ALIAS_WORDS], ('aliases_text',))} AND {scope_q}"
        params["g_link_pool"] = LINK_POOL
        aliases = (
            "UNION CALL db.index.fulltext.queryNodes('entity_link', $g_alias_query, {limit: $g_link_pool}) "
            f"YIELD node AS e WITH e WHERE any(k IN coalesce(e.alias_keys, []) WHERE k IN $g_keys) AND {in_scope} "
            "RETURN e "
        )
    return (
        "CALL () { CALL () { "
        f"MATCH (e:Entity) WHERE e.key IN $g_keys AND {in_scope} RETURN e {aliases}}} "
        "WITH e ORDER BY e.created_at, e.seq, e.id WITH collect(e) AS found "
        "WITH [k IN $g_keys | [k, head([e IN found WHERE e.key = k OR k IN coalesce(e.alias_keys, [])])]] AS per_key "
        "RETURN reduce(acc = [], p IN per_key | CASE WHEN p[1] IS NULL OR size(acc) >= $g_max_seeds "
        "OR p[1] IN [y IN acc | y[1]] THEN acc ELSE acc + [p] END) AS g_linked }"
    )


def neighbourhood_alone(
    scope: Scope, q: GraphQuery, params: dict[str, Any], *, records_where: str, record_proj: str
) -> str:
    """:func:`neighbourhood_cypher` as a query of its own: the seeds are ``$g_seeds``, no record is
    known already."""
    return neighbourhood_cypher(scope, q, params, seeds="$g_seeds", skip="[]", records_where=records_where,
                                record_proj=record_proj)


def followers_of_asking_seeds(*, vector: bool, text: bool, records_where: str, record_proj: str) -> str:
    """A clause after the candidates' leaving ``g_follow``: the memories that follow a seed hit (as
    :func:`neighbourhood_after_hits` picks them) that asks, projected as the walk's records are, so the
    answer after a question costs no round trip of its own."""
    vh = "vh" if vector else "[]"
    fh = "fh" if text else "[]"
    imports = ", ".join(v for v, on in (("vh", vector), ("fh", text)) if on)
    marks = " OR ".join(f"q.memory CONTAINS '{m}'" for m in QUESTION_MARKS)
    return (
        f"CALL ({imports}) {{ UNWIND {_seeds(vh, fh)} AS sid "
        f"MATCH (q:Memory {{id: sid}}) WHERE {marks} "
        f"MATCH (m:Memory {{follows: sid}}) WHERE {records_where} RETURN collect({record_proj}) AS g_follow }}"
    )


def _seeds(vh: str, fh: str) -> str:
    """The seed memory ids, as ``base.seed_ids`` picks them (hits hold (1 + cos) / 2)."""
    return f"[h IN {vh} WHERE 2 * h.s - 1 > $g_seed_min | h.id][..$g_seed_n] + [h IN {fh}[..$g_seed_n] | h.id]"


def neighbourhood_after_hits(
    scope: Scope, q: GraphQuery, params: dict[str, Any], *, vector: bool, text: bool, records_where: str,
    record_proj: str, carry: Sequence[str],
) -> str:
    """:func:`neighbourhood_cypher` appended to the candidates' clauses: seeds from their hit lists
    (``vh`` with a ``vector``, ``fh`` with a ``text``), as ``base.seed_ids`` picks them (hits hold
    (1 + cos) / 2, the cosine is 2 * s - 1), and the hits' records not read again."""
    vh = "vh" if vector else "[]"
    fh = "fh" if text else "[]"
    return neighbourhood_cypher(scope, q, params, seeds=_seeds(vh, fh), skip=f"[h IN {vh} | h.id] + [h IN {fh} | h.id]",
                                records_where=records_where, record_proj=record_proj, carry=carry)


def neighbourhood_cypher(
    scope: Scope,
    q: GraphQuery,
    params: dict[str, Any],
    *,
    seeds: str,
    skip: str,
    records_where: str,
    record_proj: str,
    carry: Sequence[str] = (),
) -> str:
    """Cypher clauses computing :meth:`Store.neighbourhood <graphmem.stores.base.Store.neighbourhood>`.

    Appended to a query (the candidates, in ``search.search``) so the whole read is one round
    trip: ``seeds`` is an expression of the seed memory ids, ``skip`` of memory ids whose records the
    caller has already (they are not fetched twice), ``records_where`` the scope and filter on ``m``
    (``record_proj`` projects it), ``carry`` the caller's variables to keep. The walk is the SQLite
    store's, step for step (see ``sqlite.graph.neighbourhood``): the same linking, frontier order and
    cuts, so both stores return the same subgraph. The text depends only on the scope's fields,
    ``q.depth``, ``q.history`` and ``q.as_of`` being set; every value goes into ``params``.
    """
    params.update(g_keys=list(q.keys), g_max_seeds=int(q.max_seeds), g_max_frontier=int(q.max_frontier),
                  g_max_facts=int(q.max_facts), g_max_mentions=int(q.max_mentions), g_hub_degree=int(q.hub_degree))
    if q.history:
        valid = "true"
    elif q.as_of is not None:
        params["g_as_of"] = to_utc(q.as_of)
        valid = "(r.valid_from IS NULL OR r.valid_from <= $g_as_of) AND (r.valid_to IS NULL OR r.valid_to > $g_as_of)"
    else:
        valid = "r.valid_to IS NULL"
    keep = "".join(f"{c}, " for c in carry)
    state = f"{keep}g_skip, g_linked, g_seed_pairs"
    in_scope = {v: scope_where(scope, v, params) for v in ("e", "r", "x")}
    parts = [f"WITH {keep}{seeds} AS g_seed_mids, {skip} AS g_skip",
             _linking_cypher(q, params, in_scope["e"], lucene_scope(scope))]
    parts += [
        # The entities the seed memories mention (every pair is a mention of the result).
        "CALL (g_seed_mids) { UNWIND g_seed_mids AS mid "
        f"MATCH (:Memory {{id: mid}})-[:MENTIONS]->(e:Entity) WHERE {in_scope['e']} "
        "RETURN collect([mid, e.id]) AS g_seed_pairs, collect(DISTINCT e) AS g_seed_ents }",
        f"WITH {state}, g_seed_ents, [p IN g_linked | p[1]] AS g_linked_ents",
        # First frontier: linked entities in key order, then the seeded ones, least mentioned first.
        "CALL (g_seed_ents, g_linked_ents) { UNWIND g_seed_ents AS e WITH e WHERE NOT e IN g_linked_ents "
        f"WITH e, {_DEGREE.format(v='e')} AS d ORDER BY d, e.created_at, e.id RETURN collect(e) AS g_rest }}",
        f"WITH {state}, g_linked_ents + g_rest AS g_seen, (g_linked_ents + g_rest)[..$g_max_frontier] AS g_frontier, "
        "[] AS g_facts",
    ]
    for _ in range(q.depth):
        parts += [
            # Per frontier entity that is not a hub, its first max_facts facts by id, both directions
            # counted together (MENTIONS are not facts: skipped by type).
            "CALL (g_frontier) { UNWIND g_frontier AS e "
            f"WITH e WHERE {_DEGREE.format(v='e')} <= $g_hub_degree CALL (e) {{ CALL (e) {{ "
            f"MATCH (e)-[r]->(o) WHERE (o:Entity OR o:Value) AND {valid} AND {in_scope['r']} RETURN r, e AS s, o "
            f"UNION MATCH (s:Entity)-[r:!MENTIONS]->(e) WHERE {valid} AND {in_scope['r']} RETURN r, s, e AS o }} "
            "WITH r, s, o ORDER BY r.created_at DESC, r.seq DESC LIMIT $g_max_facts RETURN r, s, o } "
            "RETURN collect(DISTINCT [r, s, o]) AS g_found }",
            # Their unseen ends in scope, least mentioned first, cut to max_frontier: those are reached
            # and are the next frontier.
            "CALL (g_found, g_seen) { UNWIND g_found AS f UNWIND [f[1], f[2]] AS x "
            f"WITH DISTINCT x WHERE x:Entity AND NOT x IN g_seen AND {in_scope['x']} "
            f"WITH x, {_DEGREE.format(v='x')} AS d ORDER BY d, x.created_at, x.id LIMIT $g_max_frontier "
            "RETURN collect(x) AS g_fresh }",
            f"WITH {state}, g_seen + g_fresh AS g_seen, g_fresh AS g_frontier, g_facts + g_found AS g_facts",
        ]
    parts += [
        # Facts whose ends were both reached (a literal's subject alone), each with its newest
        # max_mentions supporting memories, as an entity's mentions are cut.
        "CALL (g_facts, g_seen) { UNWIND g_facts AS f WITH DISTINCT f[0] AS r, f[1] AS s, f[2] AS o "
        "WHERE s IN g_seen AND (o:Value OR o IN g_seen) "
        f"CALL (r) {{ {newest_support('$g_max_mentions')} }} "
        f"RETURN collect({{fact: {rel_proj('r', 'prov')}, source: s.id, target: CASE WHEN o:Entity THEN o.id END, "
        "value: CASE WHEN o:Value THEN o.value END, datatype: CASE WHEN o:Value THEN o.datatype END}) AS g_rels, "
        "collect(prov) AS g_prov }",
        # Per reached entity: its degree and, unless it is a hub, its newest memories (the degree
        # test comes first, so a hub's mentions are never read), kept as nodes for their records.
        f"CALL (g_seen) {{ UNWIND g_seen AS e WITH e, {_DEGREE.format(v='e')} AS d "
        f"CALL (e, d) {{ MATCH (e)<-[:MENTIONS]-(m) WHERE d <= $g_hub_degree WITH m ORDER BY {NEWEST_FIRST} "
        "LIMIT $g_max_mentions RETURN collect(m) AS ms } "
        f"RETURN collect({{e: {entity_proj('e')}, deg: d, mids: [m IN ms | m.id]}}) AS g_ents, "
        "collect(ms) AS g_ment }",
        # The records of every memory in the result that passes the scope and the filter: those the
        # mentions reached as they are, the facts' and seeds' others looked up by id.
        "CALL (g_ment, g_prov, g_seed_pairs, g_skip) { CALL (g_ment, g_prov, g_seed_pairs, g_skip) { "
        "UNWIND g_ment AS ms UNWIND ms AS m RETURN m UNION "
        "UNWIND g_prov + [[p IN g_seed_pairs | p[0]]] AS ids UNWIND ids AS mid WITH DISTINCT mid "
        "WHERE NOT mid IN g_skip MATCH (m:Memory {id: mid}) RETURN m } "
        f"WITH m WHERE NOT m.id IN g_skip AND {records_where} RETURN collect({record_proj}) AS g_recs }}",
        f"WITH {keep}[p IN g_linked | [p[0], p[1].id]] AS g_linked, g_seed_pairs, g_ents, g_rels, g_recs",
    ]
    return " ".join(parts)


def followers(where: str, record_proj: str) -> str:
    """The memories that follow one of ``$ids`` and pass ``where``, projected as a walk's records are."""
    return f"UNWIND $ids AS mid MATCH (m:Memory {{follows: mid}}) WHERE {where} RETURN {record_proj} AS r"


def records(where: str, record_proj: str) -> str:
    """The memories ``$ids`` that pass ``where``, projected as a walk's records are."""
    return f"UNWIND $ids AS mid MATCH (m:Memory {{id: mid}}) WHERE {where} RETURN {record_proj} AS r"
