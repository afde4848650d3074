"""Token counters: tiktoken when its encoding can be loaded, else a conservative offline estimate.

tiktoken downloads its encoding files on first use (then caches them under ``TIKTOKEN_CACHE_DIR``, or
the system temp folder). Its download has no timeout, so a firewalled machine could hang for minutes:
the load runs in a daemon thread that is waited on for ``timeout_s`` only, and a failure is remembered
for the process so later calls do not wait again.

The estimate exists so that chunking never depends on the network. It is designed to over-count
rather than under-count (a chunk that is too big is a silent problem; one that is a bit small is
not): on English chat, prose, markdown and code it counts somewhat more than the real tokens, so
chunks hold less than their budget in real tokens. :class:`EstimateCounter` has the design; its
measured over-count per kind of text is in ``bench/results/docstring_figures.json``.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import math
import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import tiktoken

log = logging.getLogger("graphmem.chunking")

MIN_BUDGET = 4
"""One character is at most 4 UTF-8 bytes, so at most 4 tokens for any byte-level BPE (and for the
estimate): with a smaller budget a split could be unable to make progress."""


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens the way the extraction model will see them."""

    @property
    def name(self) -> str:
        """Recorded on every chunk, so a result says how its budget was measured."""
        ...

    def count(self, text: str) -> int: ...

    def split_at(self, text: str, max_tokens: int) -> int:
        """The largest char offset ``k`` with ``count(text[:k]) <= max_tokens`` (``len(text)`` when
        everything fits); at least 1 for non-empty text when ``max_tokens >= 4``."""
        ...


def _largest_fitting_prefix(count: CountFn, text: str, max_tokens: int, hi: int) -> int:
    """Binary search for the largest ``k <= hi`` with ``count(text[:k]) <= max_tokens`` (counts are
    monotone enough in practice; the result is checked by the caller's contract anyway)."""
    lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return lo


class CountFn(Protocol):
    def __call__(self, text: str, /) -> int: ...


# --------------------------------------------------------------------------------------------- tiktoken

_SURROGATE = re.compile("[\ud800-\udfff]")


class TiktokenCounter:
    """Exact counts with a tiktoken ``Encoding`` (special-token text is counted as ordinary text)."""

    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self._enc = encoding
        self.name = f"tiktoken:{encoding.name}"

    @property
    def encoding(self) -> tiktoken.Encoding:
        return self._enc

    def _encode(self, text: str) -> list[int]:
        return self._enc.encode_ordinary(text)

    def count(self, text: str) -> int:
        return len(self._encode(text))

    def split_at(self, text: str, max_tokens: int) -> int:
        tokens = self._encode(text)
        if len(tokens) <= max_tokens:
            return len(text)
        # Lone surrogates cannot be UTF-8 encoded; U+FFFD keeps one char per char, so offsets still hold.
        raw = _SURROGATE.sub("\ufffd", text).encode("utf-8")
        nbytes = len(self._enc.decode_bytes(tokens[:max_tokens]))
        k = len(raw[:nbytes].decode("utf-8", errors="ignore"))  # a token may end inside a character
        if k and self.count(text[:k]) <= max_tokens:
            return k
        return max(_largest_fitting_prefix(self.count, text, max_tokens, k), 1 if max_tokens >= MIN_BUDGET else 0)

    def __repr__(self) -> str:
        return f"TiktokenCounter({self._enc.name!r})"


# --------------------------------------------------------------------------------------------- estimate

