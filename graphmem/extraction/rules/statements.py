"""A sentence as short self-contained statements: one per clause, in the third person.

``granularity="statement"`` (opt-in): "I live in Lisbon and I work at Northwind." said by Maya becomes
"Maya lives in Lisbon." and "Maya works at Northwind.", what a reader would note; a clause alone loses
the context a whole sentence keeps, which retrieval pays for (the docs' Benchmarks measure it). The parse decides,
never a word list:
clauses are a verb's coordinated verbs (``conj``, borrowing the subject they share) and comma-joined
clauses with their own subject ("I'm 34, I was born in Curitiba"); a comma-set apposition of a name
("Brightleaf, a solar startup based in Munich,") is a statement of its own. First-person singular words
become the speaker's name and the verb agrees; with no name known they stay as said. "She" and "he" take
the name of the person they stand for when the extractor knows it (``Sentence.pronouns``). Unparsed text
(long documents, an assistant's turns) stays one verbatim statement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from spacy.tokens import Token

    from .state import Sentence

_CLAUSE_POS: Final = frozenset({"VERB", "AUX"})
_SUBJECTS: Final = frozenset({"nsubj", "nsubjpass", "expl"})
_THIRD: Final = {"am": "is", "'m": "is", "’m": "is", "are": "is", "have": "has", "'ve": "has", "’ve": "has",
                 "do": "does", "go": "goes"}
_CLITIC: Final = {("'ll", "MD"): "will", ("’ll", "MD"): "will", ("'d", "MD"): "would", ("’d", "MD"): "would",
                  ("'d", "VBD"): "had", ("’d", "VBD"): "had"}
_EDGE: Final = frozenset({"cc", "punct"})


@dataclass(frozen=True)
class Statement:
    text: str
    tokens: tuple[int, ...]
    """The message's tokens it keeps (for its content and the times said inside it)."""


def statements(sent: Sentence, name: str | None) -> list[Statement]:
    """The sentence's statements in order; ``name`` replaces "I", "me", "my" (``None``: kept)."""
    msg = sent.msg
    if msg.doc is None:
        return [_verbatim(sent)]
    toks = list(msg.doc[sent.start:sent.end])
    heads = [t for t in toks if _is_clause(t, sent)]
    appositions = [t for t in toks if _is_apposition(t, sent)]
    if len(heads) == 1 and not appositions and not sent.pronouns and \
            (name is None or not any(_first_person(t) for t in toks)):
        return [_verbatim(sent)]  # one clause, nothing to rewrite: as said
    cut = {t.i for t in heads} | {t.i for t in appositions}
    out: list[Statement] = []
    for head in heads:
        words = [t for t in head.subtree if _inside(t, head, cut, sent)]
        if not any(t.dep_ in _SUBJECTS for t in words):
            words = sorted([*_borrowed_subject(head, sent), *words], key=lambda t: t.i)
        words = [t for t in words if not any(a.i <= t.i <= _last(a) for a in appositions)]
        if (piece := _render(words, name, sent.pronouns)) is not None:
            out.append(piece)
    for app in appositions:
        subject = [t for t in app.head.subtree if t == app.head or (t.i < app.i and t.dep_ in ("compound", "flat"))]
        said = [t for t in app.subtree if t.i <= _last(app)]
        if (piece := _render([*subject, *said], name, sent.pronouns, copula=said[0].i)) is not None:
            out.append(piece)
    out.sort(key=lambda s: s.tokens[0])
    return out or [_verbatim(sent)]


def _verbatim(sent: Sentence) -> Statement:
    return Statement(sent.text, tuple(range(sent.start, sent.end)))


def _in(t: Token, sent: Sentence) -> bool:
    return sent.start <= t.i < sent.end


def _is_clause(t: Token, sent: Sentence) -> bool:
    """The sentence's root, a coordinated verb, or a comma-joined clause with a subject of its own."""
    if t.dep_ == "ROOT" or not _in(t.head, sent):
        return True
    if t.pos_ not in _CLAUSE_POS:
        return False
    if t.dep_ == "conj" and t.head.pos_ in _CLAUSE_POS:
        return True
    if t.dep_ in ("ccomp", "parataxis") and t.head.pos_ in _CLAUSE_POS and any(c.dep_ in _SUBJECTS for c in t.children):
        lo, hi = sorted((t.i, t.head.i))
        return any(w.text in (",", ";", "—", "-") for w in t.doc[lo:hi])
    return False


