"""The input contract of the public API: every argument checked before anything touches the
store, each refusal an :class:`~graphmem.errors.InvalidInputError` with a short message.

Both backends get exactly the inputs that pass here, so they accept and refuse the same things.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import ValidationError

from .config import LimitsConfig
from .errors import InvalidInputError, clip, short
from .filters import Filter
from .filters import parse as parse_filters
from .models import MemoryType, Message, check_id, parse_datetime, refuse_controls

MessagesInput = str | dict[str, Any] | Sequence[dict[str, Any]]
SURROGATE = re.compile(r"[\ud800-\udfff]")
DEFAULT_LIMITS = LimitsConfig()
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def when(value: object, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime | str | numbers.Real) or isinstance(value, bool):
        raise InvalidInputError(f"{name} must be a datetime, ISO-8601 string or Unix seconds, "
                                f"got {type(value).__name__}")
    return parse_datetime(value, what=name)  # type: ignore[arg-type]  # any real number is seconds


def expiration_date(value: object) -> datetime | None:
    """mem0's ``expiration_date``: a ``YYYY-MM-DD`` day (or a ``date``), inclusive, in UTC; the memory
    expires when the next day begins."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = date.fromisoformat(value.strip())
        except ValueError:
            raise InvalidInputError(f"expiration_date must be a YYYY-MM-DD date, got {short(value)}") from None
    if isinstance(value, datetime) or not isinstance(value, date):
        raise InvalidInputError(f"expiration_date must be a YYYY-MM-DD date, got {type(value).__name__}")
    return datetime.combine(value + timedelta(days=1), time.min, tzinfo=UTC)


def messages(messages: MessagesInput, limits: LimitsConfig, speaker: str | None = None) -> list[Message]:
    """The messages of an add, checked; ``speaker`` names the user messages that carry no ``name``
    (who "I" is in "I live in Oslo")."""
    speaker = optional_text(speaker, "speaker", limits.max_name_chars)
    if speaker is not None:
        check_speaker(speaker, "speaker", limits.max_name_chars)
    if isinstance(messages, str):
        raw: list[Any] = [{"role": "user", "content": messages}]
    elif isinstance(messages, dict):
        raw = [messages]
    elif isinstance(messages, Sequence) and not isinstance(messages, bytes | bytearray):
        raw = list(messages)
    else:
        raise InvalidInputError(
            f"messages must be a string, a message dict or a list of message dicts, got {type(messages).__name__}"
        )
    if not raw:
        raise InvalidInputError("messages is an empty list")
    if len(raw) > limits.max_batch:
        raise InvalidInputError(f"{len(raw)} messages in one add; the limit is {limits.max_batch} (limits.max_batch)")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise InvalidInputError(f"messages[{i}] must be a dict with 'role' and 'content'")
        try:
            message = Message.model_validate(item)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'message'}: {clip(e['msg'])}"
                                 for e in exc.errors(include_url=False))
            raise InvalidInputError(
                f"messages[{i}] is not a valid message ({problems}); expected "
                "{'role': 'user'|'assistant'|'system'|'tool', 'content': str, 'name'?: str}"
            ) from None
        if message.name:
            check_speaker(message.name, f"messages[{i}].name", limits.max_name_chars)
        elif speaker is not None and message.role == "user":
            message = message.model_copy(update={"name": speaker})
        out.append(message)
    return out


def check_speaker(name: str, what: str, max_chars: int) -> None:
    """A message's ``name`` becomes the memory's ``actor_id`` and a speaker label in extraction
    prompts: one line of valid Unicode, bounded (``limits.max_name_chars``)."""
    if len(name) > max_chars:
        raise InvalidInputError(f"{what} has {len(name):,} characters, more than limits.max_name_chars "
                                f"({max_chars}): {short(name)}")
    refuse_controls(name, what)