# The pieces of cl100k/o200k pre-tokenization (contractions, letter runs with one leading non-letter,
# digit groups of up to three, punctuation runs, newline runs, space runs). BPE never merges across
# these pieces, so an upper estimate per piece adds up to an upper estimate of the text.
_LETTER = r"[^\W\d_]"
_PIECE = re.compile(
    r"'(?i:[sdmt]|ll|ve|re)(?!" + _LETTER + r")"
    r"|(?:[^\r\n\w]|_)?" + _LETTER + r"+"
    r"|\d{1,3}"
    r"| ?(?:[^\s\w]|_)+[\r\n]*"
    r"|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)

# Tokens per non-ASCII character, from the block's first code point up to the next entry. Measured
# with cl100k on spaCy's example sentences of ~40 languages (per-script averages) and on random
# characters of each block, then rounded up; o200k needs fewer tokens everywhere.
_BLOCK_WEIGHTS: tuple[tuple[int, float], ...] = (
    (0x0080, 1.2),  # Latin-1 supplement
    (0x0100, 1.5),  # Latin Extended-A/B, IPA
    (0x0370, 1.2),  # Greek
    (0x0400, 0.8),  # Cyrillic
    (0x0530, 2.0),  # Armenian
    (0x0590, 1.2),  # Hebrew, Arabic, Syriac, Thaana, NKo
    (0x0900, 2.2),  # Indic scripts (Devanagari … Sinhala)
    (0x0E00, 1.5),  # Thai, Lao
    (0x0F00, 2.0),  # Tibetan, Myanmar
    (0x10A0, 2.0),  # Georgian, Hangul Jamo
    (0x1200, 2.6),  # Ethiopic
    (0x13A0, 2.0),  # Cherokee … Mongolian …
    (0x1E00, 1.2),  # Latin Extended Additional (Vietnamese)
    (0x1F00, 1.5),  # Greek Extended
    (0x2000, 1.2),  # General punctuation (dashes, quotes, ellipsis)
    (0x2070, 2.5),  # symbols, arrows, maths, box drawing, dingbats
    (0x3000, 1.5),  # CJK punctuation, Hiragana, Katakana
    (0x3100, 2.0),  # Bopomofo, Hangul compatibility, CJK extension A
    (0x4E00, 1.5),  # CJK unified ideographs
    (0xA000, 2.5),  # Yi … (rare)
    (0xAC00, 1.3),  # Hangul syllables
    (0xD7B0, 2.5),  # surrogates, private use
    (0xF900, 2.0),  # CJK compatibility, presentation forms
    (0xFF00, 1.5),  # full-width forms
    (0xFFF0, 2.5),  # specials
    (0x10000, 3.0),  # emoji and everything outside the BMP (4 UTF-8 bytes)
)
_BLOCK_STARTS = [start for start, _ in _BLOCK_WEIGHTS]

_SHORT_WORD = 6
"""ASCII letter runs up to this length are one token: true for nearly all such words in chat and prose."""
_WORD_CHARS_PER_TOKEN = 3.5
"""Longer natural words: 3.5 letters per token covers English and other Latin-script languages
(Finnish, Czech, Indonesian), which split more."""
_LONG_RUN = 20
_LONG_RUN_CHARS_PER_TOKEN = 2.0
"""Letter runs over 20 letters are nearly always identifiers, hashes or random strings, which split
into short tokens."""
_CASE_SWITCH_TOKENS = 0.75
"""Added per upper/lower case switch: camelCase splits at humps, base64-like text at most switches."""
_PUNCT_CHARS_PER_TOKEN = 1.6


def _char_weight(ch: str) -> float:
    code = ord(ch)
    if code < 0x80:
        return 0.0
    return _BLOCK_WEIGHTS[bisect.bisect_right(_BLOCK_STARTS, code) - 1][1]


def _letters_cost(core: str) -> int:
    n = len(core)
    if core.isascii():
        if n > _LONG_RUN:
            cost = n / _LONG_RUN_CHARS_PER_TOKEN
        else:
            cost = 1.0 if n <= _SHORT_WORD else n / _WORD_CHARS_PER_TOKEN
        switches = sum(1 for a, b in itertools.pairwise(core) if a.isupper() != b.isupper())
        if switches:
            cost = max(cost, n / _WORD_CHARS_PER_TOKEN + switches * _CASE_SWITCH_TOKENS)
        return max(1, math.ceil(cost))
    ascii_letters = sum(1 for c in core if c.isascii())
    return max(1, math.ceil(ascii_letters / _WORD_CHARS_PER_TOKEN + sum(_char_weight(c) for c in core)))


@lru_cache(maxsize=1 << 16)
def _piece_cost(piece: str) -> int:
    stripped = piece.lstrip()
    if stripped and stripped[-1].isalpha() and (stripped[0].isalpha() or stripped[1:2].isalpha()):
        return _letters_cost(stripped if stripped[0].isalpha() else stripped[1:])
    if piece.isdigit():
        return 1
    if piece.isspace():
        newline_run = "\n" in piece or "\r" in piece
        return math.ceil(len(piece) / (8 if newline_run else 32))
    core = piece.strip()
    if core.isascii() and len(set(core)) == 1:  # ----- ===== ***** rules and separators
        return math.ceil(len(core) / 8)
    ascii_chars = sum(1 for c in core if c.isascii())
    ascii_cost = 0.0 if not ascii_chars else 1.0 if ascii_chars <= 2 else ascii_chars / _PUNCT_CHARS_PER_TOKEN
    return max(1, math.ceil(ascii_cost + sum(_char_weight(c) for c in core)))


@dataclass(frozen=True)
class EstimateCounter:
    """A conservative offline estimate of BPE tokens (cl100k/o200k-like), needing no vocabulary.

    Design: split the text into the pieces that cl100k's pre-tokenizer produces (BPE never merges
    across them), then give each piece an upper estimate: one token per group of up to three digits
    (exact), one token for ASCII words of up to six letters, 3.5 letters per token for longer words,
    two for runs over 20 letters, plus 0.75 per case switch (camelCase, base64); per-character weights
    by Unicode block for other scripts (Cyrillic 0.8 … CJK 1.5, Indic 2.2, emoji 3); punctuation
    ~1.6 chars per token; whitespace runs nearly free.

    Measured against tiktoken with ``bench/chunking.py`` (figures in
    ``bench/results/docstring_figures.json``): it over-counts natural text and code, stays close on
    identifiers, hashes and URLs. Known limit: text made of rare characters (random code points) is
    under-counted.
    """

    reason: str | None = field(default=None, compare=False)
    """Why tiktoken was not used, when this counter is a fallback."""
    name: str = "estimate"

    def count(self, text: str) -> int:
        return sum(_piece_cost(m.group()) for m in _PIECE.finditer(text))

    def split_at(self, text: str, max_tokens: int) -> int:
        total = 0
        k = len(text)
        for m in _PIECE.finditer(text):
            cost = _piece_cost(m.group())
            if total + cost > max_tokens:
                piece = m.group()
                left = max_tokens - total
                k = m.start() + _largest_fitting_prefix(self.count, piece, left, len(piece) - 1)
                break
            total += cost
        else:
            return len(text)
        if k and self.count(text[:k]) <= max_tokens:
            return k
        # A cut piece can re-split differently (e.g. trailing spaces); fall back to a search.
        return max(_largest_fitting_prefix(self.count, text, max_tokens, k), 1 if max_tokens >= MIN_BUDGET else 0)


ESTIMATE = EstimateCounter()


# --------------------------------------------------------------------------------------------- loading


@dataclass
class _Load:
    """One attempt to load a tiktoken encoding, possibly still running in its thread."""

    thread: threading.Thread
    encoding: tiktoken.Encoding | None = None
    error: BaseException | None = None


_LOADS: dict[str, _Load] = {}
_LOADS_LOCK = threading.Lock()
_WARNED: set[str] = set()


def _encoding_name(encoding_or_model: str) -> tuple[str | None, str]:
    """The tiktoken encoding for an encoding or model name, or ``None`` and why not."""
    try:
        import tiktoken
    except ImportError:
        return None, "tiktoken is not installed"
    if encoding_or_model in tiktoken.list_encoding_names():
        return encoding_or_model, ""
    # "openai/gpt-4o-mini", "azure/gpt-4o": the model is the last part.
    for candidate in dict.fromkeys((encoding_or_model, encoding_or_model.rsplit("/", 1)[-1])):
        try:
            return tiktoken.encoding_name_for_model(candidate), ""
        except KeyError:
            continue
    return None, f"tiktoken does not know the model {encoding_or_model!r}"


def _start_load(name: str) -> _Load:
    import tiktoken

    def run() -> None:
        try:
            load.encoding = tiktoken.get_encoding(name)
        except BaseException as exc:  # anything (network, hash mismatch) means: use the estimate
            load.error = exc

    load = _Load(threading.Thread(target=run, name=f"graphmem-tiktoken-{name}", daemon=True))
    load.thread.start()
    return load


def _load_encoding(name: str, timeout_s: float) -> tuple[tiktoken.Encoding | None, str]:
    with _LOADS_LOCK:
        load = _LOADS.get(name)
        waited_before = load is not None
        if load is None:
            load = _LOADS[name] = _start_load(name)
    if not waited_before:
        load.thread.join(timeout_s)
    if load.encoding is not None:
        return load.encoding, ""
    if load.thread.is_alive():
        return None, f"loading tiktoken encoding {name} did not finish within {timeout_s:g}s (offline?)"
    return None, f"tiktoken cannot load {name}: {type(load.error).__name__}: {str(load.error)[:200]}"


def token_counter(encoding_or_model: str | None = None, *, timeout_s: float = 5.0) -> TokenCounter:
    """A counter for a tiktoken encoding (``cl100k_base``) or model name (``gpt-4o-mini``).

    Falls back to :data:`ESTIMATE` (with its ``reason``, logged once) when tiktoken is missing, does
    not know the model, or cannot load the encoding within ``timeout_s`` (the first call waits at most
    that long; later calls in the process reuse the outcome, or the encoding if the slow load
    finished meanwhile). ``None`` asks for the estimate directly.
    """
    if not encoding_or_model:
        return ESTIMATE
    name, reason = _encoding_name(encoding_or_model)
    if name is not None:
        encoding, reason = _load_encoding(name, timeout_s)
        if encoding is not None:
            return TiktokenCounter(encoding)
    if reason not in _WARNED:
        _WARNED.add(reason)
        log.warning("chunking: %s; counting tokens with the conservative offline estimate", reason)
    return EstimateCounter(reason=reason)


def _reset_loads() -> None:
    """Forget earlier load attempts (tests)."""
    with _LOADS_LOCK:
        _LOADS.clear()
        _WARNED.clear()