def _is_apposition(t: Token, sent: Sentence) -> bool:
    """A noun set off by commas after a name: "Brightleaf, a solar startup,"; not "my brother Jonas"."""
    if t.dep_ != "appos" or t.pos_ not in ("NOUN", "PROPN") or t.head.pos_ != "PROPN" or not _in(t.head, sent):
        return False
    first = min(w.i for w in t.subtree)
    return first > 0 and t.doc[first - 1].text == "," and any(w.dep_ == "det" for w in t.children)


def _last(t: Token) -> int:
    """The last token of an apposition, before the comma that closes it."""
    return max(w.i for w in t.subtree)


def _inside(t: Token, head: Token, cut: set[int], sent: Sentence) -> bool:
    """Whether ``t`` belongs to ``head``'s own clause: not under another clause head nor apposition."""
    if not _in(t, sent):
        return False
    node = t
    while node.i != head.i:
        if node.i in cut:
            return False
        node = node.head
    return True


def _borrowed_subject(head: Token, sent: Sentence) -> list[Token]:
    """The subject a coordinated verb shares with the verb it is joined to ("I live here and work there")."""
    node = head
    while node.dep_ == "conj" and _in(node.head, sent) and node.head.i != node.i:
        node = node.head
        subj = [c for c in node.children if c.dep_ in _SUBJECTS]
        if subj:
            return [w for w in subj[0].subtree if _in(w, sent)]
    return []


def _render(words: list[Token], name: str | None, pronouns: dict[int, str], copula: int = -1) -> Statement | None:
    """The words as a sentence: edges trimmed, first person made third, "she"/"he" named (``pronouns``),
    a capital and a full stop. ``copula`` puts "is" before that token (an apposition's "X is a Y")."""
    words = [t for k, t in enumerate(words) if not (t.is_punct and _beside_gap(words, k))]
    while words and (words[0].dep_ in _EDGE or words[0].is_punct):
        words = words[1:]
    while words and (words[-1].dep_ in _EDGE or words[-1].is_punct):
        words = words[:-1]
    if not any(t.is_alpha or t.like_num for t in words):
        return None
    agree = _agreeing_verbs(words) if name else set()
    parts: list[str] = []
    for k, t in enumerate(words):
        if t.i == copula:
            parts.append(" is")
        word = _word(t, name, agree) if t.i not in pronouns else \
            f"{pronouns[t.i]}'s" if t.tag_ == "PRP$" else pronouns[t.i]
        if parts and (k == 0 or words[k - 1].i != t.i - 1 or words[k - 1].whitespace_ or
                      (word != t.text and word[0].isalnum() and not t.text[0].isalnum())):
            word = " " + word
        parts.append(word)
    body = "".join(parts).strip()
    body = body[0].upper() + body[1:]
    after = words[-1].nbor(1).text if words[-1].i + 1 < len(words[-1].doc) else ""
    end = "" if body[-1] in ".!?" else after if after in ("?", "!") else "."
    return Statement(body + end, tuple(t.i for t in words))


def _beside_gap(words: list[Token], k: int) -> bool:
    """Whether words were cut out next to ``words[k]`` (a comma left by "Brightleaf, a startup,")."""
    return (k > 0 and words[k - 1].i != words[k].i - 1) or (k + 1 < len(words) and words[k + 1].i != words[k].i + 1)


def _agreeing_verbs(words: list[Token]) -> set[int]:
    """The finite present-tense verb of each "I" subject (its first auxiliary, else the verb)."""
    out: set[int] = set()
    for t in words:
        if t.lower_ == "i" and t.dep_ in ("nsubj", "nsubjpass"):
            verb = t.head
            aux = sorted((c for c in verb.children if c.dep_ in ("aux", "auxpass") and c.i > t.i), key=lambda c: c.i)
            finite = aux[0] if aux else verb
            if finite.tag_ == "VBP":
                out.add(finite.i)
    return out


def _first_person(t: Token) -> bool:
    return t.lower_ == "i" or (t.lower_ in ("me", "myself", "my", "mine") and t.pos_ == "PRON")


def _word(t: Token, name: str | None, agree: set[int]) -> str:
    """The word as the statement says it: "I" -> the name, "my" -> the name's, the verb agreeing."""
    low = t.lower_
    if name is None:
        return t.text
    if _first_person(t):
        return f"{name}'s" if low in ("my", "mine") else name
    return third_singular(low) if t.i in agree else _CLITIC.get((low, t.tag_), t.text)


def third_singular(verb: str) -> str:
    """"live" -> "lives", "watch" -> "watches", "study" -> "studies", "have" -> "has"."""
    if verb in _THIRD:
        return _THIRD[verb]
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(verb) > 2 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"
