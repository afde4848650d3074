"""The chunk's entity registry: known names, speakers, the heading, mentions, short forms, and the output.

Search links memories through shared entities, so every surface of one thing must land on one key:
known entities and speakers are registered first (matched in any case), mentions found by ``mentions``
become entities here, and short forms ("Snow" after "Hank Snow", "Mel" for the speaker "Melanie") are
folded into their long form as aliases.
"""

from __future__ import annotations

import re
from typing import Final

from spacy.lang.en.stop_words import STOP_WORDS

from ..contract import ExtractedEntity
from . import classes, mentions
from .resources import Resources
from .state import ChunkState, Entity, KnownNames, Mention, Sentence, norm
from .text import Message
from .words import DIRECTION_WORDS, LEGAL_SUFFIXES, NAME_CONNECTORS, PERSON_TITLES

ROLE_SPEAKERS: Final = frozenset({"user", "human", "assistant", "system", "bot", "ai", "tool", "model", "agent"})
"""Speaker labels that are roles, not names: no entity; "I" is whoever introduces themselves."""
_INTRO: Final = (("i", "'m"), ("i", "’m"), ("i", "am"), ("im",), ("i", "m"), ("my", "name", "is"), ("my", "name", "'s"),
                 ("call", "me"), ("this", "is"), ("it", "'s"))

_GREETINGS: Final = frozenset({"hi", "hey", "hello", "yo", "hiya", "morning", "evening", "ok", "okay", "so"})


def register_known(res: Resources, state: ChunkState, messages: list[Message]) -> None:
    """Known entities, then speakers, then the heading of a plain-text chunk, before any mention."""
    ctx = state.context
    for known in ctx.entities:
        ent = state.entity(known.name, words=res.words(known.name))
        ent.existing = known.number
        ent.set_type(classes.known_type(res.ontology, known), 0)
        for alias in known.aliases:
            state.index.setdefault(norm(alias), ent.key)
            ent.aliases.setdefault(alias, None)
    speakers = dict.fromkeys([*ctx.speakers, *(m.speaker for m in messages if m.speaker)])
    for name in speakers:
        if not name or not name.strip() or name.strip().casefold() in ROLE_SPEAKERS:
            continue
        ent = state.entity(name.strip(), words=res.words(name.strip()))
        ent.speaker = True
        ent.set_type(res.lexicon.person_class, 1)
    if messages and messages[0].speaker is None:
        heading = _heading(messages[0])
        if heading:
            _register_heading(res, state, heading)


def _heading(first: Message) -> str:
    """A plain-text chunk's first line when it is a short title ("Hank Snow", "Hello Love (song)")."""
    line_end = first.text.find("\n")
    heading = first.text[:line_end].strip().lstrip("#").strip() if line_end > 0 else ""
    if heading and len(heading) <= 80 and heading[-1] not in ".!?:;," and len(heading.split()) <= 10 \
            and first.text[line_end:].strip():
        return heading
    return ""


def _register_heading(res: Resources, state: ChunkState, heading: str) -> None:
    base = re.sub(r"\s*\([^)]*\)\s*$", "", heading).strip() or heading
    if base.startswith("The ") and len(base) > 4:
        base = base[4:]
    ent = state.entity(base, words=res.words(base))
    ent.heading = ent.mentioned = True
    ent.multi_cap = len(ent.words) > 1
    if ent.multi_cap and "," not in ent.words:
        classes.type_from_words(res, ent, list(ent.words))
    if base != heading:
        ent.aliases.setdefault(heading, None)
        state.index.setdefault(norm(heading), ent.key)
    if "," in base:
        short = base.split(",")[0].strip()
        ent.aliases.setdefault(short, None)
        state.index.setdefault(norm(short), ent.key)
    state.topic = ent.key


def known_table(res: Resources, state: ChunkState) -> KnownNames:
    """Every registered surface as tokens, for ``mentions.known_names``; all-stopword names are left out."""
    table: dict[tuple[str, ...], str] = {}
    for surface, key in state.index.items():
        words = res.words(surface)
        if words and not all(w in STOP_WORDS for w in words):
            table.setdefault(words, key)
    return KnownNames(table, {w[0] for w in table}, max((len(w) for w in table), default=0))


def add_mentions(res: Resources, state: ChunkState, sent: Sentence) -> None:
    """Register the sentence's mentions as entities; sentence-initial common words wait as weak ones."""
    msg = sent.msg
    for start, end, _prio, kind, name in mentions.find(res.english, state.known, msg, sent.start, sent.end):
        if kind == "weak":
            state.weak.append((sent, start, end))
            continue
        ent = _entity_for(res, state, msg, start, end, kind, name)
        if ent is None:
            continue
        ent.mentioned = True
        sent.mentions.append(Mention(start, end, ent.key, kind))


