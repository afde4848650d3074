"""Splitting text and conversations into chunks that fit a token budget, losing nothing.

Every strategy except ``fixed`` works in two steps. First the text is cut into *units* that each fit
the budget, using the largest structure that fits (paragraph, line, sentence, word, and as a last
resort token windows); each boundary between units remembers how strong it is. Then the units are
packed greedily into chunks; when a chunk is full it ends at the strongest boundary it contains
(``recursive``/``semantic``: among those that leave it at least half full). Unit spans tile the text,
so with no overlap the chunks tile it too: ``chunks[i].end == chunks[i + 1].start``. The only text
that can be left out is a chunk that would hold whitespace alone.

Each chunk is re-counted with the counter before it is accepted, because token counts of pieces do
not always add up exactly (BPE merges across a cut word), so ``chunk.tokens <= max_tokens`` holds by
construction rather than by estimate.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError, EmbeddingError, InvalidInputError
from .sentences import normalize_boundaries, sentence_starts
from .tokens import MIN_BUDGET, TokenCounter

Strategy = Literal["fixed", "sentence", "recursive", "semantic"]
STRATEGIES: tuple[str, ...] = get_args(Strategy)
EmbedFn = Callable[[list[str]], npt.NDArray[Any]]
"""Texts to unit vectors, one row per text (``Embedder.embed`` fits)."""

# Strength of the boundary before a unit: where a full chunk prefers to end.
_TOKEN, _WORD, _SENTENCE, _LINE, _PARAGRAPH, _MESSAGE = 1.0, 2.0, 3.0, 4.0, 5.0, 6.0
_FORCED = math.inf
"""A semantic break: a chunk always ends here."""

_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n")
_LINE_BREAK = re.compile(r"\n")
_WHITESPACE = re.compile(r"\s+")
_WORD_START = re.compile(r"(?<=\s)\S")
_NON_SPACE = re.compile(r"\S")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of the input: ``text == source[start:end]`` and ``tokens <= max_tokens``."""

    text: str
    index: int
    start: int
    """Char offset into the source text (for messages: into the messages joined by ``"\\n"``)."""
    end: int
    tokens: int
    """Counted by ``counter`` on ``text`` itself."""
    counter: str
    """Name of the token counter that measured the budget (``tiktoken:o200k_base``, ``estimate``)."""


@dataclass(slots=True)
class _Unit:
    start: int
    end: int
    tokens: int
    strength: float
    """Of the boundary before this unit."""
    weight: int = -1
    """Tokens it adds when another unit follows: a trailing space merges into the next word's token."""

    def __post_init__(self) -> None:
        if self.weight < 0:
            self.weight = self.tokens


class _Ctx:
    """The text and settings one chunking call shares between its helpers."""

    def __init__(self, text: str, budget: int, overlap: int, counter: TokenCounter) -> None:
        self.text = text
        self.budget = budget
        self.overlap = overlap
        self.counter = counter

    def count(self, start: int, end: int) -> int:
        return self.counter.count(self.text[start:end])

    def unit(self, start: int, end: int, tokens: int, strength: float) -> _Unit:
        text = self.text
        merges = (
            tokens > 1
            and end < len(text)
            and text[end - 1] == " "
            and not text[end - 2].isspace()
            and not text[end].isspace()
            and not text[end].isdigit()
        )
        return _Unit(start, end, tokens, strength, tokens - 1 if merges else tokens)

    def fit(self, pos: int, hi: int) -> int:
        """How many chars from ``pos`` (up to ``hi``) fit the budget; at least one.

        Looks at a window a few times the budget's likely size, not the whole rest of the text, so
        token windows over a long input stay linear.
        """
        window = self.budget * 8 + 64
        while True:
            end = min(hi, pos + window)
            k = self.counter.split_at(self.text[pos:end], self.budget)
            if end == hi or k < end - pos - 64:
                break
            window *= 4
        if k < 1:
            raise AssertionError(f"token counter {self.counter.name} cannot fit one character in {self.budget} tokens")
        return k


# ------------------------------------------------------------------------------------------- splitting


def _boundaries(ctx: _Ctx, level: float, lo: int, hi: int) -> list[int]:
    text = ctx.text
    if level == _PARAGRAPH:
        raw = [m.end() for m in _PARAGRAPH_BREAK.finditer(text, lo, hi)]
    elif level == _LINE:
        raw = [m.end() for m in _LINE_BREAK.finditer(text, lo, hi)]
    elif level == _SENTENCE:
        return sentence_starts(text, lo, hi)
    elif level == _WORD:
        raw = [m.start() for m in _WHITESPACE.finditer(text, lo, hi)]
    else:
        raise AssertionError(level)
    return normalize_boundaries(text, raw, lo, hi)


