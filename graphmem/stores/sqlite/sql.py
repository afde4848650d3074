"""Compiling filter trees and scopes to SQLite ``WHERE`` clauses.

The SQL must agree exactly with :func:`graphmem.filters.evaluate`: JSON types are checked with
``json_type`` so ``true`` never equals ``1`` and a string never orders against a number. Keys and
values always travel as parameters.
"""

from __future__ import annotations

from typing import Any

from ...filters import And, Cond, Filter, Not, Or
from ...models import Scope

SCOPE_COLUMNS = ("user_id", "agent_id", "run_id")


def scope_sql(scope: Scope, alias: str = "m", *, indexed: bool = True) -> tuple[str, list[Any]]:
    """Given scope fields must match; absent ones are free.

    ``indexed=False`` marks the terms with unary ``+`` so SQLite does not drive the query from a
    scope index: use it when an id list selects the rows (a single tenant's scope index would make
    the planner scan the whole tenant instead of looking the ids up).
    """
    items = scope.items()
    plus = "" if indexed else "+"
    return " AND ".join(f"{plus}{alias}.{k} = ?" for k, _ in items), [v for _, v in items]


def exact_scope_sql(scope: Scope, alias: str = "m") -> tuple[str, list[Any]]:
    """All three scope fields equal, ``None`` matching only ``NULL`` (used for duplicate checks)."""
    values = [scope.user_id, scope.agent_id, scope.run_id]
    return " AND ".join(f"{alias}.{k} IS ?" for k in SCOPE_COLUMNS), values


def filter_sql(flt: Filter | None, alias: str = "m") -> tuple[str, list[Any]]:
    if flt is None:
        return "1", []
    params: list[Any] = []
    return _node(flt, alias, params), params


def _node(flt: Filter, alias: str, params: list[Any]) -> str:
    if isinstance(flt, And):
        return "(" + " AND ".join(_node(f, alias, params) for f in flt.items) + ")"
    if isinstance(flt, Or):
        return "(" + " OR ".join(_node(f, alias, params) for f in flt.items) + ")"
    if isinstance(flt, Not):
        return f"(NOT {_node(flt.item, alias, params)})"
    return _meta(flt, alias, params) if flt.metadata else _column(flt, alias, params)


def _column(c: Cond, alias: str, params: list[Any]) -> str:
    """Record fields are TEXT columns (times as fixed-width ISO strings), so only strings match."""
    col = f"{alias}.{c.field}"
    op, v = c.op, c.value

    def eq(value: Any) -> str:
        if value is None:
            return f"({col} IS NULL)"
        if not isinstance(value, str):
            return "0"
        params.append(value)
        return f"coalesce({col} = ?, 0)"

    if op == "eq":
        return eq(v)
    if op == "ne":
        return f"(NOT {eq(v)})"
    if op == "in":
        return "(" + " OR ".join(eq(x) for x in v) + ")"
    if op == "nin":
        return "(NOT (" + " OR ".join(eq(x) for x in v) + "))"
    if not isinstance(v, str):
        return "0"
    params.append(v)
    if op == "contains":
        return f"coalesce(instr({col}, ?) > 0, 0)"
    if op == "icontains":
        return f"coalesce(instr(py_casefold({col}), ?) > 0, 0)"
    return f"coalesce({col} {_CMP[op]} ?, 0)"


_CMP = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def _typed(value: Any, type_expr: str, value_expr: str, params: list[Any]) -> str:
    """SQL true when the JSON value (its type and value expressions) equals ``value``."""
    if value is None:
        return f"(coalesce({type_expr}, 'null') = 'null')"
    if isinstance(value, bool):
        return f"coalesce({type_expr} = '{'true' if value else 'false'}', 0)"
    params.append(value)
    kind = "= 'text'" if isinstance(value, str) else "IN ('integer', 'real')"
    return f"coalesce({type_expr} {kind} AND {value_expr} = ?, 0)"


def _meta(c: Cond, alias: str, params: list[Any]) -> str:
    path = f'$."{c.field}"'
    md = f"{alias}.metadata"

    def jtype() -> str:
        params.append(path)
        return f"json_type({md}, ?)"

    def jval() -> str:
        params.append(path)
        return f"json_extract({md}, ?)"

    def eq(value: Any) -> str:
        if value is None:
            return _typed(None, jtype(), "", params)
        t = jtype()
        if isinstance(value, bool):
            return _typed(value, t, "", params)
        return _typed(value, t, jval(), params)

    op, v = c.op, c.value
    if op == "eq":
        return eq(v)
    if op == "ne":
        return f"(NOT {eq(v)})"
    if op == "in":
        return "(" + " OR ".join(eq(x) for x in v) + ")"
    if op == "nin":
        return "(NOT (" + " OR ".join(eq(x) for x in v) + "))"
    if op in ("contains", "icontains"):
        t_arr = jtype()
        params.append(path)
        if op == "contains":
            member = _typed(v, "je.type", "je.value", params)
        else:
            params.append(v)
            member = "coalesce(je.type = 'text' AND py_casefold(je.value) = ?, 0)"
        in_array = f"({t_arr} = 'array' AND EXISTS (SELECT 1 FROM json_each({md}, ?) AS je WHERE {member}))"
        if not isinstance(v, str):
            return f"coalesce({in_array}, 0)"
        t_txt, val = jtype(), jval()
        params.append(v)
        fold = "py_casefold" if op == "icontains" else ""
        in_text = f"({t_txt} = 'text' AND instr({fold}({val}), ?) > 0)"
        return f"coalesce({in_array} OR {in_text}, 0)"
    if isinstance(v, bool) or v is None:
        return "0"
    t = jtype()
    kind = "= 'text'" if isinstance(v, str) else "IN ('integer', 'real')"
    val = jval()
    params.append(v)
    return f"coalesce({t} {kind} AND {val} {_CMP[op]} ?, 0)"