def _entity_for(res: Resources, state: ChunkState, msg: Message, start: int, end: int, kind: str,
                name: str | None) -> Entity | None:
    if kind == "known" and name is not None:
        ent = state.entities[name]
        surface = " ".join(msg.span_text(start, end).split())
        if norm(surface) not in state.index:
            ent.aliases.setdefault(surface, None)
        return ent
    text = name if name is not None else " ".join(msg.span_text(start, end).split())
    text = text.strip(" ,;:")
    if re.search(r"(?:^|\s)[A-Z]\.$", text):
        text = text[:-1]  # "Albert I." at the end of a sentence
    if not text or not any(ch.isalnum() for ch in text):
        return None
    if kind == "demonym":
        ent = state.entity(text)
        ent.aliases.setdefault(msg.texts[start], None)
        state.index.setdefault(norm(msg.texts[start]), ent.key)
        ent.set_type(res.lexicon.country_class, 2)
        return ent
    if kind == "person":
        return _titled(res, state, msg, start, end, text)
    full = text
    if text.startswith("The ") and len(text) > 4 and kind in ("cap", "quote"):
        text = text[4:]  # "The Rank Organisation" and "Rank Organisation" are one name
    ent = state.entity(text, words=tuple(msg.lowers[start:end]))
    if full != text:
        ent.aliases.setdefault(full, None)
    if kind == "cap" and end - start > 2:
        _nested(state, msg, start, end)
    if kind == "cap":
        if end - start > 1:
            ent.multi_cap = True
            classes.type_from_words(res, ent, msg.lowers[start:end])
        else:
            ent.single = True
    return ent


def _titled(res: Resources, state: ChunkState, msg: Message, start: int, end: int, text: str) -> Entity:
    """"Dr Hale" and "Hale" are one person: whichever came first is the name, the other its alias."""
    k = start
    while k < end - 1 and msg.lowers[k] in PERSON_TITLES:
        k += 1
    bare = " ".join(msg.span_text(k, end).split())
    known = state.index.get(norm(bare))
    ent = state.entities[known] if known is not None else state.entity(text, words=tuple(msg.lowers[start:end]))
    for surface in (text, bare):
        if norm(surface) != ent.key:
            ent.aliases.setdefault(surface, None)
        state.index.setdefault(norm(surface), ent.key)
    # "Dr Hale" is a doctor where the ontology has a class for one, else a person
    word = _TITLE_WORDS.get(msg.lowers[start])
    ent.set_type((res.lexicon.class_words.get((word,)) if word else None) or res.lexicon.person_class, 1)
    return ent


_TITLE_WORDS: Final = {"dr": "doctor", "dr.": "doctor", "prof": "professor", "prof.": "professor"}


def _nested(state: ChunkState, msg: Message, start: int, end: int) -> None:
    """"Philbrook Museum of Tulsa" also mentions Tulsa; "Treaty on European Union", the European Union."""
    for k in range(end - 2, start, -1):
        if msg.lowers[k] in ("of", "on") and msg.caps[k + 1]:
            tail = " ".join(msg.span_text(k + 1, end).split())
            if tail.startswith("The "):
                tail = tail[4:]
            inner = state.entity(tail, words=tuple(msg.lowers[k + 1:end]))
            inner.mentioned = True
            state.nested.add(inner.key)
            return


def introductions(res: Resources, state: ChunkState) -> None:
    """Who a role speaker ("user") is, from "I'm Maya" or "my name is Maya Lopez": that person is "I"
    from then on. Without one, "I" of a role speaker is no entity at all."""
    for sent in state.sentences:
        label = sent.msg.speaker
        if label is None or sent.question:
            continue
        if label.strip().casefold() not in ROLE_SPEAKERS:
            _full_name(res, state, sent, label)
            continue
        lowers, s = sent.msg.lowers, sent.start
        starts = {m.start: m for m in sent.mentions}
        here = [m for m in sent.mentions if m.end < sent.end and lowers[m.end] == "here"
                and all(not sent.msg.alnum[j] or lowers[j] in _GREETINGS for j in range(s, m.start))]
        for named in here:  # "hi, Mateus here"
            ent = state.entities.get(named.key)
            if ent is not None and (ent.type is None or res.lexicon.is_person(ent.type)):
                ent.set_type(res.lexicon.person_class, 1)
                state.speakers.setdefault(label, named.key)
        for k in range(s, sent.end):
            for intro in _INTRO:
                n = len(intro)
                if tuple(lowers[k:k + n]) != intro or (k > s and sent.msg.alnum[k - 1] and intro[0] != "i"):
                    continue
                m = starts.get(k + n)
                if m is None or m.kind not in ("cap", "person", "known"):
                    continue
                ent = state.entities.get(m.key)
                if ent is None or not (ent.type is None or res.lexicon.is_person(ent.type)):
                    continue
                ent.set_type(res.lexicon.person_class, 1)
                state.speakers.setdefault(label, m.key)
    _scope_user(res, state)


