"""Chunking: budgets hold, nothing is lost, order is kept, with every strategy and both counters.

The invariants are checked on randomized inputs (seeded, so a failure reproduces): unicode from many
scripts, words far longer than the budget, empty lines, long whitespace runs and text with no
whitespace at all. tiktoken's real vocabularies are downloaded on first use, which this machine
cannot do, so tiktoken is exercised with a small byte-level encoding built here; the accuracy check
against cl100k runs only where that file is already cached.
"""

from __future__ import annotations

import itertools
import logging
import math
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from graphmem import MemoryConfig
from graphmem.chunking import (
    ESTIMATE,
    Chunk,
    Chunker,
    EstimateCounter,
    TiktokenCounter,
    TokenCounter,
    chunk_messages,
    chunk_text,
    from_config,
    sentence_starts,
    token_counter,
)
from graphmem.chunking import tokens as tokens_module
from graphmem.config import ChunkingConfig
from graphmem.embedding import HashingEmbedder
from graphmem.errors import ConfigError, EmbeddingError, InvalidInputError

STRATEGIES = ["fixed", "sentence", "recursive", "semantic"]

# ------------------------------------------------------------------------------------------- helpers


def tiny_encoding() -> Any:
    """A byte-level BPE with a few English merges: exact, offline, and as hard on multi-byte
    characters as a real one (a token can end inside a character)."""
    tiktoken = pytest.importorskip("tiktoken")
    ranks = {bytes([i]): i for i in range(256)}
    for merge in [b"th", b"he", b"the", b" t", b" the", b"in", b"an", b"er", b"on", b" a", b"\xe4\xb8", b"\xf0\x9f"]:
        ranks[merge] = len(ranks)
    pattern = r"""'s|'t| ?\p{L}+| ?\p{N}{1,3}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
    return tiktoken.Encoding(name="tiny_bytes", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})


@pytest.fixture(scope="module")
def tiny() -> TiktokenCounter:
    return TiktokenCounter(tiny_encoding())


@pytest.fixture(params=["estimate", "tiktoken"])
def counter(request: pytest.FixtureRequest, tiny: TiktokenCounter) -> TokenCounter:
    return ESTIMATE if request.param == "estimate" else tiny


@pytest.fixture(autouse=True)
def _fresh_loads() -> Iterator[None]:
    tokens_module._reset_loads()
    yield
    tokens_module._reset_loads()


_EMBEDDER = HashingEmbedder(dims=64)


def embed(texts: list[str]) -> npt.NDArray[np.float32]:
    return _EMBEDDER.embed(texts)


WORDS = "the cat sat on a mat and then it went home quickly because rain was falling hard".split()
UNICODE = [
    "東京都",
    "我很好。你呢？",
    "Привет",
    "مرحبا",
    "नमस्ते",
    "😀🎉",
    "e\u0301",
    "ß",
    "ﬁ",
    "\u200b",
    "한국어",
    "ქართული",
    "ሰላም",
]


def random_text(rng: random.Random) -> str:
    parts: list[str] = []
    for _ in range(rng.randrange(1, 60)):
        kind = rng.random()
        if kind < 0.45:
            sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 25)))
            parts.append(sentence.capitalize() + rng.choice([".", "!", "?", "", "..."]) + rng.choice([" ", "  ", "\n"]))
        elif kind < 0.55:
            parts.append(rng.choice(UNICODE) * rng.randrange(1, 30) + rng.choice(["", " ", "\n"]))
        elif kind < 0.62:
            parts.append(
                "".join(
                    rng.choice("abcdefghijklmnopqrstuvwxyzABCDEF0123456789_/-") for _ in range(rng.randrange(20, 900))
                )
            )
        elif kind < 0.70:
            parts.append(rng.choice(["\n\n", "\n\n\n\n", " " * rng.randrange(1, 300), "\t\t", "\n \n", "\r\n"]))
        elif kind < 0.76:
            parts.append("    def f(x):\n        return x + 1  # comment\n")
        elif kind < 0.82:
            parts.append(f"https://example.com/a/b?q={rng.randrange(10**9)}&x=y ")
        elif kind < 0.88:
            parts.append(str(rng.randrange(10**15)) + rng.choice([" ", ",", ".", ""]))
        elif kind < 0.94:
            parts.append("".join(rng.choice(UNICODE) for _ in range(rng.randrange(1, 80))))
        else:
            parts.append("Mr. Smith met Dr. Jones at 3.30 p.m. e.g. on Monday. They talked. ")
    text = "".join(parts)
    if rng.random() < 0.1:
        text = "".join(text.split())  # no whitespace at all
    if not text.strip():
        text += "x"
    return text


def check_chunks(source: str, chunks: list[Chunk], counter: TokenCounter, max_tokens: int, overlap: int) -> None:
    """The invariants every chunking result must satisfy."""
    assert chunks, "non-empty input gives at least one chunk"
    for i, c in enumerate(chunks):
        assert c.index == i
        assert 0 <= c.start < c.end <= len(source)
        assert c.text == source[c.start : c.end]
        assert c.text.strip(), "no whitespace-only chunk"
        assert c.tokens == counter.count(c.text)
        assert c.tokens <= max_tokens, (c.tokens, max_tokens)
        assert c.counter == counter.name
    assert not source[: chunks[0].start].strip()
    assert not source[chunks[-1].end :].strip()
    for prev, cur in itertools.pairwise(chunks):
        assert prev.start < cur.start and prev.end < cur.end, "chunks follow the text"
        if cur.start >= prev.end:
            gap = source[prev.end : cur.start]
            assert not gap.strip(), f"text lost between chunks: {gap!r}"
        else:
            assert overlap > 0, "overlap only when asked for"
            assert counter.count(source[cur.start : prev.end]) <= overlap
    if overlap == 0:
        # exact tiling except where a whitespace-only piece was dropped
        joined = "".join(source[a.end : b.start] + b.text for a, b in itertools.pairwise(chunks))
        assert source[: chunks[0].start] + chunks[0].text + joined + source[chunks[-1].end :] == source


# ------------------------------------------------------------------------------------------- counters


def test_estimate_is_at_least_the_word_count_and_sane() -> None:
    rng = random.Random(7)
    for _ in range(200):
        text = " ".join(
            rng.choice([*WORDS, "extraordinarily", "Mississippi", "x"]) for _ in range(rng.randrange(1, 200))
        )
        assert ESTIMATE.count(text) >= len(text.split())
    assert ESTIMATE.count("") == 0
    assert ESTIMATE.count("hello world") == 2
    assert ESTIMATE.count("1234567") == 3  # digits go in groups of three
    cjk = "我很好你呢今天天气很好"
    assert ESTIMATE.count(cjk) >= len(cjk)  # cl100k: ~1.1 tokens per Chinese character
    url = "https://docs.example.com/api/v2/users?id=12345&sort=desc"
    assert ESTIMATE.count(url) >= len([p for p in url.replace("/", " ").replace("?", " ").split() if p]) + 5
    code = "def add(a: int, b: int) -> int:\n    return a + b\n"
    assert 15 <= ESTIMATE.count(code) <= 40  # cl100k: 20
    assert ESTIMATE.count("😀") <= 4 and ESTIMATE.count("\u1200") <= 4


def test_estimate_counts_long_runs_and_random_strings_conservatively() -> None:
    assert ESTIMATE.count("a" * 1000) >= 100
    assert ESTIMATE.count("aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQ=") >= 18  # cl100k: 19
    assert ESTIMATE.count("getElementById") >= 4  # cl100k: 4
    assert ESTIMATE.count(" " * 64) <= 2  # whitespace runs are cheap


@pytest.mark.parametrize("max_tokens", [4, 5, 9, 50])
def test_split_at_contract(counter: TokenCounter, max_tokens: int) -> None:
    rng = random.Random(max_tokens)
    for _ in range(60):
        text = random_text(rng)[: rng.randrange(1, 400)] or "x"
        k = counter.split_at(text, max_tokens)
        assert 1 <= k <= len(text)
        assert counter.count(text[:k]) <= max_tokens
        if counter.count(text) <= max_tokens:
            assert k == len(text)


def test_tiktoken_counter_never_splits_inside_a_character(tiny: TiktokenCounter) -> None:
    text = "東京" * 10 + "😀" * 5
    for max_tokens in range(4, 40):
        k = tiny.split_at(text, max_tokens)
        assert tiny.count(text[:k]) <= max_tokens
        assert text[:k].encode("utf-8").decode("utf-8") == text[:k]
    assert tiny.count("<|endoftext|>") > 1  # special-token text is ordinary text
    assert tiny.count("a\ud800b") == 5  # a lone surrogate is counted, not an error
    assert tiny.split_at("a\ud800bcd", 4) >= 1


def test_token_counter_none_is_the_estimate() -> None:
    assert token_counter(None) is ESTIMATE
    assert ESTIMATE.name == "estimate"


def test_token_counter_unknown_model_falls_back_with_a_reason(caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("tiktoken")
    with caplog.at_level(logging.WARNING, "graphmem.chunking"):
        c = token_counter("my-local-llama")
    assert isinstance(c, EstimateCounter) and c.name == "estimate"
    assert c.reason and "my-local-llama" in c.reason
    assert "offline estimate" in caplog.text


def test_token_counter_offline_falls_back_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    calls: list[str] = []

    def offline(name: str) -> Any:
        calls.append(name)
        raise ConnectionError("Failed to resolve 'openaipublic.blob.core.windows.net'")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    c = token_counter("gpt-4o-mini")
    assert isinstance(c, EstimateCounter)
    assert c.reason and "o200k_base" in c.reason and "ConnectionError" in c.reason
    token_counter("gpt-4o")  # same encoding: the failure is remembered, not retried
    assert calls == ["o200k_base"]


def test_token_counter_does_not_wait_for_a_hanging_download(monkeypatch: pytest.MonkeyPatch, tiny: Any) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    release = threading.Event()

    def hanging(name: str) -> Any:
        release.wait(30)  # a firewall that drops packets: requests.get has no timeout
        return tiny_encoding()

    monkeypatch.setattr(tiktoken, "get_encoding", hanging)
    t0 = time.perf_counter()
    c = token_counter("cl100k_base", timeout_s=0.2)
    assert time.perf_counter() - t0 < 2
    assert isinstance(c, EstimateCounter) and c.reason and "did not finish" in c.reason
    t0 = time.perf_counter()
    assert isinstance(token_counter("cl100k_base", timeout_s=5), EstimateCounter)  # no second wait
    assert time.perf_counter() - t0 < 0.5
    release.set()
    for _ in range(100):  # once the slow load finishes, later calls use it
        c = token_counter("cl100k_base")
        if isinstance(c, TiktokenCounter):
            break
        time.sleep(0.02)
    assert c.name == "tiktoken:tiny_bytes"


def test_token_counter_uses_tiktoken_when_it_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: tiny_encoding())
    c = token_counter("openai/gpt-4o-mini")
    assert isinstance(c, TiktokenCounter) and c.name == "tiktoken:tiny_bytes"


def test_estimate_against_real_cl100k_when_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs only where cl100k is in tiktoken's cache (never downloads). bench/chunking.py measures
    the same on ~1,400 windows of chat, prose, code and 37 languages."""
    pytest.importorskip("tiktoken")
    import tiktoken
    import tiktoken.load

    def no_network(blobpath: str) -> bytes:
        raise ConnectionError("tests never download")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    try:
        enc = tiktoken.get_encoding("cl100k_base")
    except Exception:
        pytest.skip("cl100k_base is not in tiktoken's cache")
    rng = random.Random(3)
    samples = [
        " ".join(rng.choice(WORDS) for _ in range(300)),
        "def add(a: int, b: int) -> int:\n    return a + b\n" * 20,
        "我很好。你呢？今天天气很好。" * 20,
        "Привет, как дела? Всё хорошо. " * 20,
    ]
    for text in samples:
        real = len(enc.encode_ordinary(text))
        assert real * 0.95 <= ESTIMATE.count(text) <= real * 2.5, text[:40]


