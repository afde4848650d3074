"""Which sentences become memories, and of what type.

A memory is a sentence verbatim (or a whole turn with ``granularity="message"``); sentences under
``min_words`` words are merged into a neighbour of the same message ("Wow!"). Typed procedural for rules
and how-tos, episodic when a time phrase resolved, semantic otherwise, and attributed to the speaker.
"""

from __future__ import annotations

import re
from typing import Final

from spacy.lang.en.stop_words import STOP_WORDS

from ...models import MemoryType
from ..schema import ExtractedMemory
from .state import Granularity, Sentence
from .words import PHATIC, English

_PROCEDURAL: Final = re.compile(
    r"^\W*(?:please\s+)?(?:"
    r"(?:always|never)\s+(?P<v1>[a-z]+)"
    r"|(?:make sure|be sure|remember|don't forget|do not forget)\b"
    r"|do not\s+(?P<v2>[a-z]+)"
    r"|to\s+(?P<v3>[a-z]+)\b[^,.;!?]{1,80},\s*\S"
    r"|first,?\s+(?P<v4>[a-z]+)\b.{0,200}\bthen\b"
    r"|step\s+\d+\b"
    r"|\d+[.)]\s+(?P<v5>[a-z]+)\b"
    r"|(?:when|if|before|after)\b[^,]{1,80},\s*(?:always|never|make sure|remember to)\b)",
    re.IGNORECASE)
_STOP_VERBS: Final = frozenset({"back", "call", "do", "give", "go", "keep", "make", "move", "put", "see", "show",
                                "take", "get", "say", "empty", "fill", "name", "mention", "use"})


def memories(eng: English, sentences: list[Sentence], granularity: Granularity,
             min_words: int, *, small_talk: bool = False, names: frozenset[str] = frozenset()) -> list[ExtractedMemory]:
    """One memory per group of sentences; each sentence learns its memory's index (``Sentence.memory``).
    A group of pleasantries only ("Thanks! How can I help?") is no memory unless ``small_talk``;
    ``names`` (lowercase speaker names) may appear in one ("Hi Maya!")."""
    out: list[ExtractedMemory] = []
    for group in groups(sentences, granularity, min_words):
        if not small_talk and all(is_phatic(s, names) for s in group):
            continue
        msg = group[0].msg
        text = msg.text[group[0].char_start:group[-1].char_end].strip()
        times = [t for s in group for t in s.times]
        mtype = MemoryType.SEMANTIC
        if any(is_procedural(eng, s) for s in group):
            mtype = MemoryType.PROCEDURAL
        elif times:
            mtype = MemoryType.EPISODIC
        for s in group:
            s.memory = len(out)
        out.append(ExtractedMemory(text=text, memory_type=mtype,
                                   event_time=times[0].iso if times and mtype == MemoryType.EPISODIC else None,
                                   attributed_to=msg.speaker))
    return out


def groups(sentences: list[Sentence], granularity: Granularity, min_words: int) -> list[list[Sentence]]:
    """Sentences grouped by message, then (per sentence) short ones joined to the next, or the last."""
    out: list[list[Sentence]] = []
    by_msg: dict[int, list[Sentence]] = {}
    for sent in sentences:
        by_msg.setdefault(id(sent.msg), []).append(sent)
    for sents in by_msg.values():
        if granularity == "message":
            out.append(sents)
            continue
        pending: list[Sentence] = []
        mine: list[list[Sentence]] = []
        for sent in sents:
            pending.append(sent)
            words = sum(1 for p in pending for k in range(p.start, p.end) if p.msg.alnum[k])
            if words >= min_words:
                mine.append(pending)
                pending = []
        if pending:
            if mine:
                mine[-1].extend(pending)
            else:
                mine.append(pending)
        out.extend(mine)
    return out


def is_phatic(sent: Sentence, names: frozenset[str] = frozenset()) -> bool:
    """A greeting, thanks or offer of help and nothing else: every word is a pleasantry word or a name."""
    msg = sent.msg
    words = [msg.lowers[k] for k in range(sent.start, sent.end) if msg.alnum[k]]
    return bool(words) and all(w in PHATIC or w in names for w in words)


def is_procedural(eng: English, sent: Sentence) -> bool:
    """A rule or how-to ("Always back up ...", "To reset the router, hold ..."); the verb must be one."""
    m = _PROCEDURAL.match(sent.text)
    if m is None or sent.question:
        return False
    for name in ("v1", "v2", "v3", "v4", "v5"):
        verb = m.group(name)
        if verb is not None:
            low = verb.lower()
            return eng.lemma(low) == low and low in eng.vocabulary and (low not in STOP_WORDS or low in _STOP_VERBS)
    return True