def _scope_user(res: Resources, state: ChunkState) -> None:
    """"I" of an unnamed user turn is the scope's user: the person it introduced itself as, with the
    scope's user id as another name (so a later add finds the same node), else an entity of that id."""
    user = state.context.user
    if not user or not user.strip():
        return
    labels = {s.msg.speaker for s in state.sentences if s.msg.speaker is not None}
    label = next((x for x in labels if x.strip().casefold() == "user"), None)
    if label is None:
        return
    key = state.speakers.get(label)
    if key is not None:
        if norm(user) != key:
            state.entities[key].aliases.setdefault(user, None)
        return
    ent = state.entity(user.strip(), words=res.words(user.strip()))
    ent.speaker = True
    ent.set_type(res.lexicon.person_class, 1)
    state.speakers[label] = ent.key


def _full_name(res: Resources, state: ChunkState, sent: Sentence, label: str) -> None:
    """"Dmitri: My name's Dmitri Volkov": the speaker's full name is another name of the speaker."""
    me = state.index.get(norm(label))
    if me is None:
        return
    lowers, first = sent.msg.lowers, norm(label).split()[0]
    starts = {m.start: m for m in sent.mentions}
    for k in range(sent.start, sent.end):
        for intro in _INTRO:
            m = starts.get(k + len(intro))
            if tuple(lowers[k:k + len(intro)]) != intro or m is None or m.key == me:
                continue
            ent = state.entities.get(m.key)
            if ent is not None and len(ent.words) > 1 and ent.words[0] == first and ent.type is None:
                state.entities[me].aliases.setdefault(ent.name, None)
                state.index[norm(ent.name)] = me


def merge_short_forms(res: Resources, state: ChunkState) -> None:
    """"Snow" after "Hank Snow", "Publix" after "Publix Super Markets, Inc.", "Mel" for "Melanie"."""
    ents = list(state.entities.values())
    longs = [x for x in ents if x.multi_cap or (x.existing is not None and len(x.words) > 1)
             or (x.heading and len(x.words) > 1)]
    for sent, start, end in state.weak:
        word = sent.msg.lowers[start]
        owners = [x for x in longs if _owns(res, x, word)]
        if len(owners) == 1:
            owners[0].aliases.setdefault(sent.msg.texts[start], None)
            sent.mentions.append(Mention(start, end, owners[0].key, "short"))
            sent.mentions.sort(key=lambda m: m.start)
    people = [x for x in ents if x.speaker or (res.lexicon.is_person(x.type) and len(x.words) == 1)]
    remap: dict[str, str] = {}
    for short in ents:
        if not short.single or short.existing is not None or short.speaker or short.heading:
            continue
        word = short.key
        owners = [x for x in longs if x is not short and _owns(res, x, word)]
        if len(owners) != 1:
            owners = [x for x in people if x is not short and len(word) >= 3 and x.key.startswith(word)
                      and x.key != word and " " not in x.key]
        if len(owners) == 1:
            remap[short.key] = owners[0].key
    if remap:
        _fold(state, remap)


def _fold(state: ChunkState, remap: dict[str, str]) -> None:
    """Merge each short entity into its owner: aliases, order, type, index and mentions follow."""
    for old, new in remap.items():
        target = state.entities[new]
        gone = state.entities.pop(old)
        target.aliases.setdefault(gone.name, None)
        target.order = min(target.order, gone.order)
        if target.type is None:
            target.set_type(gone.type, max(gone.rank, 2))
        for surface, key in list(state.index.items()):
            if key == old:
                state.index[surface] = new
    for sent in state.sentences:
        for m in sent.mentions:
            m.key = remap.get(m.key, m.key)
    state.nested = {remap.get(k, k) for k in state.nested}


def _owns(res: Resources, long: Entity, word: str) -> bool:
    """Whether ``word`` can be a short form of ``long``: a person's or heading's first or last name, a
    company's first word."""
    words = [w for w in long.words if w != "."]
    if len(words) < 2 or ("," in words and words[-1] not in LEGAL_SUFFIXES):
        return False
    if words[-1] in LEGAL_SUFFIXES:
        return words[0] == word
    is_person = res.lexicon.is_person
    if long.type is not None and not is_person(long.type):
        return False
    if not 2 <= len(words) <= 4 or words[0] in DIRECTION_WORDS or any(w in NAME_CONNECTORS for w in words):
        return False
    if not all(w[:1].isalpha() for w in words):
        return False
    return words[-1] == word or (words[0] == word and len(words[0]) > 2 and (long.heading or is_person(long.type)))


def output(state: ChunkState) -> list[ExtractedEntity]:
    """The entities worth returning, in order of first sight: mentioned, the heading, triple endpoints
    and nested names (a noun phrase only when a triple uses it)."""
    used = {m.key for sent in state.sentences for m in sent.mentions if m.kind != "np"}
    keep = [x for x in state.entities.values()
            if x.key in used or x.heading or x.key in state.endpoints or x.key in state.nested]
    keep.sort(key=lambda x: x.order)
    out: list[ExtractedEntity] = []
    for x in keep:
        own = " ".join(x.name.casefold().split())
        folded = {" ".join(a.casefold().split()): a for a in reversed(x.aliases)}
        aliases = [a for f, a in reversed(folded.items()) if f != own]
        out.append(ExtractedEntity(name=x.name, type=x.type, aliases=aliases, existing=x.existing))
    return out
