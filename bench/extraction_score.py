"""Scoring for ``bench/extraction.py``: stored triples and memories against the hand-written gold set.

Pure functions over plain data (what a run stored, as JSON), so a baseline commit's run is scored by
this checkout's rules, and ``tests/test_bench_extraction.py`` can check the arithmetic on known input.

Triples: a stored fact matches a gold triple when the relations are the same after folding an
``owl:inverseOf`` pair onto one direction (``Acme employs Ben`` is ``Ben worksFor Acme``) and a
symmetric relation may match with its ends swapped; sub-properties are *not* merged (gold ``worksFor``
against stored ``memberOf`` is a miss). A superseded ``livesIn`` (closed by a later value) is read as
``livedIn``; other closed facts are no longer claimed and are left out. Endpoints compare after
:func:`norm_name`, against the stored entity's name and its aliases and the gold entity's aliases.
Memories: :func:`memory_tokens` on both sides, Dice overlap >= ``MEMORY_THRESHOLD``, one-to-one greedy
by overlap. Matching is one-to-one for triples too, so a duplicate fact cannot count twice.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MEMORY_THRESHOLD = 0.5
PAST_OF = {"livesIn": "livedIn"}

STOPWORDS = frozenset("""
a an the and or but so to of in on at for from with by as is are was were be been being am i i'm im me my
mine we us our you your he him his she her they them their it its this that these those there here
has have had do does did will would can could should shall may might must just really very also now
then too not no yes oh hi hey ok okay about into over up out one s m t d ll re ve
""".split())


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def norm_name(name: str) -> str:
    """Case, accents, punctuation, whitespace, a leading "the" and a plural "s" on the last word aside:
    "Dr. Hale" is "dr hale", "peanut" is "peanuts", "The Atlas migration" is "atlas migration"."""
    words = re.findall(r"[0-9a-z]+", _fold(name).replace("'s ", " ").replace("'", ""))
    if len(words) > 1 and words[0] == "the":
        words = words[1:]
    if words and len(words[-1]) > 3 and words[-1].endswith("s") and not words[-1].endswith("ss"):
        words[-1] = words[-1][:-1]
    return " ".join(words)


def norm_value(value: Any) -> str:
    """A literal: an ISO timestamp compares as its date, everything else as :func:`norm_name`."""
    text = str(value).strip()
    m = re.fullmatch(r"(\d{4}-\d{2}-\d{2})(?:[T ].*)?", text)
    return m.group(1) if m else norm_name(text)


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def memory_tokens(text: str) -> frozenset[str]:
    """Content words, crudely stemmed: what two phrasings of one memory share."""
    words = re.findall(r"[0-9a-z]+", _fold(text).replace("'", ""))
    return frozenset(_stem(w) for w in words if w not in STOPWORDS and len(w) > 1)


def dice(a: frozenset[str], b: frozenset[str]) -> float:
    return 2 * len(a & b) / (len(a) + len(b)) if a or b else 0.0


@dataclass(frozen=True)
class Relations:
    """What scoring needs of the ontology: each relation's inverse and whether it is symmetric (local names)."""

    inverse: Mapping[str, str]
    symmetric: frozenset[str]
    names: frozenset[str] = frozenset()

    def canonical(self, relation: str) -> tuple[str, bool]:
        """One name per inverse pair, and whether the ends swap to read it that way."""
        inv = self.inverse.get(relation)
        return (inv, True) if inv is not None and inv < relation else (relation, False)


def relations_of(ontology: Any) -> Relations:
    """From a :class:`graphmem.ontology.Ontology`: inverse pairs both ways and the symmetric relations."""
    inverse: dict[str, str] = {}
    symmetric = set()
    for info in ontology.relations.values():
        if info.inverse is not None:
            other = ontology.relations[info.inverse].name
            inverse[info.name], inverse[other] = other, info.name
        if info.symmetric:
            symmetric.add(info.name)
    return Relations(inverse, frozenset(symmetric), frozenset(info.name for info in ontology.relations.values()))


@dataclass(frozen=True)
class Fact:
    """A stored fact as scoring sees it: ends are sets of normalised names (name + aliases) or a value."""

    relation: str
    source: frozenset[str]
    target: frozenset[str]
    text: str