# ------------------------------------------------------------------------------------------- invariants


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("seed", range(12))
def test_invariants_on_random_text(strategy: str, seed: int, counter: TokenCounter) -> None:
    rng = random.Random(seed * 31 + STRATEGIES.index(strategy))
    for _ in range(4):
        text = random_text(rng)
        max_tokens = rng.choice([4, 7, 16, 40, 120, 600])
        overlap = rng.choice([0, 0, max_tokens // 4, max_tokens - 1 if max_tokens < 20 else max_tokens // 2])
        chunks = chunk_text(
            text,
            strategy=strategy,  # type: ignore[arg-type]
            max_tokens=max_tokens,
            overlap_tokens=overlap,
            counter=counter,
            embed=embed,
            semantic_threshold=rng.choice([-1.0, 0.2, 0.5]),
        )
        check_chunks(text, chunks, counter, max_tokens, overlap)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_invariants_on_messages(strategy: str, counter: TokenCounter) -> None:
    rng = random.Random(STRATEGIES.index(strategy))
    for _ in range(20):
        messages = [
            f"{rng.choice(['Maya', 'Bob'])} (2024-05-0{rng.randrange(1, 9)} 10:00): "
            + random_text(rng)[: rng.randrange(0, 900)]
            for _ in range(rng.randrange(1, 15))
        ]
        if rng.random() < 0.2:
            messages.insert(rng.randrange(len(messages) + 1), "")
        max_tokens = rng.choice([8, 30, 200])
        overlap = rng.choice([0, max_tokens // 3])
        chunks = chunk_messages(
            messages,
            strategy=strategy,  # type: ignore[arg-type]
            max_tokens=max_tokens,
            overlap_tokens=overlap,
            counter=counter,
            embed=embed,
        )
        check_chunks("\n".join(messages), chunks, counter, max_tokens, overlap)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("text", ["", "   ", "\n\n\t \r\n", "\u3000"])
def test_empty_or_whitespace_input_is_refused(strategy: str, text: str) -> None:
    with pytest.raises(InvalidInputError):
        chunk_text(text, strategy=strategy, max_tokens=100, counter=ESTIMATE, embed=embed)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        chunk_messages([text, text], strategy=strategy, max_tokens=100, counter=ESTIMATE, embed=embed)  # type: ignore[arg-type]


def test_bad_input_types_and_settings() -> None:
    with pytest.raises(InvalidInputError):
        chunk_text(b"bytes", strategy="fixed", max_tokens=100, counter=ESTIMATE)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        chunk_messages([], strategy="fixed", max_tokens=100, counter=ESTIMATE)
    with pytest.raises(InvalidInputError):
        chunk_messages("not a list", strategy="fixed", max_tokens=100, counter=ESTIMATE)
    with pytest.raises(InvalidInputError):
        chunk_messages(["ok", 3], strategy="fixed", max_tokens=100, counter=ESTIMATE)  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="overlap"):
        chunk_text("x", strategy="fixed", max_tokens=100, overlap_tokens=100, counter=ESTIMATE)
    with pytest.raises(ConfigError, match="max_tokens"):
        chunk_text("x", strategy="fixed", max_tokens=3, counter=ESTIMATE)
    with pytest.raises(ConfigError, match="embed"):
        chunk_text("x", strategy="semantic", max_tokens=100, counter=ESTIMATE)
    with pytest.raises(ConfigError, match="strategy"):
        chunk_text("x", strategy="paragraph", max_tokens=100, counter=ESTIMATE)  # type: ignore[arg-type]


def test_a_failing_embedder_is_a_typed_error() -> None:
    def broken(texts: list[str]) -> npt.NDArray[np.float32]:
        return np.zeros((1, 4), dtype=np.float32)

    with pytest.raises(EmbeddingError, match="shape"):
        chunk_text("One. Two. Three.", strategy="semantic", max_tokens=100, counter=ESTIMATE, embed=broken)


# ------------------------------------------------------------------------------------------- behaviour


def numbered_sentences(n: int) -> list[str]:
    rng = random.Random(n)
    return [
        f"Sentence {i:05d} says {' '.join(rng.choice(WORDS) for _ in range(rng.randrange(5, 30)))}." for i in range(n)
    ]


@pytest.mark.parametrize("strategy", ["fixed", "sentence", "recursive", "semantic"])
def test_50k_token_input(strategy: str) -> None:
    sentences = numbered_sentences(4000)
    paragraphs = [" ".join(sentences[i : i + 7]) for i in range(0, len(sentences), 7)]
    text = "\n\n".join(paragraphs)
    total = ESTIMATE.count(text)
    assert 45_000 <= total <= 120_000
    chunks = chunk_text(
        text,
        strategy=strategy,  # type: ignore[arg-type]
        max_tokens=2000,
        counter=ESTIMATE,
        embed=embed,
        semantic_threshold=-1.0,  # random sentences of one small vocabulary: no topic to break at
    )
    check_chunks(text, chunks, ESTIMATE, 2000, 0)
    least = math.ceil(total / 2000)
    # semantic ends a full chunk at its least similar boundary in the second half: at least half full
    assert least <= len(chunks) <= least * (2 if strategy == "semantic" else 1.3) + 1
    assert all(c.tokens >= 1000 for c in chunks[:-1])
    assert sentences[0] in chunks[0].text
    assert sentences[-1] in chunks[-1].text


def test_fixed_windows_are_full(tiny: TiktokenCounter) -> None:
    text = " ".join(numbered_sentences(200))
    chunks = chunk_text(text, strategy="fixed", max_tokens=100, counter=tiny)
    assert all(c.tokens >= 97 for c in chunks[:-1])  # a window can stop short of a multi-byte token


def test_sentence_strategy_ends_chunks_at_sentence_ends() -> None:
    sentences = numbered_sentences(300)
    text = " ".join(sentences)
    chunks = chunk_text(text, strategy="sentence", max_tokens=150, counter=ESTIMATE)
    for c in chunks:
        assert c.text.rstrip().endswith(".")
        assert c.text.startswith("Sentence ")


def test_sentence_longer_than_the_budget_is_split_further() -> None:
    long_sentence = "word " * 400 + "end."
    text = f"Short one. {long_sentence} After."
    chunks = chunk_text(text, strategy="sentence", max_tokens=50, counter=ESTIMATE)
    check_chunks(text, chunks, ESTIMATE, 50, 0)
    assert chunks[0].text == "Short one. "
    assert chunks[-1].text.endswith("After.")


def test_recursive_prefers_paragraph_boundaries() -> None:
    paragraphs = [" ".join(numbered_sentences(3 + i % 4)) for i in range(60)]
    text = "\n\n".join(paragraphs)
    chunks = chunk_text(text, strategy="recursive", max_tokens=400, counter=ESTIMATE)
    check_chunks(text, chunks, ESTIMATE, 400, 0)
    assert all(c.text.endswith("\n\n") for c in chunks[:-1])
    assert all(c.tokens >= 200 for c in chunks[:-1])  # and stays at least half full


def test_recursive_without_any_whitespace_uses_token_windows() -> None:
    text = "東京都" * 3000
    chunks = chunk_text(text, strategy="recursive", max_tokens=64, counter=ESTIMATE)
    check_chunks(text, chunks, ESTIMATE, 64, 0)
    assert len(chunks) > 100


def test_semantic_breaks_at_a_change_of_topic() -> None:
    topic_a = [f"Cats purr softly number {i}." for i in range(6)]
    topic_b = [f"Rockets launch loudly number {i}." for i in range(6)]

    def topical(texts: list[str]) -> npt.NDArray[np.float32]:
        return np.array([[1.0, 0.0] if "Cats" in t else [0.0, 1.0] for t in texts], dtype=np.float32)

    text = " ".join(topic_a + topic_b)
    chunks = chunk_text(text, strategy="semantic", max_tokens=2000, counter=ESTIMATE, embed=topical)
    assert [c.text.strip() for c in chunks] == [" ".join(topic_a), " ".join(topic_b)]
    chunks = chunk_text(text, strategy="semantic", max_tokens=40, counter=ESTIMATE, embed=topical)
    check_chunks(text, chunks, ESTIMATE, 40, 0)
    assert not any("Cats" in c.text and "Rockets" in c.text for c in chunks)


def test_overlap_carries_context_at_word_starts() -> None:
    text = " ".join(numbered_sentences(200))
    chunks = chunk_text(text, strategy="recursive", max_tokens=200, overlap_tokens=40, counter=ESTIMATE)
    check_chunks(text, chunks, ESTIMATE, 200, 40)
    overlaps = [ESTIMATE.count(text[b.start : a.end]) for a, b in itertools.pairwise(chunks)]
    assert all(20 <= o <= 40 for o in overlaps), overlaps
    assert all(text[c.start - 1].isspace() for c in chunks[1:])


def test_messages_are_packed_whole() -> None:
    rng = random.Random(5)
    messages = [
        f"Maya (2024-05-01 10:{i:02d}): {' '.join(rng.choice(WORDS) for _ in range(rng.randrange(3, 40)))}"
        for i in range(60)
    ]
    big = "Bob (2024-05-01 11:00): " + " ".join(numbered_sentences(40))
    messages.insert(30, big)
    joined = "\n".join(messages)
    chunks = chunk_messages(messages, strategy="sentence", max_tokens=300, counter=ESTIMATE)
    check_chunks(joined, chunks, ESTIMATE, 300, 0)
    starts = {joined.index(m) for m in messages}
    big_start = joined.index(big)
    big_end = big_start + len(big)
    for c in chunks:
        inside_big = big_start < c.start < big_end
        assert c.start in starts or inside_big, "only the oversized message is split"
    assert sum(1 for c in chunks if big_start <= c.start < big_end) >= 2


def test_chunk_messages_offsets_refer_to_the_joined_text() -> None:
    messages = ["Maya: hi", "", "Bob: hello there", "Maya: bye"]
    chunks = chunk_messages(messages, strategy="recursive", max_tokens=2000, counter=ESTIMATE)
    assert len(chunks) == 1 and chunks[0].text == "\n".join(messages)


@pytest.mark.parametrize("use_spacy", [True, False])
def test_sentence_starts(use_spacy: bool) -> None:
    if use_spacy:
        pytest.importorskip("spacy")
    text = "Mr. Smith arrived at 3.30 p.m. on Monday! Was it late? Yes.\n\n   def f():\n      return 1\n我很好。你呢？"
    starts = sentence_starts(text, use_spacy=use_spacy)
    pieces = [text[a:b] for a, b in zip([0, *starts], [*starts, len(text)], strict=False)]
    assert pieces == [
        "Mr. Smith arrived at 3.30 p.m. on Monday! ",
        "Was it late? ",
        "Yes.\n\n",
        "   def f():\n",
        "      return 1\n",
        "我很好。",
        "你呢？",
    ]


def test_sentence_splitting_new_words_does_not_grow_the_vocabulary() -> None:
    """The splitter's pipeline would keep every word it is shown (a server's long tail of names)."""
    pytest.importorskip("spacy")
    from graphmem.chunking.sentences import _spacy

    nlp = _spacy()
    assert nlp is not None
    sentence_starts("Warm up. Then go.", use_spacy=True)
    before = len(nlp.vocab.strings)
    for i in range(50):
        text = f"Order {700_000 + i} went to Zq{i}vor street. Then Xy{i}lo{i} signed it."
        assert len(sentence_starts(text, use_spacy=True)) == 1
    assert len(nlp.vocab.strings) == before


def test_from_config_binds_settings() -> None:
    chunker = from_config(ChunkingConfig(strategy="sentence", max_tokens=64, overlap_tokens=8))
    assert isinstance(chunker, Chunker)
    assert chunker.counter is ESTIMATE and chunker.max_tokens == 64
    text = " ".join(numbered_sentences(50))
    chunks = chunker(text)
    check_chunks(text, chunks, ESTIMATE, 64, 8)
    assert chunker.chunk_messages(["a: b", "c: d"])[0].text == "a: b\nc: d"
    with pytest.raises(ConfigError):
        from_config(ChunkingConfig(strategy="semantic"))
    with pytest.raises(ConfigError):  # caught when the configuration loads
        MemoryConfig.load({"chunking": {"max_tokens": 16, "overlap_tokens": 16}})
    semantic = from_config(ChunkingConfig(strategy="semantic"), embed=embed)
    assert semantic.chunk("One thing. Another thing.")


def test_from_config_uses_the_model_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    seen: list[str] = []

    def fake(name: str) -> Any:
        seen.append(name)
        return tiny_encoding()

    monkeypatch.setattr(tiktoken, "get_encoding", fake)
    assert from_config(ChunkingConfig(), model="gpt-4").counter.name == "tiktoken:tiny_bytes"
    assert from_config(ChunkingConfig(tokenizer="o200k_base"), model="gpt-4").counter.name == "tiktoken:tiny_bytes"
    assert seen == ["cl100k_base", "o200k_base"]
