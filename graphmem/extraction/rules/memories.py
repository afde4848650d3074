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
from ..contract import ExtractedMemory, Skipped
from .state import NOT_THE_USER, Granularity, Sentence, role_of
from .statements import Statement, statements
from .words import INTERJECTIONS, PHATIC, English

if TYPE_CHECKING:
    from spacy.tokens import Token

    from .dates import TimeExpr

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
             small_talk: bool = False, names: frozenset[str] = frozenset(), roles: dict[str, str] | None = None,
             speakers: dict[str, str] | None = None) -> tuple[list[ExtractedMemory], list[Skipped]]:
    """One memory per group of sentences worth keeping, and what was left out with its reason; each
    kept sentence learns its memory's index (``Sentence.memory``). ``small_talk`` keeps every group;
    ``names`` (lowercase speaker names) may appear in a pleasantry ("Hi Maya!"); ``roles`` maps speaker
    labels to roles, so an assistant's turns are told apart (see :func:`skip_reason`); ``speakers`` maps
    a speaker label to the name its statements use for "I" (``granularity="statement"``)."""
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
        if granularity != "statement":
            _keep(eng, out, group, text, [t for s in group for t in s.times])
            continue
        said = [s for s in group if small_talk or len(group) == 1 or not is_phatic(s, names)]
        carried = [len(said) > 1 and (is_phatic(s, names) or (s.msg.speaker is None and
                                                               sum(s.msg.alnum[s.start:s.end]) < min_words))
                   for s in said]
        pieces = _pieces(said, carried, (speakers or {}).get(msg.speaker or ""))
        to_assistant = _to_assistant(msg.speaker, roles, addressed)
        for s, st in pieces:
            words = [s.msg.doc[k] for k in st.tokens] if s.msg.doc is not None else []
            reason = None if len(pieces) == 1 or not words or small_talk else \
                _piece_reason(s, st, words, names, to_assistant)
            if reason is not None:
                skipped.append(Skipped(text=st.text, reason=reason))
                continue
            lo, hi = s.msg.starts[st.tokens[0]], s.msg.end_char(st.tokens[-1])
            times = [t for t in s.times if lo <= s.char_start + t.start < hi]
            _keep(eng, out, [s], st.text, times)
    return out, skipped


def _piece_reason(s: Sentence, st: Statement, words: list[Token], names: frozenset[str],
                  to_assistant: bool) -> str | None:
    """Why one statement of a kept sentence is not kept: nothing to remember in it, or, told to an
    assistant, a question or a request for now ("what should I build next?") naming nothing."""
    if not _content(words, names):
        return "no content"
    asking = (s.question and _last_word(s) in st.tokens) or (_request(words) and not _standing(words))
    return "question to the assistant" if to_assistant and asking and not _names_something(words, names) else None


def _pieces(said: list[Sentence], carried: list[bool], name: str | None) -> list[tuple[Sentence, Statement]]:
    """Each sentence's statements; a ``carried`` one (a pleasantry kept with ``small_talk``, a short heading
    of plain text: "Hank Snow" before "Hank Snow was a singer.") is kept verbatim in front of the next
    statement (or after the last) instead of standing alone."""
    out: list[tuple[Sentence, Statement]] = []
    carry: list[Sentence] = []
    for s, along in zip(said, carried, strict=True):
        if along:
            carry.append(s)
            continue
        for st in statements(s, name):
            if carry:
                st = Statement(s.msg.text[carry[0].char_start:s.char_start] + st.text, st.tokens)
                carry = []
            out.append((s, st))
    if carry and out:
        s, st = out[-1]
        out[-1] = (s, Statement(st.text + s.msg.text[s.char_end:carry[-1].char_end], st.tokens))
    elif carry:
        out = [(carry[0], Statement(carry[0].msg.text[carry[0].char_start:carry[-1].char_end],
                                    tuple(range(carry[0].start, carry[-1].end))))]
    return out


