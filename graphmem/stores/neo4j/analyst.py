"""Analysts' Cypher on Neo4j: what it may do, and the runner behind ``Neo4jStore.cypher``.

A READ transaction stops writes, but not everything a read-only plan can do: ``LOAD CSV`` reads
files on the database host and fetches URLs (server-side request forgery), ``TERMINATE
TRANSACTIONS`` kills other sessions' work, and procedures such as ``db.stats.clear`` or
``db.prepareForReplanning`` change server state while the planner still calls the query a read.
So the decision comes from the query's plan (``EXPLAIN``: operator types, the procedure each
``ProcedureCall`` names, the database each operator runs on) and, for functions, which have no
operator of their own, from the statement's tokens. String literals and comments never count: a
read whose text contains ``'LOAD CSV'`` still runs.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from neo4j import READ_ACCESS
from neo4j import exceptions as neo4j_errors
from neo4j import time as neo4j_time

from ...errors import (
    CypherRefusedError,
    GraphmemError,
    InvalidInputError,
    QueryTimeoutError,
    ReadOnlyError,
    RowLimitError,
    short,
)
from .cypher.schema import BUILTIN_FUNCTIONS, EXPLAIN
from .records import plain
from .session import Db

__all__ = [
    "ALLOWED_COMMANDS",
    "ALLOWED_PROCEDURES",
    "check_functions",
    "check_params",
    "check_plan",
    "check_query",
    "check_statement",
    "run",
]

ALLOWED_PROCEDURES: Final = frozenset({
    "db.labels",
    "db.relationshipTypes",
    "db.propertyKeys",
    "db.schema.visualization",
    "db.schema.nodeTypeProperties",
    "db.schema.relTypeProperties",
    "db.index.vector.queryNodes",
    "db.index.vector.queryRelationships",
    "db.index.fulltext.queryNodes",
    "db.index.fulltext.queryRelationships",
    "db.index.fulltext.listAvailableAnalyzers",
})
"""Procedures analyst Cypher may call: schema introspection and index queries, which only read
the graph. Every other procedure is refused, whatever mode it declares (``db.stats.clear`` and
``db.prepareForReplanning`` declare READ)."""

ALLOWED_COMMANDS: Final = frozenset({"ShowIndexes", "ShowConstraints", "ShowProcedures", "ShowFunctions"})
"""``SHOW`` commands that describe the schema and the callable catalogue. ``SHOW TRANSACTIONS``
(other sessions' queries and parameters), ``SHOW SETTINGS`` (server paths and configuration) and
every ``TERMINATE`` or administration command are refused."""

_QUERY_KIND: Final = {"rw": "read and write", "w": "write", "s": "change the schema"}
_LOAD_CSV: Final = "LOAD CSV is refused: it reads files on the database server and fetches URLs on its behalf"
_IN_TRANSACTIONS: Final = frozenset({"TransactionApply", "TransactionForeach"})
_MAX_DEPTH: Final = 64
_INT64: Final = (-(2**63), 2**63 - 1)
_SCALARS: Final = (bool, bytes, bytearray, dt.date, dt.time, dt.timedelta, neo4j_time.Date, neo4j_time.Time,
                   neo4j_time.DateTime, neo4j_time.Duration)


def check_query(query: object) -> str:
    """The query text, or :class:`InvalidInputError` for what the driver would fail on raw."""
    if not isinstance(query, str):
        raise InvalidInputError(f"a Cypher query is a string, got {type(query).__name__} {short(query)}")
    if not query.strip():
        raise InvalidInputError("a Cypher query is a non-empty string")
    _encodable(query, "the Cypher query")
    return query


def check_params(params: object) -> dict[str, Any]:
    """``params`` as a plain dict if every value is one Bolt carries unambiguously: ``None``, bool,
    64-bit int, finite float, str, bytes, lists, dicts with str keys, dates, times and durations.
    Anything else would reach the driver and fail there with a raw ``ValueError`` or
    ``OverflowError`` (or recurse until ``RecursionError``)."""
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise InvalidInputError(f"Cypher params are a dict of name to value, got {type(params).__name__}")
    out: dict[str, Any] = {}
    for key, value in params.items():
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"a Cypher parameter name is a non-empty string, got {short(key)}")
        _encodable(key, f"Cypher parameter name {short(key)}")
        _check_value(value, f"${key}")
        out[key] = value
    return out


def _check_value(root: object, root_path: str) -> None:
    """Depth-first with an explicit stack, so deep nesting is refused rather than overflowing."""
    stack: list[tuple[object, str, int]] = [(root, root_path, 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > _MAX_DEPTH:
            raise InvalidInputError(f"Cypher parameter {short(path)} nests deeper than {_MAX_DEPTH} levels")
        if value is None or isinstance(value, _SCALARS):
            continue
        if isinstance(value, int):
            if not _INT64[0] <= value <= _INT64[1]:
                raise InvalidInputError(f"Cypher parameter {short(path)} = {short(value)} does not fit in 64 bits")
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise InvalidInputError(f"Cypher parameter {short(path)} is {value}; only finite numbers are allowed")
        elif isinstance(value, str):
            _encodable(value, f"Cypher parameter {short(path)}")
        elif isinstance(value, list | tuple):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value))
        elif isinstance(value, Mapping):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise InvalidInputError(f"Cypher parameter {short(path)} has a non-string key {short(key)}")
                _encodable(key, f"a key of Cypher parameter {short(path)}")
                stack.append((item, f"{path}.{key}", depth + 1))
        else:
            raise InvalidInputError(
                f"Cypher parameter {short(path)} has type {type(value).__name__} ({short(value)}); parameters "
                "are None, bool, int, float, str, bytes, lists, dicts with string keys, dates and times"
            )


def _encodable(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{what} contains a lone surrogate (U+{ord(text[exc.start]):04X}) at position {exc.start}, "
            "which is not valid UTF-8"
        ) from None


# --------------------------------------------------------------------------------------- the plan


def _operators(plan: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    stack = [plan]
    while stack:
        op = stack.pop()
        yield op
        stack.extend(op.get("children") or ())


def _words(operator: str) -> str:
    """``ShowTransactions`` -> ``SHOW TRANSACTIONS``: the statement a person wrote."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", operator).upper()