def _token_units(ctx: _Ctx, lo: int, hi: int) -> list[_Unit]:
    units = []
    pos = lo
    while pos < hi:
        end = pos + ctx.fit(pos, hi)
        units.append(_Unit(pos, end, ctx.count(pos, end), _TOKEN))
        pos = end
    return units


def _split(ctx: _Ctx, lo: int, hi: int, levels: Sequence[float]) -> list[_Unit]:
    """Units tiling ``[lo, hi)``, each within the budget: cut at ``levels[0]``, and cut pieces that are
    still too long at the next level. The first unit's strength is the caller's to set."""
    level = levels[0]
    if level == _TOKEN:
        return _token_units(ctx, lo, hi)
    edges = [lo, *_boundaries(ctx, level, lo, hi), hi]
    units: list[_Unit] = []
    for start, end in itertools.pairwise(edges):
        tokens = ctx.count(start, end)
        if tokens <= ctx.budget:
            units.append(ctx.unit(start, end, tokens, level))
        else:
            sub = _split(ctx, start, end, levels[1:])
            sub[0].strength = level
            units.extend(sub)
    return units


_LEVELS: dict[str, tuple[float, ...]] = {
    "fixed": (_TOKEN,),
    "sentence": (_SENTENCE, _WORD, _TOKEN),
    "semantic": (_SENTENCE, _WORD, _TOKEN),
    "recursive": (_PARAGRAPH, _LINE, _SENTENCE, _WORD, _TOKEN),
}
_MIN_FILL: dict[str, float] = {"fixed": 0.0, "sentence": 0.0, "semantic": 0.5, "recursive": 0.5}
"""``sentence`` ends a full chunk at its last sentence boundary, however short that leaves it; the
others prefer a strong boundary only if the chunk stays at least half full (fewer, fuller chunks)."""


def _apply_semantic_breaks(ctx: _Ctx, units: list[_Unit], embed: EmbedFn, threshold: float, min_level: float) -> None:
    """Force a break where adjacent units are less similar than ``threshold`` (only at boundaries of
    ``min_level`` or stronger, so a long sentence's fragments stay together); elsewhere, less similar
    neighbours make a stronger boundary, so a full chunk ends at the biggest change of topic."""
    texts = [ctx.text[u.start : u.end].strip() for u in units]
    wanted = [i for i, t in enumerate(texts) if t]
    if len(wanted) < 2:
        return
    try:
        vectors = np.asarray(embed([texts[i] for i in wanted]), dtype=np.float64)
    except Exception as exc:
        raise EmbeddingError(f"semantic chunking could not embed {len(wanted)} sentences: {exc}") from exc
    if vectors.ndim != 2 or vectors.shape[0] != len(wanted):
        raise EmbeddingError(f"semantic chunking: the embedder returned shape {vectors.shape} for {len(wanted)} texts")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms == 0, 1.0, norms)
    row = {unit: r for r, unit in enumerate(wanted)}
    previous: int | None = None
    for i, unit in enumerate(units):
        if i not in row:
            continue
        if previous is not None and unit.strength >= min_level:
            similarity = float(vectors[row[previous]] @ vectors[row[i]])
            unit.strength = _FORCED if similarity < threshold else unit.strength + (1.0 - similarity) / 2
        previous = i


# ------------------------------------------------------------------------------------------- packing


def _overlap_start(ctx: _Ctx, start: int, end: int, limit: int, *, words: bool) -> int:
    """The earliest offset in ``(start, end]`` from which ``text[b:end]`` has at most ``limit``
    tokens (moved forward to a word start when ``words`` and one exists)."""
    lo = start + 1
    window = limit * 4 + 16
    while True:
        candidate = max(lo, end - window)
        if candidate == lo or ctx.count(candidate, end) > limit:
            break
        window *= 2
    left, right = candidate, end
    while left < right:
        mid = (left + right) // 2
        if ctx.count(mid, end) <= limit:
            right = mid
        else:
            left = mid + 1
    if words and left < end:
        m = _WORD_START.search(ctx.text, left, end)
        if m is not None:
            return m.start()
    return left


