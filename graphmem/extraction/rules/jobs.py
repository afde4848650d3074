"""Job statements: "I'm a data engineer at Northwind (in Lisbon)", "I'm engineering manager at Datadog",
"I'm a nurse, night shifts mostly, at the Royal Infirmary", "I joined Stripe as a senior PM", "I started
a new job at Acme Corp".

No relation label is in most of these ("am a ... at"), yet they are the commonest ways people state a job,
so the copula (or "as"), a short title ending in a job word (``JOB_HEADS``: "designer", "PM") and "at" or
"for" an organization make them. Without a job word, "I'm a <words> at <Org>" still needs the article.
"""

from __future__ import annotations

from typing import Final

from spacy.lang.en.stop_words import STOP_WORDS

from ..contract import ExtractedTriple
from .arguments import (
    SentenceView,
    appositive_of,
    employer,
    field_acronym,
    is_job_word,
    make,
    parsed_subject,
    place_after,
    restated,
    speaker_before,
    speaker_is_person,
    subject,
    workplace,
)
from .resources import Resources
from .words import CONJUNCTIONS, JOB_ACRONYMS, PREPOSITIONS

_COPULA: Final = frozenset({"'m", "’m", "am", "is", "'s", "’s", "was", "are", "'re"})
_ARTICLES: Final = frozenset({"a", "an"})
_PAST_ROLE: Final = frozenset({"after", "before", "previously", "formerly", "used", "ex"})
_EMPLOYER_GAP: Final = 6
_MADE: Final = frozenset({"make", "appoint", "name"})
_PROMOTE: Final = frozenset({"promote", "promotion"})
_HIRE: Final = frozenset({"hire", "recruit", "poach", "headhunt", "head-hunt", "take", "bring", "sign", "appoint"})
"""Verbs of "<Org> hired me as <title>": the verb's subject is the employer."""
_TITLE_LABELS: Final = frozenset({"role", "title", "job", "position"})
_STUDENTS: Final = frozenset({"student", "students", "pupil", "undergrad", "undergraduate", "postgrad"})
"""Words allowed between a title and "at <Org>" ("a nurse, night shifts mostly, at the Royal Infirmary")."""