def stored_facts(run: Mapping[str, Any], rels: Relations) -> list[Fact]:
    """The facts one conversation left in the store, ends resolved to names and aliases."""
    keys: dict[str, frozenset[str]] = {}
    names: dict[str, str] = {}
    for e in run.get("entities", []):
        keys[e["id"]] = frozenset(norm_name(n) for n in [e["name"], *e.get("aliases", [])])
        names[e["id"]] = e["name"]
    out: list[Fact] = []
    for f in run.get("facts", []):
        rel = str(f["relation_name"]).split(":")[-1]
        if f.get("valid_to") is not None:
            if rel not in PAST_OF:
                continue
            rel = PAST_OF[rel]
        src_id = f["source"]["id"]
        source = keys.get(src_id, frozenset({norm_name(f["source"].get("name") or "")}))
        if f.get("target") is not None:
            target = keys.get(f["target"]["id"], frozenset({norm_name(f["target"].get("name") or "")}))
            shown = names.get(f["target"]["id"], f["target"].get("name"))
        else:
            target, shown = frozenset({norm_value(f.get("value"))}), f.get("value")
        canon, swap = rels.canonical(rel)
        text = f"{names.get(src_id, f['source'].get('name'))} {rel} {shown}"
        out.append(Fact(canon, target, source, text) if swap else Fact(canon, source, target, text))
    return out


USER = "@user"
"""A gold endpoint for the scope's user when the conversation never names the speaker."""


def scope_user(conversation_id: str) -> str:
    """The ``user_id`` the benchmark adds a conversation under: what ``@user`` stands for."""
    return f"gold-{conversation_id}"


def _gold_keys(name: str, aliases: Mapping[str, Sequence[str]]) -> frozenset[str]:
    return frozenset({norm_name(name), norm_value(name), *(norm_name(a) for a in aliases.get(name, ()))})


def _triple_matches(gold: tuple[str, frozenset[str], frozenset[str]], fact: Fact, rels: Relations) -> bool:
    rel, src, tgt = gold
    if fact.relation != rel:
        return False
    if src & fact.source and tgt & fact.target:
        return True
    return rel in rels.symmetric and bool(src & fact.target and tgt & fact.source)


@dataclass
class Count:
    tp: int = 0
    gold: int = 0
    stored: int = 0

    def add(self, other: Count) -> None:
        self.tp, self.gold, self.stored = self.tp + other.tp, self.gold + other.gold, self.stored + other.stored

    def prf(self) -> dict[str, float | int]:
        p = self.tp / self.stored if self.stored else (1.0 if not self.gold else 0.0)
        r = self.tp / self.gold if self.gold else (1.0 if not self.stored else 0.0)
        f = 2 * p * r / (p + r) if p + r else 0.0
        return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f, 4),
                "tp": self.tp, "gold": self.gold, "stored": self.stored}


def score_triples(gold: Mapping[str, Any], run: Mapping[str, Any], rels: Relations) -> tuple[Count, dict[str, Any]]:
    aliases: Mapping[str, Sequence[str]] = gold.get("aliases", {})
    facts = stored_facts(run, rels)
    used = [False] * len(facts)
    missed: list[str] = []
    user = scope_user(gold["id"])
    for s, r, t in gold["triples"]:
        s, t = (user if s == USER else s), (user if t == USER else t)
        canon, swap = rels.canonical(r)
        src, tgt = _gold_keys(s, aliases), _gold_keys(t, aliases)
        key = (canon, tgt, src) if swap else (canon, src, tgt)
        hit = next((i for i, f in enumerate(facts) if not used[i] and _triple_matches(key, f, rels)), None)
        if hit is None:
            missed.append(f"{s} {r} {t}")
        else:
            used[hit] = True
    extra = [f.text for f, u in zip(facts, used, strict=True) if not u]
    count = Count(tp=len(gold["triples"]) - len(missed), gold=len(gold["triples"]), stored=len(facts))
    return count, {"missed": missed, "extra": extra}


def score_memories(gold: Sequence[str], stored: Sequence[Mapping[str, Any]],
                   threshold: float = MEMORY_THRESHOLD) -> tuple[Count, dict[str, Any]]:
    """A stored memory carries its speaker's name (``actor_id``) as context: "I'm allergic to peanuts"
    said by Maya is "Maya is allergic to peanuts"."""
    gold_tokens = [memory_tokens(g) for g in gold]
    stored_tokens = [memory_tokens(f"{m.get('actor_id') or ''} {m['memory']}") for m in stored]
    pairs = sorted(((dice(g, s), i, j) for i, g in enumerate(gold_tokens) for j, s in enumerate(stored_tokens)),
                   key=lambda p: (-p[0], p[1], p[2]))
    gi: set[int] = set()
    sj: set[int] = set()
    for sim, i, j in pairs:
        if sim < threshold:
            break
        if i not in gi and j not in sj:
            gi.add(i)
            sj.add(j)
    count = Count(tp=len(gi), gold=len(gold), stored=len(stored))
    return count, {"missed": [g for i, g in enumerate(gold) if i not in gi],
                   "extra": [m["memory"] for j, m in enumerate(stored) if j not in sj]}


