"""Job statements: "I'm a data engineer at Northwind (in Lisbon)" says a job title and an employer.

No relation label is in such a sentence ("am a ... at"), yet it is the commonest way people state a job,
so the copula, an indefinite article, a short lowercase title and "at" or "for" an organization make it.
"""

from __future__ import annotations

from typing import Final

from spacy.lang.en.stop_words import STOP_WORDS

from ..schema import ExtractedTriple
from .arguments import SentenceView, make, subject
from .resources import Resources
from .words import CONJUNCTIONS, PREPOSITIONS

_COPULA: Final = frozenset({"'m", "’m", "am", "is", "'s", "’s", "was", "are", "'re"})


def job_triples(res: Resources, ctx: SentenceView, used: set[int]) -> list[ExtractedTriple]:
    """worksFor and jobTitle of each "<X> is a <title> at <Org>" outside tokens ``used`` already."""
    from .triples import place_after

    works, title = res.ontology.relation_info("worksFor"), res.ontology.relation_info("jobTitle")
    if works is None:
        return []
    msg, e = ctx.sent.msg, ctx.sent.end
    out: list[ExtractedTriple] = []
    for k in range(ctx.sent.start, e - 3):
        if msg.lowers[k] not in _COPULA or msg.lowers[k + 1] not in ("a", "an") or k in used:
            continue
        j = k + 2
        while j < e and j - k - 2 < 3 and msg.lowers[j].isalpha() and not msg.caps[j] \
                and msg.lowers[j] not in PREPOSITIONS and msg.lowers[j] not in CONJUNCTIONS \
                and msg.lowers[j] not in STOP_WORDS:
            j += 1
        if j == k + 2 or j + 1 >= e or msg.lowers[j] not in ("at", "for", "with"):
            continue
        org_at = j + 2 if msg.lowers[j + 1] == "the" else j + 1
        who, org = subject(ctx, k), ctx.ment_start.get(org_at)
        if who is None or org is None:
            continue
        employed = make(res, ctx, who, works, org.key)
        if employed is None:
            continue
        out.append(employed)
        if (placed := place_after(res, ctx, works, org.key, org_at)) is not None:
            out.append(placed)
        if title is not None and title.kind == "datatype":
            job = make(res, ctx, who, title, " ".join(msg.lowers[k + 2:j]), literal=True)
            if job is not None:
                out.append(job)
    return out
