"""Metadata mirroring and the filter compiler: how a memory's metadata is stored so Cypher can filter
on it, and a :class:`~graphmem.filters.Filter` as a Cypher boolean expression over those properties.

The compiler builds expression text from a filter's shape (fields, operators); every value a filter
holds goes into :class:`Params`, never into the text.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

from ...errors import InvalidInputError
from ...filters import RECORD_FIELDS, TIME_FIELDS, And, Cond, Filter, Not, Or

MD_PREFIX: Final = "md."
MDX_PREFIX: Final = "mdx."
MDFOLD_PREFIX: Final = "mdfold."
FOLD_PREFIX: Final = "fold."
MIRROR_PREFIXES: Final = (MD_PREFIX, MDX_PREFIX, MDFOLD_PREFIX)
FOLDED_FIELDS: Final = ("role", "actor_id", "user_id", "agent_id", "run_id")
"""Record fields whose values come from callers, so may hold characters that ``toLower`` keeps."""

_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


# --------------------------------------------------------------------------------------------------
# Metadata mirroring


def _scalar_kind(value: Any) -> str | None:
    """Neo4j property type of one scalar, or ``None`` when Neo4j cannot store it as one."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int" if _INT64_MIN <= value <= _INT64_MAX else None
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return None


def _number_tag(value: int | float) -> str | None:
    """One spelling per numeric value, so 1 and 1.0 get the same tag (they are equal in Python)."""
    if isinstance(value, float):
        if math.isnan(value):
            return None  # NaN equals nothing, not even itself
        if math.isinf(value):
            return "n:inf" if value > 0 else "n:-inf"
        if value.is_integer():
            return f"n:{int(value)}"
        return f"n:{value!r}"
    return f"n:{value}"


def _element_tags(value: Any) -> list[str]:
    """Type-tagged strings for a scalar inside an unmirrorable list (``contains`` tests these)."""
    if isinstance(value, bool):
        return ["b:true" if value else "b:false"]
    if isinstance(value, int | float):
        tag = _number_tag(value)
        return [tag] if tag is not None else []
    if isinstance(value, str):
        return ["s:" + value, "c:" + value.casefold()]
    return []


def _want_tag(op: str, want: Any) -> str | None:
    """The tag an unmirrorable list must hold for ``contains``/``icontains`` ``want`` to match."""
    if isinstance(want, str):
        return ("s:" if op == "contains" else "c:") + want
    if isinstance(want, bool):
        return "b:true" if want else "b:false"
    if isinstance(want, int | float):
        return _number_tag(want)
    return None


def needs_fold(text: str) -> bool:
    """``casefold`` differs from ``lower`` (and so from Cypher's ``toLower``): ß, ligatures, ς, …"""
    return text.casefold() != text.lower()


def mirror_properties(metadata: dict[str, Any]) -> dict[str, Any]:
    """The ``md.*``/``mdx.*``/``mdfold.*`` properties for ``metadata`` (already JSON-normalized).

    ``mdfold.<key>`` holds the case-folded string (or list) only where folding differs from
    lower-casing, so ``icontains`` matches Python's ``casefold`` semantics without doubling storage.
    """
    props: dict[str, Any] = {}
    for key, value in metadata.items():
        if value is None:
            continue  # a null value is treated as missing by filters, so store nothing
        if _scalar_kind(value) is not None:
            props[MD_PREFIX + key] = value
            if isinstance(value, str) and needs_fold(value):
                props[MDFOLD_PREFIX + key] = value.casefold()
            continue
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**1023:
            # Beyond 64 bits Neo4j has no integer: compare as a float, exact whenever the value is
            # representable (filter operands get the same conversion in _param_value).
            props[MD_PREFIX + key] = float(value)
            continue
        if isinstance(value, list):
            kinds = {_scalar_kind(v) for v in value}
            if len(kinds) <= 1 and None not in kinds:
                props[MD_PREFIX + key] = list(value)
                if kinds == {"str"} and any(needs_fold(v) for v in value):
                    props[MDFOLD_PREFIX + key] = [v.casefold() for v in value]
                continue
            props[MDX_PREFIX + key] = [t for v in value for t in _element_tags(v)]
        else:
            props[MDX_PREFIX + key] = []
    return props


