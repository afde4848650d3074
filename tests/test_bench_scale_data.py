"""``bench/scale_data.py``: a real tenant plan extended past the data keeps its graph per memory and
its speakers, every text distinct, and the same seed gives the same store."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

scale_data = pytest.importorskip("scale_data")
search_latency = pytest.importorskip("search_latency")

TEXTS = [
    ("Caroline went to the LGBTQ support group with Mel.", "Caroline", ["LGBTQ support group", "Mel"]),
    ("I love pottery, and I paint on weekends.", "Melanie", ["pottery"]),
    ("The weather was nice today", "Melanie", []),
    ("I moved from Sweden because of work", "Caroline", ["Sweden"]),
]


def _plan(size: int = 4) -> object:
    t = search_latency.TenantPlan("u-main", size)
    for i, (text, speaker, names) in enumerate(TEXTS):
        t.texts.append(text)
        t.roles.append("user")
        t.actors.append(speaker)
        t.metas.append({"source": "locomo", "doc_id": f"c/{i}"})
        t.hashes[scale_data.hash_of(text)] = i
        who = t.entity(speaker, ["Person"])
        keys = [t.entity(n, ["Concept"]) for n in names]
        t.mentions.update((i, k) for k in keys)
        if keys:
            t.fact((who, "likes", keys[0], None), [i], synthetic=True)
    return t


def test_extension_keeps_graph_per_memory_and_speakers() -> None:
    real = _plan()
    (big,) = scale_data.extend([real], [22])
    assert len(big.texts) == 22 and big.texts[:4] == real.texts
    assert len({scale_data.hash_of(t) for t in big.texts}) == 22  # distinct by the store's duplicate key
    assert len(real.texts) == 4 and len(real.facts) == 3  # the real plan is untouched
    per_memory = {m: sum(m in f.memories for f in big.facts.values()) for m in range(22)}
    assert all(per_memory[m] == per_memory[m % 4] for m in range(22))
    mentions = {m: sum(1 for i, _ in big.mentions if i == m) for m in range(22)}
    assert all(mentions[m] == mentions[m % 4] for m in range(22))
    speakers = {big.index["caroline"], big.index["melanie"]}
    assert sum(1 for k in big.entities if big.entities[k].name in ("Caroline", "Melanie")) == 2
    for src, _, tgt, _ in big.facts:
        assert src in speakers and tgt not in speakers
    # a renamed entity is named in its variant's text; the same name in every memory of its replica
    variant = big.texts[4]
    assert "Caroline" in variant and "LGBTQ support group " in variant and variant != real.texts[0]
    assert big.metas[4]["replica"] == 1


def test_extension_is_deterministic() -> None:
    a = scale_data.extend([_plan()], [30])[0]
    b = scale_data.extend([_plan()], [30])[0]
    assert a.texts == b.texts and set(a.facts) == set(b.facts)
