"""A speaker correcting what they said a moment ago: "Sorry, actually it's Porto, not Lisbon", "I mean
Intertrode", "Oops, I meant hazelnuts", "frontend not backend", "no wait, I moved to Nagoya".

What was corrected must not be stored beside the correction: a retracted value would otherwise stand as
a second current fact (or, for a functional relation, could even win on its date). A correcting
sentence either states the new fact itself (then it replaces the speaker's earlier value of the same
subject and relation) or only names the new value (then it takes the place of the old value in the
speaker's latest fact that had it, or simply their latest fact).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ..contract import ExtractedTriple
from .arguments import SentenceView, noun_phrase
from .resources import Resources
from .state import Sentence, norm

_CUES: Final = frozenset({"actually", "sorry", "wait", "oops", "typo", "mean", "meant", "correction", "scratch",
                          "instead", "rather", "oh", "no"})
_AFTER: Final = ("mean", "meant", "'s", "’s", "is", "it's")


@dataclass
class Said:
    speaker: str | None
    triple: ExtractedTriple
    sentence: Sentence


def is_correction(sent: Sentence) -> bool:
    lowers = sent.msg.lowers[sent.start:sent.end]
    return any(lo in _CUES for lo in lowers) and ("not" in lowers or any(
        lo in ("actually", "mean", "meant", "wait", "oops", "typo", "scratch", "sorry") for lo in lowers))


def apply(res: Resources, ctx: SentenceView, new: list[ExtractedTriple], said: list[Said]) -> list[ExtractedTriple]:
    """Update ``said`` (the chunk's facts so far, in order) for a correcting sentence; return the
    sentence's own triples to add (possibly the corrected ones)."""
    speaker = ctx.sent.msg.speaker
    mine = [i for i, s in enumerate(said) if s.speaker == speaker]
    if new:
        for t in new:
            for i in mine:
                old = said[i].triple
                if old.source == t.source and old.relation == t.relation and old.target != t.target:
                    said[i] = Said(speaker, _retracted, ctx.sent)
        said[:] = [s for s in said if s.triple is not _retracted]
        return new
    value, old_value = _new_and_old(res, ctx)
    if value is None:
        return []
    for i in reversed(mine):
        old = said[i].triple
        if old_value is None or norm(old_value) in norm(old.target).split() or norm(old.target) == norm(old_value):
            target = _replace(old.target, old_value, value)
            said[i] = Said(speaker, old.model_copy(update={"target": target}), ctx.sent)  # where it is said now
            was, now = ctx.state.index.get(norm(old.target)), ctx.state.index.get(norm(target))
            if was is not None and now is not None and now != was:  # Porto takes the type Lisbon had
                ctx.state.entities[now].set_type(ctx.state.entities[was].type, 2)
            return []
    return []


_retracted: Final = ExtractedTriple(source="", relation="", target="")


def _new_and_old(res: Resources, ctx: SentenceView) -> tuple[str | None, str | None]:
    """The value a correction gives and, if it says so ("X, not Y"), the one it withdraws."""
    msg, s, e = ctx.sent.msg, ctx.sent.start, ctx.sent.end
    lowers = msg.lowers
    for k in range(s, e - 1):
        if lowers[k] == "not" and k > s:
            before = k - 1 if lowers[k - 1] != "," else k - 2
            value, old = _value_at(res, ctx, before, end=True), _value_at(res, ctx, k + 1, register=False)
            if value is not None and old is not None:
                return value, old
    for k in range(s, e - 1):
        if lowers[k] in _AFTER:
            value = _value_at(res, ctx, k + 1)
            if value is not None:
                return value, None
    return None, None


def _value_at(res: Resources, ctx: SentenceView, k: int, *, end: bool = False, register: bool = True) -> str | None:
    """The name of the entity at (or, with ``end``, ending at) token ``k``, or a lowercase word there
    (registered as an entity if a noun phrase starts there, unless it is only the value withdrawn)."""
    msg = ctx.sent.msg
    if not ctx.sent.start <= k < ctx.sent.end:
        return None
    m = ctx.ment_end.get(k + 1) if end else ctx.ment_start.get(k)
    if m is not None:
        ctx.endpoints.add(m.key)
        return ctx.state.entities[m.key].name
    if not msg.alnum[k]:
        return None
    if register and not end and (key := noun_phrase(res, ctx, k)) is not None:
        ctx.endpoints.add(key)
        return ctx.state.entities[key].name
    return msg.lowers[k] if msg.lowers[k].isalpha() else None


def _replace(target: str, old: str | None, new: str) -> str:
    """``new`` for ``old`` inside a value ("backend developer" -> "frontend developer"), else ``new``."""
    if old is None or norm(target) == norm(old):
        return new
    words = target.split()
    return " ".join(new if norm(w) == norm(old) else w for w in words)