def normalize_metadata(metadata: dict[str, Any], what: str) -> tuple[dict[str, Any], str]:
    """JSON round trip: what we mirror and filter on is exactly what a later read returns."""
    try:
        text = json.dumps(metadata, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} must be JSON-serializable: {exc}") from None
    normalized = json.loads(text)
    if not isinstance(normalized, dict):
        raise InvalidInputError(f"{what} must be a mapping")
    return normalized, text


# --------------------------------------------------------------------------------------------------
# Filter compilation


class Params:
    """Collects query parameters under generated names, so no user value reaches query text.

    Constants go in as parameters too (``$f.f3`` = false): a literal ``false`` lets the planner fold
    the whole WHERE away, and then the scope index hint becomes unfulfillable and the query fails.

    The values travel as the entries of one map parameter (``$f``): Neo4j caches a plan per query
    text *and* parameter types, and a map's type does not depend on what it holds, so ``{"tier": 1}``
    and ``{"tier": "gold"}`` share one plan instead of planning a search statement again (seconds of
    server CPU; see docs/operators/backends.md, "Plans and parameter types").
    """

    def __init__(self, prefix: str = "p") -> None:
        self._entries: dict[str, Any] = {}
        self._prefix = prefix

    def add(self, value: Any) -> str:
        name = f"{self._prefix}{len(self._entries)}"
        self._entries[name] = value
        return f"${self._prefix}.{name}"

    @property
    def values(self) -> dict[str, Any]:
        """The statement's parameters: the one map, or nothing when no value was added."""
        return {self._prefix: dict(self._entries)} if self._entries else {}


def _param_value(value: Any) -> Any:
    """Integers beyond 64 bits cannot cross Bolt; compare them as floats (Neo4j cannot store them)."""
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64_MIN <= value <= _INT64_MAX:
        return float(value) if abs(value) < 2**1023 else math.copysign(math.inf, value)
    return value


_ORDER_OPS: Final = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def compile_filter(flt: Filter, var: str, params: Params) -> str:
    """A Cypher boolean expression equal to :func:`graphmem.filters.evaluate` on node ``var``.

    Every condition yields ``true`` or ``false``, never ``null``, so ``NOT`` inverts it exactly
    (Cypher's three-valued logic would otherwise drop rows on both sides of a negation).
    """
    if isinstance(flt, And):
        return "(" + " AND ".join(compile_filter(f, var, params) for f in flt.items) + ")"
    if isinstance(flt, Or):
        return "(" + " OR ".join(compile_filter(f, var, params) for f in flt.items) + ")"
    if isinstance(flt, Not):
        return f"(NOT {compile_filter(flt.item, var, params)})"
    return _condition(flt, var, params)


def _condition(cond: Cond, var: str, params: Params) -> str:
    if not cond.metadata:
        if cond.field not in RECORD_FIELDS:  # the parser guarantees this; never inline anything else
            raise InvalidInputError(f"unknown record field {cond.field!r}")
        if cond.field in TIME_FIELDS:
            return _time_condition(cond, f"{var}.{cond.field}", params)
        folded = f"{var}.`{FOLD_PREFIX}{cond.field}`" if cond.field in FOLDED_FIELDS else None
        return _value_condition(cond.op, cond.value, f"{var}.{cond.field}", None, folded, params)
    value = f"{var}[{params.add(MD_PREFIX + cond.field)}]"
    opaque = f"{var}[{params.add(MDX_PREFIX + cond.field)}]"
    folded = f"{var}[{params.add(MDFOLD_PREFIX + cond.field)}]"
    return _value_condition(cond.op, cond.value, value, opaque, folded, params)