def _not_allowed(procedure: str) -> str:
    return (f"procedure {short(procedure)} is not on analyst Cypher's read-only allow-list ("
            + ", ".join(sorted(ALLOWED_PROCEDURES)) + ")")


def check_plan(plan: Mapping[str, Any] | None, database: str | None) -> None:
    """Raise :class:`CypherRefusedError` if any operator of ``plan`` (``ResultSummary.plan`` of an
    ``EXPLAIN``) is one analyst Cypher may not run; ``database`` is the one the session reads."""
    if plan is None:
        raise CypherRefusedError("Neo4j returned no plan for this query, so graphmem cannot check it; refused")
    for op in _operators(plan):
        kind, _, where = str(op.get("operatorType", "")).partition("@")
        if where and database and where != database:
            raise CypherRefusedError(
                f"analyst Cypher reads database {database!r} only, and this query runs on {where!r} "
                "(a USE clause or an administration command)"
            )
        if kind == "LoadCSV":
            raise CypherRefusedError(_LOAD_CSV)
        if kind == "ProcedureCall":
            details = str((op.get("args") or {}).get("Details", ""))
            name = details.partition("(")[0].strip()
            if name not in ALLOWED_PROCEDURES:
                raise CypherRefusedError(_not_allowed(name or details))
        elif kind in _IN_TRANSACTIONS:
            raise CypherRefusedError(
                "CALL { ... } IN TRANSACTIONS is refused: analyst Cypher runs as one read transaction"
            )
        elif kind not in ALLOWED_COMMANDS and (
            kind.startswith(("Show", "Terminate")) or kind.endswith("Command")
        ):
            raise CypherRefusedError(
                f"{_words(kind)} is an administration command, which analyst Cypher does not run "
                "(allowed: " + ", ".join(sorted(_words(c) for c in ALLOWED_COMMANDS)) + ")"
            )