def _keep(eng: English, out: list[ExtractedMemory], group: list[Sentence], text: str, times: list[TimeExpr]) -> None:
    """Append the memory of ``text`` said in ``group``, typed, and tell each sentence its index."""
    mtype = MemoryType.SEMANTIC
    if any(is_procedural(eng, s) for s in group):
        mtype = MemoryType.PROCEDURAL
    elif times:
        mtype = MemoryType.EPISODIC
    for s in group:
        if s.memory < 0:
            s.memory = len(out)
        s.statements.append((len(out), text))
    out.append(ExtractedMemory(text=text, memory_type=mtype,
                               event_time=times[0].iso if times and mtype == MemoryType.EPISODIC else None,
                               attributed_to=group[0].msg.speaker))


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
    to_assistant = _to_assistant(label, roles, addressed)
    kept = asked = False
    for s in group:
        if is_phatic(s, names):
            continue  # "Merry Christmas Eve!" names a day, and says nothing to keep
        words = _tokens(s)
        asking = to_assistant and (s.question or _request(words))
        asked |= asking
        if s.msg.doc is not None and not _content(words, names):
            continue
        # told to an assistant, a sentence is kept when it is about the speaker or names someone or
        # something ("ugh it's freezing today" is neither: the moment, not the user's world)
        if not to_assistant or _about_speaker(words, asking=asking) \
                or (not asking and _names_something(words, names)):
            kept = True
    if kept:
        return None
    return "question to the assistant" if asked else "not about the user" if to_assistant else "no content"


def _to_assistant(label: str | None, roles: dict[str, str], addressed: bool) -> bool:
    """Said to an assistant: the conversation has one, or an unnamed user speaks."""
    return addressed or (label is not None and role_of(label, roles) == "user" and label.casefold() == "user")


_SAYING: Final = frozenset({"be", "have", "do", "get", "guess", "think", "know", "mean", "see", "go", "say",
                            "want", "need", "hope", "feel", "thank", "help", "try", "ask", "wonder", "let",
                            "tell", "suppose", "bet", "agree", "understand", "remember", "forget", "note"})
"""Verbs of talking about the talk ("I guess", "I mean", "let me know"): no content of their own."""
_VAGUE: Final = frozenset({"thing", "stuff", "lot", "bit", "time", "way", "idea", "ideas", "question", "help",
                           "problem", "sense", "example", "part", "kind", "sort", "one", "fun", "thanks", "luck",
                           "anything", "something", "everything", "nothing", "tip", "tips", "advice", "suggestion",
                           "name", "info", "information", "hand", "moment", "second", "sec", "minute", "lol", "btw"})


def _tokens(s: Sentence) -> list[Token]:
    doc = s.msg.doc
    return [] if doc is None else list(doc[s.start:s.end])


def _content(words: list[Token], names: frozenset[str]) -> bool:
    """A name (other than a speaker's), a number, a content noun, or the speaker doing something
    ("Never thought I would enjoy running so much"): something to remember."""
    about = _about_speaker(words)
    for tok in words:
        low = tok.lower_
        if tok.pos_ == "NUM" or (tok.pos_ in ("PROPN", "ADJ") and tok.text[0].isupper() and not tok.is_sent_start
                                 and low not in names and low not in INTERJECTIONS):
            return True
        if tok.pos_ == "NOUN" and tok.lemma_.lower() not in _VAGUE and low not in INTERJECTIONS:
            return True
        if about and tok.pos_ == "VERB" and tok.lemma_.lower() not in _SAYING:
            return True
    return False


def _names_something(words: list[Token], names: frozenset[str]) -> bool:
    """A proper name other than a speaker's ("Kyoto was before that")."""
    return any(t.pos_ == "PROPN" and t.lower_ not in names and t.lower_ not in INTERJECTIONS for t in words)


def _about_speaker(words: list[Token], *, asking: bool = False) -> bool:
    """"I"/"we" as a subject or "my"/"our" on a noun: the words say something of the speaker; in a
    question or request, not an "I" that only describes what is asked for ("a dessert I could make")."""
    return any((t.lower_ in ("i", "we") and t.dep_ in ("nsubj", "nsubjpass")
                and not (asking and t.head.dep_ == "relcl"))
               or (t.lower_ in ("my", "our") and t.dep_ == "poss") for t in words)


def _last_word(s: Sentence) -> int:
    """The sentence's last token before its closing punctuation (what a question mark ends)."""
    k = s.end - 1
    while k > s.start and not s.msg.alnum[k]:
        k -= 1
    return k


def _standing(words: list[Token]) -> bool:
    """A request that holds from now on ("keep carbs in mind when you suggest meals", "never suggest
    satay"): an instruction to remember, not a task for now."""
    return any(t.lower_ in ("when", "whenever", "if", "always", "never", "anymore") or t.dep_ == "advcl"
               for t in words)


def _request(words: list[Token]) -> bool:
    """An imperative ("suggest a movie", "go on then") or "you" as the subject ("you could remind me")."""
    inside = {t.i for t in words}
    for tok in words:
        if tok.head.i == tok.i or tok.head.i not in inside:
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
    if words[:1] in (["merry"], ["happy"]) and len(words) <= 5 and not {"my", "our", "your", "to"} & set(words):
        return True  # a season's wish: "Merry Christmas Eve!", "Happy St David's Day!"
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
