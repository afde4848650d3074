"""Tokenized text for the rule-based extractor: messages, sentences and per-token arrays.

A chunk is split into messages ("Speaker: text" lines, or paragraphs of plain text), each message is
tokenized once by spaCy's English tokenizer, and the rules read plain Python lists built here (lowercase
forms, lookup lemmas, capitalization), which is much faster than asking spaCy tokens for attributes again
and again.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

    from .words import English

_SPEAKER_LINE: Final = re.compile(r"^[ \t]*([^:\n]{1,60}?)[ \t]*:[ \t]*(.*)$")
_GENERIC_SPEAKER: Final = re.compile(r"^[A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}$")
SENT_END: Final = frozenset({".", "!", "?", "…", "...", "?!", "!?", "!!", "??", "!!!", "。", "！", "？"})
CLOSERS: Final = frozenset({'"', "'", "”", "’", ")", "]", "}", "''", "»", "」", "』"})
OPENERS: Final = frozenset({'"', "'", "“", "‘", "(", "[", "{", "``", "«", "「", "『"})
_OPENING_WORDS: Final = frozenset({"The", "It", "He", "She", "They", "In", "This", "His", "Her", "Its", "Their",
                                   "On", "At", "After", "Before", "As", "A", "An", "We", "I"})
"""Words that start a sentence after an abbreviation ("... News Corp. The paper ..."), a likely boundary."""
_DASHES: Final = frozenset({"-", "--", "–", "—", ":"})


@dataclass
class Message:
    """One speaker turn (or one paragraph of plain text) and its tokens."""

    text: str
    speaker: str | None
    offset: int
    """Where ``text`` starts in the chunk."""
    texts: list[str] = field(default_factory=list)
    lowers: list[str] = field(default_factory=list)
    lemmas: list[str] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    """Character offset of each token in ``text``."""
    caps: list[bool] = field(default_factory=list)
    """Capitalized like a name: "Lisbon", "LGBTQ", "iPhone" (not "I")."""
    space_before: list[bool] = field(default_factory=list)
    alnum: list[bool] = field(default_factory=list)
    initial: list[bool] = field(default_factory=list)
    """First word of a sentence or clause, where capitalization says nothing."""
    sentences: list[tuple[int, int]] = field(default_factory=list)
    """Token ranges, end exclusive."""
    doc: Doc | None = None
    """The parsed message (tags, dependencies, lemmas), token for token the same as ``texts``."""

    def end_char(self, tok: int) -> int:
        return self.starts[tok] + len(self.texts[tok])

    def span_text(self, start: int, end: int) -> str:
        return self.text[self.starts[start]:self.end_char(end - 1)]


MAX_PARSED_TOKENS: Final = 300
"""Longer messages (documents, pasted answers) are tokenized but not parsed: parsing costs about a
millisecond per 15 tokens on one core, and the clause reader is built for chat turns; the surface-form
rules still read them."""


def tokenize(chunk: str, speakers: list[str], nlp: Language, eng: English,
             unparsed: Callable[[str | None], bool] = lambda speaker: False) -> list[Message]:
    """The chunk's messages, each tokenized once and split into sentences; parsed too unless
    ``unparsed(speaker)`` (an assistant's turns state no facts: the parse would be read by nobody) or
    longer than :data:`MAX_PARSED_TOKENS`."""
    messages = split_messages(chunk, speakers)
    tokens = [nlp.make_doc(m.text) for m in messages]
    chosen = [i for i, (m, d) in enumerate(zip(messages, tokens, strict=True))
              if len(d) <= MAX_PARSED_TOKENS and not unparsed(m.speaker)]
    parsed = dict(zip(chosen, nlp.pipe(tokens[i] for i in chosen), strict=True))
    for i, msg in enumerate(messages):
        fill_tokens(msg, tokens[i], eng)
        msg.doc = parsed.get(i)
    return messages


def split_messages(chunk: str, speakers: list[str]) -> list[Message]:
    """Lines starting with a known speaker ("Maya: ...") open a message; other lines continue the current
    one; blank lines end plain-text paragraphs. Without known speakers, a "Name: text" prefix counts when
    most non-empty lines carry one (a transcript), so a single "Note: ..." line is left alone."""
    known = {s.strip().casefold(): s.strip() for s in speakers if s.strip()}
    lines = chunk.splitlines(keepends=True)
    if not known:
        prefixed = [m.group(1) for ln in lines if ln.strip() and (m := _SPEAKER_LINE.match(ln))
                    and _GENERIC_SPEAKER.match(m.group(1))]
        nonempty = sum(1 for ln in lines if ln.strip())
        if len(prefixed) >= 2 and len(prefixed) * 2 > nonempty:
            known = {p.casefold(): p for p in prefixed}
    out: list[Message] = []
    cur_start: int | None = None
    cur_end = 0
    cur_speaker: str | None = None
    pos = 0

    def flush() -> None:
        nonlocal cur_start
        if cur_start is not None:
            text = chunk[cur_start:cur_end]
            stripped = text.rstrip()
            lead = len(text) - len(text.lstrip())
            if stripped.strip():
                out.append(Message(stripped[lead:], cur_speaker, cur_start + lead))
        cur_start = None

    for line in lines:
        body = line.rstrip("\r\n")
        m = _SPEAKER_LINE.match(body) if known else None
        who = known.get(m.group(1).strip().casefold()) if m else None
        if who is not None and m is not None:
            flush()
            cur_speaker = who
            cur_start = pos + m.start(2)
            cur_end = pos + len(body)
        elif not body.strip():
            if cur_speaker is None:
                flush()
        else:
            if cur_start is None:
                cur_start = pos
            cur_end = pos + len(body)
        pos += len(line)
    flush()
    return out


def is_cap(text: str) -> bool:
    first = text[0]
    if first.isupper():
        return text != "I" and any(ch.isalpha() for ch in text)
    return first.islower() and text.isalpha() and any(ch.isupper() for ch in text[1:])


def fill_tokens(msg: Message, doc: Doc, eng: English) -> None:
    """Per-token arrays and sentence ranges for one tokenized message."""
    texts = msg.texts
    for tok in doc:
        texts.append(tok.text)
        msg.starts.append(tok.idx)
    n = len(texts)
    msg.lowers = [t.lower() for t in texts]
    msg.lemmas = [eng.lemmas.get(lo, lo) for lo in msg.lowers]
    for i in range(n - 1):  # "Kwame's a sound engineer": before an article "'s" is "is", never "has"
        if msg.lowers[i] in ("'s", "’s") and msg.lowers[i + 1] in ("a", "an", "the"):
            msg.lemmas[i] = "be"
    msg.caps = [is_cap(t) for t in texts]
    msg.space_before = [i > 0 and msg.starts[i] > msg.end_char(i - 1) for i in range(n)]
    msg.alnum = [any(ch.isalnum() for ch in t) for t in texts]
    msg.initial = [False] * n
    sentences: list[tuple[int, int]] = []
    start: int | None = None
    i = 0
    while i < n:
        t = texts[i]
        if t.isspace():
            if start is not None and "\n" in t:
                sentences.append((start, i))
                start = None
            i += 1
            continue
        if start is None:
            start = i
        if t in SENT_END or t[-1] in "。！？" or (len(t) > 1 and set(t) <= {".", "!", "?", "…"}) \
                or (len(t) > 2 and t[-1] == "." and i + 1 < n and texts[i + 1] in _OPENING_WORDS):
            j = i + 1
            while j < n and texts[j] in CLOSERS:
                j += 1
            sentences.append((start, j))
            start = None
            i = j
            continue
        i += 1
    if start is not None:
        sentences.append((start, n))
    msg.sentences = [(s, e) for s, e in sentences if _keep(texts[s:e])]
    for s, e in msg.sentences:
        first = True
        for k in range(s, e):
            t = texts[k]
            if t in OPENERS or (t in _DASHES and (t == ":" or msg.space_before[k])):
                first = True
            elif first and msg.alnum[k]:
                msg.initial[k] = True
                first = False


def _keep(tokens: list[str]) -> bool:
    """A sentence with a word, a number or a symbol (emoji) in it; bare punctuation is not a memory."""
    for t in tokens:
        for ch in t:
            if ch.isalnum() or unicodedata.category(ch)[0] == "S":
                return True
    return False
