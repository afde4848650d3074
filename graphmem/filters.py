"""Filter expressions for ``search`` and ``get_all``, parsed once into a small typed tree.

Syntax (mem0-compatible)::

    {"category": "work"}                                  # equality
    {"priority": {"gte": 2}, "tags": {"contains": "x"}}   # several keys are ANDed
    {"AND": [f1, f2]}  {"OR": [f1, f2]}  {"NOT": f}       # logic, nestable
    {"NOT": [f1, f2]}                                     # none of them (mem0's form)
    {"category": "*"}                                     # the field has a value (mem0's wildcard)

Operators: ``eq ne gt gte lt lte in nin contains icontains``. A field is one of the record fields in
:data:`RECORD_FIELDS` or a top-level metadata key (``metadata.`` prefix optional). Backends compile the
tree to SQL or Cypher with every value and key passed as a parameter, never spliced into the query.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from .errors import InvalidFilterError, InvalidInputError, clip, short
from .models import iso, parse_datetime

Op = Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "icontains"]
OPERATORS: frozenset[str] = frozenset({"eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "icontains"})
TIME_FIELDS = frozenset({"created_at", "updated_at", "event_time", "expires_at"})
RECORD_FIELDS = (
    frozenset({"id", "memory_type", "role", "actor_id", "user_id", "agent_id", "run_id", "hash"}) | TIME_FIELDS
)
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
Scalar = str | int | float | bool | None
MAX_DEPTH = 32
"""Default nesting bound of ``AND``/``OR``/``NOT`` (``limits.max_filter_depth``)."""
MAX_TERMS = 500
"""Default bound on conditions plus ``in``/``nin`` values (``limits.max_filter_terms``)."""


@dataclass(frozen=True)
class Cond:
    field: str
    """A record field name, or a metadata key when ``metadata`` is true."""
    op: Op
    value: Any
    metadata: bool


@dataclass(frozen=True)
class And:
    items: tuple[Filter, ...]


@dataclass(frozen=True)
class Or:
    items: tuple[Filter, ...]


@dataclass(frozen=True)
class Not:
    item: Filter


Filter = Cond | And | Or | Not


def parse(spec: dict[str, Any] | None, *, max_depth: int = MAX_DEPTH, max_terms: int = MAX_TERMS) -> Filter | None:
    """Parse a filter dict; ``None`` or ``{}`` means no filter. Every value is checked here, so
    both backends see the same, storable operands: strings of valid Unicode, finite floats,
    integers within 64 bits (what SQLite and Neo4j hold), nesting and size within the bounds."""
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise InvalidFilterError(f"filters must be a mapping, got {type(spec).__name__}")
    if not spec:
        return None
    budget = _Budget(max_depth, max_terms)
    return _parse(spec, "filters", budget, 0)


@dataclass
class _Budget:
    max_depth: int
    terms_left: int

    def spend(self, n: int, where: str) -> None:
        self.terms_left -= n
        if self.terms_left < 0:
            raise InvalidFilterError(f"{where}: the filter has more conditions (with in/nin values) than "
                                     "limits.max_filter_terms allows; split the query or raise the limit")


def _parse(spec: Any, where: str, budget: _Budget, depth: int) -> Filter:
    if not isinstance(spec, dict) or not spec:
        raise InvalidFilterError(f"{where} must be a non-empty mapping, got {short(spec)}")
    if depth > budget.max_depth:
        raise InvalidFilterError(f"{clip(where, 100)}: AND/OR/NOT nested deeper than limits.max_filter_depth "
                                 f"({budget.max_depth})")
    parts: list[Filter] = []
    for key, value in spec.items():
        if key in ("AND", "OR"):
            if not isinstance(value, list) or not value:
                raise InvalidFilterError(f"{where}.{key} takes a non-empty list of filters")
            items = tuple(_parse(v, f"{where}.{key}[{i}]", budget, depth + 1) for i, v in enumerate(value))
            parts.append(And(items) if key == "AND" else Or(items))
        elif key == "NOT" and isinstance(value, list):  # mem0's form: none of the items holds
            if not value:
                raise InvalidFilterError(f"{where}.NOT takes a filter or a non-empty list of filters")
            items = tuple(_parse(v, f"{where}.NOT[{i}]", budget, depth + 1) for i, v in enumerate(value))
            parts.append(Not(items[0] if len(items) == 1 else Or(items)))
        elif key == "NOT":
            parts.append(Not(_parse(value, f"{where}.NOT", budget, depth + 1)))
        else:
            parts.extend(_conditions(key, value, where, budget))
    return parts[0] if len(parts) == 1 else And(tuple(parts))


def _conditions(key: Any, value: Any, where: str, budget: _Budget) -> list[Filter]:
    if not isinstance(key, str):
        raise InvalidFilterError(f"{where}: filter keys are strings, got {short(key)}")
    name = key.removeprefix("metadata.")
    is_meta = key.startswith("metadata.") or name not in RECORD_FIELDS
    if not _KEY.match(name):
        raise InvalidFilterError(
            f"{where}: {short(key)} is not a valid field; metadata keys are letters, digits, '_' and '-' "
            "(at most 64, not starting with a digit), and logic keys are AND, OR, NOT in upper case"
        )
    if isinstance(value, dict):
        if not value:
            raise InvalidFilterError(f"{where}.{key}: empty operator mapping")
        out: list[Filter] = []
        for op, operand in value.items():
            if op not in OPERATORS:
                raise InvalidFilterError(
                    f"{where}.{key}: unknown operator {short(op)}; use one of {', '.join(sorted(OPERATORS))}"
                )
            out.append(Cond(name, op, _operand(name, op, operand, is_meta, f"{where}.{key}.{op}", budget), is_meta))
        return out
    if value == "*":  # mem0's wildcard: the field has a value, whatever it is
        budget.spend(1, where)
        return [Not(Cond(name, "eq", None, is_meta))]
    return [Cond(name, "eq", _operand(name, "eq", value, is_meta, f"{where}.{key}", budget), is_meta)]


def _operand(name: str, op: str, value: Any, is_meta: bool, where: str, budget: _Budget) -> Any:
    if op in ("in", "nin"):
        if not isinstance(value, list | tuple) or not value:
            raise InvalidFilterError(f"{where} takes a non-empty list")
        budget.spend(len(value), where)
        return tuple(_scalar(name, v, is_meta, where) for v in value)
    budget.spend(1, where)
    if op == "icontains":
        if not isinstance(value, str):
            raise InvalidFilterError(f"{where} takes a string")
        return _text(value, where).casefold()
    if op == "contains":
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise InvalidFilterError(f"{where} takes a string or number")
        return _scalar(name, value, True, where)  # contains compares values as they are, times too
    value = _scalar(name, value, is_meta, where)
    if op in ("gt", "gte", "lt", "lte") and (value is None or isinstance(value, bool)):
        raise InvalidFilterError(f"{where}: ordering operators take a number, string or time")
    return value


def _text(value: str, where: str) -> str:
    bad = _SURROGATE.search(value)
    if bad:
        raise InvalidFilterError(f"{where}: the value holds a lone surrogate (U+{ord(bad.group()):04X}) at "
                                 f"offset {bad.start()}, which no store can hold: {short(value)}")
    return value


def _scalar(name: str, value: Any, is_meta: bool, where: str) -> Scalar:
    if not is_meta and name in TIME_FIELDS:
        if value is None:
            return None
        if isinstance(value, datetime | str | int | float) and not isinstance(value, bool):
            try:
                return iso(parse_datetime(value, what=where))
            except InvalidInputError as exc:
                raise InvalidFilterError(str(exc)) from None
        raise InvalidFilterError(f"{where}: {name} compares with a datetime or ISO-8601 string")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _text(value, where)
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise InvalidFilterError(f"{where}: {short(value)} does not fit in 64 bits, the integers stores hold")
        return int(value)  # an int subclass (IntEnum) compares as its value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidFilterError(f"{where}: {value!r} is not a finite number (metadata cannot hold it)")
        return float(value)
    raise InvalidFilterError(f"{where}: values are strings, numbers, booleans or null, got {type(value).__name__}")


def evaluate(flt: Filter | None, fields: dict[str, Any], metadata: dict[str, Any]) -> bool:
    """Reference semantics, used by the embedded store's in-process paths and by tests.

    A missing field never matches a positive condition; ``ne``/``nin`` match it. Values of different
    types never compare (a number is neither greater nor less than a string).
    """
    if flt is None:
        return True
    if isinstance(flt, And):
        return all(evaluate(f, fields, metadata) for f in flt.items)
    if isinstance(flt, Or):
        return any(evaluate(f, fields, metadata) for f in flt.items)
    if isinstance(flt, Not):
        return not evaluate(flt.item, fields, metadata)
    source = metadata if flt.metadata else fields
    present = flt.field in source and source[flt.field] is not None
    actual = source.get(flt.field)
    if isinstance(actual, datetime):
        actual = iso(actual)
    op, want = flt.op, flt.value
    if op == "eq":
        return present and _same(actual, want) if want is not None else not present
    if op == "ne":
        return not (present and _same(actual, want)) if want is not None else present
    if op == "in":
        return present and any(_same(actual, w) for w in want)
    if op == "nin":
        return not (present and any(_same(actual, w) for w in want))
    if not present:
        return False
    if op in ("contains", "icontains"):
        if isinstance(actual, list):
            items = [a.casefold() if op == "icontains" and isinstance(a, str) else a for a in actual]
            return any(_same(a, want) for a in items)
        if isinstance(actual, str) and isinstance(want, str):
            return want in (actual.casefold() if op == "icontains" else actual)
        return False
    if not _comparable(actual, want):
        return False
    if op == "gt":
        return bool(actual > want)
    if op == "gte":
        return bool(actual >= want)
    if op == "lt":
        return bool(actual < want)
    return bool(actual <= want)


def _comparable(a: Any, b: Any) -> bool:
    num = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    return (isinstance(a, num) and isinstance(b, num)) or (isinstance(a, str) and isinstance(b, str))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    return bool(a == b)
