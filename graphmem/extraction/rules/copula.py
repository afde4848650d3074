"""Self-descriptions with a bare copula: "I'm 34", "I'm Brazilian".

Introductions say age and nationality this way, with no relation word to match: a number right after
"I'm"/"is" (ending the clause or followed by "years old") is an age, a nationality adjective the country
of citizenship.
"""

from __future__ import annotations

from typing import Final

from spacy.lang.en.stop_words import STOP_WORDS

from ..contract import ExtractedTriple
from .arguments import SentenceView, appositive_of, make, subject, subjects
from .resources import Resources
from .words import COUNTRY_OF_DEMONYM

_COPULA: Final = frozenset({"'m", "’m", "am", "is", "'s", "’s"})


def copula_triples(res: Resources, ctx: SentenceView, used: set[int]) -> list[ExtractedTriple]:
    """age and citizenOf of "<X> is <number>" ("Rui and Sara just turned 5") and "<X> is <nationality>"
    outside tokens ``used``."""
    age, citizen = res.ontology.relation_info("age"), res.ontology.relation_info("citizenOf")
    allergic = res.ontology.relation_info("allergicTo")
    msg, e = ctx.sent.msg, ctx.sent.end
    out: list[ExtractedTriple] = []
    for k in range(ctx.sent.start, e - 1):
        lo = msg.lowers[k]
        named = appositive_of(res, ctx, k)  # "I'm Lukas, 38, and ...": the comma after a name says it too
        if (lo not in _COPULA and lo != "turned" and named is None) or k in used or (k + 1) in used:
            continue
        nxt = k + 1
        while nxt < e - 1 and msg.lowers[nxt] in ("actually", "now", "just", "only", "already"):
            nxt += 1  # "she's actually 9 now"
        if age is not None and age.kind == "datatype" and msg.texts[nxt].isdigit() and 0 < int(msg.texts[nxt]) < 130 \
                and _clause_ends(ctx, nxt + 1, ("years", "now", "today")):
            at = k - 1 if lo == "turned" and msg.lowers[k - 1] == "just" else k
            country = _nationality(res, ctx, nxt + 2) if citizen is not None and nxt + 2 < e \
                and msg.lowers[nxt + 1] == "," and _clause_ends(ctx, nxt + 3, ("but",)) else None
            for who in [named] if named else subjects(ctx, at):
                t = make(res, ctx, who, age, msg.texts[nxt], literal=True)
                if t is not None:
                    out.append(t)
                if country is not None and citizen is not None \
                        and (t := make(res, ctx, who, citizen, country)) is not None:
                    out.append(t)  # "I'm 41, Canadian, ..."
        elif allergic is not None and nxt + 1 < e and msg.lowers[nxt + 1] == "intolerant" \
                and msg.lowers[nxt].isalpha() and msg.lowers[nxt] not in STOP_WORDS \
                and (sufferer := subject(ctx, k)) is not None:
            what = ctx.state.entity(msg.lowers[nxt])  # "I'm lactose intolerant"
            what.mentioned = True
            if (t := make(res, ctx, sufferer, allergic, what.key)) is not None:
                out.append(t)
        elif citizen is not None and (country := _nationality(res, ctx, nxt)) is not None \
                and _clause_ends(ctx, nxt + 1, ("but",)):
            national = named or subject(ctx, k)
            t = make(res, ctx, national, citizen, country) if national is not None else None
            if t is not None:
                out.append(t)
    return out


def _nationality(res: Resources, ctx: SentenceView, k: int) -> str | None:
    """The country a nationality word at ``k`` names: its mention ("Brazilian"), or the word as chat often
    writes it, lowercase ("moroccan")."""
    m = ctx.ment_start.get(k)
    if m is not None:
        return m.key if m.kind == "demonym" and m.end == k + 1 else None
    country = COUNTRY_OF_DEMONYM.get(ctx.sent.msg.texts[k])
    if country is None:
        return None
    ent = ctx.state.entity(country)
    ent.set_type(res.lexicon.country_class, 1)
    ent.mentioned = True
    return ent.key


def _clause_ends(ctx: SentenceView, k: int, also: tuple[str, ...]) -> bool:
    """Nothing more of the phrase follows at ``k``: punctuation, "and", the sentence end, or ``also``."""
    msg = ctx.sent.msg
    return k >= ctx.sent.end or not msg.alnum[k] or msg.lowers[k] in ("and", "but", *also)