# ----------------------------------------------------------------------------------- the statement

_TOKEN: Final = re.compile(
    r"""
      (?P<space>\s+)
    | (?P<line>//[^\n]*)
    | (?P<block>/\*.*?(?:\*/|\Z))
    | (?P<string>'(?:[^'\\]|\\.)*(?:'|\Z)|"(?:[^"\\]|\\.)*(?:"|\Z))
    | (?P<quoted>`(?:[^`]|``)*(?:`|\Z))
    | (?P<param>\$(?:[^\W\d]\w*|\d+|`(?:[^`]|``)*`))
    | (?P<number>\d\w*(?:\.\d\w*)?)
    | (?P<name>[^\W\d]\w*)
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def _tokens(query: str) -> list[tuple[str, str]]:
    """(kind, text) of each token that matters: no whitespace or comments, and a literal is one
    token whose content never counts. A back-quoted name keeps kind ``quoted`` (never a keyword)."""
    out: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(query):
        kind = m.lastgroup or "other"
        if kind in ("space", "line", "block"):
            continue
        text = m.group()
        out.append((kind, text[1:-1].replace("``", "`") if kind == "quoted" else text))
    return out


def _is_name(token: tuple[str, str]) -> bool:
    return token[0] in ("name", "quoted")


def _keyword(token: tuple[str, str], word: str) -> bool:
    return token[0] == "name" and token[1].upper() == word


def check_statement(query: str) -> set[str]:
    """Refuse what the plan can hide and return the namespaced functions the statement calls.

    A subquery expression inside an expression (``[x IN l | COLLECT { LOAD CSV ... }]``, ``CASE``)
    is planned as a nested plan inside one operator's ``Details`` text, not as operators, so the
    tokens are read too: ``LOAD CSV`` and ``CALL ns.proc`` anywhere outside literals and comments.
    Functions have no operator at all: every ``ns.name(`` not after ``CALL`` is returned, for the
    caller to check against the server's built-in functions (user-defined functions always have a
    namespace, so an un-namespaced call is a built-in one)."""
    toks = _tokens(query)
    functions: set[str] = set()
    allowed = {p.lower() for p in ALLOWED_PROCEDURES}
    i = 0
    while i < len(toks):
        after_dot = i > 0 and toks[i - 1] == ("other", ".")
        if not _is_name(toks[i]) or after_dot:
            i += 1
            continue
        if _keyword(toks[i], "LOAD") and i + 1 < len(toks) and _keyword(toks[i + 1], "CSV"):
            raise CypherRefusedError(_LOAD_CSV)
        called = _keyword(toks[i], "CALL")
        start = i + 1 if called else i
        parts, j = _chain(toks, start)
        name = ".".join(parts)  # `a.b`(x) resolves like a.b(x): count dots inside back-quotes too
        if called:
            if "." in name and name.lower() not in allowed:
                raise CypherRefusedError(_not_allowed(name))
            i = start if not parts else j
            continue
        if "." in name and j < len(toks) and toks[j] == ("other", "("):
            functions.add(name)
        i = max(j, i + 1)
    return functions


def _chain(toks: list[tuple[str, str]], i: int) -> tuple[list[str], int]:
    """The dotted name starting at ``toks[i]`` (``a.b.c``) and the index after it."""
    if i >= len(toks) or not _is_name(toks[i]):
        return [], i
    parts = [toks[i][1]]
    j = i + 1
    while j + 1 < len(toks) and toks[j] == ("other", ".") and _is_name(toks[j + 1]):
        parts.append(toks[j + 1][1])
        j += 2
    return parts, j


def check_functions(functions: set[str], builtin: set[str]) -> None:
    """Refuse a function of ``functions`` that is not in ``builtin`` (lower-cased names: Neo4j
    resolves built-in functions case-insensitively)."""
    refused = sorted(f for f in functions if f.lower() not in builtin)
    if refused:
        raise CypherRefusedError(
            f"function {short(refused[0])} is not built into Neo4j; analyst Cypher calls only built-in "
            "functions and the allow-listed procedures"
        )


# -------------------------------------------------------------------------------------- the runner


def run(db: Db, query: str, params: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Analysts' Cypher, safe by default, because a READ transaction alone still lets a query
    read server files and URLs (``LOAD CSV``), kill other sessions' transactions or call
    procedures that change server state. ``EXPLAIN`` first, in the same transaction: the plan
    must be a read (query type ``r``) with none of those (the checks above decide from the
    operators and the statement's tokens, never from text inside literals). The transaction's
    server-side timeout is ``store.cypher_timeout_s``; reading stops past ``store.cypher_max_rows``."""
    text = check_query(query)
    args = check_params(params)
    timeout, cap = db.cfg.cypher_timeout_s, db.cfg.cypher_max_rows
    rows: list[dict[str, Any]] = []
    with db.errors("analyst query", write=False), db.session(READ_ACCESS) as session:
        try:
            with session.begin_transaction(timeout=timeout, metadata={"app": "graphmem-cypher"}) as tx:
                summary = tx.run(EXPLAIN + text, args).consume()
                check_plan(summary.plan, summary.database)
                if summary.query_type != "r":
                    would = _QUERY_KIND.get(str(summary.query_type), str(summary.query_type))
                    raise ReadOnlyError(
                        f"graphmem's Cypher access is read-only, and this query would {would}; writes "
                        "go through add/update/delete so that the ontology guard and provenance hold"
                    )
                functions = check_statement(text)
                if functions:
                    names = sorted(f.lower() for f in functions)
                    check_functions(functions, {r["name"] for r in tx.run(BUILTIN_FUNCTIONS, names=names)})
                for record in tx.run(text, args):
                    if len(rows) >= cap:
                        raise RowLimitError(
                            f"the analyst query returns more than store.cypher_max_rows = {cap} rows; add a "
                            "LIMIT (SKIP and LIMIT to page) or raise store.cypher_max_rows "
                            "(GRAPHMEM_STORE__CYPHER_MAX_ROWS)"
                        )
                    rows.append(record.data())
        except neo4j_errors.Neo4jError as exc:
            failure = analyst_failure(exc, timeout)
            if failure is None:
                raise
            raise failure from exc
    return [{k: plain(v) for k, v in row.items()} for row in rows]


def analyst_failure(exc: neo4j_errors.Neo4jError, timeout: float) -> GraphmemError | None:
    """What an analyst query's server error means to the analyst: a timeout or a fault of the
    query itself get their own type (the server's message cut short); ``None``: ``Db.errors`` maps it."""
    code, message = exc.code or "", exc.message or str(exc)
    message = message if len(message) <= 300 else message[:299] + "…"  # it quotes the whole query
    if "TransactionTimedOut" in code:
        return QueryTimeoutError(
            f"the analyst query ran longer than store.cypher_timeout_s = {timeout:g} s, so Neo4j stopped it; "
            "narrow it (a LIMIT, a more selective MATCH) or raise store.cypher_timeout_s "
            "(GRAPHMEM_STORE__CYPHER_TIMEOUT_S)"
        )
    if code == "Neo.ClientError.Statement.AccessMode":
        return ReadOnlyError(f"graphmem's Cypher access is read-only: {message}")
    if code.startswith(("Neo.ClientError.Statement.", "Neo.ClientError.Procedure.")):
        return InvalidInputError(f"Neo4j refused the analyst query: {message}")
    return None