def _best_cut(units: list[_Unit], i: int, j: int, tokens_before: int, floor: float, hard: float) -> int:
    """Where a chunk holding ``units[i:j]`` (which are all that fit) should end: the strongest
    boundary among those that keep it at least ``floor`` tokens (plus ``hard`` ones and the last),
    the latest on ties."""
    best, best_strength = j, units[j].strength
    filled = tokens_before
    for k in range(i + 1, j):
        filled += units[k - 1].weight
        strength = units[k].strength
        if (filled >= floor or strength >= hard) and strength > best_strength:
            best, best_strength = k, strength
    return best


def _pack(ctx: _Ctx, units: list[_Unit], *, min_fill: float, hard: float = _FORCED) -> list[tuple[int, int, int]]:
    budget, m = ctx.budget, len(units)
    spans: list[tuple[int, int, int]] = []
    i = 0
    prefix_start: int | None = None  # overlap carried over from the previous chunk
    prefix_tokens = 0
    while i < m:
        start = units[i].start if prefix_start is None else prefix_start
        total, j = prefix_tokens, i
        while j < m and (j == i or units[j].strength != _FORCED) and total + units[j].tokens <= budget:
            total += units[j].weight
            j += 1
        if j == i:  # the overlap left no room for the next unit (counts are not exactly additive)
            prefix_start, prefix_tokens = None, 0
            continue
        if j == m or units[j].strength == _FORCED:
            k = j
        else:
            k = _best_cut(units, i, j, prefix_tokens, min_fill * budget, hard)
        end = units[k - 1].end
        tokens = ctx.count(start, end)
        if tokens > budget:  # piece counts did not add up: give back units, then the overlap
            lo, hi = i + 1, k - 1
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if ctx.count(start, units[mid - 1].end) <= budget:
                    lo = mid
                else:
                    hi = mid - 1
            k, end = lo, units[lo - 1].end
            tokens = ctx.count(start, end)
            if tokens > budget:
                start = units[i].start
                tokens = ctx.count(start, end)
        spans.append((start, end, tokens))
        i = k
        prefix_start, prefix_tokens = None, 0
        if ctx.overlap and i < m and units[i].strength != _FORCED:
            limit = min(ctx.overlap, budget - units[i].tokens)
            if limit > 0:
                b = _overlap_start(ctx, start, end, limit, words=True)
                if b < end:
                    prefix_start, prefix_tokens = b, ctx.count(b, end)
    return spans


def _fixed(ctx: _Ctx) -> list[tuple[int, int, int]]:
    spans = []
    n, pos = len(ctx.text), 0
    end = pos + ctx.fit(pos, n)
    while True:
        spans.append((pos, end, ctx.count(pos, end)))
        if end >= n:
            return spans
        limit = ctx.overlap
        while True:  # the next window must reach past this one, so shrink the overlap until it does
            start = _overlap_start(ctx, pos, end, limit, words=False) if limit else end
            next_end = start + ctx.fit(start, n)
            if next_end > end:
                break
            limit -= 1
        pos, end = start, next_end


def _chunks(ctx: _Ctx, spans: list[tuple[int, int, int]]) -> list[Chunk]:
    chunks: list[Chunk] = []
    for start, end, tokens in spans:
        if tokens > ctx.budget:
            raise AssertionError(f"chunk of {tokens} tokens exceeds the budget {ctx.budget}")
        if _NON_SPACE.search(ctx.text, start, end) is None:
            continue
        chunks.append(Chunk(ctx.text[start:end], len(chunks), start, end, tokens, ctx.counter.name))
    return chunks


# ------------------------------------------------------------------------------------------- public


def check_params(
    strategy: str, max_tokens: int, overlap_tokens: int, embed: EmbedFn | None, semantic_threshold: float
) -> None:
    """Refuse settings that cannot work, with a message saying what would."""
    if strategy not in STRATEGIES:
        raise ConfigError(f"unknown chunking strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")
    if not isinstance(max_tokens, int) or max_tokens < MIN_BUDGET:
        raise ConfigError(f"chunking max_tokens must be an integer >= {MIN_BUDGET}, got {max_tokens!r}")
    if not isinstance(overlap_tokens, int) or not 0 <= overlap_tokens < max_tokens:
        raise ConfigError(
            f"chunking overlap_tokens must be >= 0 and below max_tokens ({max_tokens}), got {overlap_tokens!r}"
        )
    if strategy == "semantic" and embed is None:
        raise ConfigError("the semantic chunking strategy needs an embed function (an embedder's embed)")
    if not -1.0 <= semantic_threshold <= 1.0:
        raise ConfigError(f"semantic_threshold is a cosine similarity in [-1, 1], got {semantic_threshold!r}")