def _value_condition(op: str, want: Any, a: str, x: str | None, f: str | None, params: Params) -> str:
    """Condition on a mirrored value ``a``, its unmirrorable form ``x`` and case-folded form ``f``."""
    present = f"{a} IS NOT NULL" + (f" OR {x} IS NOT NULL" if x is not None else "")
    if op in ("eq", "ne") and want is None:
        return f"({present})" if op == "ne" else f"(NOT ({present}))"
    if op in ("eq", "ne"):
        same = f"coalesce({a} = {params.add(_param_value(want))}, false)"
        return same if op == "eq" else f"(NOT {same})"
    if op in ("in", "nin"):
        values = [_param_value(w) for w in want if w is not None]
        hit = f"coalesce({a} IN {params.add(values)}, false)" if values else params.add(False)
        return hit if op == "in" else f"(NOT {hit})"
    if op in ("contains", "icontains"):
        return _contains(op, want, a, x, f, params)
    cmp = _ORDER_OPS[op]
    if isinstance(want, str):
        guard = f"{a} IS :: STRING NOT NULL"
    else:  # the parser refuses booleans and None here
        guard = f"({a} IS :: INTEGER NOT NULL OR {a} IS :: FLOAT NOT NULL)"
    return f"coalesce({guard} AND {a} {cmp} {params.add(_param_value(want))}, false)"


def _contains(op: str, want: Any, a: str, x: str | None, f: str | None, params: Params) -> str:
    """Substring test on a string, membership test on a list, false on anything else."""
    if isinstance(want, str):
        w = params.add(want)
        if op == "contains":
            on_string, on_list = f"{a} CONTAINS {w}", f"{w} IN {a}"
        else:  # want is already case-folded by the parser; f holds casefold() where lower() differs
            lowered = f"toLower({a})" if f is None else f"coalesce({f}, toLower({a}))"
            on_string = f"{lowered} CONTAINS {w}"
            any_lower = f"any(_x IN {a} WHERE _x IS :: STRING NOT NULL AND toLower(_x) = {w})"
            on_list = any_lower if f is None else f"CASE WHEN {f} IS NULL THEN {any_lower} ELSE {w} IN {f} END"
    else:
        on_string, on_list = params.add(False), f"{params.add(_param_value(want))} IN {a}"
    expr = (
        f"coalesce(CASE WHEN {a} IS :: STRING NOT NULL THEN {on_string} "
        f"WHEN {a} IS :: LIST<ANY> NOT NULL THEN {on_list} ELSE false END, false)"
    )
    tag = _want_tag(op, want)
    if x is not None and tag is not None:
        expr = f"({expr} OR {params.add(tag)} IN coalesce({x}, []))"
    return expr


def _iso_expr(a: str) -> str:
    """Cypher for :func:`graphmem.models.iso` of a DATETIME (fixed-width UTC with microseconds)."""

    def pad(part: str, width: int) -> str:
        return f"right('{'0' * (width - 1)}' + toString(_t.{part}), {width})"

    body = (
        f"{pad('year', 4)} + '-' + {pad('month', 2)} + '-' + {pad('day', 2)} + 'T' + "
        f"{pad('hour', 2)} + ':' + {pad('minute', 2)} + ':' + {pad('second', 2)} + '.' + "
        f"{pad('microsecond', 6)} + '+00:00'"
    )
    return (
        f"CASE WHEN {a} IS NULL THEN null ELSE [_t IN [datetime({{datetime: {a}, timezone: 'UTC'}})] | {body}][0] END"
    )


def _time_condition(cond: Cond, a: str, params: Params) -> str:
    """Time fields compare as instants; the parser hands us ISO strings (``contains``: raw)."""
    op, want = cond.op, cond.value
    if op in ("eq", "ne") and want is None:
        return f"({a} IS NOT NULL)" if op == "ne" else f"({a} IS NULL)"
    if op in ("contains", "icontains"):
        if not isinstance(want, str):
            return params.add(False)
        text = _iso_expr(a) if op == "contains" else f"toLower({_iso_expr(a)})"
        return f"coalesce({text} CONTAINS {params.add(want)}, false)"
    if op in ("in", "nin"):
        values = [w for w in want if w is not None]
        hit = f"coalesce({a} IN [_v IN {params.add(values)} | datetime(_v)], false)" if values else params.add(False)
        return hit if op == "in" else f"(NOT {hit})"
    if op in ("eq", "ne"):
        same = f"coalesce({a} = datetime({params.add(want)}), false)"
        return same if op == "eq" else f"(NOT {same})"
    return f"coalesce({a} {_ORDER_OPS[op]} datetime({params.add(want)}), false)"
