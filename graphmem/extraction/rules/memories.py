"""Which sentences become memories, and of what type.

A memory is a sentence verbatim (or a whole turn with ``granularity="message"``); sentences under
``min_words`` words are merged into a neighbour of the same message ("Wow!"). Typed procedural for rules
and how-tos, episodic when a time phrase resolved, semantic otherwise, and attributed to the speaker.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from spacy.lang.en.stop_words import STOP_WORDS

from ...models import MemoryType
from ..schema import ExtractedMemory, Skipped
from .state import NOT_THE_USER, Granularity, Sentence, role_of
from .words import INTERJECTIONS, PHATIC, English

if TYPE_CHECKING:
    from spacy.tokens import Token

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


def memories(eng: English, sentences: list[Sentence], granularity: Granularity, min_words: int, *,
             small_talk: bool = False, names: frozenset[str] = frozenset(),
             roles: dict[str, str] | None = None) -> tuple[list[ExtractedMemory], list[Skipped]]:
    """One memory per group of sentences worth keeping, and what was left out with its reason; each
    kept sentence learns its memory's index (``Sentence.memory``). ``small_talk`` keeps every group;
    ``names`` (lowercase speaker names) may appear in a pleasantry ("Hi Maya!"); ``roles`` maps speaker
    labels to roles, so an assistant's turns are told apart (see :func:`skip_reason`)."""
    roles = roles or {}
    addressed = any(r == "assistant" for r in roles.values()) or \
        any(role_of(s.msg.speaker, roles) == "assistant" for s in sentences)
    out: list[ExtractedMemory] = []
    skipped: list[Skipped] = []
    for group in groups(sentences, granularity, min_words):
        msg = group[0].msg
        text = msg.text[group[0].char_start:group[-1].char_end].strip()
        reason = None if small_talk else skip_reason(group, names, roles, addressed)
        if reason is not None:
            skipped.append(Skipped(text=text, reason=reason))
            continue
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
    return out, skipped


def skip_reason(group: list[Sentence], names: frozenset[str], roles: dict[str, str],
                addressed: bool) -> str | None:
    """Why a group of sentences is not worth remembering, or ``None`` to keep it.

    Not kept: an assistant's (or system's, or tool's) turn; pleasantries only; sentences without
    anything to remember (no name, number or content noun: "Good but chaotic."); and, in a
    conversation with an assistant (or from an unnamed user), questions and requests to it that say
    nothing about the speaker ("Can you help me prep for their reviews?"), and statements about neither
    the speaker nor anyone or anything named ("ugh it's freezing today"); "Any tips for my trip to
    Porto?" says something, and stays."""
    label = group[0].msg.speaker
    role = role_of(label, roles)
    if role in NOT_THE_USER:
        return f"{role} turn"
    if all(is_phatic(s, names) for s in group):
        return "small talk"
    to_assistant = addressed or (label is not None and role == "user" and label.casefold() == "user")
    kept = asked = False
    for s in group:
        asking = to_assistant and (s.question or _request(s))
        asked |= asking
        if not _content(s, names):
            continue
        # told to an assistant, a sentence is kept when it is about the speaker or names someone or
        # something ("ugh it's freezing today" is neither: the moment, not the user's world)
        if not to_assistant or _about_speaker(s) or (not asking and _names_something(s, names)):
            kept = True
    if kept:
        return None
    return "question to the assistant" if asked else "not about the user" if to_assistant else "no content"


_SAYING: Final = frozenset({"be", "have", "do", "get", "guess", "think", "know", "mean", "see", "go", "say",
                            "want", "need", "hope", "feel", "thank", "help", "try", "ask", "wonder", "let",
                            "tell", "suppose", "bet", "agree", "understand", "remember", "forget", "note"})
"""Verbs of talking about the talk ("I guess", "I mean", "let me know"): no content of their own."""
_VAGUE: Final = frozenset({"thing", "stuff", "lot", "bit", "time", "way", "idea", "ideas", "question", "help",
                           "problem", "sense", "example", "part", "kind", "sort", "one", "fun", "thanks", "luck",
                           "anything", "something", "everything", "nothing", "tip", "tips", "advice", "suggestion",
                           "info", "information", "hand", "moment", "second", "sec", "minute", "lol", "btw"})


def _tokens(s: Sentence) -> list[Token]:
    doc = s.msg.doc
    return [] if doc is None else list(doc[s.start:s.end])


def _content(s: Sentence, names: frozenset[str]) -> bool:
    """A name (other than a speaker's), a number, a content noun, or the speaker doing something
    ("Never thought I would enjoy running so much"): something to remember."""
    if s.msg.doc is None:
        return True
    about = _about_speaker(s)
    for tok in _tokens(s):
        low = tok.lower_
        if tok.pos_ == "NUM" or (tok.pos_ == "PROPN" and low not in names and low not in INTERJECTIONS):
            return True
        if tok.pos_ == "NOUN" and tok.lemma_.lower() not in _VAGUE and low not in INTERJECTIONS:
            return True
        if about and tok.pos_ == "VERB" and tok.lemma_.lower() not in _SAYING:
            return True
    return False


def _names_something(s: Sentence, names: frozenset[str]) -> bool:
    """A proper name other than a speaker's ("Kyoto was before that")."""
    return any(t.pos_ == "PROPN" and t.lower_ not in names and t.lower_ not in INTERJECTIONS for t in _tokens(s))


def _about_speaker(s: Sentence) -> bool:
    """"I"/"we" as a subject or "my"/"our" on a noun: the sentence says something of the speaker."""
    return any((t.lower_ in ("i", "we") and t.dep_ in ("nsubj", "nsubjpass"))
               or (t.lower_ in ("my", "our") and t.dep_ == "poss") for t in _tokens(s))


def _request(s: Sentence) -> bool:
    """An imperative ("suggest a movie", "go on then") or "you" as the subject ("you could remind me")."""
    for tok in _tokens(s):
        if tok.dep_ == "ROOT":
            subj = [c for c in tok.children if c.dep_ in ("nsubj", "nsubjpass", "expl")]
            return (not subj and tok.tag_ == "VB") or any(c.lower_ == "you" for c in subj)
    return False


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