def score_validity(gold: Mapping[str, Any], run: Mapping[str, Any], rels: Relations) -> dict[str, int]:
    """Gold ``validity`` rows ``[s, r, t, from, to]`` against every stored fact, open or closed: ``found``
    when a fact of that relation joins those ends, ``dated`` when its ``valid_from`` / ``valid_to``
    fall in the stated month (only the ones the row states; ``to`` set means the fact must be closed)."""
    aliases: Mapping[str, Sequence[str]] = gold.get("aliases", {})
    user = scope_user(gold["id"])
    keys = {e["id"]: frozenset(norm_name(n) for n in [e["name"], *e.get("aliases", [])])
            for e in run.get("entities", [])}
    out = {"rows": 0, "found": 0, "dated": 0}
    for s, r, tgt, start, end in gold.get("validity", []):
        s, tgt = (user if s == USER else s), (user if tgt == USER else tgt)
        out["rows"] += 1
        src, dst = _gold_keys(s, aliases), _gold_keys(tgt, aliases)
        canon, swap = rels.canonical(r)
        if swap:
            src, dst = dst, src
        best = 0
        for f in run.get("facts", []):
            rel = rels.canonical(str(f["relation_name"]).split(":")[-1])
            fs = keys.get(f["source"]["id"], frozenset())
            ft = (keys.get(f["target"]["id"], frozenset()) if f.get("target")
                  else frozenset({norm_value(f.get("value"))}))
            if rel[1]:
                fs, ft = ft, fs
            if rel[0] != canon or not (src & fs and dst & ft):
                continue
            ok = all(given is None or (have is not None and str(have)[:7] == str(given)[:7])
                     for given, have in ((start, f.get("valid_from")), (end, f.get("valid_to"))))
            best = max(best, 2 if ok else 1)
        out["found"] += best >= 1
        out["dated"] += best == 2
    return out


def score(gold: Iterable[Mapping[str, Any]], runs: Mapping[str, Mapping[str, Any]], rels: Relations) -> dict[str, Any]:
    """Totals, per tag, small talk and per conversation for runs keyed by conversation id."""
    totals = {"triples": Count(), "memories": Count()}
    tags: dict[str, dict[str, Count]] = {}
    rows: list[dict[str, Any]] = []
    small = {"conversations": 0, "with_anything_stored": 0, "memories": 0, "facts": 0}
    tokens = {"prompt": 0, "completion": 0, "calls": 0, "repairs": 0}
    validity = {"rows": 0, "found": 0, "dated": 0}
    for conv in gold:
        run = runs[conv["id"]]
        for k, v in score_validity(conv, run, rels).items():
            validity[k] += v
        t, t_detail = score_triples(conv, run, rels)
        m, m_detail = score_memories(conv["memories"], run.get("memories", []))
        totals["triples"].add(t)
        totals["memories"].add(m)
        for tag in conv["tags"]:
            bucket = tags.setdefault(tag, {"triples": Count(), "memories": Count()})
            bucket["triples"].add(t)
            bucket["memories"].add(m)
        if not conv["memories"] and not conv["triples"]:
            small["conversations"] += 1
            small["memories"] += m.stored
            small["facts"] += t.stored
            small["with_anything_stored"] += bool(m.stored or t.stored)
        usage = run.get("usage") or {}
        for k in tokens:
            tokens[k] += int(usage.get(k) or 0)
        rows.append({"id": conv["id"], "tags": conv["tags"], "error": run.get("error"), "usage": usage or None,
                     "triples": t.prf() | t_detail, "memories": m.prf() | m_detail})
    n = len(rows)
    return {
        "conversations": n,
        "triples": totals["triples"].prf(),
        "memories": totals["memories"].prf(),
        "memory_threshold": MEMORY_THRESHOLD,
        "smalltalk": small,
        "validity": validity,
        "errors": sum(1 for r in rows if r["error"]),
        "tokens": tokens | {"per_conversation": {k: round(v / n, 1) if n else 0.0 for k, v in tokens.items()}},
        "per_tag": {tag: {k: c.prf() for k, c in v.items()} for tag, v in sorted(tags.items())},
        "per_conversation": rows,
    }