def job_triples(res: Resources, ctx: SentenceView, used: set[int]) -> list[ExtractedTriple]:
    """worksFor and jobTitle of each "<X> is (a) <title> (at <Org>)" and "as a <title>" outside ``used``."""
    works, title = workplace(res), res.ontology.relation_info("jobTitle")
    if works is None:
        return []
    msg, e = ctx.sent.msg, ctx.sent.end
    out: list[ExtractedTriple] = []
    for k in range(ctx.sent.start, e - 1):
        lo = msg.lowers[k]
        named = appositive_of(res, ctx, k)  # "I'm Sofia Ricci, creative director at Hatch & Field"
        promoted = lo == "to" and k > ctx.sent.start and msg.lemmas[k - 1] in _PROMOTE
        # "Avast offered me a growth analyst job and I said yes": an offer the message takes
        offered = lo == "me" and k > ctx.sent.start and msg.lemmas[k - 1] == "offer" and _accepted(ctx, k)
        # "Aker BP made me head of analytics": the employer made the speaker a title; "They promoted me
        # to CFO", "The promotion to category manager is official": the speaker's own promotion; "New
        # role: DevOps engineer": a title after its label
        made = k > ctx.sent.start and speaker_is_person(ctx) and (
            (lo == "me" and msg.lemmas[k - 1] in _MADE) or (lo == ":" and msg.lowers[k - 1] in _TITLE_LABELS)
            or (lo == "to" and k - 2 >= ctx.sent.start and msg.lowers[k - 1] == "me"
                and msg.lemmas[k - 2] == "promote")
            or (promoted and msg.lemmas[k - 1] == "promotion" and _own(ctx, k - 1)) or offered)
        promoted = promoted and not made
        # "I'll be a test automation engineer there from October": a job about to start
        coming = lo == "be" and k > ctx.sent.start and msg.lowers[k - 1] in ("will", "'ll", "’ll")
        still = speaker_is_person(ctx) and restated(ctx, k)  # "Still head of pricing, still drowning"
        if k not in used and made and _an_offer_taken(ctx, k):  # "Duolingo made me an offer I couldn't refuse"
            hirer = _hirer(res, ctx, k, made)
            speaker = ctx.speaker
            employed = make(res, ctx, speaker, works, hirer[0]) if hirer is not None and speaker else None
            if employed is not None:
                out.append(employed)
            continue
        if k in used or not (named or lo in _COPULA or coming or lo == "as" or promoted or made or still):
            continue
        if promoted or made or still:
            lo = "as"  # "got promoted to platform engineering manager at Monzo": a title, as after "as"
        while k + 2 < e and msg.lowers[k + 1] in ("now", "still", "currently", "also"):
            k += 1  # "I'm now support team lead"
        # "I'm the head of security at Kaspi": the speaker's own title, when it is a job word
        definite = msg.lowers[k + 1] == "the" and (offered or (
            lo in _COPULA and k - 1 >= ctx.sent.start and msg.lowers[k - 1] == "i"))
        article = msg.lowers[k + 1] in _ARTICLES or definite
        if not article and lo in ("'s", "’s"):
            continue  # "Maya's manager Tomás": a possessive, not "is"
        owned = named is not None and msg.lowers[k + 1] in ("the", "her", "his", "their", "my", "our")
        first = k + 2 if article or owned else k + 1  # "Dr. Okafor, her cardiologist at ..."

        last = _title_end(res, ctx, first)
        if last is None:
            continue
        if offered and last - 1 > first and msg.lowers[last - 1] in _POSTS:
            last -= 1  # "a clinical fellow post"
        job_word = is_job_word(msg.lowers[last - 1], res)
        if not job_word and (definite or not (article and lo != "as" and named is None)):
            continue
        if definite and _ranked(ctx, first, last):
            continue  # "I'm the best cook in the family"
        last = _of_field(ctx, last) if job_word else last  # "head of data", "director of engineering"
        if offered and last - 1 > first and msg.lowers[last - 1] in _POSTS:
            last -= 1  # "the head of geography job"
        if lo == "as" and any(msg.lowers[j] in _PAST_ROLE for j in range(max(ctx.sent.start, k - 4), k)):
            continue  # "after 3 years as a senior engineer": a former job
        who = ctx.speaker if made or still else named or (speaker_before(ctx, k) if lo == "as" else subject(ctx, k))
        if who is None or (made and not job_word):
            continue
        # the one who made or hired the speaker, before a team or place named after the title ("Paystack
        # made me engineering lead for the mobile team", "BBC Afrique poached me as bureau chief for Benin")
        hirer = _hirer(res, ctx, k, made)
        if hirer is not None:  # "ASML hired me as ...": said already when a relation's label matched the verb
            org = None if hirer[1] in used else hirer[0]
        else:
            org = employer(ctx, last, gap=_EMPLOYER_GAP if job_word else 0)
            if org is None and lo == "as":
                org = _employer_before(ctx, k)
        # a student at a university studies there ("a PhD student at Kyoto University")
        at = (res.ontology.relation_info("studiedAt") or works) if msg.lowers[last - 1] in _STUDENTS else works
        employed = make(res, ctx, who, at, org) if org is not None else None
        if employed is None and not job_word:
            continue
        if employed is not None:
            out.append(employed)
            placed = place_after(res, ctx, works, org, last) if org is not None else None
            if placed is not None:
                out.append(placed)
        if title is not None and title.kind == "datatype":
            words = [msg.texts[j] if msg.lowers[j] in JOB_ACRONYMS or msg.texts[j].isupper() else msg.lowers[j]
                     for j in range(first, last)]
            job = make(res, ctx, who, title, " ".join(words), literal=True)
            if job is not None:
                out.append(job)
    return out


_POSTS: Final = frozenset({"job", "post", "role", "position"})
_ACCEPTED: Final = (("accepted",), ("accept",), ("took", "it"), ("taking", "it"), ("said", "yes"), ("yes",),
                    ("i", "start"), ("starting",), ("joined",), ("start", "date"), ("moving",), ("relocating",))
"""Words after an offer that say the speaker took it ("... and I took it", "Accepted!", "I start in May",
"We're moving in May!")."""


def _accepted(ctx: SentenceView, k: int) -> bool:
    """Whether the message goes on, after the offer at ``k``, to say the speaker took it: an offer
    alone is no job."""
    lowers = ctx.sent.msg.lowers
    rest = [w for w in lowers[k + 1:] if w.isalpha()]
    return any(tuple(rest[n:n + len(words)]) == words for words in _ACCEPTED for n in range(len(rest)))