def _check_text(text: object, what: str) -> str:
    if not isinstance(text, str):
        raise InvalidInputError(f"{what} must be a string, got {type(text).__name__}")
    if _NON_SPACE.search(text) is None:
        raise InvalidInputError(f"nothing to chunk: {what} is empty or only whitespace")
    return text


def chunk_text(
    text: str,
    *,
    strategy: Strategy,
    max_tokens: int,
    overlap_tokens: int = 0,
    counter: TokenCounter,
    embed: EmbedFn | None = None,
    semantic_threshold: float = 0.5,
) -> list[Chunk]:
    """Split ``text`` into chunks of at most ``max_tokens`` tokens (by ``counter``), in text order.

    - ``fixed``: windows of ``max_tokens`` tokens, cut anywhere (even inside a word).
    - ``sentence``: whole sentences (and lines) packed up to the budget; a sentence longer than the
      budget is cut at words, and a word longer than the budget into token windows.
    - ``recursive``: the largest structure that fits (paragraphs, then lines, sentences, words,
      token windows), packed up to the budget; a full chunk ends at the strongest boundary in its
      second half.
    - ``semantic``: sentences embedded with ``embed``; a chunk always ends where neighbouring
      sentences are less similar than ``semantic_threshold``, and a segment over the budget ends at
      its least similar sentence boundary.

    With ``overlap_tokens``, each chunk after the first starts up to that many tokens before the
    previous one ended (at a word start; ``fixed``: anywhere); never across a semantic break.
    Raises ``InvalidInputError`` for an empty or whitespace-only text.
    """
    check_params(strategy, max_tokens, overlap_tokens, embed, semantic_threshold)
    ctx = _Ctx(_check_text(text, "the text"), max_tokens, overlap_tokens, counter)
    if strategy == "fixed":
        return _chunks(ctx, _fixed(ctx))
    units = _split(ctx, 0, len(text), _LEVELS[strategy])
    if strategy == "semantic":
        assert embed is not None
        _apply_semantic_breaks(ctx, units, embed, semantic_threshold, _SENTENCE)
    return _chunks(ctx, _pack(ctx, units, min_fill=_MIN_FILL[strategy]))


def chunk_messages(
    messages: Sequence[str],
    *,
    strategy: Strategy,
    max_tokens: int,
    overlap_tokens: int = 0,
    counter: TokenCounter,
    embed: EmbedFn | None = None,
    semantic_threshold: float = 0.5,
) -> list[Chunk]:
    """Pack whole messages (already rendered, e.g. ``"Maya (2024-05-01 10:00): text"``) into chunks.

    Offsets refer to ``"\\n".join(messages)``. A message is split (by ``strategy``) only if it alone
    exceeds the budget; a full chunk ends at a message boundary whenever one is in it, and
    ``semantic`` also breaks between dissimilar messages. Raises ``InvalidInputError`` for no messages, a message that
    is not a string, or only whitespace.
    """
    check_params(strategy, max_tokens, overlap_tokens, embed, semantic_threshold)
    if isinstance(messages, str) or not isinstance(messages, Sequence):
        raise InvalidInputError("messages must be a list of strings")
    for i, message in enumerate(messages):
        if not isinstance(message, str):
            raise InvalidInputError(f"message {i} must be a string, got {type(message).__name__}")
    ctx = _Ctx(_check_text("\n".join(messages), "the conversation"), max_tokens, overlap_tokens, counter)
    units: list[_Unit] = []
    start = 0
    for i, message in enumerate(messages):
        end = start + len(message) + (1 if i + 1 < len(messages) else 0)
        if start == end:
            continue
        tokens = ctx.count(start, end)
        if tokens <= max_tokens:
            units.append(ctx.unit(start, end, tokens, _MESSAGE))
        else:
            sub = _split(ctx, start, end, _LEVELS[strategy])
            sub[0].strength = _MESSAGE
            units.extend(sub)
        start = end
    if strategy == "semantic":
        assert embed is not None
        _apply_semantic_breaks(ctx, units, embed, semantic_threshold, _SENTENCE)
    return _chunks(ctx, _pack(ctx, units, min_fill=_MIN_FILL[strategy], hard=_MESSAGE))
