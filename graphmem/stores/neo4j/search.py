"""Search on Neo4j: candidates (vector and full-text hits in scope), the neighbourhood of a query,
both in one statement (:func:`search`), and ``nearest``.

Facts about the store steer the plans, kept by the store and passed in: its indexes'
(``indexes``: whether the vector index's scores are exact cosines, whether the full-text index can
be asked for one scope's hits), and which scopes a recent search found big (``big_until``: scope
-> ``time.monotonic`` deadline).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from neo4j import ManagedTransaction, Record

from ...config import StoreConfig
from ...errors import StoreError
from ...filters import Filter
from ...models import Scope
from ..base import SEED_MIN_COSINE, Candidates, FactStates, GraphQuery, Records, Subgraph, Vector, seed_ids
from ..text import lucene_query
from .cypher import conjunction, graph_record_proj, hint, scope_where, statement
from .cypher import search as q
from .filters import Params, compile_filter
from .graph import read_subgraph
from .records import add_records, check_vector, directions, keep_row, live, similarity
from .schema import IndexFacts
from .session import Db
from .statements import Statements, quiet, run

_KK_FLOOR: Final = 100
"""Smallest index over-fetch: below this the HNSW index's recall drops faster than its cost does
(each Lucene segment is searched for all the rows, so tools/neo4j keeps their number low by merging
early)."""
_QUANTIZED_OVERFETCH: Final = 4
"""Index rows per wanted hit when a quantized index (an older store's) is re-scored: its own ranking
is approximate, so the true top ``k`` lie among many more rows."""
_KK_MAX: Final = 5_000
"""Largest first over-fetch; past it the exact pass over a (countable) scope is cheaper."""
_KK_WIDE_MAX: Final = 50_000
"""Largest widened over-fetch, for scopes too big to count or to score exactly."""
_FILTER_OVERFETCH: Final = 4
"""Extra index over-fetch when a filter applies: its selectivity is unknown before the query."""
_BIG_SCOPE_TTL_S: Final = 60.0
"""How long a scope found big (past ``vector_exact_max``) is taken as big without probing it again.
The probe is a tenth of a search at 100k memories; a scope that shrank meanwhile only takes the
index path with its fallbacks, which return the same hits."""
_NEAREST_KK: Final = 50
"""Index rows per ``nearest`` query before the scope fence."""
FOLLOW_SEEDS: Final = 8
"""Without a graph read, the best hits of each signal whose followers come with the candidates (as
the graph's seed memories do): search passes the answer after a question among its best hits."""


@dataclass
class CandidatePlan:
    """The first candidates query, kept for its fallbacks and for the neighbourhood appended to it."""

    parts: list[str]
    columns: list[str]
    params: dict[str, Any]
    cond: str
    """Scope and filter on ``m``."""
    hint: str
    k: int
    vector: bool
    text: bool
    scope: Scope
    exact_index: bool
    text_limit: int | None
    """Full-text rows asked of the index (``$tk``), or ``None``: as many as vector rows (``kk``)."""


def candidates(
    db: Db, scope: Scope, flt: Filter | None, vector: Vector | None, text: str | None, k: int, *,
    dims: int | None, indexes: IndexFacts, big_until: dict[Scope, float],
) -> Candidates:
    """Vector and full-text hits in scope, in one round trip unless an index result was cut short.

    The first query counts the label (count store) and the scope (index seek, stopped after
    ``vector_exact_max`` + 1), then either scores the scope exactly (a small scope with a filter,
    or one smaller than the index over-fetch would be) or over-fetches from the vector index by
    the scope's share of all memories. Index hits carry the exact cosine (an unquantized index's
    own score, or a quantized index's hits re-scored), so scores do not depend on the path. A
    signal that ends with fewer than ``k`` hits although its index returned all it was asked for
    is redone in a further round trip: full text without a limit; vector exactly, except that a
    scope too big to count first gets one 16-fold wider index query (an exact pass over it is
    the last resort).
    """
    return db.singles("search", candidates_steps(db.cfg, scope, flt, vector, text, k, dims=dims,
                                                 indexes=indexes, big_until=big_until))


def candidates_steps(
    cfg: StoreConfig, scope: Scope, flt: Filter | None, vector: Vector | None, text: str | None, k: int, *,
    dims: int | None, indexes: IndexFacts, big_until: dict[Scope, float], timed: Sequence[str] = (),
    follow: bool = False,
) -> Statements[Candidates]:
    """:func:`candidates` as statements, each run alone (auto-commit) by the sync or the async store;
    with ``follow``, the followers of the best :data:`FOLLOW_SEEDS` hits that ask come in the same
    statement (``Candidates.followed``)."""
    plan = candidate_plan(cfg, scope, flt, vector, text, k, dims=dims, indexes=indexes, big_until=big_until,
                          timed=timed)
    if plan is None:
        return Candidates(round_trips=0, fact_states={})
    parts, columns = plan.parts, plan.columns
    if follow:
        plan.params.update(g_seed_n=FOLLOW_SEEDS, g_seed_min=SEED_MIN_COSINE)
        parts, columns = [*parts, _follow_clause(plan)], [*columns, "g_follow"]
    row = yield run(statement(parts, columns), plan.params, "single")
    cands = yield from finish_candidates(plan, row, big_until)
    if follow:
        assert row is not None  # finish_candidates raised otherwise
        _add_followers(cands, plan, row, FOLLOW_SEEDS)
    return cands


def _follow_clause(plan: CandidatePlan) -> str:
    return q.followers_of_asking_seeds(vector=plan.vector, text=plan.text, records_where=plan.cond,
                                       record_proj=graph_record_proj(plan.vector))


def _first_hits(plan: CandidatePlan, row: Record) -> dict[str, list[dict[str, Any]]]:
    """The hit lists of the first query's row (before any fallback redid a signal)."""
    return {"vh": row["vh"] if plan.vector else [], "fh": row["fh"] if plan.text else []}


def _add_followers(cands: Candidates, plan: CandidatePlan, row: Record, n: int) -> dict[str, list[dict[str, Any]]]:
    """The followers read with the first hits (``g_follow``), and which hits they are the followers
    of: the seeds of those first hits, as the statement picked them. Returns those first hits."""
    first = _first_hits(plan, row)
    firsts = Candidates(vector=[(h["id"], 2.0 * float(h["s"]) - 1.0) for h in first["vh"]],
                        fulltext=[(h["id"], float(h["s"])) for h in first["fh"]])
    followed = Subgraph()
    add_records(followed, row["g_follow"])
    cands.followed, cands.followers = frozenset(seed_ids(firsts, n)), followed.records
    if cands.fact_states is not None:
        cands.fact_states.update(followed.fact_states or {})
    return first


def candidate_plan(
    cfg: StoreConfig, scope: Scope, flt: Filter | None, vector: Vector | None, text: str | None, k: int, *,
    dims: int | None, indexes: IndexFacts, big_until: dict[Scope, float], timed: Sequence[str] = (),
) -> CandidatePlan | None:
    """The first candidates query (see :func:`candidates`), or ``None`` when nothing can match."""
    query_text = lucene_query(text) if text is not None else None
    exact_index = indexes.exact_vector
    vec = check_vector(vector, dims, "query embedding") if vector is not None else None
    if vec is not None and not any(vec):
        vec = None  # a zero vector (no known token) has no direction: no similarity to rank by
    if k <= 0 or (vec is None and query_text is None):
        return None
    fp = Params("f")
    params: dict[str, Any] = {"k": int(k), "vec": vec, "q": query_text, "timed": list(timed)}
    in_scope = scope_where(scope, "m", params)
    cond = in_scope
    if flt is not None:
        cond = conjunction(cond, compile_filter(flt, "m", fp))
        params.update(fp.values)
    # Exact index scores: rows are fetched for the scope's share and the HNSW recall only (2k,
    # at least _KK_FLOOR). A quantized index's hits are re-scored, so the true top k must be among
    # many more rows (_QUANTIZED_OVERFETCH), and a big scope of unknown share gets twice that.
    if exact_index:
        base = max(2 * k, _KK_FLOOR)
        big_kk = base
    else:
        base = max(_QUANTIZED_OVERFETCH * k, _KK_FLOOR)
        big_kk = 2 * base
    if flt is not None:
        base, big_kk = base * _FILTER_OVERFETCH, big_kk * _FILTER_OVERFETCH
    params.update(
        base=base,
        big_kk=big_kk,
        kk_max=max(_KK_MAX, base),
        probe=cfg.vector_exact_max + 1,
        exact_max=cfg.vector_exact_max,
        filtered=flt is not None,
    )
    hint_clause = hint(scope)
    # A scope past the probe is big: its share of the label is unknown (counting it would cost
    # more than the search), so it starts with a modest over-fetch and widens only if cut short.
    known_big = big_until.get(scope, 0.0) > time.monotonic()
    parts = [q.KNOWN_BIG] if known_big else q.size_scope(hint_clause, in_scope)
    columns = ["big", "kk"]
    if vec is not None:
        parts.append(q.vector_hits(hint_clause, cond, exact_index))
        columns += ["vh", "vraw"]
    text_limit = None
    if query_text is not None:
        # A scoped index answers with the scope's hits (a superset, fenced exactly): k of them, or
        # more when a filter may drop some. Else the scope's share of kk rows, as for vectors.
        if indexes.scoped_text:
            params["q"] = q.scoped_text_query(query_text, scope)
            params["tk"] = text_limit = k * _FILTER_OVERFETCH if flt is not None else k
        parts.append(q.text_hits(cond, vec is not None, "$tk" if indexes.scoped_text else "kk"))
        columns += ["fh", "fraw"]
    return CandidatePlan(parts, columns, params, cond, hint_clause, k, vec is not None, query_text is not None, scope,
                         exact_index, text_limit)


def finish_candidates(
    plan: CandidatePlan, row: Record | None, big_until: dict[Scope, float]
) -> Statements[Candidates]:
    """Candidates from the first query's row, redoing a signal its index cut short (more trips)."""
    if row is None:  # cannot happen: every subquery returns exactly one row
        raise StoreError("Neo4j search returned no row")
    k, cond, hint_clause, params = plan.k, plan.cond, plan.hint, plan.params
    states: dict[str, FactStates] = {}
    out = Candidates(round_trips=1, fact_states=states)
    kk, big = int(row["kk"]), bool(row["big"])
    if big:
        big_until[plan.scope] = time.monotonic() + _BIG_SCOPE_TTL_S
    else:
        big_until.pop(plan.scope, None)
    vhits: list[dict[str, Any]] = row["vh"] if plan.vector else []
    first_vhits = vhits  # the full-text hits' cosines leave out these
    fhits: list[dict[str, Any]] = row["fh"] if plan.text else []
    redo_vector = plan.vector and len(vhits) < k and int(row["vraw"]) >= kk
    redo_text = plan.text and len(fhits) < k and int(row["fraw"]) >= (plan.text_limit or kk)
    widen = big
    while redo_vector or redo_text:
        parts, columns = [], []
        if redo_vector and widen:
            params["kk2"] = kk2 = min(kk * 16, _KK_WIDE_MAX)
            parts.append(q.wider_vector_hits(cond, plan.exact_index))
            columns += ["vh", "vraw"]
        elif redo_vector:
            parts.append(q.exact_vector_hits(hint_clause, cond))
            columns.append("vh")
        if redo_text:
            parts.append(q.all_text_hits(cond, plan.vector))
            columns.append("fh")
        again = yield run(statement(parts, columns), params, "single")
        if again is None:
            raise StoreError("Neo4j search fallback returned no row")
        out.round_trips += 1
        if redo_vector:
            vhits = again["vh"]
            redo_vector = widen and len(vhits) < k and int(again["vraw"]) >= kk2
            widen = False
        if redo_text:
            fhits, redo_text = again["fh"], False
    # A memory deleted by a concurrent transaction after the index found it reads as nulls.
    vhits = [h for h in vhits if h["id"] is not None and ("rec" not in h or live(h["rec"]))]
    fhits = [h for h in fhits if h["id"] is not None and ("rec" not in h or live(h["rec"]))]
    for hit in vhits:
        cosine = max(-1.0, min(1.0, 2.0 * float(hit["s"]) - 1.0))
        out.vector.append((hit["id"], cosine))
        keep_row(out.records, states, hit["id"], hit["rec"])
    for hit in fhits:
        out.fulltext.append((hit["id"], float(hit["s"])))
        if hit["id"] not in out.records:
            # no "rec": a first-pass vector hit (see cypher.search.hit_list) that a wider vector pass dropped
            rec = hit["rec"] if "rec" in hit else next(h["rec"] for h in first_vhits if h["id"] == hit["id"])
            keep_row(out.records, states, hit["id"], rec)
    if plan.vector:
        sims = similarity(first_vhits + vhits, fhits)
        out.similarity = {m: c for m, c in sims.items() if m in out.records}
    return out


def neighbourhood(
    db: Db, scope: Scope, query: GraphQuery, seed_memories: Sequence[str], flt: Filter | None,
    vec: list[float] | None,
) -> Subgraph:
    """The walk of :func:`.cypher.search.neighbourhood_cypher`, in one query; with ``vec`` (a
    checked query vector with a direction) each record comes with its exact cosine to it."""
    return db.singles("neighbourhood", neighbourhood_steps(scope, query, seed_memories, flt, vec))


def neighbourhood_steps(
    scope: Scope, query: GraphQuery, seed_memories: Sequence[str], flt: Filter | None, vec: list[float] | None,
    timed: Sequence[str] = (),
) -> Statements[Subgraph]:
    params: dict[str, Any] = {"g_seeds": list(dict.fromkeys(seed_memories)), "vec": vec, "timed": list(timed)}
    cond = _memory_where(scope, flt, params)
    proj = graph_record_proj(vec is not None)
    body = q.neighbourhood_alone(scope, query, params, records_where=cond, record_proj=proj)
    row = yield run(statement([body], q.SUBGRAPH_COLUMNS), params, "single")
    if row is None:
        raise StoreError("Neo4j neighbourhood returned no row")
    sub, recs = read_subgraph(row)
    add_records(sub, recs)
    return sub


def records(
    scope: Scope, ids: Sequence[str], flt: Filter | None, vec: list[float] | None
) -> Statements[tuple[Records, dict[str, float]]]:
    """The memories among ``ids`` in scope passing ``flt``, unbuilt, with their cosine to ``vec``."""
    sub = Subgraph()
    if ids:
        params: dict[str, Any] = {"ids": list(dict.fromkeys(ids)), "vec": vec, "timed": []}
        query = q.records(_memory_where(scope, flt, params), graph_record_proj(vec is not None))
        add_records(sub, [rec["r"] for rec in (yield run(query, params))])
    return sub.records, sub.similarity


def followers(scope: Scope, ids: Sequence[str], flt: Filter | None) -> Statements[Records]:
    """The memories in scope passing ``flt`` that follow one of ``ids``, unbuilt."""
    sub = Subgraph()
    if ids:
        params: dict[str, Any] = {"ids": list(dict.fromkeys(ids)), "vec": None, "timed": []}
        query = q.followers(_memory_where(scope, flt, params), graph_record_proj(False))
        add_records(sub, [rec["r"] for rec in (yield run(query, params))])
    return sub.records


def _memory_where(scope: Scope, flt: Filter | None, params: dict[str, Any]) -> str:
    """The scope and the filter on ``m``, their values put in ``params``."""
    cond = scope_where(scope, "m", params)
    if flt is not None:
        fp = Params("f")
        cond = conjunction(cond, compile_filter(flt, "m", fp))
        params.update(fp.values)
    return cond


def query_vector(vector: Vector | None, dims: int | None) -> list[float] | None:
    """A query vector, checked, or ``None`` without one or without a direction."""
    vec = check_vector(vector, dims, "query embedding") if vector is not None else None
    return vec if vec is not None and any(vec) else None


def search(
    db: Db, scope: Scope, flt: Filter | None, vector: Vector | None, text: str | None, k: int,
    graph_query: GraphQuery, *, dims: int | None, indexes: IndexFacts, big_until: dict[Scope, float],
    timed: Sequence[str] = (),
) -> tuple[Candidates, Subgraph]:
    """See :func:`search_steps`."""
    return db.singles("search", search_steps(db.cfg, scope, flt, vector, text, k, graph_query, dims=dims,
                                             indexes=indexes, big_until=big_until, timed=timed))


def search_steps(
    cfg: StoreConfig, scope: Scope, flt: Filter | None, vector: Vector | None, text: str | None, k: int,
    graph_query: GraphQuery, *, dims: int | None, indexes: IndexFacts, big_until: dict[Scope, float],
    timed: Sequence[str] = (),
) -> Statements[tuple[Candidates, Subgraph]]:
    """Candidates and neighbourhood in one Cypher query: one round trip.

    The neighbourhood clauses follow the candidates' and take their seeds from the hit lists, so
    nothing waits on the client between the two; the records of graph memories that are also
    hits are not sent twice. Only when an index cut a signal short (see :func:`candidates`) do
    more round trips follow, and if that changed the seeds the neighbourhood is read again.
    The base class's two calls (candidates, then ``neighbourhood``) are the oracle this is
    tested against (``tests/test_search_parity.py``).
    """
    plan = candidate_plan(cfg, scope, flt, vector, text, k, dims=dims, indexes=indexes, big_until=big_until,
                          timed=timed)
    if plan is None:  # no signal to rank by: the linked entities alone
        sub = yield from neighbourhood_steps(scope, graph_query, (), flt, query_vector(graph_query.vector, dims),
                                             timed)
        return Candidates(round_trips=1, fact_states={}), sub
    vec: list[float] | None = plan.params["vec"] if plan.vector else None
    n = int(graph_query.seed_memories)
    params = plan.params
    params["g_seed_n"] = n
    params["g_seed_min"] = SEED_MIN_COSINE
    body = q.neighbourhood_after_hits(
        scope, graph_query, params, vector=plan.vector, text=plan.text, records_where=plan.cond,
        record_proj=graph_record_proj(plan.vector), carry=[*plan.columns, "g_follow"],
    )
    row = yield run(statement([*plan.parts, _follow_clause(plan), body],
                              [*plan.columns, "g_follow", *q.SUBGRAPH_COLUMNS]), params, "single")
    cands = yield from finish_candidates(plan, row, big_until)
    assert row is not None  # finish_candidates raised otherwise
    first = _add_followers(cands, plan, row, n)
    # a fallback changed the hit lists: were the seeds the same?
    if cands.round_trips > 1 and cands.followed != set(seed_ids(cands, n)):
        sub = yield from neighbourhood_steps(scope, graph_query, seed_ids(cands, n), flt, vec, timed)
        cands.round_trips += 1
        return cands, sub
    sub, recs = read_subgraph(row)
    add_records(sub, recs)
    # The records the query skipped: first-pass hits (in scope, passing the filter by construction).
    hits = cands.records
    if cands.round_trips > 1:
        hits = Records()
        cands.fact_states = states = dict(cands.fact_states or {})
        for found in first.values():
            for h in found:
                if "rec" in h and live(h["rec"]):  # a full-text hit without one is a vector hit
                    keep_row(hits, states, h["id"], h["rec"])
    wanted = {m for m, _ in sub.mentions} | {m for r in sub.relations for m in r.memory_ids}
    sub.records.copy_from(hits, wanted)
    if plan.vector:
        sims = similarity(first["vh"], first["fh"])
        sims.update(sub.similarity)
        sub.similarity = {m: sims[m] for m in sub.records if m in sims}
    return cands, sub


def nearest(
    db: Db, scope: Scope, vectors: Vector, *, dims: int | None, exact_index: bool
) -> list[tuple[str, float] | None]:
    """ANN over-fetch per row, kept to the scope; rows whose neighbours all lie in other scopes
    get an exact pass over the scope in a second statement."""
    rows, keep, n = directions(vectors, dims, "query vector")
    out: list[tuple[str, float] | None] = [None] * n
    if not rows:
        return out
    params: dict[str, Any] = {"vecs": rows, "kk": _NEAREST_KK}
    cond = scope_where(scope, "m", params)
    index_query = q.nearest_index(cond, exact_index)
    exact_query = q.nearest_exact(hint(scope), cond)
    params = quiet(params)

    def work(tx: ManagedTransaction) -> list[tuple[str, float] | None]:
        found: dict[int, tuple[str, float]] = {
            r["i"]: (r["id"], float(r["score"])) for r in tx.run(index_query, params)
        }
        todo = [i for i in range(len(rows)) if i not in found]
        if todo:
            found.update({r["i"]: (r["id"], float(r["score"])) for r in tx.run(exact_query, params, todo=todo)})
        return [found.get(i) for i in range(len(rows))]

    for i, hit in zip(keep, db.read("nearest", work), strict=True):
        out[i] = hit
    return out