def metadata(metadata: object, limits: LimitsConfig | None = None) -> dict[str, Any]:
    """Metadata as stored: a dict that survives a JSON round trip unchanged (string keys at every
    level, finite numbers, valid Unicode), within ``limits`` (nesting and UTF-8 size) when given.
    The walk is iterative and bounded, so no input can exhaust the stack."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInputError(f"metadata must be a dict with string keys, got {type(metadata).__name__}")
    max_depth = limits.max_metadata_depth if limits is not None else DEFAULT_LIMITS.max_metadata_depth
    stack: list[tuple[object, int, str]] = [(metadata, 1, "metadata")]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, dict | list | tuple):
            if depth > max_depth:
                raise InvalidInputError(f"{clip(where, 100)} is nested deeper than limits.max_metadata_depth "
                                        f"({max_depth})")
            if isinstance(value, dict):
                for k, v in value.items():
                    if not isinstance(k, str):
                        raise InvalidInputError(f"{where} has a key that is not a string: {short(k)}")
                    no_surrogate(k, f"{where} key {short(k, 40)}")
                    stack.append((v, depth + 1, f"{where}[{short(k, 40)}]"))
            else:
                stack.extend((v, depth + 1, f"{where}[{i}]") for i, v in enumerate(value))
        elif isinstance(value, str):
            no_surrogate(value, where)
        elif isinstance(value, float) and not math.isfinite(value):
            raise InvalidInputError(f"{where} is {value!r}; metadata numbers are finite (JSON has no NaN/inf)")
        elif not (value is None or isinstance(value, bool | int | float)):
            raise InvalidInputError(f"{where} is a {type(value).__name__}; metadata values are strings, numbers, "
                                    "booleans, null, lists and dicts")
    try:
        text = json.dumps(metadata, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata must be JSON-serializable: {short(str(exc), 200)}") from None
    if limits is not None and len(text) > limits.max_metadata_bytes // 4:  # a char is at most 4 UTF-8 bytes
        size = len(text.encode("utf-8"))
        if size > limits.max_metadata_bytes:
            raise InvalidInputError(f"metadata is {size:,} bytes as JSON, more than limits.max_metadata_bytes "
                                    f"({limits.max_metadata_bytes:,}); keep documents in memories, labels in metadata")
    return dict(metadata)


def no_surrogate(text: str, where: str) -> None:
    bad = SURROGATE.search(text)
    if bad:
        raise InvalidInputError(f"{where} holds a lone surrogate (U+{ord(bad.group()):04X}) at offset {bad.start()}, "
                                "which is not valid Unicode")


def optional_text(value: object, name: str, max_chars: int = 1000) -> str | None:
    """A short string argument that may be absent (a name, a class, a relation, an entity)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {short(value)}")
    text = value.strip()
    if not text:
        raise InvalidInputError(f"{name} is empty")
    if len(text) > max_chars:
        raise InvalidInputError(f"{name} is {len(text):,} characters, more than {max_chars:,}")
    no_surrogate(text, name)
    return text


def threshold(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidInputError(f"threshold must be a number, got {short(value)}")
    out = float(value)
    if not math.isfinite(out):
        raise InvalidInputError(f"threshold must be a finite number, got {short(value)}")
    return out


def memory_type(value: object) -> MemoryType | None:
    if value is None or isinstance(value, MemoryType):
        return value
    if isinstance(value, str) and value in {t.value for t in MemoryType}:
        return MemoryType(value)
    raise InvalidInputError(f"memory_type {short(value)} is not one of {', '.join(t.value for t in MemoryType)}")


def flag(value: object, name: str) -> bool:
    """Booleans are booleans: ``infer="no"`` would otherwise be true."""
    if not isinstance(value, bool | np.bool_):
        raise InvalidInputError(f"{name} must be True or False, got {short(value)}")
    return bool(value)


def ids(ids: object, what: str) -> list[str] | None:
    if ids is None:
        return None
    if isinstance(ids, str | bytes | dict) or not isinstance(ids, Sequence | set | frozenset):
        raise InvalidInputError(f"{what} must be a list of id strings, got {type(ids).__name__}")
    return [check_id(i, f"{what}[{n}]") for n, i in enumerate(ids)]


def query_vector(vector: object, dims: int, embedder: str) -> npt.NDArray[np.float32]:
    """A caller's query embedding, checked (numbers only, ``dims`` of them, finite, not all zero) and
    L2-normalized as those of the embedder named ``embedder`` are."""
    if isinstance(vector, np.ndarray):
        if vector.dtype.kind not in "iuf":
            raise InvalidInputError(f"vector must hold numbers, got an array of {vector.dtype}")
        values = vector.astype(np.float64).reshape(-1)
    elif isinstance(vector, Sequence) and not isinstance(vector, str | bytes | bytearray):
        if len(vector) != dims:
            raise InvalidInputError(f"vector has {len(vector)} dimensions; embedder {embedder} "
                                    f"makes {dims}")
        if not all(isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_) for v in vector):
            raise InvalidInputError("vector must be a sequence of numbers")
        try:
            values = np.asarray([float(v) for v in vector], dtype=np.float64)
        except OverflowError:
            raise InvalidInputError("vector holds a number too large for a float") from None
    else:
        raise InvalidInputError(f"vector must be a sequence of numbers, got {type(vector).__name__}")
    if values.shape[0] != dims:
        raise InvalidInputError(f"vector has {values.shape[0]} dimensions; embedder {embedder} "
                                f"makes {dims}")
    if not np.isfinite(values).all():
        raise InvalidInputError("vector holds NaN or infinite values")
    scale = float(np.abs(values).max())
    if scale > _FLOAT32_MAX:
        raise InvalidInputError(f"vector holds a value beyond float32's range (±{_FLOAT32_MAX:.3g}); "
                                "vectors are stored and compared as float32")
    if scale == 0.0:
        raise InvalidInputError("vector is all zeros; it has no direction to compare with")
    values = values / scale  # no overflow in the norm, however large the values
    arr: npt.NDArray[np.float32] = (values / float(np.linalg.norm(values))).astype(np.float32)
    return arr

def positive(value: object, default: int, name: str, maximum: int | None = None, setting: str = "") -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise InvalidInputError(f"{name} must be a positive integer, got {short(value)}")
    if maximum is not None and value > maximum:
        raise InvalidInputError(f"{name}={short(value)} is more than {setting} ({maximum}); ask for fewer or "
                                "raise the limit")
    return int(value)


def filters(value: object, limits: LimitsConfig) -> Filter | None:
    return parse_filters(value, max_depth=limits.max_filter_depth,  # type: ignore[arg-type]  # checked there
                         max_terms=limits.max_filter_terms)