def _an_offer_taken(ctx: SentenceView, k: int) -> bool:
    """Whether "made me" at ``k`` goes on "(a better) offer" that the message takes ("... I couldn't
    refuse", "... and I took it")."""
    lowers, e = ctx.sent.msg.lowers, ctx.sent.end
    at = next((j for j in range(k + 1, min(k + 4, e)) if lowers[j] == "offer"), None)
    if at is None or lowers[k + 1] not in ("a", "an"):
        return False
    refused = any(lowers[j] == "refuse" and lowers[j - 1] in ("n't", "not", "never") for j in range(at + 1, e))
    return refused or _accepted(ctx, at)


def _own(ctx: SentenceView, k: int) -> bool:
    """Whether the noun at ``k`` ("promotion") is the speaker's: no determiner, or "the", "my"."""
    msg = ctx.sent.msg
    return k == ctx.sent.start or msg.lowers[k - 1] in ("the", "my", "a", "!", ":", ",", "-")


def _hirer(res: Resources, ctx: SentenceView, k: int, made: bool) -> tuple[str, int] | None:
    """The organization that made or hired the speaker, and its verb: the subject of "<Org> made me"
    (``made``, "me" at ``k``), of "<Org> promoted me to" ("to" at ``k``) or of "<Org> hired/recruited/
    poached me as"."""
    msg = ctx.sent.msg
    if made and msg.lowers[k] == "me":
        verb = k - 1
    else:
        verb = k - 2
        hired = msg.lowers[k] == "as" and msg.lemmas[verb].replace("-", "") in _HIRE
        if verb < ctx.sent.start or msg.lowers[k - 1] != "me" or not (hired or (made and msg.lowers[k] == "to")):
            return None
    key = parsed_subject(ctx, verb)
    ent = ctx.state.entities.get(key) if key is not None else None
    works = workplace(res)
    if key is None or ent is None or works is None or key == ctx.speaker:
        return None
    return (key, verb) if ent.type is None or res.lexicon.compatible(ent.type, works.range) else None


def _ranked(ctx: SentenceView, first: int, last: int) -> bool:
    """Whether a word of ``first:last`` ranks the speaker among others ("the best cook", "the only
    nurse"): no title."""
    doc = ctx.sent.msg.doc
    return any(ctx.sent.msg.lowers[j] in ("only", "first", "last") or (doc is not None and doc[j].tag_ == "JJS")
               for j in range(first, last))


def _title_end(res: Resources, ctx: SentenceView, first: int) -> int | None:
    """The end of one to three title words from ``first``: lowercase, a job acronym ("PM"), or a short
    all-capitals field before a lowercase word ("ML team lead", "HR manager"); four when the fourth is
    a job word ("chief information security officer")."""
    msg, e = ctx.sent.msg, ctx.sent.end
    j = first
    while j < e and j - first < 4:
        lo = msg.lowers[j]
        word = lo.isalpha() and lo not in PREPOSITIONS and lo not in CONJUNCTIONS and lo not in STOP_WORDS
        if not word or (msg.caps[j] and lo not in JOB_ACRONYMS and not field_acronym(msg, j, e)):
            break
        j += 1
    if j - first == 4 and not is_job_word(msg.lowers[j - 1], res):
        j -= 1
    return j if j > first else None


def _of_field(ctx: SentenceView, end: int) -> int:
    """The end of a title that goes on with "of" and one or two lowercase words ("head of data")."""
    msg, e = ctx.sent.msg, ctx.sent.end
    if end + 1 >= e or msg.lowers[end] != "of":
        return end
    j = end + 1
    while j < e and j - end <= 2 and msg.lowers[j].isalpha() and not msg.caps[j] \
            and msg.lowers[j] not in STOP_WORDS and msg.lowers[j] not in PREPOSITIONS:
        j += 1
    return j if j > end + 1 else end


def _employer_before(ctx: SentenceView, k: int) -> str | None:
    """The organization of "at/with <Org>" right before "as" at ``k`` ("I'm with Deloitte now as a
    consultant")."""
    msg = ctx.sent.msg
    j = k - 1
    while j > ctx.sent.start and msg.lowers[j] in ("now", "still", "currently", "also", ","):
        j -= 1
    m = ctx.ment_end.get(j + 1)
    if m is None or m.start - 1 < ctx.sent.start:
        return None
    before = m.start - 2 if msg.lowers[m.start - 1] == "the" else m.start - 1
    return m.key if before >= ctx.sent.start and msg.lowers[before] in ("at", "with") else None
